// The tree route: one gradient-boosted regressor per resource over everything known at
// submission in tabular form:
//   - the gate features (cascade_features.h): every expert at the exact-script and user levels,
//     their walk-forward errors, counts, MAD, spread, age, the request numbers;
//   - the user, one-hot over hashed ids;
//   - the script (or identity text) as hashed uni-/bi-gram presence, from the code model's own
//     tokens (models::code::code_tokens).
// Only user and token columns present in at least kMinColumnJobs of the jobs the columns were
// built from become features, renumbered densely after the gate block (XGBoost's split search
// costs per feature and node; of 2^18 hashed columns a few thousand occur).
//
// The `xgboost` baseline of the harness is this model trained on the train block; the cascade
// uses it as a candidate for Q (cascade_train.h), next to the neural code model, as a bag: several
// boosters per resource, each drawing its own rows and columns (subsample, colsample_bytree) from
// its own seed, their predictions averaged (CascadeConfig::tree_bag; docs/evaluation.md).
//
// Thread safety: after fit() or load(), const methods may run concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/cascade/cascade_features.h"
#include "peakcast/models/gbdt.h"

namespace peakcast::cascade {

class TreeRoute {
 public:
  static constexpr size_t kMinColumnJobs = 2;

  // One job as the route reads it: the job and its history view for the resource.
  struct Row {
    const Job* job = nullptr;
    const history::HistoryView* view = nullptr;
  };

  TreeRoute() = default;
  // `h_expert` is the estimate whose value leads the gate features (and the history level's
  // priors for kCombined); `fallback` per resource as in the rest of the cascade.
  TreeRoute(history::Expert h_expert, std::array<double, kNumResources> fallback,
            std::array<history::ExpertPriors, kNumResources> priors);

  // Numbers the user and token columns seen in >= kMinColumnJobs of `jobs`. Call once, first.
  void build_columns(std::span<const Job* const> jobs);

  // Fits the resource's regressor on `train` (labels in [0, cap]); with `valid` non-empty,
  // early stopping on it (params.early_stopping_rounds > 0), else params.n_rounds rounds.
  // `bag` boosters, the k-th (from 0) with seed params.seed + k * kBagSeedStep, each early-stopped
  // on its own; the report is the first's. Fewer than 2 training rows leave the resource on its
  // fallback.
  models::TrainReport fit(Resource r, std::span<const Row> train, std::span<const float> y,
                          std::span<const Row> valid, std::span<const float> y_valid,
                          models::GbdtParams params, size_t bag = 1);
  static constexpr uint64_t kBagSeedStep = 1000003;

  bool fitted(Resource r) const { return !boosters_[static_cast<size_t>(idx(r))].empty(); }
  size_t bag_size(Resource r) const { return boosters_[static_cast<size_t>(idx(r))].size(); }
  // The prediction for one job (batch-1 path: a dense row through the native tree walker); with
  // a bag, the mean of its boosters'.
  double predict(const Job& job, const history::HistoryView& view, Resource r) const;
  // The same for many rows (one DMatrix), in order.
  std::vector<double> predict_batch(std::span<const Row> rows, Resource r) const;

  size_t sparse_columns() const { return columns_.size(); }
  // The rounds of the resource's boosters, their mean rounded to the nearest (0 unfitted): what a
  // refit of the bag on more data runs for.
  int rounds(Resource r) const;

  // Persistence: the column map and settings as JSON; each booster as its own UBJ buffer, the
  // bag's in order. The boosters come back loaded (the caller names a file that is not a model).
  nlohmann::json to_json() const;
  std::vector<std::string> booster_bytes(Resource r) const;
  static Result<TreeRoute> from_json(const nlohmann::json& j,
                                     std::array<std::vector<models::Booster>, kNumResources> boosters);

 private:
  // Hashed (pre-renumbering) columns of a job, sorted and unique.
  static std::vector<uint32_t> hashed_columns(const Job& job);
  void add_row(models::CsrMatrix& m, const Row& row, Resource r) const;
  size_t width() const { return static_cast<size_t>(kGateFeatures) + columns_.size(); }

  history::Expert h_expert_ = history::Expert::kLast1;
  std::array<double, kNumResources> fallback_{0.5, 0.5};
  std::array<history::ExpertPriors, kNumResources> priors_{};
  std::unordered_map<uint32_t, uint32_t> columns_;  // hashed column -> feature index
  std::array<std::vector<models::Booster>, kNumResources> boosters_;  // the bag per resource
};

}  // namespace peakcast::cascade
