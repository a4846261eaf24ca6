// The combined estimate, its priors, and the sample-size-aware choice among the estimates.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "peakcast/core/stats.h"
#include "peakcast/history/history.h"

namespace peakcast::history {

double combined_estimate(const KeyStats& s, const std::array<double, kNumExperts>& prior_err) {
  double num = 0.0, den = 0.0;
  const double n = static_cast<double>(s.err_n);
  for (int k = 0; k < kNumExperts; ++k) {
    const double score = (n * s.recent_err[k] + kPriorJobs * prior_err[k]) / (n + kPriorJobs);
    const double w = std::pow(score + kCombineEps, -kCombinePower);
    num += w * s.expert[k];
    den += w;
  }
  return num / den;
}

void ExpertPriorAccumulator::add(const HistoryView& view, double label) {
  if (view.level == Level::kNone) return;
  const auto l = static_cast<size_t>(view.level);
  const KeyStats& s = view.answering();
  for (int k = 0; k < kNumExperts; ++k) sum_[l][k] += std::fabs(s.expert[k] - label);
  ++n_[l];
}

bool ExpertPriorAccumulator::add_exact(const HistoryView& view, const Job& job, Resource r,
                                       double util_cap) {
  if (!job.is_valid(r) || !label_exact(job, r, util_cap)) return false;
  add(view, std::clamp(job.label(r), 0.0, util_cap));
  return true;
}

ExpertPriors ExpertPriorAccumulator::priors() const {
  ExpertPriors p;
  for (size_t l = 0; l < 2; ++l) {
    p.n[l] = n_[l];
    if (n_[l] == 0) continue;  // nothing learned at this level: stay uniform
    for (int k = 0; k < kNumExperts; ++k) p.err[l][k] = sum_[l][k] / static_cast<double>(n_[l]);
  }
  return p;
}

MeanSe mean_and_se(std::span<const double> d) {
  const size_t n = d.size();
  if (n < 2) return {};
  double sum = 0.0, sq = 0.0;
  for (double x : d) {
    sum += x;
    sq += x * x;
  }
  const double mean = sum / static_cast<double>(n);
  const double var = std::max(0.0, (sq - sum * mean) / static_cast<double>(n - 1));
  return {mean, std::sqrt(var / static_cast<double>(n))};
}

MeanSe clustered_mean_and_se(std::span<const double> d, std::span<const uint64_t> cluster) {
  if (d.size() != cluster.size()) {
    throw std::invalid_argument("clustered_mean_and_se: one cluster per difference");
  }
  const size_t n = d.size();
  if (n < 2) return {};
  double sum = 0.0;
  for (double x : d) sum += x;
  const double mean = sum / static_cast<double>(n);
  std::unordered_map<uint64_t, double> dev;  // per cluster: the sum of (d - mean)
  for (size_t i = 0; i < n; ++i) dev[cluster[i]] += d[i] - mean;
  const auto g = static_cast<double>(dev.size());
  if (dev.size() < 2) return {mean, std::numeric_limits<double>::infinity()};
  double sq = 0.0;
  for (const auto& [c, u] : dev) sq += u * u;
  const double var = g / (g - 1.0) * sq / (static_cast<double>(n) * static_cast<double>(n));
  return {mean, std::sqrt(var), g - 1.0};
}

double small_sample_factor(double df) {
  if (!(df >= 1.0)) return std::numeric_limits<double>::infinity();
  if (std::isinf(df)) return 1.0;
  static const double z = normal_quantile(0.975);
  return student_t_quantile(0.975, df) / z;
}

Expert choose_estimate(const std::vector<std::array<double, kNumEstimates>>& abs_err, double z) {
  const auto def = static_cast<size_t>(Expert::kCombined);
  if (abs_err.size() < 2) return Expert::kCombined;
  Expert best = Expert::kCombined;
  double best_mean = 0.0;  // mean paired difference to the default: < 0 is better
  std::vector<double> d(abs_err.size());
  for (Expert e : kEstimates) {
    const auto k = static_cast<size_t>(e);
    if (k == def) continue;
    for (size_t i = 0; i < abs_err.size(); ++i) d[i] = abs_err[i][k] - abs_err[i][def];
    const MeanSe m = mean_and_se(d);
    if (m.mean + z * m.se < 0.0 && m.mean < best_mean) {
      best = e;
      best_mean = m.mean;
    }
  }
  return best;
}

}  // namespace peakcast::history
