// The evaluation protocol end to end (docs/method.md §2, §8): split + purge, one event-time replay over
// ALL jobs in submit order (test jobs that completed earlier are history for later test jobs),
// fit each method on train/validation, predict the test block, score per resource on valid test
// jobs, bootstrap against hier_last1, and break down by history level at submission.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "peakcast/core/log.h"
#include "peakcast/core/status.h"
#include "peakcast/eval/coverage.h"
#include "peakcast/eval/method.h"
#include "peakcast/eval/metrics.h"
#include "peakcast/eval/routing.h"
#include "peakcast/eval/split.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::eval {

struct EvalConfig {
  SplitConfig split;
  std::vector<std::string> methods;  // empty: every registered method
  uint64_t seed = 42;                // bootstrap and methods
  size_t bootstrap = 10000;          // resamples; 0 disables the interval
  double util_cap = 1.0;             // predictions are clipped to [0, util_cap]
  // Learned (seeded) methods are trained this many times, with seeds seed .. seed + seeds - 1;
  // deterministic methods run once (their s.d. is 0). >= 1.
  size_t seeds = 1;
  int threads = 0;                   // MethodOptions::threads (0 = all cores)
  std::vector<std::pair<std::string, std::string>> code_options;  // MethodOptions::code_options
  std::string encoder;  // MethodOptions::encoder (empty: bag)
  std::vector<std::pair<std::string, std::string>> cascade_options;  // MethodOptions::cascade_options
  // Latency pass: the first latency_jobs test jobs (submit order) are predicted again one by one,
  // batch 1, with each method's caches cleared first, timed with steady_clock around each
  // predict() call. 0 turns the pass off.
  size_t latency_jobs = 2000;
  // When set, called once per requested method and scored resource (first seed, the split only)
  // with the walk behind its coverage figures (`--bound-walk`), after every seed of the method
  // was scored: a method left out (leave_out_refusals), at any seed, has no walk.
  std::function<void(const std::string& method, Resource r, std::span<const WalkRecord> walk)> on_bound_walk;
  // When set, a requested method other than the baseline that refuses its training blocks as
  // input (kInvalidInput: a young history the cascade's purges leave too few jobs) is left out of
  // the results, with its reason in EvalReport::left_out, as `--folds` leaves out a fold, instead
  // of failing the evaluation (`peakcast report`'s use). Any other error still fails it.
  bool leave_out_refusals = false;
};

// Subgroups by the history level that answered at submission (history::Level order).
inline constexpr std::array<std::string_view, 3> kSubgroupNames = {"exact_script", "user_only",
                                                                   "none"};

// With several seeds: `metrics` and `subgroups` are the means over seeds and `metrics_sd` the
// sample s.d. (0 for one seed and for deterministic methods); the bootstrap resamples each job's
// error (scored_error, as the rows: one-sided for a lower bound) averaged over the seeds, so its point estimate equals the mean over seeds of
// MAE(method) - MAE(baseline) (MAE is linear in the per-job errors); `routes` are the first
// seed's counts and `routing` the mean of the per-seed shares; latency is measured on the first
// seed's model.
struct ResultRow {
  std::string method;
  Resource resource = Resource::kMem;
  Metrics metrics;
  Metrics metrics_sd;                                     // s.d. over seeds (n as metrics)
  size_t seeds = 1;                                       // training runs behind the row
  std::optional<BootstrapInterval> mae_diff_vs_baseline;  // nullopt when bootstrap disabled
  // The same difference bootstrapped over the test block's scripts (paired_script_bootstrap):
  // what the tables show where the day bootstrap has one submit day. nullopt when bootstrap is
  // disabled and in the baseline's own row.
  std::optional<BootstrapInterval> mae_diff_by_script;
  std::array<Metrics, 3> subgroups;                       // indexed like kSubgroupNames
  std::map<std::string, size_t> routes;                   // route -> scored test jobs
  std::optional<Routing> routing;                         // cascade-vocabulary routes only
  std::map<std::string, LatencyStats> latency_us;         // job route -> batch-1 timings (per
                                                          // method: same in both resources' rows)
  BoundCoverage bounds;  // online conformal bounds (coverage.h); mean over seeds; n = 0: none
};

struct EvalReport {
  std::string trace_path;
  std::string trace_format;
  ingest::ReadStats reader;
  SplitConfig split_config;
  SplitCounts split;
  std::array<double, kNumResources> fallback{};
  std::array<size_t, kNumResources> fallback_n{};
  std::array<size_t, kNumResources> scored{};  // valid test jobs per resource
  uint64_t seed = 0;
  size_t seeds = 1;
  size_t latency_jobs = 0;
  size_t bootstrap = 0;
  double util_cap = 1.0;
  int threads = 1;  // learned methods' threads, 0 resolved (printed in the table; not in JSON)
  std::string baseline{kBaselineMethod};
  std::vector<ResultRow> results;  // method order as requested, mem before vram; resources
                                   // without any valid test job are left out
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> choices;
  std::vector<std::string> notes;         // about the evaluation (e.g. an empty fallback)
  // EvalConfig::leave_out_refusals: each method left out, with its refusal.
  std::vector<std::pair<std::string, std::string>> left_out;
  std::vector<std::string> reader_notes;  // what the reader said about the trace
};

// Evaluates over the trace's jobs. Refuses (kInvalidInput, with the reason) a trace without
// submit times, since no timeline can be built for it.
Result<EvalReport> evaluate(const ingest::Trace& trace, const MethodRegistry& registry,
                            const EvalConfig& config, const ProgressFn& progress = {});

// The methods `config` asks for, in its order: config.methods, or every registered one when empty.
std::vector<std::string> requested_methods(const EvalConfig& config, const MethodRegistry& registry);

// Same protocol over jobs built in code (labels and script_key filled).
Result<EvalReport> evaluate_jobs(const std::vector<Job>& jobs, const MethodRegistry& registry,
                                 const EvalConfig& config, const ProgressFn& progress = {});

// Runs the event-time replay over split.order and returns each job's views and block (the data
// every method fits on). Exposed for tests and for tools that train outside evaluate().
EvalData build_eval_data(const Split& split, double util_cap, const ProgressFn& progress = {});

}  // namespace peakcast::eval
