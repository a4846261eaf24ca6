// Calibrated upper bounds in `peakcast evaluate`: for a method's point predictions, an online
// conformal upper bound (sizing::OnlineBound, one per history level) at nominal 0.80, 0.90 and
// 0.95, replayed in event time, and its empirical coverage and mean width on the test block.
//
// Protocol (no leakage). Jobs from the first validation submission on (validation, purged
// validation and test blocks: none of them was fitted on) are walked in submit order. Before a
// job's bound is issued, every one of those jobs that ended strictly before its submission has
// been observed with the bound that was issued for it (OnlineBound::observe_issued), in end-time
// order; so the residual history starts on the validation block and a test job's bound uses only
// labels known at its submission. Bounds are clipped to [point, cap] as the daemon issues them.
// Coverage = share of the valid test jobs with label <= bound; width = mean (bound - point).
// A censored (OOM) test job's label is the limit it was killed at and its peak was above it: it
// counts as a miss unless its bound was above that label (never here: bounds stop at the cap,
// which a censored label is), as OnlineBound judges it; `censored` counts them among n.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/eval/method.h"
#include "peakcast/eval/metrics.h"
#include "peakcast/sizing/bound_walk.h"
#include "peakcast/sizing/online_bound.h"

namespace peakcast::eval {

inline constexpr std::array<double, 3> kCoverageLevels = {0.8, 0.9, 0.95};
// The bound's settings here and in peakcastd (sizing::served_bound_options).
inline sizing::OnlineBoundOptions coverage_bound_options(double coverage) {
  return sizing::served_bound_options(coverage);
}
inline constexpr size_t kNumCoverageLevels = kCoverageLevels.size();
// JSON keys of the levels: "0.8", "0.9", "0.95".
std::string coverage_key(double level);

// The figures of the scored jobs answered at one history level (exact script, user, none).
struct LevelCoverage {
  std::array<double, kNumCoverageLevels> coverage{};
  std::array<double, kNumCoverageLevels> width{};
  std::array<double, kNumCoverageLevels> capped{};
  size_t n = 0;
};

// One script of a walk's scored jobs (a job without a script key is a script of its own): how
// many scored jobs it had and how many of them each nominal level's bound covered (a mean over a
// method's seeds after mean_script_tallies). The unit the coverage interval resamples: in a
// workflow a script's jobs come as a burst and are missed together.
struct ScriptTally {
  double n = 0.0;
  std::array<double, kNumCoverageLevels> covered{};
};

// One ScriptTally per script key, in first-appearance order; a job without a key ("") is a
// script of its own (ScriptIndex, metrics.h: the MAE difference's script bootstrap reads the same).
struct ScriptTallies {
  // The index in `tallies` of `key`'s tally (a new one for a new key or for "").
  size_t index(const std::string& key);
  std::vector<ScriptTally> tallies;

