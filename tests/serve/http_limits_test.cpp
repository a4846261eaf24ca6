// The HTTP layer against careless and hostile clients, on an in-process server over a UNIX
// socket: slow clients do not starve others and are closed at the
// request deadline; oversized heads, long targets, bad lengths and ranges get their 4xx.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "daemon_process.h"
#include "peakcast/serve/http_server.h"
#include "peakcast/serve/service.h"
#include "raw_http.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using namespace testing;

struct LiveServer {
  TempDir dir;
  std::string sock = dir.file("d.sock");
  std::unique_ptr<Service> service;
  std::unique_ptr<HttpServer> http;
  std::thread thread;

  explicit LiveServer(HttpLimits limits, int threads = 4) {
    auto store = open_sqlite_store(dir.file("h.db"));
    EXPECT_TRUE(store.ok());
    ServiceOptions options;  // a named value: GCC 12 warns falsely on a ServiceOptions{} temporary
    service = std::make_unique<Service>(history_model(), std::move(*store), std::move(options));
    EXPECT_TRUE(service->rebuild().is_ok());
    ListenOptions lo;
    lo.socket_path = sock;
    lo.threads = threads;
    lo.limits = limits;
    http = std::make_unique<HttpServer>(*service, lo);
    Status s = http->bind();
    EXPECT_TRUE(s.is_ok()) << s.message();
    thread = std::thread([this] { http->serve(); });
  }
  ~LiveServer() {
    http->stop();
    thread.join();
  }
};

std::string predict_body() {
  return request_json("alice", "#!/bin/sh\necho hi\n", 1'800'000'000, 1ull << 30).dump();
}

TEST(HttpLimits, SlowClientsAreClosedAtTheDeadlineAndDoNotStarveOthers) {
  HttpLimits limits;
  limits.request_timeout_s = 1.0;
  LiveServer server(limits, /*threads=*/4);  // fewer workers than slow clients
  constexpr int kSlow = 8;
  std::atomic<int> refused_408{0};
  std::vector<std::thread> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.emplace_back([&] {
      const int fd = connect_unix(server.sock);
      ASSERT_GE(fd, 0);
      const std::string head = "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
      // One byte every 100 ms, for at most 4 s (four times the deadline).
      for (int k = 0; k < 40; ++k) {
        if (::send(fd, head.data() + (k % head.size()), 1, MSG_NOSIGNAL) != 1) break;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0) break;  // the server answered (and closes)
      }
      if (status_of(read_all(fd, 1.0)) == 408) ++refused_408;
      ::close(fd);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // every slow client is in
  httplib::Client cli = unix_client(server.sock);
  cli.set_read_timeout(3, 0);  // a starved request would wait for the slow clients
  int ok = 0;
  for (int i = 0; i < 40; ++i) {
    auto r = cli.Post("/v1/predict", predict_body(), "application/json");
    if (r && r->status == 200) ++ok;
  }
  for (auto& t : slow) t.join();
  EXPECT_EQ(ok, 40);
  EXPECT_EQ(refused_408.load(), kSlow);
  EXPECT_GE(server.service->metrics().requests(Endpoint::kOther, 408), static_cast<uint64_t>(kSlow));
}

TEST(HttpLimits, AConnectionThatNeverSendsIsClosedAfterTheIdleTimeout) {
  HttpLimits limits;
  limits.idle_timeout_s = 0.3;
  LiveServer server(limits);
  const int fd = connect_unix(server.sock);
  ASSERT_GE(fd, 0);
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);  // closed by the server (EOF), well before 5 s
  char c;
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0);
  ::close(fd);
}

