// Bounds every reader applies to what it reads (anything beyond is garbage, not a job). The
// canonical JSONL form accepts exactly these, so whatever a reader produces can be written and
// read back.
#pragma once

namespace peakcast::ingest {

inline constexpr double kMaxEpochSeconds = 1e11;  // also the largest walltime in seconds
inline constexpr double kMaxBytes = 1.8e19;       // below 2^64
inline constexpr double kMaxCount = 1e7;          // CPUs or GPUs of one job

}  // namespace peakcast::ingest
