// The reliability-gated cascade (model kind "cascade"; docs/method.md §4–7, §10).
//
// Per job and relevant resource r (memory always, VRAM when GPUs are requested), with the frozen
// policy (expert e_r, threshold tau_r, trust coefficient and floor):
//   no history at all              -> Q_r                                   route no_history
//   exact-script history and
//     C_{r,e}(features) >= tau_r   -> H = e_r's exact-script value          route bypass
//   otherwise                      -> gamma Q + (1 - gamma) H, gamma = G_{r,e}(features, Q)
//                                     (H at the answering level: exact script, else same user);
//                                     with exact history clipped to [H - d, H + d],
//                                     d = max(floor_r, coef_r x MAD)        route encoder | cache
//   finally clipped to [0, cap].
// The encoder runs for a job when any relevant resource is not bypassed; a resource whose gate
// said bypass keeps H even then (each resource's policy is chosen independently on validation).
// Q comes from the exact cache when (script text, user, request) was seen before (route cache).
// A resource whose Q comes from the tree route (q_source tree_route) takes route tree instead of
// encoder, cache or no_history: the code model does not run for it. One whose Q is the mean of
// both (q_source mean) runs both and keeps the code model's route (encoder, cache, no_history).
//
// Upper bound: upper_util = min(cap, util + q_{r,route}), q the split-conformal quantile of |y -
// prediction| on the policy half of validation at `coverage`, per resource and route class
// (bypass, encoder with exact history, encoder with user history, no history; pooled per
// resource where a class has fewer than min_conformal residuals). recommended_bytes =
// min(upper_util, 1) x capacity: never above the request (sizing up is a user's call; on traces
// with cap > 1 the excess is reported in upper_util only), and equal to the request when the
// exact-script window holds an OUT_OF_MEMORY run (a censored label is a lower bound: no sizing
// down after an OOM).
//
// Thread safety: after train() or load() the model is immutable except the exact cache, which
// has its own mutex; predict* may run concurrently.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/cascade/cascade_config.h"
#include "peakcast/cascade/cascade_train.h"
#include "peakcast/cascade/predictor.h"
#include "peakcast/core/log.h"
#include "peakcast/models/code/code_model.h"

namespace peakcast::cascade {

// 2: gate features with walk-forward errors, the combined estimate, the tree route, history_only.
// 4: training.labelled per resource (a resource without training labels is not predicted).
// 5: the code model and the tree route read redacted text (ingest::finalize_job).
inline constexpr int kCascadeFormatVersion = 5;

// Where a resource's Q comes from: the neural code model (the study's), the tree route
// (tree_route.h), whichever did better on the gate/fusion set, or the mean of both where neither
// did clearly better (CascadeConfig::q_source_unclear).
enum class QSource : int { kCodeModel = 0, kTreeRoute = 1, kMean = 2 };
std::string_view q_source_name(QSource s);  // "code_model", "tree_route", "mean"
// Whether a Q from `s` needs the code model's output / the tree route's.
constexpr bool uses_code_model(QSource s) { return s != QSource::kTreeRoute; }
constexpr bool uses_tree_route(QSource s) { return s != QSource::kCodeModel; }

// The frozen choice for one resource, and how it did on the policy set.
struct ResourcePolicy {
  // history_only per history level (exact_script, user): a job whose history answers at such a
  // level gets history_expert's estimate, as if bypassed; elsewhere the gated, fused cascade with
  // `expert`. Q alone where there is no history. Each level keeps history alone unless the fused
  // cascade is clearly better on that level's jobs of the policy set.
  std::array<bool, 2> history_only{false, false};
  history::Expert history_expert = history::Expert::kCombined;
  bool history_only_at(history::Level l) const {
    return l != history::Level::kNone && history_only[static_cast<size_t>(l)];
  }
  bool all_history_only() const { return history_only[0] && history_only[1]; }
  // q_alone per history level: the fusion saw fewer than min_component_examples jobs at this level
  // in training, so where the fused cascade serves this level it serves Q alone (gamma 1), as it
  // does with no history, instead of a weight learned on other levels.
  std::array<bool, 2> q_alone{false, false};
  bool q_alone_at(history::Level l) const {
    return l != history::Level::kNone && q_alone[static_cast<size_t>(l)];
  }
  // A per-level flag pair (history_only, q_alone) in words: "yes" (both levels),
  // "exact_script", "user" or "no".
  static std::string_view levels_name(const std::array<bool, 2>& at) {
    return at[0] && at[1] ? "yes" : at[0] ? "exact_script" : at[1] ? "user" : "no";
  }
  // The history-only choice in words, as describe() and the training log give it:
  // "" (none), " history only (median5)" (both levels), " history only at user (median5)".
  std::string history_only_text() const;
  history::Expert expert = history::Expert::kLast1;
  double tau = 1.01;           // bypass when the gate's probability >= tau (> 1: never)
  double trust_coef = 1e9;
  double trust_floor = 0.1;
  size_t policy_n = 0;         // policy-set jobs valid for the resource
  double policy_mae = 0.0;     // cascade MAE there with this choice
  double policy_encoder_share = 0.0;  // share of them that ran the code model (0 under the tree route)
  double policy_history_mae = 0.0;    // hierarchical e_r alone (history only), for reference
  double policy_fused_mae = 0.0;      // the best gated/fused grid entry there, for reference
};

// Conformal half-width per route class (bypass, encoder_exact, encoder_user, no_history).
inline constexpr int kRouteClasses = 4;
struct UpperBound {
  std::array<double, kRouteClasses> q{};   // NaN: class uses `pooled`
  std::array<size_t, kRouteClasses> n{};
  double pooled = 0.0;                      // NaN: no upper bound for this resource
  size_t pooled_n = 0;
};

struct CascadeTrainReport {
  TrainingSets sets;
  models::code::CodeTrainReport code;
  std::array<ResourcePolicy, kNumResources> policy;
  std::array<QSource, kNumResources> q_source{QSource::kCodeModel, QSource::kCodeModel};
  // MAE of Q on the gate/fusion set per resource: {code model, tree route}.
  std::array<std::array<double, 2>, kNumResources> q_mae{};
  // How many gate/fusion-set jobs (valid for the resource) the source was chosen on: 0 where the
  // set had none (every one still running when the policy set began: purged), and the code model
  // was kept by default.
  std::array<size_t, kNumResources> q_n{};
  // Train-block jobs (the code model's fit and early-stopping sets) with a label per resource, an
  // OOM's lower bound included: what Q and the tree route learned from. A resource with none is
  // not predicted (JobPrediction: vram null; mem the fallback, saying so, with no bound).
  std::array<size_t, kNumResources> labelled{};
  double seconds_code = 0.0, seconds_components = 0.0, seconds_policy = 0.0;
};

class CascadeModel final : public Predictor {
 public:
  ~CascadeModel() override;
  CascadeModel(CascadeModel&&) noexcept;
  CascadeModel& operator=(CascadeModel&&) noexcept;

