// Canonical JSONL (../shared/data/README.md): one job per line. Conversion both ways, used by the
// reader, `peakcast synth`, `peakcast predict` and the service.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::ingest {

// Bounds the canonical form accepts (anything beyond is garbage, not a job). Every reader rejects
// values outside them, so whatever it produces can be written and read back.
inline constexpr double kMaxEpochSeconds = 1e11;  // also the largest walltime in seconds
inline constexpr double kMaxBytes = 1.8e19;       // below 2^64
inline constexpr double kMaxCount = 1e7;          // CPUs or GPUs of one job

struct JobParseOptions {
  // Service requests carry no outcome yet: end_time and peaks become optional (end_time is 0
  // when absent).
  bool require_outcome = true;
};

// Parses one canonical record. Unknown keys are errors unless they start with "x_"; wrong types
// and negative or absurd numbers name the field. The message has no location; callers prefix it.
Result<Job> job_from_json(const nlohmann::json& obj, const JobParseOptions& o = {});

// The canonical record for `job` (derived fields are not written; absent optionals are omitted,
// peaks are written as null when absent).
nlohmann::json job_to_json(const Job& job);
std::string job_to_jsonl_line(const Job& job);  // one line, no trailing newline

}  // namespace peakcast::ingest
