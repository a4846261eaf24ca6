// Policy selection and the conformal upper bound (internal; see cascade_train.h for the protocol).
#pragma once

#include <array>
#include <vector>

#include "cascade/cascade_internal.h"

namespace peakcast::cascade {

// Gates and fusions for every resource and expert, before the policy picks one expert each.
struct PolicyCandidates {
  std::array<std::array<Component, history::kNumEstimates>, kNumResources> gate, fusion;
  std::array<std::array<std::vector<double>, history::kNumEstimates>, kNumResources> gate_mean;
  std::array<history::ExpertPriors, kNumResources> priors;  // those the components saw
};

// On the policy set (positions into input.jobs, with Q for each), per resource: the expert, tau,
// trust coefficient and floor with the lowest MAE over jobs valid for the resource (ties within
// 1e-12 go to fewer encoder calls, then to the earlier grid entry); then the conformal half-widths
// per route class. Moves the chosen components into out.gate / out.fusion and fills out.policy,
// out.upper and out.gate_feature_mean.
void choose_policy(const TrainingInput& input, const std::vector<size_t>& policy_positions,
                   const std::vector<models::code::CodePrediction>& q, PolicyCandidates& cand,
                   const CascadeConfig& cfg, CascadeModel::Impl& out);

}  // namespace peakcast::cascade
