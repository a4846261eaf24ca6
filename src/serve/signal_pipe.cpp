#include "peakcast/serve/signal_pipe.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <stdexcept>

namespace peakcast::serve {
namespace {

std::atomic<int> g_write_fd{-1};

extern "C" void on_signal(int sig) {
  const int saved = errno;
  const int fd = g_write_fd.load();
  if (fd >= 0) {
    const unsigned char b = static_cast<unsigned char>(sig);
    [[maybe_unused]] ssize_t n = ::write(fd, &b, 1);
  }
  errno = saved;
}

}  // namespace

SignalPipe::SignalPipe(std::initializer_list<int> signals) {
  if (::pipe2(fds_, O_CLOEXEC) != 0) throw std::runtime_error("signal pipe: pipe2 failed");
  ::fcntl(fds_[1], F_SETFL, O_NONBLOCK);  // a burst of signals never blocks the handler
  g_write_fd = fds_[1];
  for (int sig : signals) {
    if (count_ == 8) break;
    struct sigaction sa{};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(sig, &sa, nullptr);
    signals_[count_++] = sig;
  }
}

SignalPipe::~SignalPipe() {
  for (int i = 0; i < count_; ++i) ::signal(signals_[i], SIG_DFL);
  g_write_fd = -1;
  ::close(fds_[0]);
  ::close(fds_[1]);
}

int SignalPipe::wait() {
  unsigned char b = 0;
  while (true) {
    const ssize_t n = ::read(fds_[0], &b, 1);
    if (n == 1) return b;
    if (n < 0 && errno == EINTR) continue;
    return 0;
  }
}

void SignalPipe::cancel() {
  const unsigned char zero = 0;
  [[maybe_unused]] ssize_t n = ::write(fds_[1], &zero, 1);
}

}  // namespace peakcast::serve
