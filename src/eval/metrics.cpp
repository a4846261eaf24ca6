#include "peakcast/eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
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

std::optional<BootstrapInterval> paired_day_bootstrap(std::span<const int64_t> day,
                                                      std::span<const double> abs_err_method,
                                                      std::span<const double> abs_err_baseline,
                                                      size_t resamples, uint64_t seed,
                                                      double level) {
  if (day.size() != abs_err_method.size() || day.size() != abs_err_baseline.size()) {
    throw std::invalid_argument("paired_day_bootstrap: spans differ in length");
  }
  if (day.empty() || resamples == 0) return std::nullopt;
  // Per-day sums, days in ascending order so the draws do not depend on job order.
  struct DaySums {
    double method = 0, baseline = 0;
    size_t n = 0;
  };
  std::map<int64_t, DaySums> by_day;
  double total_m = 0, total_b = 0;
  for (size_t i = 0; i < day.size(); ++i) {
    DaySums& d = by_day[day[i]];
    d.method += abs_err_method[i];
    d.baseline += abs_err_baseline[i];
    ++d.n;
    total_m += abs_err_method[i];
    total_b += abs_err_baseline[i];
  }
  std::vector<DaySums> days;
  days.reserve(by_day.size());
  for (auto& [_, d] : by_day) days.push_back(d);

  BootstrapInterval out;
  out.point = (total_m - total_b) / static_cast<double>(day.size());
  out.days = days.size();
  out.resamples = resamples;
  std::mt19937_64 rng(seed);
  std::vector<double> diffs;
  diffs.reserve(resamples);
  double sum = 0;
  for (size_t b = 0; b < resamples; ++b) {
    double sm = 0, sb = 0;
    size_t n = 0;
    for (size_t k = 0; k < days.size(); ++k) {
      const DaySums& d = days[draw_below(rng, days.size())];
      sm += d.method;
      sb += d.baseline;
      n += d.n;
    }
    const double diff = (sm - sb) / static_cast<double>(n);  // n > 0: every day has a job
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