TEST(HttpLimits, TooManyOrTooLargeHeadersGet431) {
  LiveServer server(HttpLimits{});
  std::string huge = "GET /healthz HTTP/1.1\r\n";
  huge.reserve(200000 * 12);
  for (int i = 0; i < 200000; ++i) huge += "X-" + std::to_string(i % 1000) + ": 1\r\n";
  huge += "\r\n";
  std::string answer = http_exchange(server.sock, huge);
  EXPECT_EQ(status_of(answer), 431) << answer.substr(0, 300);
  EXPECT_NE(answer.find("\"headers_too_large\""), std::string::npos) << answer;
  answer = http_exchange(server.sock, "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(100000, 'b') + "\r\n\r\n");
  EXPECT_EQ(status_of(answer), 431);
  // The server is fine afterwards.
  EXPECT_EQ(status_of(http_exchange(server.sock, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")), 200);
}

TEST(HttpLimits, ClientMistakesGet4xxNever5xx) {
  HttpLimits limits;
  limits.idle_timeout_s = 0.5;  // answers on a kept-alive connection end the exchange sooner
  LiveServer server(limits);
  struct Case {
    std::string request;
    int status;
  };
  const std::string body = predict_body();
  const std::vector<Case> cases = {
      {"GET /v1/history?user=" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n", 414},
      {"GET /healthz HTTP/1.1\r\nRange: bytes=oops\r\nConnection: close\r\n\r\n", 416},
      {"POST /v1/predict HTTP/1.1\r\nContent-Length: -5\r\n\r\n" + body, 400},
      {"POST /v1/predict HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411},
      {"POST /v1/predict HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413},
      {"POST /v1/predict HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 413},
      {"POST /v1/predict HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400},
      {"POST /v1/predict HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"POST /v1/predict HTTP/1.1\r\nContent-Length: five\r\n\r\nhello", 400},
      {"NONSENSE\r\n\r\n", 400},
  };
  for (const Case& c : cases) {
    const std::string answer = http_exchange(server.sock, c.request);
    EXPECT_EQ(status_of(answer), c.status) << c.request.substr(0, 60) << " -> " << answer.substr(0, 300);
    EXPECT_NE(answer.find("{\"error\":"), std::string::npos) << answer.substr(0, 300);
  }
  EXPECT_EQ(server.service->metrics().requests(Endpoint::kOther, 500), 0u);
}

// A POST /v1/predict whose body is a whole POST /v1/complete, behind a Content-Length the framer
// and cpp-httplib read differently (space before the colon, or a folded line): the body used to
// run as a second request and be stored. Now: one 400 with the reason, the connection closed.
TEST(HttpLimits, ARequestSmuggledInABodyIsRefusedNotRun) {
  HttpLimits limits;
  limits.idle_timeout_s = 0.5;  // on the old code, the kept-alive connection ends sooner
  LiveServer server(limits);
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string done =
      completion_json("smuggled", "mallory", "#!/bin/sh\necho hi\n", now - 100, now - 10, 1ull << 30, 1ull << 29)
          .dump();
  const std::string inner = "POST /v1/complete HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(done.size()) + "\r\n\r\n" + done;
  const std::string n = std::to_string(inner.size());
  for (const std::string& length : {"Content-Length : " + n + "\r\n", "X-A: 1\r\n Content-Length: " + n + "\r\n"}) {
    const std::string answer = http_exchange(
        server.sock, "POST /v1/predict HTTP/1.1\r\nContent-Type: application/json\r\n" + length + "\r\n" + inner, 5);
    EXPECT_EQ(status_of(answer), 400) << answer.substr(0, 300);
    EXPECT_NE(answer.find("\"error\""), std::string::npos) << answer.substr(0, 300);
    EXPECT_NE(answer.find("headers: "), std::string::npos) << answer.substr(0, 300);
    EXPECT_EQ(answer.find("HTTP/1.1", 1), std::string::npos) << "a second answer: " << answer;
  }
  EXPECT_EQ(server.service->metrics().requests(Endpoint::kComplete, 200), 0u);
  // The same completion, sent plainly, is stored: the request above was refused for its framing.
  httplib::Client cli = unix_client(server.sock);
  auto r = cli.Post("/v1/complete", done, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

// A compressed body was 400 "malformed HTTP request" (or "not valid JSON"), or, valid gzip, inflated
// by cpp-httplib without a bound: 415 with the reason, and the same body sent plainly is answered.
TEST(HttpLimits, ACompressedBodyIs415WithTheReason) {
  LiveServer server(HttpLimits{});
  const std::string body = predict_body();
  auto post = [&](const std::string& extra) {
    return http_exchange(server.sock, "POST /v1/predict HTTP/1.1\r\nContent-Type: application/json\r\n" + extra +
                                          "Content-Length: " + std::to_string(body.size()) +
                                          "\r\nConnection: close\r\n\r\n" + body, 5);
  };
  for (const char* coding : {"gzip", "deflate", "br", "compress"}) {
    const std::string answer = post(std::string("Content-Encoding: ") + coding + "\r\n");
    EXPECT_EQ(status_of(answer), 415) << coding << " -> " << answer.substr(0, 300);
    EXPECT_NE(answer.find("HTTP/1.1 415 Unsupported Media Type\r\n"), std::string::npos) << answer.substr(0, 300);
    EXPECT_NE(answer.find("\"unsupported_media_type\""), std::string::npos) << answer;
    EXPECT_NE(answer.find("\"field\":\"Content-Encoding\""), std::string::npos) << answer;
    EXPECT_NE(answer.find(std::string("Content-Encoding: ") + coding + " is not supported; send the body uncompressed"),
              std::string::npos) << answer;
  }
  EXPECT_EQ(server.service->metrics().requests(Endpoint::kOther, 415), 4u);
  EXPECT_EQ(status_of(post("Content-Encoding: identity\r\n")), 200);
  EXPECT_EQ(status_of(post("")), 200);
}

// TRACE was 400 "malformed HTTP request", DELETE or PUT on a served path 405 without an Allow
// header, an unknown method 400: a served path's other methods are 405 with its methods in Allow,
// a method that is not HTTP's is 400 naming it, an unknown path 404 whatever the method; saying why.
TEST(HttpLimits, MethodsAPathDoesNotTakeAre405WithAllowAndUnknownMethodsNamed) {
  LiveServer server(HttpLimits{});
  struct Case {
    std::string line;
    int status;
    std::string allow;  // the Allow header's value; empty: none
    std::string says;
  };
  const std::vector<Case> cases = {
      {"TRACE /v1/predict", 405, "POST", "TRACE /v1/predict: method not allowed; /v1/predict answers POST"},
      {"DELETE /v1/complete", 405, "POST", "/v1/complete answers POST"},
      {"PUT /v1/predict", 405, "POST", "/v1/predict answers POST"},
      {"GET /v1/predict", 405, "POST", "/v1/predict answers POST"},
      {"POST /healthz", 405, "GET, HEAD", "/healthz answers GET, HEAD"},
      {"OPTIONS /v1/history", 405, "GET, HEAD", "/v1/history answers GET, HEAD"},
      {"PATCH /metrics", 405, "GET, HEAD", "/metrics answers GET, HEAD"},
      {"FOO /v1/predict", 400, "", "method FOO is not an HTTP method peakcastd takes"},
      {"FOO /nope", 400, "", "method FOO is not an HTTP method peakcastd takes"},
      {"TRACE /nope", 404, "", "no such endpoint"},
      {"DELETE /nope", 404, "", "no such endpoint"},
      {"GET /nope", 404, "", "no such endpoint"},
  };
  for (const Case& c : cases) {
    const std::string answer = http_exchange(server.sock, c.line + " HTTP/1.1\r\nConnection: close\r\n\r\n", 5);
    EXPECT_EQ(status_of(answer), c.status) << c.line << " -> " << answer.substr(0, 300);
    const size_t head_end = answer.find("\r\n\r\n");
    const std::string head = answer.substr(0, head_end);
    if (c.allow.empty()) {
      EXPECT_EQ(head.find("\r\nAllow:"), std::string::npos) << c.line << " -> " << head;
    } else {
      EXPECT_NE(head.find("\r\nAllow: " + c.allow + "\r\n"), std::string::npos) << c.line << " -> " << head;
    }
    EXPECT_NE(answer.find(c.says, head_end), std::string::npos) << c.line << " -> " << answer.substr(0, 400);
  }
  EXPECT_EQ(server.service->metrics().requests(Endpoint::kPredict, 405), 3u);
  EXPECT_EQ(server.service->metrics().requests(Endpoint::kOther, 400), 2u);
  // The served methods still answer, HEAD with the GET routes.
  const std::string body = predict_body();
  EXPECT_EQ(status_of(http_exchange(server.sock, "POST /v1/predict HTTP/1.1\r\nContent-Type: application/json\r\n"
                                                  "Content-Length: " + std::to_string(body.size()) +
                                                  "\r\nConnection: close\r\n\r\n" + body, 5)),
            200);
  for (const char* line : {"GET /healthz", "HEAD /healthz", "GET /metrics", "GET /v1/history?user=alice"}) {
    EXPECT_EQ(status_of(http_exchange(server.sock, std::string(line) + " HTTP/1.1\r\nConnection: close\r\n\r\n", 5)),
              200) << line;
  }
}

TEST(HttpLimits, KeepAliveAndPipelinedRequestsAreAnswered) {
  LiveServer server(HttpLimits{});
  const std::string body = predict_body();
  const std::string one = "POST /v1/predict HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  const std::string answer =
      http_exchange(server.sock, one + one + "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 5);
  size_t answers = 0;
  for (size_t p = 0; (p = answer.find("HTTP/1.1 200", p)) != std::string::npos; ++p) ++answers;
  EXPECT_EQ(answers, 3u) << answer.substr(0, 500);
}

TEST(HttpLimits, ASecondServerOnTheSameTcpPortIsRefused) {
  TempDir dir;
  auto store = open_sqlite_store(dir.file("h.db"));
  ASSERT_TRUE(store.ok());
  ServiceOptions options;
  Service service(history_model(), std::move(*store), std::move(options));
  ListenOptions lo;
  lo.listen = "127.0.0.1:0";
  HttpServer first(service, lo);
  ASSERT_TRUE(first.bind().is_ok());
  ASSERT_GT(first.tcp_port(), 0);
  lo.listen = "127.0.0.1:" + std::to_string(first.tcp_port());
  HttpServer second(service, lo);
  const Status s = second.bind();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("in use"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace peakcast::serve
