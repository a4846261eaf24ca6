// The connection side of peakcastd's HTTP server. One thread owns every connection while its
// request is arriving (epoll, non-blocking sockets) and holds it to HttpLimits: the whole request
// within request_timeout_s, the head and body within their sizes (http_framing.h). Only complete
// requests go to the worker threads. So a slow or stalled client costs a buffer, never a worker,
// and is closed at its deadline; other clients are served meanwhile.
//
// stop() stops accepting, closes connections whose request has not fully arrived, lets the
// workers answer every request already received, and then run() returns.
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
  // Runs on a worker with exactly the bytes of one complete request; writes the answer to `fd`
  // (blocking writes are bounded by write_timeout_s: see write_all). `last`: answer with
  // "Connection: close". Returns true to keep the connection open for another request.
  using Handler = std::function<bool(int fd, std::string_view request, bool last)>;
  // Builds the whole HTTP answer (status line to body) for a refusal decided here: 400, 408, 411,
  // 413, 414, 431 or 503, with the reason. Called on the loop thread.
  using Refusal = std::function<std::string(int status, const std::string& message)>;

  ConnectionLoop(HttpLimits limits, int worker_threads, Handler handle, Refusal refusal);
  ~ConnectionLoop();
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  void add_listener(int fd);  // a listening socket; the loop makes it non-blocking and closes it
  void run();                 // serves until stop()
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
