#include "peakcast/serve/http_framing.h"

#include <strings.h>

#include <cstdint>

namespace peakcast::serve {
namespace {

Frame reject(int status, std::string message) {
  Frame f;
  f.state = FrameState::kRejected;
  f.status = status;
  f.message = std::move(message);
  return f;
}

bool header_is(std::string_view line, std::string_view name) {
  return line.size() > name.size() && line[name.size()] == ':' &&
         ::strncasecmp(line.data(), name.data(), name.size()) == 0;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

// The request target's length, from a request line (or its start).
size_t target_length(std::string_view line) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return 0;
  const size_t end = line.find(' ', sp + 1);
  return (end == std::string_view::npos ? line.size() : end) - sp - 1;
}

struct Head {
  size_t size = 0;  // through the empty line
  bool has_length = false;
  uint64_t length = 0;
};

// Parses one header line into `head`; returns a rejection or nullopt-like empty status.
Frame header_line(std::string_view line, Head& head, const HttpLimits& limits) {
  if (header_is(line, "content-length")) {
    const std::string_view v = trim(line.substr(15));
    if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string_view::npos) {
      return reject(400, "Content-Length: expected a non-negative number of bytes, got \"" +
                             std::string(v.substr(0, 40)) + "\"");
    }
    const uint64_t n = std::stoull(std::string(v));
    if (head.has_length && n != head.length) return reject(400, "Content-Length: given twice, differently");
    head.has_length = true;
    head.length = n;
    if (n > limits.max_body_bytes) {
      return reject(413, "body: " + std::to_string(n) + " bytes, over the limit of " +
                             std::to_string(limits.max_body_bytes));
    }
  } else if (header_is(line, "transfer-encoding")) {
    return reject(411, "Transfer-Encoding: not accepted; send the body with a Content-Length");
  }
  return {};
}

}  // namespace

Frame frame_request(std::string_view buf, const HttpLimits& limits) {
  const size_t line_end = buf.find('\n');
  const std::string_view first = buf.substr(0, line_end);
  if (target_length(first) > limits.max_uri_bytes ||
      (line_end == std::string_view::npos && buf.size() > limits.max_uri_bytes + 32)) {
    return reject(414, "request target over the limit of " + std::to_string(limits.max_uri_bytes) +
                           " bytes");
  }
  if (line_end == std::string_view::npos) return {};
  Head head;
  size_t pos = line_end + 1, count = 0;
  while (true) {
    const size_t eol = buf.find('\n', pos);
    if (eol == std::string_view::npos) {
      if (buf.size() > limits.max_header_bytes) break;  // rejected below
      return {};
    }
    std::string_view line = buf.substr(pos, eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = eol + 1;
    if (pos > limits.max_header_bytes) break;
    if (line.empty()) {
      head.size = pos;
      break;
    }
    if (++count > limits.max_headers) {
      return reject(431, "headers: more than " + std::to_string(limits.max_headers) + " header lines");
    }
    if (Frame f = header_line(line, head, limits); f.state == FrameState::kRejected) return f;
  }
  if (head.size == 0) {
    return reject(431, "headers: more than " + std::to_string(limits.max_header_bytes) +
                           " bytes of request line and headers");
  }
  const size_t total = head.size + static_cast<size_t>(head.length);
  if (buf.size() < total) return {};
  Frame f;
  f.state = FrameState::kComplete;
  f.size = total;
  return f;
}

}  // namespace peakcast::serve
