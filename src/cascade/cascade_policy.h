// Policy selection and the conformal upper bound (internal; see cascade_train.h for the protocol).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "cascade/cascade_internal.h"

namespace peakcast::cascade {

// Gates and fusions for every resource and expert, before the policy picks one expert each.
struct PolicyCandidates {
  std::array<std::array<Component, history::kNumEstimates>, kNumResources> gate, fusion;
  std::array<std::array<std::vector<double>, history::kNumEstimates>, kNumResources> gate_mean;
  std::array<history::ExpertPriors, kNumResources> priors;  // those the components saw
  // Fusion training examples per history level (exact_script, user).
  std::array<std::array<std::array<size_t, 2>, history::kNumEstimates>, kNumResources> fusion_level_n{};
};

// One policy-set job's absolute errors under the fused cascade and under history alone.
// `cluster` names the history the job was answered from (its script at the exact-script level,
// its user at the user level): jobs of one cluster share their errors.
struct LevelErrors {
  history::Level level;
  double fused, history;
  uint64_t cluster;
};
// Fewer policy-set jobs at a history level on which the two choices differ than this keep that
// level's default.
inline constexpr size_t kMinLevelJobs = 10;
// Per history level (exact_script, user), whether history alone serves it. Each level has a
// default that the other choice must beat clearly: the paired difference of absolute errors
// beyond `margin_se` cluster-robust standard errors (history::clustered_mean_and_se: a gain
// carried by two scripts is two pieces of evidence, not two hundred), with at least kMinLevelJobs jobs
// where the two differ (ties carry no evidence, however many). With
// exact-script history the default is history alone (history first: the fused cascade must show
// a clear gain); with user history only it is the fused cascade, as in the study, where the gate
// is consulted only with exact-script history (another script's usage is weak evidence).
std::array<bool, 2> history_alone_by_level(const std::vector<LevelErrors>& rows, double margin_se);

// One gate/fusion-set job's errors (scored_error) under Q from the code model and from the tree
// route, and the script it belongs to (its jobs share their errors).
struct QErrors {
  double code, tree;
  uint64_t cluster;
};
// Where Q comes from. Fewer than kMinLevelJobs jobs on which the two differ (none included): the
// default, the code model. `margin_se` 0: the source with the lower mean error (a tie keeps the
// code model). Above 0: a source only where its mean error is lower than the other's
// by more than `margin_se` cluster-robust standard errors of the paired difference (widened by
// history::small_sample_factor), as history_alone_by_level asks of the fused cascade: on a small
// block a dozen jobs of a few scripts would otherwise decide the source of every new script's Q.
// Where neither is clearly better, `unclear` (the code model, or the mean of both).
QSource q_source_by_margin(const std::vector<QErrors>& rows, double margin_se, QSource unclear);

// On the policy set (positions into input.jobs, with Q for each), per resource: the expert, tau,
// trust coefficient and floor with the lowest MAE over jobs valid for the resource (ties within
// 1e-12 go to fewer encoder calls, then to the earlier grid entry); then the conformal half-widths
// per route class. Moves the chosen components into out.gate / out.fusion and fills out.policy,
// out.upper and out.gate_feature_mean.
void choose_policy(const TrainingInput& input, const std::vector<size_t>& policy_positions,
                   const std::vector<models::code::CodePrediction>& q, PolicyCandidates& cand,
                   const CascadeConfig& cfg, CascadeModel::Impl& out);

}  // namespace peakcast::cascade
