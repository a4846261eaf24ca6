// frame_request: the checks every request passes before a handler sees it.
#include "peakcast/serve/http_framing.h"

#include <gtest/gtest.h>

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
  for (const char* bad : {"-5", "abc", "5x", "", "99999999999999999999999"}) {
    const Frame f = frame_request(kHead + "Content-Length: " + bad + "\r\n\r\n", l);
    EXPECT_EQ(f.state, FrameState::kRejected) << bad;
    EXPECT_EQ(f.status, 400) << bad;
  }
  EXPECT_EQ(frame_request(kHead + "Content-Length: 1\r\ncontent-length: 2\r\n\r\n", l).status, 400);
  EXPECT_EQ(frame_request(kHead + "Content-Length: 1\r\ncontent-length: 1\r\n\r\nx", l).state,
            FrameState::kComplete);
  EXPECT_EQ(frame_request(kHead + "Transfer-Encoding: chunked\r\n\r\n", l).status, 411);
}

TEST(HttpFraming, BodyOverTheLimitIsRefusedFromItsHeader) {
  HttpLimits l;
  l.max_body_bytes = 1000;
  EXPECT_EQ(frame_request(kHead + "Content-Length: 1000\r\n\r\n", l).state, FrameState::kIncomplete);
  const Frame f = frame_request(kHead + "Content-Length: 1001\r\n", l);  // before the blank line
  EXPECT_EQ(f.status, 413);
  EXPECT_NE(f.message.find("1000"), std::string::npos);
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
