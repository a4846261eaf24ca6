// Canonical JSONL (docs/formats.md): one job per line. Conversion both ways, used by the
// reader, `peakcast synth`, `peakcast predict` and the service.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"
#include "peakcast/ingest/bounds.h"  // the ranges the canonical form accepts

namespace peakcast::ingest {

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
