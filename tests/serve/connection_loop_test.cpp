// The connection loop when every worker is busy: one worker, held in a handler by a gate the
// test opens, so "all workers busy" is a state the test sets, not a race it hopes for. A request
// that arrived in full is answered (or refused with 503 and the reason), never reset.
#include "peakcast/serve/connection_loop.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "raw_http.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using namespace testing;

// A ConnectionLoop on a UNIX socket (and a loopback TCP port) whose handler waits for a permit.
struct GatedLoop {
  TempDir dir;
  std::string sock = dir.file("l.sock");
  int tcp_port = 0;
  bool keep_alive = false;  // the handler's answer: keep the connection open?

  std::mutex mu;
  std::condition_variable cv;
  int permits = 0;
  int entered = 0;  // handlers begun

  std::unique_ptr<ConnectionLoop> loop;
  std::thread thread;

  explicit GatedLoop(HttpLimits limits) {
    loop = std::make_unique<ConnectionLoop>(
        limits, /*worker_threads=*/1,
        [this](int, std::string& out, std::string_view, bool) {
          std::unique_lock lock(mu);
          ++entered;
          cv.notify_all();
          cv.wait(lock, [this] { return permits > 0; });
          --permits;
          lock.unlock();
          out = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
          return keep_alive;
        },
        [](int status, const std::string& message) {
          return "HTTP/1.1 " + std::to_string(status) + " Refused\r\nContent-Length: " +
                 std::to_string(message.size()) + "\r\nConnection: close\r\n\r\n" + message;
        });
    const int u = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un ua{};
    ua.sun_family = AF_UNIX;
    std::strncpy(ua.sun_path, sock.c_str(), sizeof(ua.sun_path) - 1);
    EXPECT_EQ(::bind(u, reinterpret_cast<sockaddr*>(&ua), sizeof ua), 0);
    EXPECT_EQ(::listen(u, 64), 0);
    loop->add_listener(u);
    const int t = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in ta{};
    ta.sin_family = AF_INET;
    ta.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof ta;
    EXPECT_EQ(::bind(t, reinterpret_cast<sockaddr*>(&ta), sizeof ta), 0);
    EXPECT_EQ(::listen(t, 64), 0);
    ::getsockname(t, reinterpret_cast<sockaddr*>(&ta), &len);
    tcp_port = ntohs(ta.sin_port);
    loop->add_listener(t);
    thread = std::thread([this] { loop->run(); });
  }
  ~GatedLoop() {
    allow(1000);
    loop->stop();
    thread.join();
  }
  void allow(int n) {
    std::lock_guard lock(mu);
    permits += n;
    cv.notify_all();
  }
  // Waits (bounded) until `n` handlers have begun; false if they never do.
  bool wait_entered(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(5), [&] { return entered >= n; });
  }
  int connect_tcp() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(tcp_port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
};

const std::string kRequest = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

bool send_all(int fd, const std::string& data) {
  return ::send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
}

// Reads until the peer closes; `reset`: it ended in a reset (ECONNRESET), not an orderly close.
std::string read_to_end(int fd, bool& reset) {
  std::string out;
  reset = false;
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return out;  // no end within 5 s: neither
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    reset = n < 0 && errno == ECONNRESET;
    return out;
  }
}

void pause_for(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

// The reaper marked a connection idle until a worker had read from it; a request already in the
// kernel buffer while the only worker was busy was closed with a reset after --idle-timeout.
TEST(ConnectionLoop, ARequestWaitingForABusyWorkerIsAnsweredNotReset) {
  HttpLimits limits;
  limits.idle_timeout_s = 0.2;
  limits.request_timeout_s = 5.0;
  GatedLoop g(limits);
  const int waiting = connect_unix(g.sock);  // accepted before the worker is taken
  const int first = connect_unix(g.sock);
  ASSERT_GE(waiting, 0);
  ASSERT_GE(first, 0);
  ASSERT_TRUE(send_all(first, kRequest));
  ASSERT_TRUE(g.wait_entered(1));  // the one worker is busy
  ASSERT_TRUE(send_all(waiting, kRequest));
  pause_for(3 * limits.idle_timeout_s);  // well past the waiting connection's idle deadline
  g.allow(1000);
  EXPECT_EQ(status_of(read_all(first, 5)), 200);
  const std::string answer = read_all(waiting, 5);
  EXPECT_EQ(status_of(answer), 200) << "answer: \"" << answer << "\"";
  ::close(first);
  ::close(waiting);
}

// Waiting is bounded: a request no worker reads within request_timeout_s after its idle deadline
// gets a 503 with the reason (and can read it), not a reset.
TEST(ConnectionLoop, ARequestWaitingTooLongGets503NotReset) {
  HttpLimits limits;
  limits.idle_timeout_s = 0.2;
  limits.request_timeout_s = 0.3;
  GatedLoop g(limits);
  const int b = connect_unix(g.sock), c = connect_unix(g.sock), first = connect_unix(g.sock);
  ASSERT_GE(b, 0);
  ASSERT_GE(c, 0);
  ASSERT_GE(first, 0);
  ASSERT_TRUE(send_all(first, kRequest));
  ASSERT_TRUE(g.wait_entered(1));
  ASSERT_TRUE(send_all(b, kRequest));
  ASSERT_TRUE(send_all(c, kRequest));
  pause_for(3 * limits.idle_timeout_s);
  g.allow(1);                       // the first is answered; b or c is read and holds the worker
  ASSERT_TRUE(g.wait_entered(2));
  pause_for(3 * limits.request_timeout_s);  // the other waits past its bound
  g.allow(1000);
  const std::string answer_b = read_all(b, 5), answer_c = read_all(c, 5);
  const std::string& refused = status_of(answer_b) == 200 ? answer_c : answer_b;
  EXPECT_EQ(status_of(answer_b) + status_of(answer_c), 200 + 503) << answer_b << "\n---\n" << answer_c;
  EXPECT_NE(refused.find("every worker busy"), std::string::npos) << refused;
  EXPECT_EQ(status_of(read_all(first, 5)), 200);
  ::close(first);
  ::close(b);
  ::close(c);
}

// Over max_connections, the 503 was written and the socket closed with the client's request
// unread: over TCP that is a reset, which discards a 503 still unsent or unacknowledged (on
// loopback it has arrived, so the reset itself is what shows). Now the 503 ends in an orderly
// close. The request is in the socket before the loop accepts the connection (the one worker is
// busy meanwhile).
TEST(ConnectionLoop, OverTheConnectionLimitTheClientReads503) {
  HttpLimits limits;
  limits.max_connections = 1;
  GatedLoop g(limits);
  g.keep_alive = true;  // the first connection keeps the only slot
  const int first = g.connect_tcp();
  ASSERT_GE(first, 0);
  ASSERT_TRUE(send_all(first, kRequest));
  ASSERT_TRUE(g.wait_entered(1));
  const int extra = g.connect_tcp();
  ASSERT_GE(extra, 0);
  ASSERT_TRUE(send_all(extra, kRequest));
  pause_for(0.1);  // the request is in the server's receive buffer before the accept
  g.allow(1000);
  bool reset = false;
  const std::string answer = read_to_end(extra, reset);
  EXPECT_EQ(status_of(answer), 503) << "answer: \"" << answer << "\"";
  EXPECT_NE(answer.find("open connections"), std::string::npos) << answer;
  EXPECT_FALSE(reset) << "the 503 was followed by a reset, not a close";
  ::close(extra);
  ::close(first);
}

}  // namespace
}  // namespace peakcast::serve
