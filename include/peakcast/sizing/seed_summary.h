// Sizing results over seeds: each policy's mean (and range) over the seeds it was replayed with,
// and how a peakcast policy compares with the best of the field's baselines on those means.
// `peakcast simulate --seeds N` prints and writes both; `peakcast report --sim` shows the means.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "peakcast/sizing/policy.h"
#include "peakcast/sizing/simulate.h"

namespace peakcast::sizing {

struct Spread {
  double mean = 0.0, min = 0.0, max = 0.0;
};

struct SeedSummary {
  std::string policy;
  size_t seeds = 0;  // rows of this policy (one per seed)
  Spread waste_gbh, failures, retries, failed_jobs, jobs;
};

// One summary per policy, in the order each policy first appears in `rows` (one Tally per
// policy and seed; Tally::workload is ignored).
std::vector<SeedSummary> summarize_seeds(const std::vector<std::pair<std::string, Tally>>& rows);
std::vector<SeedSummary> summarize_seeds(const std::vector<PolicyResult>& results);

struct BaselineComparison {
  std::string policy;          // e.g. "peakcast"
  std::string best_baseline;   // the baseline (is_baseline) with the least mean waste
  double waste_gbh = 0.0, baseline_waste_gbh = 0.0;
  double waste_ratio = 0.0;    // waste_gbh / baseline_waste_gbh (infinity when that is 0 and ours is not)
  double failures = 0.0, baseline_failures = 0.0;  // mean failed attempts
  size_t seeds = 0;
};

// `policy` against the baseline of least mean waste; nullopt when either is absent.
std::optional<BaselineComparison> compare_with_best_baseline(const std::vector<SeedSummary>& summary,
                                                             const std::string& policy = "peakcast");

}  // namespace peakcast::sizing
