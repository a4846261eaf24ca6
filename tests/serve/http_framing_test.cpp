// frame_request: the checks every request passes before a handler sees it.
#include "peakcast/serve/http_framing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace peakcast::serve {
namespace {

const std::string kHead = "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";

TEST(HttpFraming, CompleteOnlyWhenHeadAndBodyHaveArrived) {
  HttpLimits l;
  const std::string req = kHead + "Content-Length: 5\r\n\r\nhello";
  for (size_t n = 0; n < req.size(); ++n) {
    EXPECT_EQ(frame_request(std::string_view(req).substr(0, n), l).state, FrameState::kIncomplete) << n;
  }
  const Frame f = frame_request(req + "GET /healthz HTTP/1.1\r\n", l);  // a pipelined one follows
  EXPECT_EQ(f.state, FrameState::kComplete);
  EXPECT_EQ(f.size, req.size());
  const std::string get = "GET /healthz HTTP/1.1\r\n\r\n";
  EXPECT_EQ(frame_request(get, l).size, get.size());
}

TEST(HttpFraming, ContentLengthMustBeOneNonNegativeNumber) {
  HttpLimits l;
  for (const char* bad : {"-5", "abc", "5x", "", "+5", "0x10", "5 5", "5,5", "1e3"}) {
    const Frame f = frame_request(kHead + "Content-Length: " + bad + "\r\n\r\n", l);
    EXPECT_EQ(f.state, FrameState::kRejected) << bad;
    EXPECT_EQ(f.status, 400) << bad;
  }
  EXPECT_EQ(frame_request(kHead + "Content-Length: 1\r\ncontent-length: 2\r\n\r\n", l).status, 400);
  EXPECT_EQ(frame_request(kHead + "Content-Length: 1\r\ncontent-length: 1\r\n\r\nx", l).state,
            FrameState::kComplete);
  EXPECT_EQ(frame_request(kHead + "Transfer-Encoding: chunked\r\n\r\n", l).status, 411);
}

// Both framings at once is how a request is smuggled past a proxy that reads the other one:
// refused in either order, before the head is even complete.
TEST(HttpFraming, ContentLengthWithTransferEncodingIs400) {
  HttpLimits l;
  for (const std::string both : {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                                  "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"}) {
    const Frame f = frame_request(kHead + both, l);
    EXPECT_EQ(f.state, FrameState::kRejected) << both;
    EXPECT_EQ(f.status, 400) << both;
    EXPECT_NE(f.message.find("Transfer-Encoding"), std::string::npos) << f.message;
  }
}

// A field name, then at once its colon (RFC 9112 §5.1); no obs-fold (§5.2). The framer read
// "Content-Length : 5" as no length at all, cpp-httplib's parser differently, and the body was
// framed as the next request: a request smuggled inside another's body.
TEST(HttpFraming, WhitespaceBeforeTheColonOrAFoldedLineIs400) {
  HttpLimits l;
  const std::string inner = "POST /v1/complete HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
  const std::string n = std::to_string(inner.size());
  for (const std::string& bad : {"Content-Length : " + n + "\r\n", "Content-Length\t: " + n + "\r\n",
                                 "X-A: 1\r\n Content-Length: " + n + "\r\n",
                                 "X-A: 1\r\n\tContent-Length: " + n + "\r\n",
                                 "Content-Length: 1\r\n " + n + "\r\n"}) {
    const Frame f = frame_request(kHead + bad + "\r\n" + inner, l);
    EXPECT_EQ(f.state, FrameState::kRejected) << bad;
    EXPECT_EQ(f.status, 400) << bad;
    EXPECT_NE(f.message.find("headers: "), std::string::npos) << f.message;
  }
  EXPECT_NE(frame_request(kHead + "Content-Length : 5\r\n", l).message.find("\"Content-Length\""),
            std::string::npos);
  EXPECT_NE(frame_request(kHead + " X: 1\r\n", l).message.find("folding"), std::string::npos);
  // Whitespace around the value is fine.
  EXPECT_EQ(frame_request(kHead + "Content-Length:\t 2 \t\r\n\r\n{}", l).size, kHead.size() + 26);
}

TEST(HttpFraming, MalformedFieldLinesAre400) {
  HttpLimits l;
  for (const std::string& bad : std::vector<std::string>{"NoColonHere\r\n", ": empty name\r\n", "Content@Length: 5\r\n",
                                 "X-A: a\rb\r\n", std::string("X-A: a\0b\r\n", 11),
                                 "Content-Length: 5\n",  // bare LF: cpp-httplib skips the line
                                 "X-A: 1\n\n"}) {
    const Frame f = frame_request(kHead + bad + "\r\nhello", l);
    EXPECT_EQ(f.state, FrameState::kRejected) << bad;
    EXPECT_EQ(f.status, 400) << bad;
  }
  EXPECT_EQ(frame_request("GET /healthz HTTP/1.1\n\n", l).status, 400);
}

TEST(HttpFraming, BodyOverTheLimitIsRefusedFromItsHeader) {
  HttpLimits l;
  l.max_body_bytes = 1000;
  EXPECT_EQ(frame_request(kHead + "Content-Length: 1000\r\n\r\n", l).state, FrameState::kIncomplete);
  // Still arriving, its head in: the size the whole request will have (the loop sets it aside).
  EXPECT_EQ(frame_request(kHead + "Content-Length: 1000\r\n\r\n", l).size,
            (kHead + "Content-Length: 1000\r\n\r\n").size() + 1000);
  EXPECT_EQ(frame_request(kHead + "Content-Length: 1000\r\n", l).size, 0u);  // the head still arriving
  const Frame f = frame_request(kHead + "Content-Length: 1001\r\n", l);  // before the blank line
  EXPECT_EQ(f.status, 413);
  EXPECT_NE(f.message.find("1000"), std::string::npos);
  EXPECT_NE(f.message.find("--max-script-bytes"), std::string::npos) << f.message;  // what sets it
  // More digits than any uint64_t: too large, not malformed. Leading zeros count for nothing.
  for (const char* huge : {"99999999999999999999", "99999999999999999999999", "18446744073709551616"}) {
    const Frame h = frame_request(kHead + "Content-Length: " + huge + "\r\n", l);
    EXPECT_EQ(h.status, 413) << huge;
    EXPECT_NE(h.message.find("over the limit"), std::string::npos) << h.message;
  }
  EXPECT_EQ(frame_request(kHead + "Content-Length: 000000000000000000000005\r\n\r\nhello", l).state,
            FrameState::kComplete);
}

// cpp-httplib inflates a gzip or deflate body itself, unbounded (a bomb of a few hundred KB grew
// to hundreds of MB), and passes other codings to the JSON parser encoded ("not valid JSON at byte
// 0"): a body with any coding but identity is 415 naming it, once the head shows a body follows.
TEST(HttpFraming, AContentEncodingOtherThanIdentityIs415) {
  HttpLimits l;
  for (const std::string coding : {"gzip", "GZIP", "deflate", "br", "compress", "identity, gzip", "x-custom"}) {
    const Frame f = frame_request(kHead + "Content-Encoding: " + coding + "\r\nContent-Length: 2\r\n\r\n{}", l);
    EXPECT_EQ(f.state, FrameState::kRejected) << coding;
    EXPECT_EQ(f.status, 415) << coding;
    EXPECT_NE(f.message.find("is not supported; send the body uncompressed"), std::string::npos) << f.message;
  }
  EXPECT_NE(frame_request(kHead + "Content-Encoding: identity, gzip\r\nContent-Length: 2\r\n\r\n", l)
                .message.find("Content-Encoding: gzip is not supported"),
            std::string::npos);
  EXPECT_EQ(frame_request(kHead + "Content-Encoding: identity\r\nContent-encoding: gzip\r\nContent-Length: 2\r\n\r\n", l).status,
            415);
  const std::string hostile = std::string(100, 'z');
  EXPECT_EQ(frame_request(kHead + "Content-Encoding: " + hostile + "\r\nContent-Length: 2\r\n\r\n", l)
                .message.find(std::string(41, 'z')),
            std::string::npos);
  // identity (any case) is no coding at all; nor is a coding on a request without a body.
  for (const std::string coding : {"identity", "Identity", " identity ", ""}) {
    EXPECT_EQ(frame_request(kHead + "Content-Encoding:" + coding + "\r\nContent-Length: 2\r\n\r\n{}", l).state,
              FrameState::kComplete) << coding;
  }
  EXPECT_EQ(frame_request("GET /healthz HTTP/1.1\r\nContent-Encoding: gzip\r\n\r\n", l).state, FrameState::kComplete);
}

// A well-formed request line whose method is no HTTP method was 400 "malformed HTTP request" from
// cpp-httplib: now 400 naming it (not 501: a client's mistake is never a 5xx here). HTTP's own
// methods pass (the router answers 405 or 404), and a malformed line is left to the parser's 400.
TEST(HttpFraming, AMethodThatIsNotHttpsIsNamed) {
  HttpLimits l;
  for (const std::string method : {"FOO", "get", "PRI", "M-SEARCH"}) {
    const Frame f = frame_request(method + " /v1/predict HTTP/1.1\r\n", l);  // before the head ends
    EXPECT_EQ(f.state, FrameState::kRejected) << method;
    EXPECT_EQ(f.status, 400) << method;
    EXPECT_NE(f.message.find("method " + method + " is not an HTTP method peakcastd takes"), std::string::npos)
        << f.message;
  }
  EXPECT_EQ(frame_request(std::string(100, 'X') + " / HTTP/1.0\r\n", l).message.find(std::string(41, 'X')),
            std::string::npos);
  for (const std::string method : {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}) {
    EXPECT_EQ(frame_request(method + " /v1/predict HTTP/1.1\r\n\r\n", l).state, FrameState::kComplete) << method;
  }
  for (const std::string line : {"NONSENSE", "FOO / HTTP/2.0", "FOO  / HTTP/1.1", "FOO / HTTP/1.1 x", "F@O / HTTP/1.1"}) {
    EXPECT_EQ(frame_request(line + "\r\n\r\n", l).state, FrameState::kComplete) << line;
  }
}

TEST(HttpFraming, HeaderCountAndSizeAreBounded) {
  HttpLimits l;
  std::string many = kHead;
  for (size_t i = 0; i < l.max_headers; ++i) many += "X-A: 1\r\n";
  EXPECT_EQ(frame_request(many, l).status, 431);  // even before the head is complete
  std::string big = "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(l.max_header_bytes, 'b');
  EXPECT_EQ(frame_request(big, l).status, 431);
  EXPECT_EQ(frame_request(big + "\r\n\r\n", l).status, 431);
  // Under both limits: fine.
  std::string fine = "GET /healthz HTTP/1.1\r\n";
  for (int i = 0; i < 10; ++i) fine += "X-A: " + std::string(100, 'a') + "\r\n";
  EXPECT_EQ(frame_request(fine + "\r\n", l).state, FrameState::kComplete);
}

TEST(HttpFraming, LongRequestTargetGets414) {
  HttpLimits l;
  const std::string uri = "/v1/history?user=" + std::string(9000, 'a');
  EXPECT_EQ(frame_request("GET " + uri + " HTTP/1.1\r\n\r\n", l).status, 414);
  EXPECT_EQ(frame_request("GET " + uri, l).status, 414);  // still arriving
  EXPECT_EQ(frame_request("GET /v1/history?user=" + std::string(1000, 'a') + " HTTP/1.1\r\n\r\n", l).state,
            FrameState::kComplete);
}

}  // namespace
}  // namespace peakcast::serve
