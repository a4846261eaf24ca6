#include "peakcast/serve/request.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/core/json_error.h"
#include "peakcast/ingest/jsonl.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::serve {
namespace {

// The states a job ends in: only then is its peak final. A peak posted while the job still
// runs (RUNNING, PENDING, COMPLETING, REQUEUED...) would be learned as an exact label and lock
// the job_id, so its real completion later got 409.
constexpr std::string_view kFinishedStates[] = {"COMPLETED", "FAILED",    "OUT_OF_MEMORY",
                                                "CANCELLED", "TIMEOUT",   "NODE_FAIL",
                                                "PREEMPTED", "BOOT_FAIL", "DEADLINE"};

}  // namespace

std::string finished_state_names() {
  std::string out;
  for (std::string_view s : kFinishedStates) out.append(out.empty() ? "" : ", ").append(s);
  return out;
}

bool is_finished_state(std::string_view normalized_state) {
  return std::find(std::begin(kFinishedStates), std::end(kFinishedStates), normalized_state) !=
         std::end(kFinishedStates);
}

namespace {

using nlohmann::json;

ApiError error(ApiErrorKind kind, std::string field, std::string message) {
  return ApiError{kind, std::move(field), std::move(message)};
}

// The shape of a JSON text, found without building it: the deepest nesting of arrays/objects,
// and an upper bound on the number of values (containers and separators outside strings).
struct Shape {
  int depth = 0;
  size_t values = 1;
};
Shape json_shape(std::string_view s) {
  Shape shape;
  int depth = 0;
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
      ++shape.values;
      if (++depth > shape.depth) shape.depth = depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',') {
      ++shape.values;
    }
  }
  return shape;
}

// Strings the history keys on, bounded: a record with a 1 MiB user name is not a job.
std::optional<ApiError> check_fields(const Job& job, const RequestLimits& limits) {
  if (job.user.empty()) {
    return error(ApiErrorKind::kInvalidField, "user", "user: a required field may not be empty");
  }
  const std::pair<const char*, const std::string*> ids[] = {
      {"job_id", &job.job_id}, {"user", &job.user}, {"partition", &job.partition},
      {"account", &job.account}, {"state", &job.state}, {"answer_id", &job.answer_id}};
  for (const auto& [name, value] : ids) {
    if (value->size() > limits.max_id_bytes) {
      return error(ApiErrorKind::kInvalidField, name,
                   std::string(name) + ": " + std::to_string(value->size()) +
                       " bytes, over the limit of " + std::to_string(limits.max_id_bytes));
    }
  }
  // A partition list ("gpu,cpu": the partitions a job may run in; sizing::partition_names) is
  // bounded by its bytes above and by its entries here: the recommendation walks each.
  const size_t partitions = static_cast<size_t>(std::count(job.partition.begin(), job.partition.end(), ',')) + 1;
  if (partitions > limits.max_partitions) {
    return error(ApiErrorKind::kInvalidField, "partition",
                 "partition: a list of " + std::to_string(partitions) + " entries, over the limit of " +
                     std::to_string(limits.max_partitions));
  }
  const std::pair<const char*, size_t> names[] = {
      {"job_name", job.job_name.size()}, {"workload", job.workload ? job.workload->size() : 0}};
  for (const auto& [name, size] : names) {
    if (size > limits.max_name_bytes) {
      return error(ApiErrorKind::kInvalidField, name,
                   std::string(name) + ": " + std::to_string(size) + " bytes, over the limit of " +
                       std::to_string(limits.max_name_bytes));
    }
  }
  return std::nullopt;
}

