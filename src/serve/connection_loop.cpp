#include "peakcast/serve/connection_loop.h"

#include <fcntl.h>
#include <httplib.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "peakcast/core/log.h"

namespace peakcast::serve {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

// One client connection. Owned by the loop while a request arrives, by a worker while it is
// answered.
struct Conn {
  int fd = -1;
  std::string buf;              // bytes received and not yet answered
  Clock::time_point deadline;   // idle, request or lingering deadline
  bool started = false;         // a request has begun arriving
  bool closing = false;         // refused: draining input until the peer closes (lingering close)
  size_t served = 0;
  ~Conn() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool write_all(int fd, std::string_view data, double timeout_s) {
  const auto deadline = after(timeout_s);
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
  }
  return true;
}

struct ConnectionLoop::Impl {
  const HttpLimits& limits;
  int threads;
  Handler handle;
  Refusal refusal;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::vector<int> listeners;
  std::unordered_map<int, std::unique_ptr<Conn>> conns;  // loop thread only
  std::atomic<bool> stopping{false};
  std::atomic<size_t> at_workers{0};
  std::mutex returned_mu;
  std::deque<std::unique_ptr<Conn>> returned;  // keep-alive connections back from the workers
  std::unique_ptr<httplib::ThreadPool> pool;

  Impl(const HttpLimits& l, int t, Handler h, Refusal r)
      : limits(l), threads(t), handle(std::move(h)), refusal(std::move(r)) {
    epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd < 0 || wake_fd < 0) throw std::runtime_error("connection loop: epoll/eventfd failed");
    watch(wake_fd);
  }
  ~Impl() {
    for (int fd : listeners) ::close(fd);
    ::close(wake_fd);
    ::close(epoll_fd);
  }

  void watch(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  void run() {
    pool = std::make_unique<httplib::ThreadPool>(static_cast<size_t>(threads));
    std::vector<epoll_event> events(64);
    while (!stopping) {
      const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), next_timeout_ms());
      for (int i = 0; i < n && !stopping; ++i) {
        const int fd = events[static_cast<size_t>(i)].data.fd;
        if (fd == wake_fd) {
          take_returned();
        } else if (std::find(listeners.begin(), listeners.end(), fd) != listeners.end()) {
          accept_all(fd);
        } else if (auto it = conns.find(fd); it != conns.end()) {
          on_readable(it->second);
        }
      }
      expire();
    }
    for (int fd : listeners) ::close(fd);
    listeners.clear();
    conns.clear();       // requests not fully received are not answered
    pool->shutdown();    // answers every request already received
    std::lock_guard lock(returned_mu);
    returned.clear();
  }

  int next_timeout_ms() const {
    auto next = Clock::now() + std::chrono::seconds(1);
    for (const auto& [fd, c] : conns) next = std::min(next, c->deadline);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 1000));
  }

  void accept_all(int listener) {
    while (true) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if (errno == EMFILE || errno == ENFILE) log(LogLevel::kWarn, "http: out of file descriptors");
        return;
      }
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->deadline = after(limits.idle_timeout_s);
      if (conns.size() + at_workers >= limits.max_connections) {
        refuse(c, 503, "over the limit of " + std::to_string(limits.max_connections) +
                           " open connections; try again");
        continue;
      }
      watch(fd);
      conns.emplace(fd, std::move(c));
    }
  }

  void close_conn(int fd) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    conns.erase(fd);
  }

  // Answers with a refusal, then reads and discards what the peer still sends (a body over the
  // limit, say) until it closes or the request deadline passes: a client still writing would
  // otherwise fail on a closed socket and never read the answer.
  void refuse(std::unique_ptr<Conn>& c, int status, const std::string& message) {
    write_all(c->fd, refusal(status, message), 0.0);
    ::shutdown(c->fd, SHUT_WR);
    c->closing = true;
    c->buf.clear();
    c->buf.shrink_to_fit();
    c->deadline = after(limits.request_timeout_s);
    if (conns.find(c->fd) == conns.end()) {
      watch(c->fd);
      const int fd = c->fd;
      conns.emplace(fd, std::move(c));
    }
  }

  void on_readable(std::unique_ptr<Conn>& c) {
    char chunk[64 << 10];
    const ssize_t n = ::recv(c->fd, chunk, sizeof chunk, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      close_conn(c->fd);  // the peer closed (or failed); a partial request is not answered
      return;
    }
    if (n < 0 || c->closing) return;
    if (!c->started) {
      c->started = true;
      c->deadline = after(limits.request_timeout_s);
    }
    c->buf.append(chunk, static_cast<size_t>(n));
    frame(c);
  }

  void frame(std::unique_ptr<Conn>& c) {
    const Frame f = frame_request(c->buf, limits);
    if (f.state == FrameState::kIncomplete) return;
    if (f.state == FrameState::kRejected) {
      refuse(c, f.status, f.message);
      return;
    }
    const int fd = c->fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    Conn* raw = c.release();
    conns.erase(fd);
    ++at_workers;
    pool->enqueue([this, raw, size = f.size] { answer(std::unique_ptr<Conn>(raw), size); });
  }

  // On a worker.
  void answer(std::unique_ptr<Conn> c, size_t size) {
    ++c->served;
    const bool last = c->served >= limits.max_requests_per_connection || stopping;
    bool keep = false;
    try {
      keep = handle(c->fd, std::string_view(c->buf).substr(0, size), last) && !last;
    } catch (const std::exception& e) {
      log(LogLevel::kError, std::string("http: answering a request: ") + e.what());
    }
    --at_workers;
    if (!keep || stopping) return;  // ~Conn closes it
    c->buf.erase(0, size);
    c->started = !c->buf.empty();  // a pipelined request has begun
    c->deadline = after(c->started ? limits.request_timeout_s : limits.idle_timeout_s);
    {
      std::lock_guard lock(returned_mu);
      returned.push_back(std::move(c));
    }
    wake();
  }

  void take_returned() {
    uint64_t count = 0;
    [[maybe_unused]] ssize_t n = ::read(wake_fd, &count, sizeof count);
    std::deque<std::unique_ptr<Conn>> back;
    {
      std::lock_guard lock(returned_mu);
      back.swap(returned);
    }
    for (auto& c : back) {
      const int fd = c->fd;
      watch(fd);
      auto& slot = conns[fd] = std::move(c);
      if (!slot->buf.empty()) frame(slot);
    }
  }

  void expire() {
    const auto now = Clock::now();
    std::vector<int> due;
    for (const auto& [fd, c] : conns) {
      if (c->deadline <= now) due.push_back(fd);
    }
    for (int fd : due) {
      auto& c = conns[fd];
      if (c->started && !c->closing) {
        refuse(c, 408, "request not received in full within " +
                           std::to_string(limits.request_timeout_s) + " s");
        c->deadline = now;  // no lingering for a client this slow
      }
      close_conn(fd);
    }
  }
};

ConnectionLoop::ConnectionLoop(HttpLimits limits, int worker_threads, Handler handle, Refusal refusal)
    : limits_(limits),
      impl_(std::make_unique<Impl>(limits_, std::max(1, worker_threads), std::move(handle),
                                   std::move(refusal))) {}

ConnectionLoop::~ConnectionLoop() = default;

void ConnectionLoop::add_listener(int fd) {
  set_nonblocking(fd);
  impl_->listeners.push_back(fd);
  impl_->watch(fd);
}

void ConnectionLoop::run() { impl_->run(); }

void ConnectionLoop::stop() {
  impl_->stopping = true;
  impl_->wake();
}

}  // namespace peakcast::serve
