// Internals of the cascade shared by training (cascade_train.cpp, cascade_policy.cpp), prediction
// and the model directory (cascade_model.cpp, cascade_io.cpp); tests include it for the leakage
// guard. Not part of the public contract.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "peakcast/cascade/cascade_model.h"
#include "peakcast/cascade/exact_cache.h"
#include "peakcast/cascade/tree_route.h"
#include "peakcast/models/gbdt.h"

namespace peakcast::cascade {

// A trained booster, or a constant where there were too few examples or only one class.
struct Component {
  std::optional<models::Booster> booster;
  double constant = 0.0;
  size_t n = 0;  // training examples
  double predict(std::span<const float> row) const;
  // rows x cols row-major -> [rows]
  std::vector<double> predict_rows(const std::vector<float>& data, size_t rows, size_t cols) const;
};

// Fits a component: booster when n >= min_examples (and, for a classifier, both classes occur);
// otherwise the constant `fallback_constant`.
Component fit_component(const models::GbdtParams& params, const std::vector<float>& x, size_t cols,
                        const std::vector<float>& y, const std::vector<float>* weights,
                        size_t min_examples, double fallback_constant);

// Route classes of the upper bound: bypass, encoder with exact history, encoder with user
// history only, no history.
enum RouteClass : int { kClassBypass = 0, kClassEncoderExact = 1, kClassEncoderUser = 2, kClassNoHistory = 3 };
std::string_view route_class_name(int c);

// d = max(floor, coef x MAD); f clipped into [h - d, h + d].
double trust_clip(double f, double h, double mad, double coef, double floor);
// Fused value gamma q + (1 - gamma) h, gamma clamped to [0, 1].
inline double fuse(double gamma, double q, double h) { return gamma * q + (1.0 - gamma) * h; }

// Split-conformal half-width: the ceil((n + 1) coverage)-th smallest |residual|; NaN when n is
// below min_n; +inf when that rank exceeds n.
double conformal_quantile(std::vector<double> abs_residuals, double coverage, size_t min_n);

// Positions (in TrainingInput::jobs) whose labels the code model saw: its fit and early-stopping
// sets. The only door through which Q's outputs reach gate/fusion training is out_of_sample_q().
class CodeModelSight {
 public:
  explicit CodeModelSight(size_t n) : saw_(n, false) {}
  void mark(size_t pos) { saw_.at(pos) = true; }
  bool saw(size_t pos) const { return saw_.at(pos); }

 private:
  std::vector<bool> saw_;
};

// Q for the jobs at `positions` (batched). Throws std::logic_error when the code model saw any of
// them: an output for such a job would carry its label into the gate or fusion.
std::vector<models::code::CodePrediction> out_of_sample_q(const models::code::CodeModel& code,
                                                          const CodeModelSight& sight,
                                                          const TrainingInput& input,
                                                          const std::vector<size_t>& positions);

struct CascadeModel::Impl {
  CascadeConfig cfg;
  double util_cap = 1.0;
  std::array<double, kNumResources> fallback{0.5, 0.5};
  std::string trained_on;
  int64_t trained_at_s = 0;  // epoch seconds at the end of training (manifest "trained_at")
  models::code::CodeModel code;
  // Where Q comes from per resource (chosen on the gate/fusion set): the code model or the tree
  // route. The tree route exists when some resource uses it.
  std::array<QSource, kNumResources> q_source{QSource::kCodeModel, QSource::kCodeModel};
  std::optional<TreeRoute> tree;
  // Priors of the combined history estimate (learned on every train and validation job).
  std::array<history::ExpertPriors, kNumResources> priors;
  std::array<Component, kNumResources> gate;    // for the chosen expert of each resource
  std::array<Component, kNumResources> fusion;
  std::array<ResourcePolicy, kNumResources> policy;
  std::array<UpperBound, kNumResources> upper;
  // Mean of each gate feature over the gate's training examples (NaN-skipping), for drift checks.
  std::array<std::vector<double>, kNumResources> gate_feature_mean;
  CascadeTrainReport report;
  mutable std::unique_ptr<ExactCache> cache;
};

// Training entry (cascade_train.cpp): fills everything in Impl but the cache.
Result<std::unique_ptr<CascadeModel::Impl>> train_cascade(const TrainingInput& input,
                                                          const CascadeConfig& cfg,
                                                          const ProgressFn& progress);

}  // namespace peakcast::cascade

namespace peakcast::cascade {

// Q of QSource::kMean: the mean of the code model's and the tree route's, one definition for
// training (chosen_q) and serving (add_tree_q).
inline float mean_q(float code, float tree) {
  return static_cast<float>(0.5 * (static_cast<double>(code) + static_cast<double>(tree)));
}

// One resource's value once the pieces are known; the same code decides in policy selection and
// in predict, so the policy is chosen for exactly what is served. gamma and q are read only
// when not bypassed; mad is the exact-script MAD.
inline double resolve_util(history::Level level, bool bypass, double h, double q, double gamma,
                           double mad, const ResourcePolicy& p, double cap) {
  double v;
  if (level == history::Level::kNone) {
    v = q;
  } else if (bypass) {
    v = h;
  } else {
    v = fuse(std::clamp(gamma, 0.0, 1.0), q, h);
    if (level == history::Level::kExactScript) v = trust_clip(v, h, mad, p.trust_coef, p.trust_floor);
  }
  return std::clamp(v, 0.0, cap);
}

inline int route_class(history::Level level, bool bypass) {
  if (level == history::Level::kNone) return kClassNoHistory;
  if (bypass) return kClassBypass;
  return level == history::Level::kExactScript ? kClassEncoderExact : kClassEncoderUser;
}

}  // namespace peakcast::cascade
