// Chronological split with completion-boundary purge (docs/method.md §2).
//
// Jobs are ordered by submit time (ties keep input order) and cut by position into train /
// validation / test (default 60/20/20). A train job whose end_time is at or after the first
// validation submission had no known label when validation starts, so it is purged; likewise a
// validation job ending at or after the first test submission. Purged jobs still become history
// in event time (the replay sees every job); they are only left out of fitting and choosing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/stats.h"
#include "peakcast/core/status.h"

namespace peakcast::eval {

enum class Block : uint8_t { kTrain, kValidation, kTest, kPurgedTrain, kPurgedValidation };
std::string_view block_name(Block b);  // "train", "validation", "test", "purged_train", ...

struct SplitConfig {
  // Shares of the jobs by submit order; positive, normalized by their sum.
  double train = 0.6;
  double validation = 0.2;
  double test = 0.2;
};
// "60/20/20" or "0.6/0.2/0.2": three positive numbers separated by '/'. Error says the form.
Result<SplitConfig> parse_split(std::string_view text);
std::string format_split(const SplitConfig& c);  // "60/20/20"

struct SplitCounts {
  size_t total = 0;
  size_t train = 0;              // kept (after purge)
  size_t validation = 0;         // kept (after purge)
  size_t test = 0;
  size_t purged_train = 0;
  size_t purged_validation = 0;
  int64_t first_validation_submit = 0;  // epoch ms
  int64_t first_test_submit = 0;        // epoch ms
};

struct Split {
  std::vector<const Job*> order;   // every job, by submit time (stable)
  std::vector<Block> block;        // parallel to order
  SplitCounts counts;
  // Fallback for jobs without any eligible history: median label of the purged train block per
  // resource (0 when that block has no valid label for the resource; fallback_n says so).
  std::array<double, kNumResources> fallback{0.0, 0.0};
  std::array<size_t, kNumResources> fallback_n{0, 0};
};

// Where the jobs after the first `share` of `total` (of n jobs in submit order) begin
// (core/stats.h): the split's blocks and the folds' tail are cut with it.
using peakcast::share_position;

// Builds the split over `jobs` (which must outlive it). Fails when a block would be empty.
Result<Split> make_split(const std::vector<Job>& jobs, const SplitConfig& config);

// Median of values (mean of the two middle ones for even sizes); 0 for an empty input.
double median(std::vector<double> values);

}  // namespace peakcast::eval
