#include "peakcast/serve/errors.h"

#include <nlohmann/json.hpp>

namespace peakcast::serve {

int http_status(ApiErrorKind kind) {
  switch (kind) {
    case ApiErrorKind::kMalformedJson: return 400;
    case ApiErrorKind::kBadRequest: return 400;
    case ApiErrorKind::kInvalidField: return 422;
    case ApiErrorKind::kTooLarge: return 413;
    case ApiErrorKind::kNotFound: return 404;
    case ApiErrorKind::kMethodNotAllowed: return 405;
    case ApiErrorKind::kRequestTimeout: return 408;
    case ApiErrorKind::kConflict: return 409;
    case ApiErrorKind::kLengthRequired: return 411;
    case ApiErrorKind::kUriTooLong: return 414;
    case ApiErrorKind::kUnsupportedMediaType: return 415;
    case ApiErrorKind::kRangeNotSatisfiable: return 416;
    case ApiErrorKind::kHeadersTooLarge: return 431;
    case ApiErrorKind::kOverloaded: return 503;
    case ApiErrorKind::kStorageUnavailable: return 503;
    case ApiErrorKind::kInternal: return 500;
  }
  return 500;
}

std::string_view kind_name(ApiErrorKind kind) {
  switch (kind) {
    case ApiErrorKind::kMalformedJson: return "malformed_json";
    case ApiErrorKind::kBadRequest: return "bad_request";
    case ApiErrorKind::kInvalidField: return "invalid_field";
    case ApiErrorKind::kTooLarge: return "too_large";
    case ApiErrorKind::kNotFound: return "not_found";
    case ApiErrorKind::kMethodNotAllowed: return "method_not_allowed";
    case ApiErrorKind::kRequestTimeout: return "request_timeout";
    case ApiErrorKind::kConflict: return "conflict";
    case ApiErrorKind::kLengthRequired: return "length_required";
    case ApiErrorKind::kUriTooLong: return "uri_too_long";
    case ApiErrorKind::kUnsupportedMediaType: return "unsupported_media_type";
    case ApiErrorKind::kRangeNotSatisfiable: return "range_not_satisfiable";
    case ApiErrorKind::kHeadersTooLarge: return "headers_too_large";
    case ApiErrorKind::kOverloaded: return "overloaded";
    case ApiErrorKind::kStorageUnavailable: return "storage_unavailable";
    case ApiErrorKind::kInternal: return "internal";
  }
  return "internal";
}

nlohmann::json error_body(const ApiError& e) {
  nlohmann::json err = {{"kind", std::string(kind_name(e.kind))},
                        {"field", e.field.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.field)},
                        {"message", e.message}};
  return nlohmann::json{{"error", std::move(err)}};
}

ApiError from_status(const Status& s) {
  ApiError e;
  e.message = s.message();
  switch (s.kind()) {
    case ErrorKind::kInvalidInput: {
      e.kind = ApiErrorKind::kInvalidField;
      const size_t colon = s.message().find(':');
      if (colon != std::string::npos && colon < 64) e.field = s.message().substr(0, colon);
      break;
    }
    case ErrorKind::kIo: e.kind = ApiErrorKind::kStorageUnavailable; break;
    case ErrorKind::kNotFound: e.kind = ApiErrorKind::kNotFound; break;
    default: e.kind = ApiErrorKind::kInternal; break;
  }
  return e;
}

ApiErrorKind kind_for_status(int status) {
  switch (status) {
    case 400: return ApiErrorKind::kBadRequest;
    case 404: return ApiErrorKind::kNotFound;
    case 405: return ApiErrorKind::kMethodNotAllowed;
    case 408: return ApiErrorKind::kRequestTimeout;
    case 409: return ApiErrorKind::kConflict;
    case 411: return ApiErrorKind::kLengthRequired;
    case 413: return ApiErrorKind::kTooLarge;
    case 414: return ApiErrorKind::kUriTooLong;
    case 415: return ApiErrorKind::kUnsupportedMediaType;
    case 416: return ApiErrorKind::kRangeNotSatisfiable;
    case 431: return ApiErrorKind::kHeadersTooLarge;
    case 503: return ApiErrorKind::kOverloaded;
    default: return status >= 400 && status < 500 ? ApiErrorKind::kBadRequest : ApiErrorKind::kInternal;
  }
}

}  // namespace peakcast::serve
