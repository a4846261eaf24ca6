// Rolling-origin evaluation (`peakcast evaluate --folds K`): K expanding-window folds over the
// last `test_share` of the jobs by submit order. Fold k tests on the k-th of K equal consecutive
// blocks of that tail and fits on every job before it, split into train and validation in the
// proportions of EvalConfig::split (60:20 by default) with the same completion-boundary purge as
// the single split. A choice tuned to one test block shows up as spread across folds.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/eval/evaluate.h"

namespace peakcast::eval {

struct FoldsConfig {
  size_t folds = 5;          // >= 2
  double test_share = 0.5;   // share of all jobs (the tail) the folds cover; in (0, 1)
};

struct FoldSummary {
  std::string method;
  Resource resource = Resource::kMem;
  // Per fold, 1..K in order (NaN where the fold was skipped or has no valid job for the resource).
  std::vector<double> mae;
  size_t folds_scored = 0;  // folds with a value (those the mean, s.d. and wins are over)
  double mean = 0.0;        // over the folds with a value
  double sd = 0.0;          // sample s.d. over them (0 for one)
  size_t folds_won = 0;     // folds where this method had the lowest MAE for the resource (a
                            // tie: each tied method wins it, so the wins can add up to more than K)
  BoundCoverage bounds;     // coverage.h: mean over the folds that scored any job
};

// A fold its data could not fit: a method refused its blocks as input (kInvalidInput, e.g. the
// cascade's "the validation block needs at least 2 jobs" when a burst purged it whole).
struct SkippedFold {
  size_t fold = 0;     // 1-based
  std::string reason;  // the method's error
  std::string method;  // the method that refused it; empty when the fold could not be evaluated
                       // at all (e.g. the purge emptied its train block)
};

struct FoldsReport {
  FoldsConfig config;
  std::vector<EvalReport> folds;      // each fitted fold's full report (bootstrap and latency off)
  std::vector<size_t> fold_numbers;   // parallel to folds: which fold (1-based) each is
  std::vector<SkippedFold> skipped;   // folds left out of every method's summary, by fold
  // EvalConfig::leave_out_refusals: each method refused by every fold that ran, left out of the
  // folds (no summary row), with the first such fold's refusal ("fold k/K: ...").
  std::vector<std::pair<std::string, std::string>> left_out;
  // Every (method, resource) scored in any fold, method order as requested, mem before vram.
  std::vector<FoldSummary> summary;
};

// Whether `fc` can be run on `n_jobs` jobs: at least 2 folds, a test share in (0, 1), a job per
// fold in the tail and 4 before it. `evaluate` checks it before the split's run, which is long.
Status check_folds(size_t n_jobs, const FoldsConfig& fc);

// Runs the folds; `config` is used as is for every fold except its split (and bootstrap and
// latency, which are off). A fold that a method refuses as input is skipped for every method
// (the means stay over the same blocks) and said in the table and JSON; an error of another
// kind, or every fold skipped, is an error naming the fold. With config.leave_out_refusals, a
// method refused by every fold is left out of the folds instead (FoldsReport::left_out) and the
// folds are the other methods'; one refused by some folds only still skips those.
Result<FoldsReport> evaluate_folds(const std::vector<Job>& jobs, const MethodRegistry& registry,
                                   const EvalConfig& config, const FoldsConfig& folds,
                                   const ProgressFn& progress = {});

std::string render_folds_table(const FoldsReport& r);
// "METHOD: left out of the folds: it could not be trained on any fold's training blocks (REASON)",
// as the folds' table and `peakcast evaluate`'s stderr say a FoldsReport::left_out entry.
std::string folds_left_out_line(const std::string& method, const std::string& reason);
nlohmann::json to_json(const FoldsReport& r);

}  // namespace peakcast::eval
