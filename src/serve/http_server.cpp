#include "peakcast/serve/http_server.h"

#include <arpa/inet.h>
#include <grp.h>
#include <httplib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "peakcast/core/log.h"

namespace peakcast::serve {
namespace {

// Is something accepting connections on this UNIX socket path?
bool socket_is_live(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return live;
}

Endpoint endpoint_of(const std::string& path) {
  if (path == "/v1/predict") return Endpoint::kPredict;
  if (path == "/v1/complete") return Endpoint::kComplete;
  if (path == "/v1/history") return Endpoint::kHistory;
  if (path == "/healthz") return Endpoint::kHealthz;
  if (path == "/metrics") return Endpoint::kMetrics;
  return Endpoint::kOther;
}

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

struct HttpServer::Impl {
  Service& service;
  ListenOptions options;
  std::vector<std::unique_ptr<httplib::Server>> servers;
  std::string bound_socket;

  Impl(Service& s, ListenOptions o) : service(s), options(std::move(o)) {}

  static void send(httplib::Response& res, const Reply& r) {
    res.status = r.status;
    res.set_content(r.body, r.content_type.c_str());
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

  // The listening socket of the server being bound (see raise_backlog).
  int last_socket = -1;

  // libcpp-httplib is compiled with a listen backlog of 5; on a UNIX socket a full backlog makes
  // connect() fail at once (EAGAIN) instead of waiting, so a burst of clients would see errors.
  // listen() again on the bound socket raises it.
  void raise_backlog() {
    if (last_socket >= 0) ::listen(last_socket, SOMAXCONN);
    last_socket = -1;
  }

  std::unique_ptr<httplib::Server> make_server() {
    auto srv = std::make_unique<httplib::Server>();
    srv->set_socket_options([this](socket_t sock) {
      httplib::default_socket_options(sock);
      last_socket = sock;
    });
    const int threads = options.threads > 0
                            ? options.threads
                            : std::max(8, static_cast<int>(std::thread::hardware_concurrency()) - 1);
    srv->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    srv->set_payload_max_length(options.max_body_bytes);
    // A keep-alive connection holds a worker thread until it closes: bound both its request count
    // and its idle time, so connections queued behind busy workers are served (more clients
    // than workers must not starve anyone). The Slurm hook closes after each request anyway.
    srv->set_keep_alive_max_count(100);
    srv->set_keep_alive_timeout(1);
    srv->Post("/v1/predict", timed([this](const httplib::Request& q) { return service.predict(q.body); }));
    srv->Post("/v1/complete", timed([this](const httplib::Request& q) { return service.complete(q.body); }));
    srv->Get("/v1/history", timed([this](const httplib::Request& q) { return service.history(q.params); }));
    srv->Get("/healthz", timed([this](const httplib::Request&) { return service.healthz(); }));
    srv->Get("/metrics", timed([this](const httplib::Request&) { return service.metrics_text(); }));
    // Whatever httplib refuses itself (no route, body too large, bad request line) still gets a
    // JSON error body.
    srv->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      ApiError e;
      e.field = res.status == 413 ? "body" : "";
      switch (res.status) {
        case 404: {
          const Endpoint ep = endpoint_of(req.path);
          if (ep != Endpoint::kOther) {
            e.kind = ApiErrorKind::kMethodNotAllowed;
            e.message = req.method + " " + req.path + ": method not allowed";
          } else {
            e.kind = ApiErrorKind::kNotFound;
            e.message = "no such endpoint (POST /v1/predict, POST /v1/complete, GET /v1/history, "
                        "GET /healthz, GET /metrics)";
          }
          break;
        }
        case 413: e.kind = ApiErrorKind::kTooLarge; e.message = "body: over the size limit"; break;
        case 400: e.kind = ApiErrorKind::kMalformedJson; e.message = "malformed HTTP request"; break;
        default: e.kind = ApiErrorKind::kInternal; e.message = "HTTP " + std::to_string(res.status); break;
      }
      const Reply r = service.error(e);
      send(res, r);
      service.metrics().observe(endpoint_of(req.path), r.status, 0.0);
    });
    return srv;
  }

  Status bind_socket() {
    const std::string& path = options.socket_path;
    if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      return Status::invalid("--socket: path longer than " +
                             std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes: " + path);
    }
    struct stat st{};
    if (::lstat(path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) return Status::invalid("--socket: " + path + " exists and is not a socket");
      if (socket_is_live(path)) return Status::io("--socket: another daemon is listening on " + path);
      ::unlink(path.c_str());  // stale, from a daemon that died
    }
    auto srv = make_server();
    srv->set_address_family(AF_UNIX);
    // Created with a restrictive umask, then opened up to the requested mode.
    const mode_t old = ::umask(0177);
    const bool ok = srv->bind_to_port(path, 80);
    ::umask(old);
    if (!ok) return Status::io("--socket: cannot listen on " + path + ": " + std::strerror(errno));
    raise_backlog();
    bound_socket = path;
    if (!options.socket_group.empty()) {
      const group* g = ::getgrnam(options.socket_group.c_str());
      if (!g) return Status::invalid("--socket-group: no such group: " + options.socket_group);
      if (::chown(path.c_str(), static_cast<uid_t>(-1), g->gr_gid) != 0) {
        return Status::io("--socket-group: chown " + path + ": " + std::strerror(errno));
      }
    }
    if (::chmod(path.c_str(), options.socket_mode) != 0) {
      return Status::io("--socket-mode: chmod " + path + ": " + std::strerror(errno));
    }
    servers.push_back(std::move(srv));
    return Status::ok();
  }

  Status bind_tcp() {
    auto hp = parse_listen(options.listen);
    if (!hp) return hp.status();
    if (!is_loopback_host(hp->host) && !options.allow_remote) {
      return Status::invalid("--listen: " + hp->host +
                             " is not a loopback address; the API has no authentication, so pass "
                             "--allow-remote to expose it anyway");
    }
    auto srv = make_server();
    if (!srv->bind_to_port(hp->host, hp->port)) {
      return Status::io("--listen: cannot listen on " + options.listen + ": " + std::strerror(errno));
    }
    raise_backlog();
    servers.push_back(std::move(srv));
    return Status::ok();
  }
};

HttpServer::HttpServer(Service& service, ListenOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}

HttpServer::~HttpServer() {
  stop();
  if (!impl_->bound_socket.empty()) ::unlink(impl_->bound_socket.c_str());
}

Status HttpServer::bind() {
  if (impl_->options.socket_path.empty() && impl_->options.listen.empty()) {
    return Status::invalid("nothing to listen on: give --socket PATH and/or --listen HOST:PORT");
  }
  if (!impl_->options.socket_path.empty()) {
    if (Status s = impl_->bind_socket(); !s) return s;
  }
  if (!impl_->options.listen.empty()) {
    if (Status s = impl_->bind_tcp(); !s) return s;
  }
  return Status::ok();
}

void HttpServer::serve() {
  std::vector<std::thread> threads;
  for (size_t i = 1; i < impl_->servers.size(); ++i) {
    threads.emplace_back([srv = impl_->servers[i].get()] { srv->listen_after_bind(); });
  }
  if (!impl_->servers.empty()) impl_->servers[0]->listen_after_bind();
  for (auto& t : threads) t.join();
}

void HttpServer::stop() {
  for (auto& s : impl_->servers) s->stop();
}

}  // namespace peakcast::serve
