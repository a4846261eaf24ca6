// HTTP/1.1 transport for the Service (cpp-httplib): a UNIX socket by default, loopback TCP when
// asked. Routes: POST /v1/predict, POST /v1/complete, GET /v1/history, GET /healthz,
// GET /metrics (HEAD with each GET); another method on these paths is 405 with Allow. Every
// answer, errors included, is JSON with a Content-Length (except /metrics).
// Connections are read without blocking by workers sharing one epoll set, held to HttpLimits
// (connection_loop.h); each complete request is parsed, routed and answered by cpp-httplib on the
// worker that read its last byte.
#pragma once

#include <memory>
#include <string>

#include "peakcast/core/status.h"
#include "peakcast/serve/http_framing.h"
#include "peakcast/serve/service.h"
#include "peakcast/serve/unix_socket.h"

namespace peakcast::serve {

struct ListenOptions {
  std::string socket_path;       // UNIX socket; empty: none
  std::string listen;            // "HOST:PORT" for TCP; empty: none
  bool allow_remote = false;     // accept a non-loopback TCP host
  unsigned socket_mode = 0660;   // file mode of the socket
  std::string socket_group;      // group owning the socket; empty: unchanged
  int threads = 0;               // worker threads (all listeners); 0: max(8, cores - 1)
  HttpLimits limits;             // sizes and deadlines, the same for every endpoint
};

// "127.0.0.1:8080" / "[::1]:8080" / "localhost:8080" -> host, port. Errors name the field.
struct HostPort {
  std::string host;
  int port = 0;
};
Result<HostPort> parse_listen(const std::string& text);
bool is_loopback_host(const std::string& host);
// What HttpServer::bind() would refuse that can be seen without creating anything: nothing to
// listen on, a --socket path too long, not a socket or held by a live daemon, an unknown
// --socket-group, a malformed --listen, a non-loopback one without allow_remote. peakcastd checks
// it before it loads the model or creates the database, so a refused start leaves nothing behind.
Status check_listen_options(const ListenOptions& options);

class HttpServer {
 public:
  // `socket_lock`: options.socket_path's lock when the caller took it already (peakcastd, with its
  // start's checks, so that a start refused for it creates nothing); bind() uses it, and takes
  // the lock itself when not handed one. Held until the socket is removed (the destructor).
  HttpServer(Service& service, ListenOptions options, SocketPathLock socket_lock = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds every listener (the socket gets its mode and group). A live daemon on the same socket
  // path is an error, as is its lock held by another; a stale socket file is replaced.
  Status bind();
  // Serves until stop(); returns after every request already received has been answered.
  void serve();
  void stop();  // safe from another thread, and before serve()
  int tcp_port() const;  // the bound TCP port (useful with --listen HOST:0); 0: none

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace peakcast::serve
