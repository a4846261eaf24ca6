#include "peakcast/serve/http_framing.h"

#include <strings.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "peakcast/serve/request.h"

namespace peakcast::serve {
namespace {

Frame reject(int status, std::string message) {
  Frame f;
  f.state = FrameState::kRejected;
  f.status = status;
  f.message = std::move(message);
  return f;
}

// A field name's characters (RFC 9110 §5.6.2 tchar).
bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
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

// HTTP's methods (RFC 9110 §9; PATCH, RFC 5789). Whether a path takes one is the router's
// question (405); another token is a method this server implements for no path at all.
constexpr std::string_view kHttpMethods[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                             "CONNECT", "OPTIONS", "TRACE", "PATCH"};

// A request line "METHOD target HTTP/1.x" (CR removed) whose method is no HTTP method: 400 naming
// it, where cpp-httplib would say "malformed HTTP request". Not RFC 9110's 501: a client's mistake
// is never a 5xx here (a scanner's junk must not read as a server fault in /metrics or alerts).
// Any other line is left to the parser.
Frame unimplemented_method(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1 ||
      line.find(' ', sp2 + 1) != std::string_view::npos) {
    return {};
  }
  const std::string_view method = line.substr(0, sp1), version = line.substr(sp2 + 1);
  const auto* end = std::end(kHttpMethods);
  if (method.empty() || !std::all_of(method.begin(), method.end(), is_tchar) ||
      (version != "HTTP/1.1" && version != "HTTP/1.0") ||
      std::find(std::begin(kHttpMethods), end, method) != end) {
    return {};
  }
  return reject(400, "method " + shown_value(method) +
                         " is not an HTTP method peakcastd takes: its endpoints take GET, HEAD or POST");
}

struct Head {
  size_t size = 0;  // through the empty line
  bool has_length = false;
  uint64_t length = 0;
  bool has_transfer_encoding = false;
  std::string content_coding;  // the first Content-Encoding other than identity
};

Frame both_lengths() {
  return reject(400, "Content-Length and Transfer-Encoding: both given; send only a Content-Length");
}

// Parses one header line (CR removed) into `head`; returns a rejection, or an empty Frame.
// Strict where cpp-httplib is lax (RFC 9112 §5.1, §5.2): a name that is not a token, whitespace
// between name and colon, or an obs-fold line would let this framer and the parser disagree on
// where the body ends, and the rest of a body be taken for a second request (smuggling).
Frame header_line(std::string_view line, Head& head, const HttpLimits& limits) {
  if (line.front() == ' ' || line.front() == '\t') {
    return reject(400, "headers: a line starting with whitespace (obsolete line folding) is not "
                       "accepted: \"" + shown_value(line) + "\"");
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return reject(400, "headers: a line without a colon: \"" + shown_value(line) + "\"");
  }
  const std::string_view name = line.substr(0, colon);
  if (name.empty()) return reject(400, "headers: a line with no field name before the colon");
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == ' ' || name[i] == '\t') {
      return reject(400, "headers: whitespace between the field name \"" +
                             shown_value(name.substr(0, i)) + "\" and its colon is not accepted");
    }
    if (!is_tchar(name[i])) {
      return reject(400, "headers: field name \"" + shown_value(name) +
                             "\" has a character not allowed");
    }
  }
  const std::string_view value = trim(line.substr(colon + 1));
  if (value.find_first_of(std::string_view("\r\0", 2)) != std::string_view::npos) {
    return reject(400, "headers: " + shown_value(name) + ": a CR or NUL in the value");
  }
  auto is = [&](std::string_view want) { return iequals(name, want); };
  if (is("content-length")) {
    if (head.has_transfer_encoding) return both_lengths();
    if (value.empty() || value.find_first_not_of("0123456789") != std::string_view::npos) {
      return reject(400, "Content-Length: expected a non-negative number of bytes, got \"" +
                             shown_value(value) + "\"");
    }
    // All digits: more than 19 of them (leading zeros aside) is more than any body limit.
    const std::string_view digits = value.substr(std::min(value.find_first_not_of('0'), value.size() - 1));
    if (digits.size() > 19) {
      return reject(413, "body: " + shown_value(digits) + " bytes, over the limit of " +
                             std::to_string(limits.max_body_bytes) + std::string(kBodyLimitHint));
    }
    const uint64_t n = std::stoull(std::string(digits));
    if (head.has_length && n != head.length) return reject(400, "Content-Length: given twice, differently");
    head.has_length = true;
    head.length = n;
    if (n > limits.max_body_bytes) {
      return reject(413, "body: " + std::to_string(n) + " bytes, over the limit of " +
                             std::to_string(limits.max_body_bytes) + std::string(kBodyLimitHint));
    }
  } else if (is("transfer-encoding")) {
    if (head.has_length) return both_lengths();
    head.has_transfer_encoding = true;  // 411 once the head is complete (or 400 with a length)
  } else if (is("content-encoding") && head.content_coding.empty()) {
    std::string_view codings = value;
    while (!codings.empty()) {
      const size_t comma = std::min(codings.find(','), codings.size());
      const std::string_view coding = trim(codings.substr(0, comma));
      codings.remove_prefix(std::min(comma + 1, codings.size()));
      if (!coding.empty() && !iequals(coding, "identity")) {
        head.content_coding = shown_value(coding);  // 415 once the head is complete, with a body
        break;
      }
    }
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
  // cpp-httplib ends lines at CRLF only: a bare LF here would split the head differently.
  const char* const bare_lf = "a line ends in a bare LF; HTTP/1.1 lines end in CRLF";
  if (first.empty() || first.back() != '\r') return reject(400, std::string("request line: ") + bare_lf);
  const std::string_view request_line = first.substr(0, first.size() - 1);
  if (Frame f = unimplemented_method(request_line); f.state == FrameState::kRejected) return f;
  Head head;
  size_t pos = line_end + 1, count = 0;
  while (true) {
    const size_t eol = buf.find('\n', pos);
    if (eol == std::string_view::npos) {
      if (buf.size() > limits.max_header_bytes) break;  // rejected below
      return {};
    }
    std::string_view line = buf.substr(pos, eol - pos);
    if (line.empty() || line.back() != '\r') return reject(400, std::string("headers: ") + bare_lf);
    line.remove_suffix(1);
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
  if (head.has_transfer_encoding) {
    return reject(411, "Transfer-Encoding: not accepted; send the body with a Content-Length");
  }
  // cpp-httplib would inflate a gzip or deflate body itself, with no bound (a few hundred KB of
  // gzip grew to hundreds of MB before the body limit saw it), and hand any other coding to the
  // JSON parser still encoded: bodies are taken as sent, uncompressed, only.
  if (!head.content_coding.empty() && head.length > 0) {
    return reject(415, "Content-Encoding: " + head.content_coding +
                           " is not supported; send the body uncompressed");
  }
  const size_t total = head.size + static_cast<size_t>(head.length);
  Frame f;
  f.state = buf.size() < total ? FrameState::kIncomplete : FrameState::kComplete;
  f.size = total;
  return f;
}

}  // namespace peakcast::serve
