#include "peakcast/serve/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "peakcast/core/log.h"
#include "peakcast/serve/connection_loop.h"
#include "peakcast/serve/unix_socket.h"

namespace peakcast::serve {
namespace {

// The paths served, each with its method: POST, or GET (cpp-httplib answers HEAD from the GET
// handler). The routes, the 405's Allow header and the 404's list are all read from here.
struct Route {
  const char* path;
  Endpoint endpoint;
  bool post;
};
constexpr std::array<Route, 5> kRoutes{{{"/v1/predict", Endpoint::kPredict, true},
                                        {"/v1/complete", Endpoint::kComplete, true},
                                        {"/v1/history", Endpoint::kHistory, false},
                                        {"/healthz", Endpoint::kHealthz, false},
                                        {"/metrics", Endpoint::kMetrics, false}}};

Endpoint endpoint_of(const std::string& path) {
  for (const Route& r : kRoutes) {
    if (path == r.path) return r.endpoint;
  }
  return Endpoint::kOther;
}

// The methods a path is served with, for the Allow header of a 405; nullptr for a path not served.
const char* allowed_methods(Endpoint e) {
  for (const Route& r : kRoutes) {
    if (r.endpoint == e) return r.post ? "POST" : "GET, HEAD";
  }
  return nullptr;
}

// "POST /v1/predict, ..., GET /metrics": what a 404 lists.
std::string served_routes() {
  std::string out;
  for (const Route& r : kRoutes) {
    out += (out.empty() ? "" : ", ") + std::string(r.post ? "POST " : "GET ") + r.path;
  }
  return out;
}

bool allows(std::string_view allow, const std::string& method) {
  for (size_t at = 0; at < allow.size();) {
    const size_t end = std::min(allow.find(", ", at), allow.size());
    if (allow.substr(at, end - at) == method) return true;
    at = end + 2;
  }
  return false;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// cpp-httplib's request parser, router and response writer, fed one complete request at a time
// by the connection loop (process_request is protected: this subclass opens it).
class Processor final : public httplib::Server {
 public:
  bool answer(httplib::Stream& strm, bool last, bool& connection_closed) {
    return process_request(strm, last, connection_closed, nullptr);
  }
};

// One request's bytes in, its answer appended to the connection's output (written by the loop).
class FrameStream final : public httplib::Stream {
 public:
  FrameStream(int fd, std::string_view in, std::string& out) : fd_(fd), in_(in), out_(out) {}
  bool is_readable() const override { return pos_ < in_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, in_.size() - pos_);
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip.clear(), port = 0; }
  void get_local_ip_and_port(std::string& ip, int& port) const override { ip.clear(), port = 0; }
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  std::string_view in_;
  size_t pos_ = 0;
  std::string& out_;
};

}  // namespace

Result<HostPort> parse_listen(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return Status::invalid("--listen: expected HOST:PORT, got \"" + text + "\"");
  }
  HostPort hp;
  hp.host = text.substr(0, colon);
  if (hp.host.size() >= 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  const std::string port = text.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return Status::invalid("--listen: port must be a number in 0..65535, got \"" + port + "\"");
  }
  hp.port = std::stoi(port);
  return hp;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

namespace {

// --listen parsed, and refused on a host that is not a loopback address unless --allow-remote.
Result<HostPort> checked_listen(const ListenOptions& options) {
  auto hp = parse_listen(options.listen);
  if (!hp) return hp.status();
  if (!is_loopback_host(hp->host) && !options.allow_remote) {
    return Status::invalid("--listen: " + hp->host +
                           " is not a loopback address; the API has no authentication, so pass "
                           "--allow-remote to expose it anyway");
  }
  return hp;
}

}  // namespace

struct HttpServer::Impl {
  Service& service;
  ListenOptions options;
  Processor processor;
  std::unique_ptr<ConnectionLoop> loop;
  std::string bound_socket;
  SocketPathLock socket_lock;  // bound_socket's, released after it is removed
  int tcp_port = 0;