// A completion's state decides how its peak is learned (OUT_OF_MEMORY: a lower bound, censored),
// so a misspelt one ("OUT_OF_MEMROY") must not be stored as-is and learned as an exact peak, nor
// one of a job that has not finished. Only here: the trace readers stay lenient with other tools'
// files. job.state is normalized already (short codes, "CANCELLED by 0", absent = COMPLETED).
std::optional<ApiError> check_state(const Job& job, const json& obj) {
  if (is_finished_state(job.state)) return std::nullopt;
  const auto it = obj.find("state");
  const std::string sent = it != obj.end() && it->is_string() ? it->get<std::string>() : job.state;
  const std::string taken = " (sacct's short codes such as CD or OOM and \"CANCELLED by N\" are taken "
                            "too; absent means COMPLETED)";
  if (is_slurm_state(job.state)) {
    return error(ApiErrorKind::kInvalidField, "state",
                 "state: \"" + shown_value(sent) + "\": the job has not finished; /v1/complete takes "
                 "the final state of a finished job, one of " + finished_state_names() + taken);
  }
  return error(ApiErrorKind::kInvalidField, "state",
               "state: \"" + shown_value(sent) + "\" is not a Slurm job state; expected the final "
               "state of a finished job, one of " + finished_state_names() + taken);
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

std::string shown_value(std::string_view v) {
  std::string out(v.substr(0, 40));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

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
                     std::to_string(limits.max_body_bytes()) + std::string(kBodyLimitHint));
  }
  if (body.empty()) return error(ApiErrorKind::kMalformedJson, "body", "body: empty");
  const Shape shape = json_shape(body);
  if (shape.depth > limits.max_depth) {
    return error(ApiErrorKind::kMalformedJson, "body",
                 "body: nested deeper than " + std::to_string(limits.max_depth) + " levels");
  }
  if (shape.values > limits.max_json_values) {
    return error(ApiErrorKind::kTooLarge, "body",
                 "body: more than " + std::to_string(limits.max_json_values) +
                     " JSON values (a job record has a few dozen)");
  }
  json obj;
  // A name given twice in one object: nlohmann keeps the last, another reader (a proxy, a log
  // scanner, the client's own check) may keep the first, so the request could mean two things.
  std::vector<std::unordered_set<std::string>> keys;  // the names seen, per object being read
  std::optional<std::string> twice;
  const json::parser_callback_t on_event = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == json::parse_event_t::key && !twice && !keys.empty()) {
      const std::string& name = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(name).second) twice = name;
    }
    return true;
  };
  try {
    obj = json::parse(body, on_event);
  } catch (const json::parse_error& e) {
    // Where and why, never what: the parser's own message quotes the bytes it last read ("last
    // read: '...'"), which can be a script's secret, and the Slurm hook writes a refusal's reason
    // to slurmctld's log.
    return error(ApiErrorKind::kMalformedJson, "body",
                 "body: not valid JSON at byte " + std::to_string(e.byte) + ": " +
                     json_error_reason(e.what(), JsonQuote::kNothing));
  } catch (const json::exception& e) {
    // out_of_range for a number too large for a double ("1e999"; the number is not named)
    return error(ApiErrorKind::kMalformedJson, "body",
                 "body: not valid JSON: " + json_error_reason(e.what(), JsonQuote::kNothing));
  }
  if (!obj.is_object()) {
    return error(ApiErrorKind::kMalformedJson, "body", "body: expected a JSON object (one job record)");
  }
  if (twice) {
    const std::string name = shown_value(*twice);
    return error(ApiErrorKind::kInvalidField, name,
                 name + ": given twice in one object; each field may appear once");
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
  if (auto e = check_fields(*job, limits)) return *e;
  if (kind == BodyKind::kComplete) {
    if (auto e = check_state(*job, obj)) return *e;
  }
  if (job->script && job->script->size() > limits.max_script_bytes) {
    return error(ApiErrorKind::kTooLarge, "script",
                 "script: " + std::to_string(job->script->size()) + " bytes, over the limit of " +
                     std::to_string(limits.max_script_bytes) + " (--max-script-bytes)");
  }
  // script_key and labels exactly as the trace readers compute them.
  ingest::finalize_job(*job, limits.util_cap);
  return std::move(*job);
}

}  // namespace peakcast::serve