 private:
  ScriptIndex index_;
};

// A percentile interval of the coverage at each nominal level (kCoverageLevels order).
struct CoverageInterval {
  std::array<double, kNumCoverageLevels> lo{};
  std::array<double, kNumCoverageLevels> hi{};
  double level = 0.95;
  size_t resamples = 0;
};

struct BoundCoverage {
  std::array<double, kNumCoverageLevels> coverage{};  // empirical, on the scored test jobs
  std::array<double, kNumCoverageLevels> width{};     // mean bound - point (label units)
  // Share of the scored jobs whose bound is the cap (no evidence, or the quantile reaches the
  // cap): covered whatever their label, so they pull the coverage above nominal.
  std::array<double, kNumCoverageLevels> capped{};
  size_t n = 0;         // test jobs scored (valid)
  size_t censored = 0;  // of them censored (OOM): misses, their peak was above the cap
  // The same per history level that answered the job (indexed by history::Level): where the
  // misses and the capped bounds come from.
  std::array<LevelCoverage, sizing::kNumLevels> by_level{};
  size_t scripts = 0;                 // distinct scripts among the scored jobs
  std::vector<ScriptTally> tallies;   // one per script, first-appearance order
  // How much the coverage depends on which scripts the block happened to hold (coverage_interval);
  // set by evaluate when its bootstrap is on.
  std::optional<CoverageInterval> interval;
};

// One job of the walk: its record, the history level that answered at its submission, the
// point prediction (label units, clipped to [0, cap]) and whether it is scored (a test job).
struct WalkedJob {
  const Job* job = nullptr;
  history::Level level = history::Level::kNone;
  double point = 0.0;
  bool scored = false;
};

// The bound issued for each job of a walk (same protocol, one setting; sizing/bound_walk.h):
// clipped to [point, max(cap, point)], the cap itself where the job's level had no evidence yet.
using IssuedBound = sizing::IssuedBound;
std::vector<IssuedBound> online_bounds(std::span<const WalkedJob> jobs, Resource r, double util_cap,
                                       const sizing::OnlineBoundOptions& options);

// One walked job with the bounds issued for it at each nominal level (kCoverageLevels order):
// what `peakcast evaluate --bound-walk FILE` writes, so the coverage figures can be re-walked.
struct WalkRecord {
  WalkedJob walked;
  std::array<IssuedBound, kNumCoverageLevels> issued{};
};

// The protocol above over `jobs` (submit order, valid for r): bounds issued at each submission,
// completions observed strictly before the next submission, coverage on the scored jobs.
// `base`: the bound's settings (its coverage is replaced by each nominal level); evaluate and the
// daemon use coverage_bound_options().
// `walk`, when given, receives every walked job with its bounds (the validation jobs too).
BoundCoverage online_coverage(std::span<const WalkedJob> jobs, Resource r, double util_cap,
                              const sizing::OnlineBoundOptions& base = coverage_bound_options(0.9),
                              std::vector<WalkRecord>* walk = nullptr);

// The coverage of `method`'s bounds on `data` for resource r. `test_points` are the method's
// test-block predictions, parallel to `test` (as evaluate_jobs made them); the validation jobs
// are predicted here. nullopt-like: n == 0 when no test job is scored.
BoundCoverage bound_coverage(const EvalData& data, const Method& method,
                             std::span<const JobContext* const> test,
                             std::span<const Prediction> test_points, Resource r,
                             std::vector<WalkRecord>* walk = nullptr);

// One JSON object per walked job (a line of --bound-walk's JSON Lines): method, resource, job
// id, block ("validation" or "test": only test jobs are scored), submit and end times (epoch
// seconds), history level, script key, point and label (utilization), censored, and per nominal
// level the bound, whether the level had evidence and the level's alpha_t at issue.
nlohmann::json walk_record_json(const std::string& method, Resource r, const WalkRecord& w);

// Adds to a result row's JSON: "coverage", "bound_width" and "bound_capped" ({"0.8": .., "0.9": ..,
// "0.95": ..}; null when no test job was scored), "coverage_interval" ({"0.8": [lo, hi], ..}; null
// without one), "bound_n", "bound_censored", "bound_scripts" and
// "bound_by_level": {"exact_script" | "user" | "none": {"n", "coverage", "bound_width",
// "bound_capped"} or null when no scored job was answered there}.
void add_coverage_json(const BoundCoverage& c, nlohmann::json& row);

// The tables' cell for the 0.90 bound: "0.903 [0.871, 0.930] (0.142)" (coverage, its interval
// when there is one, mean width), "-" when no job was scored; and its column's header.
std::string coverage_cell(const BoundCoverage& c);
std::string coverage_header(bool with_interval);

// Mean over runs (seeds, folds) of rows that have n > 0 (per level: of runs with jobs at that
// level); n, censored and scripts are means over those runs. Leaves tallies and interval empty.
BoundCoverage mean_coverage(std::span<const BoundCoverage> runs);

// The tallies of runs over the same walk (a method's seeds: the same jobs and scripts in the same
// order), the covered counts averaged over the runs that scored jobs. Throws std::invalid_argument
// when two such runs hold different scripts.
std::vector<ScriptTally> mean_script_tallies(std::span<const BoundCoverage> seeds);

// Script bootstrap of the coverage: each resample draws, for every block, as many scripts as the
// block holds, with replacement, takes every job of a drawn script, and computes the block's
// coverage; the resample's figure is the mean over the blocks (one block: the split; several: the
// folds, each drawn on its own, for the fold mean). The interval is the (1 - level)/2 and
// 1 - (1 - level)/2 quantiles of the resampled figures. Deterministic in `seed`. nullopt when
// resamples == 0, there is no block, or a block has no script.
std::optional<CoverageInterval> coverage_interval(std::span<const std::vector<ScriptTally>> blocks,
                                                  size_t resamples, uint64_t seed,
                                                  double level = 0.95);

}  // namespace peakcast::eval