  Impl(Service& s, ListenOptions o, SocketPathLock lock)
      : service(s), options(std::move(o)), socket_lock(std::move(lock)) {
    routes();
    const int threads = options.threads > 0
                            ? options.threads
                            : std::max(8, static_cast<int>(std::thread::hardware_concurrency()) - 1);
    loop = std::make_unique<ConnectionLoop>(
        options.limits, threads,
        [this](int fd, std::string& out, std::string_view request, bool last) {
          FrameStream strm(fd, request, out);
          bool closed = false;
          return processor.answer(strm, last, closed) && !closed;
        },
        [this](int status, const std::string& message) { return refusal(status, message); });
  }

  static void send(httplib::Response& res, const Reply& r) {
    res.status = r.status;
    res.set_content(r.body, r.content_type.c_str());
  }

  // The whole answer for a request the connection loop refused before parsing it.
  std::string refusal(int status, const std::string& message) {
    ApiError e{kind_for_status(status), "", message};
    if (status == 413) e.field = "body";
    if (status == 415) e.field = "Content-Encoding";
    if (status == 431) e.field = "headers";
    const Reply r = service.error(e);
    service.metrics().observe(Endpoint::kOther, r.status, 0.0);
    return "HTTP/1.1 " + std::to_string(r.status) + " " + reason_phrase(r.status) +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(r.body.size()) +
           "\r\nConnection: close\r\n\r\n" + r.body;
  }

  // Times the handler and counts it by endpoint and status.
  template <typename F>
  httplib::Server::Handler timed(F f) {
    return [this, f](const httplib::Request& req, httplib::Response& res) {
      const auto t0 = std::chrono::steady_clock::now();
      Reply r;
      try {
        r = f(req);
      } catch (const std::exception& e) {
        r = service.error({ApiErrorKind::kInternal, "", std::string("internal error: ") + e.what()});
      }
      send(res, r);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      service.metrics().observe(endpoint_of(req.path), r.status, s);
    };
  }

  void routes() {
    Processor& srv = processor;
    srv.set_payload_max_length(options.limits.max_body_bytes);
    srv.set_keep_alive_max_count(options.limits.max_requests_per_connection);
    srv.set_keep_alive_timeout(static_cast<time_t>(options.limits.idle_timeout_s));
    // Before cpp-httplib routes by method: a path it serves with another method is 405 with the
    // path's methods in Allow (cpp-httplib would say 404, or 400 for TRACE and CONNECT, which it
    // parses but routes nowhere); a path it does not serve, 404 whatever the method.
    srv.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      const char* allow = allowed_methods(endpoint_of(req.path));
      if (allow && allows(allow, req.method)) return httplib::Server::HandlerResponse::Unhandled;
      res.status = allow ? 405 : 404;
      if (allow) res.set_header("Allow", allow);
      return httplib::Server::HandlerResponse::Handled;  // the error handler writes the body
    });
    for (const Route& r : kRoutes) {
      auto handler = timed([this, e = r.endpoint](const httplib::Request& q) { return answer(e, q); });
      if (r.post) srv.Post(r.path, std::move(handler));
      else srv.Get(r.path, std::move(handler));
    }
    // Whatever httplib refuses itself (no route, bad request line, malformed Range) still gets a
    // JSON error body with the status httplib chose: a client's mistake is never a 5xx.
    srv.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      const Reply r = service.error(http_error(req, res.status));
      send(res, r);
      service.metrics().observe(endpoint_of(req.path), r.status, 0.0);
    });
  }

  // The service's answer at a served endpoint.
  Reply answer(Endpoint e, const httplib::Request& q) {
    switch (e) {
      case Endpoint::kPredict: return service.predict(q.body);
      case Endpoint::kComplete: return service.complete(q.body);
      case Endpoint::kHistory: return service.history(q.params);
      case Endpoint::kHealthz: return service.healthz();
      case Endpoint::kMetrics: return service.metrics_text();
      case Endpoint::kOther: break;
    }
    return service.error(http_error(q, 404));
  }

  static ApiError http_error(const httplib::Request& req, int status) {
    ApiError e{kind_for_status(status), "", ""};
    switch (status) {
      case 404:
        e.message = "no such endpoint (" + served_routes() + ")";
        break;
      case 405: {
        const char* allow = allowed_methods(endpoint_of(req.path));
        e.message = req.method + " " + req.path + ": method not allowed" +
                    (allow ? "; " + req.path + " answers " + allow + " (the Allow header)" : "");
        break;
      }
      case 413: e.field = "body"; e.message = "body: over the size limit"; break;
      case 414: e.message = "request target too long"; break;
      case 416: e.field = "Range"; e.message = "Range: malformed (this API serves no ranges)"; break;
      case 400: e.message = "malformed HTTP request"; break;
      default: e.message = "HTTP " + std::to_string(status); break;
    }
    return e;
  }

  Status bind_socket();
  Status bind_tcp();
};

