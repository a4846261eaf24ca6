// Gate and fusion feature vectors (order fixed by the name tables; saved models depend on it).
#include "peakcast/cascade/cascade_features.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "peakcast/features/request.h"

namespace peakcast::cascade {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// exact: 14 features, user: 14 features (4 experts, log1p count, mad, spread, log1p age h,
// censored, the 4 experts' recent walk-forward errors, how many labels those rest on).
constexpr int kLevelFeatures = 14;

void put_level(const history::KeyStats& s, float* out) {
  if (s.count <= 0) {
    std::fill(out, out + kLevelFeatures, kNaN);
    out[4] = 0.0f;  // count 0 is known, not missing
    return;
  }
  for (int e = 0; e < history::kNumExperts; ++e) out[e] = static_cast<float>(s.expert[static_cast<size_t>(e)]);
  out[4] = static_cast<float>(std::log1p(static_cast<double>(s.count)));
  out[5] = static_cast<float>(s.mad);
  out[6] = static_cast<float>(s.spread);
  out[7] = static_cast<float>(std::log1p(std::max(0.0, s.age_last_s) / 3600.0));
  out[8] = static_cast<float>(s.censored_recent);
  for (int e = 0; e < history::kNumExperts; ++e) {
    out[9 + e] = s.err_n > 0 ? static_cast<float>(s.recent_err[static_cast<size_t>(e)]) : kNaN;
  }
  out[13] = static_cast<float>(s.err_n);
}

}  // namespace

const std::array<std::string_view, kGateFeatures>& gate_feature_names() {
  static const std::array<std::string_view, kGateFeatures> names = {
      "h", "level", "disagreement_h",
      "exact_last1", "exact_median3", "exact_median5", "exact_ewma", "exact_log1p_n",
      "exact_mad", "exact_spread", "exact_log1p_age_h", "exact_censored",
      "exact_err_last1", "exact_err_median3", "exact_err_median5", "exact_err_ewma", "exact_err_n",
      "user_last1", "user_median3", "user_median5", "user_ewma", "user_log1p_n",
      "user_mad", "user_spread", "user_log1p_age_h", "user_censored",
      "user_err_last1", "user_err_median3", "user_err_median5", "user_err_ewma", "user_err_n",
      "exact_vs_user",
      "log1p_req_cpus", "log1p_req_mem_gib", "log1p_req_gpus", "log1p_req_time_h",
      "log1p_mem_per_core_gib", "log1p_gpu_mem_gib", "has_gpu", "has_mem_request",
      "script_absent"};
  return names;
}

const std::array<std::string_view, kFusionFeatures>& fusion_feature_names() {
  static const std::array<std::string_view, kFusionFeatures> names = [] {
    std::array<std::string_view, kFusionFeatures> n{};
    const auto& g = gate_feature_names();
    std::copy(g.begin(), g.end(), n.begin());
    n[kGateFeatures] = "q";
    n[kGateFeatures + 1] = "q_minus_h";
    n[kGateFeatures + 2] = "abs_q_minus_h";
    return n;
  }();
  return names;
}

GateFeatures gate_features(const Job& job, const history::HistoryView& view, history::Expert e,
                           double fallback, const history::ExpertPriors& priors) {
  static_assert(3 + 2 * kLevelFeatures + 1 + features::kNumRequestFeatures + 1 == kGateFeatures);
  GateFeatures f{};
  const double h = view.estimate(e, fallback, priors);
  f[0] = static_cast<float>(h);
  f[1] = static_cast<float>(static_cast<int>(view.level));
  // How far the candidate is from the other experts at the answering level.
  if (view.level != history::Level::kNone) {
    const history::KeyStats& a = view.answering();
    double far = 0.0;
    for (double x : a.expert) far = std::max(far, std::abs(x - h));
    f[2] = static_cast<float>(far);
  } else {
    f[2] = kNaN;
  }
  put_level(view.exact, &f[3]);
  put_level(view.user, &f[3 + kLevelFeatures]);
  const auto ei = static_cast<size_t>(e == history::Expert::kCombined ? history::Expert::kMedian3 : e);
  f[3 + 2 * kLevelFeatures] =
      (view.exact.count > 0 && view.user.count > 0)
          ? static_cast<float>(std::abs(view.exact.expert[ei] - view.user.expert[ei]))
          : kNaN;
  const auto req = features::raw_request_features(job);
  std::copy(req.begin(), req.end(), f.begin() + 4 + 2 * kLevelFeatures);
  f[kGateFeatures - 1] = (job.script && !job.script->empty()) ? 0.0f : 1.0f;
  return f;
}

FusionFeatures fusion_features(const GateFeatures& gate, double h, double q) {
  FusionFeatures f{};
  std::copy(gate.begin(), gate.end(), f.begin());
  f[kGateFeatures] = static_cast<float>(q);
  f[kGateFeatures + 1] = static_cast<float>(q - h);
  f[kGateFeatures + 2] = static_cast<float>(std::abs(q - h));
  return f;
}

bool relevant(const Job& job, Resource r) {
  return r == Resource::kMem || (job.req_gpus && *job.req_gpus > 0);
}

}  // namespace peakcast::cascade
