// What can go wrong with one request, and the ONE place that maps it to an HTTP status.
// Every error answer is {"error": {"kind": ..., "field": ... | null, "message": ...}}.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/status.h"

namespace peakcast::serve {

enum class ApiErrorKind {
  kMalformedJson,     // the body is not JSON (or nested too deep)          -> 400
  kBadRequest,        // the HTTP request itself is malformed               -> 400
  kInvalidField,      // wrong type, missing, empty, too long, binary bytes -> 422
  kTooLarge,          // body or script over the limit                      -> 413
  kNotFound,          // no such route                                      -> 404
  kMethodNotAllowed,  // route exists, other method                         -> 405
  kRequestTimeout,    // the request did not arrive whole within the deadline -> 408
  kConflict,          // a completion reuses a stored job_id with other content -> 409
  kLengthRequired,    // a body without Content-Length (chunked)            -> 411
  kUriTooLong,        // request line over the limit                        -> 414
  kUnsupportedMediaType, // a body with a Content-Encoding (gzip, ...)      -> 415
  kRangeNotSatisfiable, // a malformed Range header                         -> 416
  kHeadersTooLarge,   // too many header lines, or too many header bytes    -> 431
  kOverloaded,        // too many open connections                          -> 503
  kStorageUnavailable,// the database cannot take the write (disk full, read-only) -> 503
  kInternal,          // a bug, reported instead of crashing               -> 500
};

struct ApiError {
  ApiErrorKind kind = ApiErrorKind::kInternal;
  std::string field;    // the offending field ("req_mem_bytes", "script", "body"); may be empty
  std::string message;  // for humans; never contains script text
};

int http_status(ApiErrorKind kind);
std::string_view kind_name(ApiErrorKind kind);  // "malformed_json", "invalid_field", ...
nlohmann::json error_body(const ApiError& e);

// A Status from the library, as an API error: kInvalidInput -> kInvalidField (the field is the
// message's prefix before the first ':'), kIo -> kStorageUnavailable, else kInternal.
ApiError from_status(const Status& s);

// The kind for a status cpp-httplib or the connection layer chose itself (400, 404, 408, 411,
// 413, 414, 415, 416, 431, 503); any other 4xx is kBadRequest, any 5xx kInternal.
ApiErrorKind kind_for_status(int status);

}  // namespace peakcast::serve
