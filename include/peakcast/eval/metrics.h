// Point metrics and the paired bootstraps of the MAE difference: by submit day (docs/method.md
// §8) and, for a test block within one day, by script (docs/evaluation.md "Bootstrap intervals").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace peakcast::eval {

// Acc@10%: share of jobs with |prediction - label| <= 0.10 (a 1e-9 slack absorbs rounding, so
// an error of exactly 0.1 counts as within).
inline constexpr double kAccTolerance = 0.10;

struct Metrics {
  size_t n = 0;
  double mae = 0.0;
  double mse = 0.0;
  double rmse = 0.0;
  double acc10 = 0.0;  // share in [0, 1]
};

// Streaming accumulator; finish() gives zeros for an empty set (n == 0 marks it).
class MetricsAccumulator {
 public:
  // One job by its scored error (peakcast::scored_error, >= 0): |prediction - label| for an exact
  // label, max(0, label - prediction) for a censored one that is only a lower bound. MAE, MSE and
  // Acc@10% all read that error, so a prediction at or above a lower bound counts as no error.
  void add_error(double scored_error);
  // A prediction of an exact label: add_error(|prediction - label|).
  void add(double prediction, double label);
  Metrics finish() const;

 private:
  size_t n_ = 0;
  double abs_sum_ = 0.0;
  double sq_sum_ = 0.0;
  size_t within_ = 0;
};

// Metrics of one method over several training seeds: the mean of each field, and its sample
// standard deviation (n - 1 in the denominator; 0 for a single seed). n is the first seed's
// (every seed scores the same jobs). Empty input -> zeros.
struct SeedSummary {
  Metrics mean;
  Metrics sd;
  size_t seeds = 0;
};
SeedSummary summarize_seeds(std::span<const Metrics> per_seed);

// UTC day of an epoch-milliseconds time (floor division, correct for negative times).
int64_t utc_day(int64_t epoch_ms);

struct BootstrapInterval {
  double point = 0.0;   // MAE(method) - MAE(baseline) on the full set
  double mean = 0.0;    // mean of the resampled differences
  double lo = 0.0;      // (1 - level)/2 quantile
  double hi = 0.0;      // 1 - (1 - level)/2 quantile
  size_t days = 0;      // distinct days resampled (paired_day_bootstrap; 0 by script)
  size_t resamples = 0;
  size_t scripts = 0;   // distinct scripts resampled (paired_script_bootstrap; 0 by day)
};

// One index per script key, in first-appearance order; a job without a key ("") is a script of
// its own. The one definition of "a job's script" for the script bootstraps (the MAE
// difference's here, the bound coverage's in coverage.h).
class ScriptIndex {
 public:
  // The index of `key`'s script: a new one (== size() before the call) for a new key or for "".
  size_t index(const std::string& key);
  size_t size() const { return size_; }

 private:
  std::unordered_map<std::string, size_t> index_;
  size_t size_ = 0;
};

// Quantile of sorted values by linear interpolation between order statistics (R type 7); 0 when
// empty. The bootstrap's interval ends and `peakcast inspect`'s quantiles.
double quantile_sorted(const std::vector<double>& sorted, double q);

// Unbiased draw in [0, bound) from a 64-bit engine (Lemire's multiply-shift with rejection), so
// the bootstraps' draws are the same on every standard library. bound > 0.
uint64_t draw_below(std::mt19937_64& rng, uint64_t bound);

// Paired day-block bootstrap of MAE(method) - MAE(baseline). Element i of the three spans is one
// scored job: its submit day and both methods' absolute errors. Each resample draws the distinct
// days with replacement and takes every job of a drawn day for BOTH methods. The draws depend only
// on (seed, number of days), so every method compared on the same jobs sees the same days.
// nullopt when there are no jobs or resamples == 0.
std::optional<BootstrapInterval> paired_day_bootstrap(std::span<const int64_t> day,
                                                      std::span<const double> abs_err_method,
                                                      std::span<const double> abs_err_baseline,
                                                      size_t resamples, uint64_t seed,
                                                      double level = 0.95);

// The same paired bootstrap with the test block's scripts as the blocks (ScriptIndex: a job
// without a key is a script of its own): each resample draws as many scripts as there are, with
// replacement, and takes every job of a drawn script for BOTH methods. In a workflow a script's
// jobs come as a burst and share their fate, so a block within one submit day (one block for
// paired_day_bootstrap, an "interval" that is its point) still has an interval. The point is
// paired_day_bootstrap's on the same jobs; the draws depend only on (seed, number of scripts).
// nullopt when there are no jobs or resamples == 0.
std::optional<BootstrapInterval> paired_script_bootstrap(std::span<const std::string> script_key,
                                                         std::span<const double> abs_err_method,
                                                         std::span<const double> abs_err_baseline,
                                                         size_t resamples, uint64_t seed,
                                                         double level = 0.95);

}  // namespace peakcast::eval
