#include "peakcast/serve/admin_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "peakcast/core/log.h"
#include "peakcast/serve/unix_socket.h"

namespace peakcast::serve {
namespace {

constexpr size_t kMaxLine = 4096;
constexpr std::chrono::seconds kLineTimeout{5};

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

void reply(int fd, const nlohmann::json& j) {
  write_all(fd, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace

bool admin_peer_allowed(uid_t peer, uid_t self) { return peer == 0 || peer == self; }

AdminSocket::AdminSocket(std::string path, Handler handler, unsigned mode, std::string option, SocketPathLock lock)
    : path_(std::move(path)),
      option_(std::move(option)),
      handler_(std::move(handler)),
      mode_(mode),
      lock_(std::move(lock)) {}

AdminSocket::~AdminSocket() { stop(); }

Status AdminSocket::bind() {
  // As the HTTP socket: check_socket_path (a daemon still listening there keeps it: unlinked, its
  // reloads would reach this daemon instead, and its own admin socket be gone), then the path's
  // lock (the one handed to the constructor, else taken here; held until stop() has removed the
  // socket), and under it the check again and the bind, mode 0600 before the socket is at its
  // path, a stale socket replaced (listen_unix). Errors name option_.
  if (Status s = check_socket_path(path_, option_); !s) return s;
  if (Status s = lock_.hold(path_, option_); !s) return s;
  auto fd = listen_unix(path_, option_, 16, {mode_, option_, ""});
  if (!fd) return fd.status();
  listen_fd_ = *fd;
  bound_ = true;
  if (::pipe2(wake_, O_CLOEXEC) != 0) return Status::io(option_ + ": pipe: " + std::strerror(errno));
  return Status::ok();
}

void AdminSocket::start() {
  if (listen_fd_ >= 0 && !thread_.joinable()) thread_ = std::thread([this] { serve(); });
}

void AdminSocket::stop() {
  if (stopping_.exchange(true)) return;
  if (wake_[1] >= 0) {
    const char c = 'x';
    (void)!::write(wake_[1], &c, 1);
  }
  if (thread_.joinable()) thread_.join();
  for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  if (bound_) ::unlink(path_.c_str());
  lock_.release();  // after the unlink: until then no other daemon may bind the path
}

void AdminSocket::serve() {
  while (!stopping_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log(LogLevel::kError, std::string("admin socket: poll: ") + std::strerror(errno));
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    answer(fd);
    ::close(fd);
  }
}

void AdminSocket::answer(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    reply(fd, {{"error", "cannot read the peer's credentials"}});
    return;
  }
  if (!admin_peer_allowed(cred.uid, ::geteuid())) {
    log(LogLevel::kWarn, "admin socket: refused uid " + std::to_string(cred.uid) + " (pid " +
                             std::to_string(cred.pid) + "): only root or the daemon's user");
    reply(fd, {{"error", "forbidden: uid " + std::to_string(cred.uid) +
                             " is neither root nor the daemon's user"}});
    return;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  // kLineTimeout for the whole line, and stop() ends the wait at once. A timeout per recv let a
  // client that sent a byte every few seconds hold the one admin thread for hours, and stop()
  // (the daemon's exit on SIGTERM) waited for it.
  const auto deadline = std::chrono::steady_clock::now() + kLineTimeout;
  std::string line;
  char buf[512];
  while (line.find('\n') == std::string::npos && line.size() <= kMaxLine) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      reply(fd, {{"error", "no whole line (command and newline) within 5 s"}});
      return;
    }
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left.count())) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) return;  // stopping: the command is not run
    if (!fds[0].revents) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n <= 0) break;  // the client closed its side: what it sent is the line
    line.append(buf, static_cast<size_t>(n));
  }
  if (line.size() > kMaxLine) {
    reply(fd, {{"error", "request longer than 4096 bytes"}});
    return;
  }
  line = line.substr(0, line.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  const size_t sp = line.find(' ');
  const std::string command = line.substr(0, sp);
  const std::string arg = sp == std::string::npos ? "" : line.substr(sp + 1);
  try {
    reply(fd, handler_(command, arg));
  } catch (const std::exception& e) {
    reply(fd, {{"error", std::string("internal error: ") + e.what()}});
  }
}

}  // namespace peakcast::serve
