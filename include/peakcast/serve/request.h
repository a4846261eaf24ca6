// Turning a request body into a Job: the one parser for /v1/predict and /v1/complete bodies
// (a canonical record, docs/formats.md). Never throws on any input; never keeps or logs
// the script beyond the returned Job.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "peakcast/core/job.h"
#include "peakcast/serve/errors.h"

namespace peakcast::serve {

struct RequestLimits {
  size_t max_script_bytes = 1 << 20;  // --max-script-bytes
  int max_depth = 16;                 // JSON nesting (the record is flat; x_ keys may nest a bit)
  size_t max_json_values = 4096;      // values in the body (a record has a few dozen): parse
                                      // memory stays a small multiple of the body
  size_t max_id_bytes = 256;          // job_id, user, partition, account, state
  size_t max_partitions = 64;         // names in a partition list ("gpu,cpu": --partition's form)
  size_t max_name_bytes = 1024;       // job_name, workload
  double util_cap = 1.0;              // for the labels of completions
  // Whole-body bound: room for any script within max_script_bytes however JSON escapes it (a
  // quote takes 2 bytes, a control character or any \u-escaped one 6: the most a byte can
  // become), plus 64 KiB for the other fields. The script's own limit is checked after parsing
  // (413 naming the script and --max-script-bytes). Parse memory stays a small multiple of this.
  static constexpr size_t kMaxEscapedBytesPerByte = 6;
  size_t max_body_bytes() const { return max_script_bytes * kMaxEscapedBytesPerByte + (64 << 10); }
};

// Said with a 413 for the body (by the HTTP framing and by parse_job_body): only a record whose
// fields other than the script exceed 64 KiB, or a script over --max-script-bytes, makes a body
// this long.
inline constexpr std::string_view kBodyLimitHint =
    " (peakcastd's body limit is 6 x --max-script-bytes + 64 KiB: room for a script at its limit "
    "however JSON escapes it, and 64 KiB for the other fields)";

enum class BodyKind {
  kPredict,   // no outcome: end_time and peaks must be absent (or null)
  kComplete,  // with outcome: end_time required
};

// A Job with script_key and (for completions) labels filled, or the error to answer.
using ParsedJob = std::variant<Job, ApiError>;
ParsedJob parse_job_body(std::string_view body, BodyKind kind, const RequestLimits& limits);

// The states a job ends in (COMPLETED, FAILED, OUT_OF_MEMORY, CANCELLED, TIMEOUT, NODE_FAIL,
// PREEMPTED, BOOT_FAIL, DEADLINE): only then is its peak final. `normalized_state` as
// normalize_state gives it. /v1/complete and peakcastd's sacct sync take no other.
bool is_finished_state(std::string_view normalized_state);
std::string finished_state_names();

// A client's value quoted in an error message: its first 40 bytes, anything but printable ASCII
// as '?' (the value may be hostile, and the Slurm hook logs a refusal's reason).
std::string shown_value(std::string_view v);

// Checks that `s` is valid UTF-8 without NUL bytes (exposed for tests).
bool is_clean_utf8(std::string_view s);

}  // namespace peakcast::serve
