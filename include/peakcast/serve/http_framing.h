// The HTTP layer's limits, and the one place a request's bytes are checked against them before
// any handler (or cpp-httplib's parser) sees them. Every endpoint gets the same limits and the
// same deadline; refusals are answered by status (400, 411, 413, 414, 415, 431) with the reason.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace peakcast::serve {

struct HttpLimits {
  size_t max_body_bytes = 1 << 20;         // Content-Length above: 413 (the daemon derives it
                                           // from --max-script-bytes)
  size_t max_uri_bytes = 4096;             // request target above: 414
  size_t max_header_bytes = 16 << 10;      // request line + header lines above: 431
  size_t max_headers = 64;                 // header lines above: 431
  double request_timeout_s = 5.0;          // first byte to last byte of one request: 408, closed
  double idle_timeout_s = 5.0;             // keep-alive: closed after this long without a request
  double write_timeout_s = 5.0;            // an answer the client does not read: closed
  size_t max_requests_per_connection = 1000;
  size_t max_connections = 512;            // open connections; beyond: 503 and closed
  // Bytes of requests being received, all connections together (each holds the whole of its
  // request's Content-Length once its head has arrived); a request that would go beyond: 503.
  size_t max_buffered_bytes = size_t{256} << 20;
};

enum class FrameState { kIncomplete, kComplete, kRejected };

struct Frame {
  FrameState state = FrameState::kIncomplete;
  size_t size = 0;      // kComplete: bytes of this request (head and body); kIncomplete: the
                        // bytes it will have, once its head has arrived (0 before)
  int status = 0;       // kRejected: 400, 411, 413, 414, 415 or 431
  std::string message;  // kRejected: why, naming the header or the limit
};

// Looks at the bytes received so far on a connection: is the first request in them complete,
// still arriving, or to be refused? Checks the request line (a method that is not HTTP's: 400),
// the header count and size, and Content-Length (digits only, one value, within max_body_bytes;
// 413 however many digits); a Transfer-Encoding is refused (411: send a Content-Length; 400
// alongside a Content-Length), and so is a body with a Content-Encoding other than identity (415:
// send it uncompressed).
// Field lines are held to RFC 9112 (400): lines end in CRLF, a field name is a token followed
// directly by its colon, no obs-fold (a line starting with whitespace). Anything laxer would let
// this framer and cpp-httplib's parser disagree on where a request ends, so that part of one
// request's body could run as another request. Cheap enough to call after every read.
Frame frame_request(std::string_view buffered, const HttpLimits& limits);

}  // namespace peakcast::serve
