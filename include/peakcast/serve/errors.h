// What can go wrong with one request, and the ONE place that maps it to an HTTP status.
// Every error answer is {"error": {"kind": ..., "field": ... | null, "message": ...}}.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/status.h"

namespace peakcast::serve {

enum class ApiErrorKind {
  kMalformedJson,     // the body is not JSON (or nested too deep)          -> 400
  kInvalidField,      // wrong type, missing, unknown, absurd, binary bytes -> 422
  kTooLarge,          // body or script over the limit                      -> 413
  kNotFound,          // no such route                                      -> 404
  kMethodNotAllowed,  // route exists, other method                         -> 405
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

}  // namespace peakcast::serve