  // Trains the code model, the gates and fusions for every expert, chooses the policy and
  // calibrates the upper bound, following the protocol of cascade_train.h. Errors: invalid
  // config, no train or validation job, the code model's errors. progress stages: "code_model"
  // (epochs), "gate_fusion", "policy".
  static Result<CascadeModel> train(const TrainingInput& input, const CascadeConfig& config,
                                    const ProgressFn& progress = {});

  // Writes DIR/manifest.json (format_version, kind "cascade", config, policy, upper bound,
  // feature names and statistics, training-set sizes), DIR/training_sets.json (the job ids),
  // DIR/gate_<r>.ubj and DIR/fusion_<r>.ubj (the selected experts' boosters, when not constant),
  // and DIR/code/ (the code model's own directory). Files are written atomically.
  Status save(const std::string& dir) const;
  // Refuses a newer format_version (kUnsupported, with a clear message).
  static Result<CascadeModel> load(const std::string& dir);
  // The same from an already parsed manifest (load_predictor's dispatch).
  static Result<CascadeModel> load(const std::string& dir, const nlohmann::json& manifest);

  // Predictor: queries `history` at job.submit_ms, then predict_views().
  JobPrediction predict(const Job& job, const history::HistoryStore& history) const override;
  std::string describe() const override;
  double util_cap() const override;

  // Harness form: the history views are given (no HistoryStore needed). Uses and fills the cache.
  JobPrediction predict_views(const Job& job, const HistoryViews& views) const;
  // Batch form: the jobs are taken in order (the cache sees them as if one by one); the code
  // model runs once, batched, over the jobs that need it and miss the cache. A batched forward
  // may differ from batch-1 in the last float bits; within one call, a cache hit equals the
  // output computed for its first occurrence.
  std::vector<JobPrediction> predict_views_batch(std::span<const Job* const> jobs,
                                                 std::span<const HistoryViews> views) const;

  const models::code::CodeModel& code_model() const;
  const CascadeConfig& config() const;
  const std::array<ResourcePolicy, kNumResources>& policy() const;
  const std::array<UpperBound, kNumResources>& upper_bound() const;
  const std::array<double, kNumResources>& fallback() const;
  // Priors of the combined estimate (history::Expert::kCombined) per resource.
  const std::array<history::ExpertPriors, kNumResources>& priors() const;
  const std::array<QSource, kNumResources>& q_source() const;
  // Training-time report (sets by id, code-model report, policy); after load() the sets are those
  // in training_sets.json and timings are 0.
  const CascadeTrainReport& report() const;
  // What a short history left the training's choices to rest on, one sentence each (empty when
  // every choice had the evidence it asks for): a gate/fusion set smaller than
  // min_component_examples (gate and fusion are then constants), and per trained resource a Q
  // source left at the code model because the gate/fusion set held fewer than kMinLevelJobs
  // labelled jobs to compare the two sources on (q_source auto). `peakcast train` prints them.
  // Meaningful after train(), not after load().
  std::vector<std::string> training_notes() const;
  void clear_cache() const;
  size_t cache_size() const;

  struct Impl;  // src/cascade/cascade_internal.h

 private:
  static Result<CascadeModel> load_checked(const std::string& dir, const nlohmann::json& manifest);
  explicit CascadeModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace peakcast::cascade
