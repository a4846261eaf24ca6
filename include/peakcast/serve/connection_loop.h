// The connection side of peakcastd's HTTP server, held to HttpLimits: the whole request within
// request_timeout_s, the head and body within their sizes (http_framing.h). Leader/follower:
// every worker waits in epoll_wait on one epoll set (EPOLLONESHOT); the worker woken for a
// connection reads what has arrived without blocking, answers the request itself once it is
// complete (one wake-up per request), or re-arms the connection and goes back to waiting. So a
// slow or stalled client costs a buffer, never a waiting worker, and other clients are served
// meanwhile. Deadlines of connections no worker holds are enforced by a reaper pass (any worker,
// every 50 ms): 408 for a request still arriving, idle ones closed. A connection with bytes
// waiting unread is not idle (every worker was busy): it gets request_timeout_s more to be read,
// then 503. Every refusal (408, 503, 4xx; 503 over max_connections) is a lingering close: the
// answer, the write side shut, the client's bytes drained until it closes or a deadline passes,
// so that no unread request turns the close into a reset that loses the answer.
//
// Out of file descriptors (EMFILE, ENFILE), a listener is disarmed until a connection closes or
// 100 ms pass, and the episode logged once; run() warns at start when max_connections is more
// than RLIMIT_NOFILE leaves beside the daemon's own descriptors.
//
// stop() stops accepting; every request a worker has begun is answered; connections whose
// request has not fully arrived are closed; then run() returns.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "peakcast/serve/http_framing.h"

namespace peakcast::serve {

class ConnectionLoop {
 public:
  // Runs on a worker with exactly the bytes of one complete request on connection `fd`; appends
  // the whole answer to `out` (empty when called), never writing to `fd` itself. The loop writes it without waiting: what the socket does not take
  // at once is written as the client reads (EPOLLOUT), within write_timeout_s, else the
  // connection is closed; the client's next pipelined request is not read before. `last`:
  // answer with "Connection: close". Returns true to keep the connection open for another request.
  using Handler = std::function<bool(int fd, std::string& out, std::string_view request, bool last)>;
  // Builds the whole HTTP answer (status line to body) for a refusal decided here: 400, 408, 411,
  // 413, 414, 431 or 503, with the reason. Called on any worker.
  using Refusal = std::function<std::string(int status, const std::string& message)>;

  ConnectionLoop(HttpLimits limits, int worker_threads, Handler handle, Refusal refusal);
  ~ConnectionLoop();
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  void add_listener(int fd);  // a listening socket; the loop makes it non-blocking and closes it
  void run();                 // runs the workers until stop()
  void stop();                // from any thread, any time (also before run())

  const HttpLimits& limits() const { return limits_; }

 private:
  struct Impl;
  HttpLimits limits_;
  std::unique_ptr<Impl> impl_;
};

// Writes all of `data` to a non-blocking socket, waiting for room at most until `timeout_s` has
// passed in total. false when the peer is gone or too slow.
bool write_all(int fd, std::string_view data, double timeout_s);

}  // namespace peakcast::serve
