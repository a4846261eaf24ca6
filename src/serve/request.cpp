#include "peakcast/serve/request.h"

#include <nlohmann/json.hpp>

#include "peakcast/ingest/jsonl.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::serve {
namespace {

using nlohmann::json;

ApiError error(ApiErrorKind kind, std::string field, std::string message) {
  return ApiError{kind, std::move(field), std::move(message)};
}

// Deepest nesting of arrays/objects outside strings; stops counting past `limit`.
int nesting_depth(std::string_view s, int limit) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) max_depth = depth;
      if (max_depth > limit) return max_depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// First string (key or value) holding a NUL or bad UTF-8; returns the field it was found under.
bool find_binary(const json& v, const std::string& field, std::string& where) {
  if (v.is_string()) {
    if (!is_clean_utf8(v.get_ref<const std::string&>())) { where = field; return true; }
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!is_clean_utf8(it.key())) { where = field.empty() ? "key" : field; return true; }
      if (find_binary(it.value(), field.empty() ? it.key() : field, where)) return true;
    }
  } else if (v.is_array()) {
    for (const json& e : v) {
      if (find_binary(e, field, where)) return true;
    }
  }
  return false;
}

}  // namespace

bool is_clean_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) { ++i; continue; }
    int len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > n) return false;
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

ParsedJob parse_job_body(std::string_view body, BodyKind kind, const RequestLimits& limits) {
  if (body.size() > limits.max_body_bytes()) {
    return error(ApiErrorKind::kTooLarge, "body",
                 "body: " + std::to_string(body.size()) + " bytes, over the limit of " +
                     std::to_string(limits.max_body_bytes()));
  }
  if (body.empty()) return error(ApiErrorKind::kMalformedJson, "body", "body: empty");
  if (nesting_depth(body, limits.max_depth) > limits.max_depth) {
    return error(ApiErrorKind::kMalformedJson, "body",
                 "body: nested deeper than " + std::to_string(limits.max_depth) + " levels");
  }
  json obj;
  try {
    obj = json::parse(body);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number too large for a double ("1e999"): both mean the
    // body is not JSON we can hold. The parser's message names the byte offset and what it
    // expected; it quotes at most a few bytes of the input, never a whole script.
    std::string why = e.what();
    if (why.size() > 200) why.resize(200);
    return error(ApiErrorKind::kMalformedJson, "body", "body: not valid JSON (" + why + ")");
  }
  if (!obj.is_object()) {
    return error(ApiErrorKind::kMalformedJson, "body", "body: expected a JSON object (one job record)");
  }
  if (std::string where; find_binary(obj, "", where)) {
    return error(ApiErrorKind::kInvalidField, where,
                 where + ": binary content (NUL byte or invalid UTF-8) is not accepted");
  }
  if (kind == BodyKind::kPredict) {
    for (const char* outcome : {"end_time", "peak_mem_bytes", "peak_vram_bytes"}) {
      auto it = obj.find(outcome);
      if (it != obj.end() && !it->is_null()) {
        return error(ApiErrorKind::kInvalidField, outcome,
                     std::string(outcome) + ": an outcome field; /v1/predict takes the request only "
                                            "(send finished jobs to /v1/complete)");
      }
    }
  }
  ingest::JobParseOptions opts;
  opts.require_outcome = kind == BodyKind::kComplete;
  Result<Job> job = ingest::job_from_json(obj, opts);
  if (!job) return from_status(job.status());
  if (job->script && job->script->size() > limits.max_script_bytes) {
    return error(ApiErrorKind::kTooLarge, "script",
                 "script: " + std::to_string(job->script->size()) + " bytes, over the limit of " +
                     std::to_string(limits.max_script_bytes) + " (--max-script-bytes)");
  }
  // script_key and labels exactly as the trace readers compute them.
  ingest::Trace one;
  one.jobs.push_back(std::move(*job));
  ingest::finalize_trace(one, limits.util_cap);
  return std::move(one.jobs.front());
}

}  // namespace peakcast::serve
