// A native evaluator for the boosters peakcast trains (gbtree, numerical splits, one output):
// the trees copied out of XGBoost's own UBJ model into flat arrays, walked with XGBoost's rules
// (missing -> default child, else fvalue < split_cond -> left), leaves summed in float in tree
// order from the base margin, then the objective's transform. Batch-1 prediction through the C
// API spends ~25 us in per-call set-up; this walks 100 depth-6 trees in about a microsecond.
// Equality with XGBoost's own prediction is checked by tests (bit for bit).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace peakcast::models::detail {

class FlatForest {
 public:
  // nullopt when the model uses something this evaluator does not reproduce (dart, categorical
  // splits, multi-output, another objective): the caller then keeps XGBoost's own path.
  static std::optional<FlatForest> from_ubj(std::string_view ubj_bytes);

  float predict(const float* row) const;  // row: [num_features], NaN = missing
  size_t num_features() const { return num_features_; }

 private:
  struct Node {
    int32_t left = -1;        // -1: leaf
    int32_t right = -1;
    uint32_t feature = 0;
    float value = 0;          // split condition, or the leaf value
    bool default_left = false;
  };
  enum class Transform { kIdentity, kSigmoid };

  std::vector<Node> nodes_;
  std::vector<uint32_t> roots_;
  float base_margin_ = 0;
  Transform transform_ = Transform::kIdentity;
  size_t num_features_ = 0;
};

}  // namespace peakcast::models::detail
