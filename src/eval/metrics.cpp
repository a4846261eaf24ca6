#include "peakcast/eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "peakcast/core/stats.h"

namespace peakcast::eval {

void MetricsAccumulator::add_error(double err) {
  ++n_;
  abs_sum_ += err;
  sq_sum_ += err * err;
  if (err <= kAccTolerance + 1e-9) ++within_;
}

void MetricsAccumulator::add(double prediction, double label) { add_error(std::fabs(prediction - label)); }

Metrics MetricsAccumulator::finish() const {
  Metrics m;
  m.n = n_;
  if (n_ == 0) return m;
  const auto n = static_cast<double>(n_);
  m.mae = abs_sum_ / n;
  m.mse = sq_sum_ / n;
  m.rmse = std::sqrt(m.mse);
  m.acc10 = static_cast<double>(within_) / n;
  return m;
}

int64_t utc_day(int64_t epoch_ms) {
  constexpr int64_t kDay = 86400 * 1000;
  int64_t d = epoch_ms / kDay;
  if (epoch_ms % kDay < 0) --d;
  return d;
}

double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0.0;
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

uint64_t draw_below(std::mt19937_64& rng, uint64_t bound) {
  unsigned __int128 m = static_cast<unsigned __int128>(rng()) * bound;
  auto low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(rng()) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

size_t ScriptIndex::index(const std::string& key) {
  const size_t fresh = size_;
  const size_t i = key.empty() ? fresh : index_.try_emplace(key, fresh).first->second;
  if (i == fresh) ++size_;
  return i;
}

namespace {

// One block of a paired bootstrap: both methods' summed errors over its jobs.
struct BlockSums {
  double method = 0, baseline = 0;
  size_t n = 0;
};

void check_lengths(size_t a, size_t b, size_t c, const char* who) {
  if (a != b || a != c) throw std::invalid_argument(std::string(who) + ": spans differ in length");
}

// The paired block bootstrap: job i belongs to block block_of[i] (every one of the n_blocks holds
// a job), and each resample draws n_blocks blocks with replacement, taking both methods' errors
// over every job of a drawn block. The point is the difference of the mean errors over all jobs.
BootstrapInterval resample_blocks(std::span<const size_t> block_of, size_t n_blocks,
                                  std::span<const double> abs_err_method,
                                  std::span<const double> abs_err_baseline, size_t resamples,
                                  uint64_t seed, double level) {
  std::vector<BlockSums> blocks(n_blocks);
  double total_m = 0, total_b = 0;
  for (size_t i = 0; i < block_of.size(); ++i) {
    BlockSums& d = blocks[block_of[i]];
    d.method += abs_err_method[i];
    d.baseline += abs_err_baseline[i];
    ++d.n;
    total_m += abs_err_method[i];
    total_b += abs_err_baseline[i];
  }
  BootstrapInterval out;
  out.point = (total_m - total_b) / static_cast<double>(block_of.size());
  out.resamples = resamples;
  std::mt19937_64 rng(seed);
  std::vector<double> diffs;
  diffs.reserve(resamples);
  double sum = 0;
  for (size_t b = 0; b < resamples; ++b) {
    double sm = 0, sb = 0;
    size_t n = 0;
    for (size_t k = 0; k < blocks.size(); ++k) {
      const BlockSums& d = blocks[draw_below(rng, blocks.size())];
      sm += d.method;
      sb += d.baseline;
      n += d.n;
    }
    const double diff = (sm - sb) / static_cast<double>(n);  // n > 0: every block has a job
    diffs.push_back(diff);
    sum += diff;
  }
  std::sort(diffs.begin(), diffs.end());
  const double alpha = (1.0 - level) / 2.0;
  out.mean = sum / static_cast<double>(resamples);
  out.lo = quantile_sorted(diffs, alpha);
  out.hi = quantile_sorted(diffs, 1.0 - alpha);
  return out;
}

}  // namespace

std::optional<BootstrapInterval> paired_day_bootstrap(std::span<const int64_t> day,
                                                      std::span<const double> abs_err_method,
                                                      std::span<const double> abs_err_baseline,
                                                      size_t resamples, uint64_t seed,
                                                      double level) {
  check_lengths(day.size(), abs_err_method.size(), abs_err_baseline.size(), "paired_day_bootstrap");
  if (day.empty() || resamples == 0) return std::nullopt;
  // Days in ascending order, so the draws do not depend on job order.
  std::vector<int64_t> days(day.begin(), day.end());
  std::sort(days.begin(), days.end());
  days.erase(std::unique(days.begin(), days.end()), days.end());
  std::vector<size_t> block_of(day.size());
  for (size_t i = 0; i < day.size(); ++i) {
    block_of[i] = static_cast<size_t>(std::lower_bound(days.begin(), days.end(), day[i]) - days.begin());
  }
  BootstrapInterval out =
      resample_blocks(block_of, days.size(), abs_err_method, abs_err_baseline, resamples, seed, level);
  out.days = days.size();
  return out;
}

std::optional<BootstrapInterval> paired_script_bootstrap(std::span<const std::string> script_key,
                                                         std::span<const double> abs_err_method,
                                                         std::span<const double> abs_err_baseline,
                                                         size_t resamples, uint64_t seed,
                                                         double level) {
  check_lengths(script_key.size(), abs_err_method.size(), abs_err_baseline.size(),
                "paired_script_bootstrap");
  if (script_key.empty() || resamples == 0) return std::nullopt;
  // Scripts in first-appearance order (the scored jobs' order is the same for every method
  // compared on them, so is the scripts').
  ScriptIndex index;
  std::vector<size_t> block_of(script_key.size());
  for (size_t i = 0; i < script_key.size(); ++i) block_of[i] = index.index(script_key[i]);
  BootstrapInterval out =
      resample_blocks(block_of, index.size(), abs_err_method, abs_err_baseline, resamples, seed, level);
  out.scripts = index.size();
  return out;
}

}  // namespace peakcast::eval

namespace peakcast::eval {

SeedSummary summarize_seeds(std::span<const Metrics> per_seed) {
  SeedSummary s;
  s.seeds = per_seed.size();
  if (per_seed.empty()) return s;
  s.mean.n = s.sd.n = per_seed.front().n;
  std::vector<double> v(per_seed.size());
  auto field = [&](double Metrics::*f, double& mean, double& sd) {
    for (size_t i = 0; i < per_seed.size(); ++i) v[i] = per_seed[i].*f;
    const MeanSd m = mean_sd(v);
    mean = m.mean;
    sd = m.sd;
  };
  field(&Metrics::mae, s.mean.mae, s.sd.mae);
  field(&Metrics::mse, s.mean.mse, s.sd.mse);
  field(&Metrics::rmse, s.mean.rmse, s.sd.rmse);
  field(&Metrics::acc10, s.mean.acc10, s.sd.acc10);
  return s;
}

}  // namespace peakcast::eval
