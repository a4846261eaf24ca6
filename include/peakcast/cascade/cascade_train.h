// What the cascade trains on, and the protocol that keeps the gate and the fusion honest.
//
// Inputs are plain: the jobs in submit order, each with its role (the caller's split) and its
// hierarchical history views at submission (event time, as history::replay gives them), the
// fallback utilizations and the cap. src/cascade does not know the evaluation harness; the eval
// adapters map eval::Block to Role (purged jobs -> kIgnore) and pass the views they already have.
//
// Protocol (docs/method.md §4–6; every split by submit order, every set recorded by job id):
//   train block      = code-model FIT set (first 1 - code_holdout_share) ++ code-model EARLY-
//                      STOPPING set (last code_holdout_share). Q sees labels of both: the first
//                      through gradients, the second through the choice of epoch. Fit jobs whose
//                      end_time is at or after the first early-stopping submission are purged
//                      from the fit set early stopping runs on (as below; an error when none is
//                      left); where any were, Q is then trained again on the fit set with them
//                      back in for the epochs chosen (their labels were known by validation).
//                      The tree route (Q's other candidate) is fit and early-stopped on the same
//                      two sets (and refit likewise for the rounds chosen), and the combined
//                      estimate's priors for training come from the whole train block.
//   validation block = GATE/FUSION set (first fit_share_of_validation) ++ POLICY set (the rest).
//                      Gate/fusion jobs whose end_time is at or after the first policy-set
//                      submission are purged (their label was not known when the policy set
//                      starts), like the split's completion-boundary purge.
//   test block, kIgnore: never read by training.
// Q's outputs reach the gate and fusion only through one function that throws std::logic_error
// when asked for a job in the code model's fit or early-stopping set, and training ends with an
// assertion (throw) that the gate/fusion examples are disjoint from those sets, by position and,
// when the job ids are unique, by id. Q's source per resource (code model or tree route) is
// chosen on the gate/fusion set. The policy (estimate e and tau_r jointly, trust-region
// coefficient and floor, per resource; or history alone, kept unless the best of those is
// better by history_margin_se standard errors) and the conformal upper bound use only the policy
// set, whose labels neither Q nor the gate/fusion saw. Then everything is frozen; for serving,
// the priors are re-learned on train + validation and a chosen tree route is refit on them for
// the number of rounds early stopping picked (no choice is made on that refit).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/cascade/cascade_features.h"
#include "peakcast/core/job.h"
#include "peakcast/history/history.h"

namespace peakcast::cascade {

enum class Role : uint8_t { kTrain, kValidation, kTest, kIgnore };

struct TrainingJob {
  const Job* job = nullptr;   // labels filled (compute_labels); outlives training
  Role role = Role::kIgnore;
  HistoryViews views;         // the store as it was at job->submit_ms, per resource
};

struct TrainingInput {
  std::vector<TrainingJob> jobs;                     // submit order
  std::array<double, kNumResources> fallback{0.5, 0.5};  // no-history utilization per resource
  double util_cap = 1.0;
  std::string trained_on;                            // free text for describe() / the manifest
};

// Builds TrainingInput::jobs from jobs in submit order and their roles (parallel) by one
// event-time replay (history::replay). Convenience for callers without their own replay
// (the CLI's `train`, tests). Throws std::invalid_argument when sizes differ or the order is not
// by submit time.
std::vector<TrainingJob> with_history_views(const std::vector<const Job*>& jobs_in_submit_order,
                                            const std::vector<Role>& roles);

// Which jobs each component learned from (job ids, in submit order).
struct TrainingSets {
  std::vector<std::string> code_fit;               // early stopping's fit set, after its purge
  std::vector<std::string> code_early_stopping;
  std::vector<std::string> gate_fusion;            // the gate/fusion block, after its purge
  std::vector<std::string> policy;
  size_t code_fit_purged = 0;                      // ended after the early-stopping set began
                                                   // (in the refit, not in the choice of epoch)
  size_t gate_fusion_purged = 0;                   // ended after the policy set began
  // Per resource and expert: the examples each booster actually used.
  std::array<std::array<std::vector<std::string>, history::kNumEstimates>, kNumResources> gate;
  std::array<std::array<std::vector<std::string>, history::kNumEstimates>, kNumResources> fusion;
  size_t fusion_censored_dropped = 0;              // OOM-censored labels left out (not label_exact)
};

}  // namespace peakcast::cascade