// A listening UNIX socket at `path`, with its mode and group from the start (listen_unix).
Status HttpServer::Impl::bind_socket() {
  const std::string& path = options.socket_path;
  // The path's lock first (the one handed to the constructor, else taken here), held until the
  // destructor has removed the socket: no other daemon can be between its checks and its bind
  // meanwhile, nor unlink this one's socket while it stops.
  if (Status s = socket_lock.hold(path, "--socket"); !s) return s;
  auto fd = listen_unix(path, "--socket", SOMAXCONN, {options.socket_mode, "--socket-mode", options.socket_group});
  if (!fd) return fd.status();
  loop->add_listener(*fd);
  bound_socket = path;
  return Status::ok();
}

// A listening TCP socket. SO_REUSEADDR (a restart need not wait for TIME_WAIT) but never
// SO_REUSEPORT: a second daemon on the same address must fail, not split the traffic.
Status HttpServer::Impl::bind_tcp() {
  auto hp = checked_listen(options);
  if (!hp) return hp.status();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(hp->host.c_str(), std::to_string(hp->port).c_str(), &hints, &found); rc != 0) {
    return Status::invalid("--listen: " + hp->host + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> ai(found, &::freeaddrinfo);
  const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) return Status::io(std::string("--listen: socket(): ") + std::strerror(errno));
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::io("--listen: cannot listen on " + options.listen + ": " + std::strerror(err) +
                      (err == EADDRINUSE ? " (is another peakcastd running?)" : ""));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  tcp_port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  loop->add_listener(fd);
  return Status::ok();
}

HttpServer::HttpServer(Service& service, ListenOptions options, SocketPathLock socket_lock)
    : impl_(std::make_unique<Impl>(service, std::move(options), std::move(socket_lock))) {}

HttpServer::~HttpServer() {
  stop();
  if (!impl_->bound_socket.empty()) ::unlink(impl_->bound_socket.c_str());
  impl_->socket_lock.release();  // after the unlink: until then no other daemon may bind the path
}

Status check_listen_options(const ListenOptions& options) {
  if (options.socket_path.empty() && options.listen.empty()) {
    return Status::invalid("nothing to listen on: give --socket PATH and/or --listen HOST:PORT");
  }
  if (const std::string& path = options.socket_path; !path.empty()) {
    if (Status s = check_socket_path(path, "--socket"); !s) return s;
    if (!options.socket_group.empty()) {
      if (Status s = check_socket_group(options.socket_group); !s) return s;
    }
  }
  if (!options.listen.empty()) {
    if (auto hp = checked_listen(options); !hp) return hp.status();
  }
  return Status::ok();
}

Status HttpServer::bind() {
  if (Status s = check_listen_options(impl_->options); !s) return s;
  if (!impl_->options.socket_path.empty()) {
    if (Status s = impl_->bind_socket(); !s) return s;
  }
  if (!impl_->options.listen.empty()) {
    if (Status s = impl_->bind_tcp(); !s) return s;
  }
  return Status::ok();
}

void HttpServer::serve() { impl_->loop->run(); }

void HttpServer::stop() { impl_->loop->stop(); }

int HttpServer::tcp_port() const { return impl_->tcp_port; }

}  // namespace peakcast::serve
