// A raw HTTP/1.1 client over a UNIX socket for tests that send what a well-behaved client
// never would (slow bytes, huge headers, bad Content-Length).
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

namespace peakcast::serve::testing {

// A stream socket connected to the UNIX socket at `path`, -1 when none listens there. `rcvbuf`:
// its SO_RCVBUF (0: the default), small for a client slow to read.
inline int connect_unix(const std::string& path, int rcvbuf = 0) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until the peer closes or `timeout_s` passes.
inline std::string read_all(int fd, double timeout_s) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Sends `request` (as much as the server takes before closing) and returns the answer.
inline std::string http_exchange(const std::string& socket, const std::string& request, double timeout_s = 10) {
  const int fd = connect_unix(socket);
  if (fd < 0) return "";
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server refused and closed: its answer is still to be read
    sent += static_cast<size_t>(n);
  }
  std::string answer = read_all(fd, timeout_s);
  ::close(fd);
  return answer;
}

// "HTTP/1.1 431 ..." -> 431; 0 when there is no status line.
inline int status_of(const std::string& answer) {
  if (answer.size() < 12 || answer.compare(0, 5, "HTTP/") != 0) return 0;
  return std::atoi(answer.c_str() + 9);
}

}  // namespace peakcast::serve::testing
