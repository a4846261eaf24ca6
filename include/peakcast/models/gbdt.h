// Gradient-boosted trees through XGBoost's C API (1.7): the gate C_{r,e}, the fusion weight
// G_{r,e} and the `xgboost` baseline (docs/method.md §5-6). Every handle is owned by RAII (unique_ptr
// with a deleter), every C-API return is checked, and XGBoost's own message travels in XgbError.
//
// Thread safety: a trained or loaded Booster is immutable; its const predict methods may be
// called from many threads at once. XGBoost documents prediction as thread-safe for tree
// boosters (gbtree/dart) since 1.4, with the result buffer held per thread; the one lazy step
// (configuration on first prediction) is done here when the Booster is built, before it can be
// shared. Training and loading are not to be raced against each other on one object.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/core/status.h"

namespace peakcast::options {
template <typename C>
struct OptionSpec;  // core/options.h
}  // namespace peakcast::options

namespace peakcast::models {

// A failed XGBoost call: a bug or broken invariant on our side (bad parameter, shape mismatch),
// carrying XGBGetLastError()'s text. Expected failures (an unreadable model file) are Status.
class XgbError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr float kMissing = std::numeric_limits<float>::quiet_NaN();

// Sparse rows (hashed script tokens): row r holds indices[indptr[r] .. indptr[r+1]).
struct CsrMatrix {
  std::vector<size_t> indptr{0};
  std::vector<uint32_t> indices;
  std::vector<float> values;
  size_t cols = 0;

  size_t rows() const { return indptr.size() - 1; }
  // Appends one row from (index, value) pairs; indices must be < cols.
  void add_row(std::span<const uint32_t> idx, std::span<const float> val);
};

namespace detail {
class FlatForest;
struct XgbHandleFree {
  void operator()(void* dmatrix_handle) const noexcept;  // XGDMatrixFree
};
struct XgbBoosterFree {
  void operator()(void* booster_handle) const noexcept;  // XGBoosterFree
};
}  // namespace detail

// An XGBoost DMatrix (training or batch-prediction data). Move-only.
class DMatrix {
 public:
  // Row-major [rows, cols]; cells equal to `missing` (NaN by default) are missing. Copies data.
  static DMatrix from_dense(std::span<const float> data, size_t rows, size_t cols,
                            float missing = kMissing);
  static DMatrix from_csr(const CsrMatrix& m);

  void set_labels(std::span<const float> labels);    // [rows]
  void set_weights(std::span<const float> weights);  // [rows]
  size_t rows() const;
  size_t cols() const;
  void* handle() const { return h_.get(); }

 private:
  explicit DMatrix(void* h) : h_(h) {}
  std::unique_ptr<void, detail::XgbHandleFree> h_;
};

enum class GbdtObjective { kBinaryLogistic, kRegSquaredError, kRegLogistic };
std::string_view objective_name(GbdtObjective o);  // "binary:logistic", ...

struct GbdtParams {
  GbdtObjective objective = GbdtObjective::kRegSquaredError;
  int max_depth = 6;
  double eta = 0.1;
  int n_rounds = 100;
  int nthread = 1;                 // 0: all cores
  uint64_t seed = 0;
  double subsample = 1.0;
  double colsample_bytree = 1.0;
  double min_child_weight = 1.0;
  double lambda = 1.0;
  // Stop when the validation metric (logloss for binary:logistic, rmse otherwise) has not
  // improved for this many rounds; 0 = off. The booster keeps the best round's trees only.
  int early_stopping_rounds = 0;

  Status validate() const;  // bounds; train() throws std::invalid_argument on a bad one
};

// GbdtParams' options declared once (JSON name, bounds, help): validate() and the JSON form
// (cascade/cascade_config.h) read this table.
const std::vector<options::OptionSpec<GbdtParams>>& gbdt_param_specs();

struct TrainReport {
  std::string metric;                 // "rmse" or "logloss"
  std::vector<double> valid_history;  // metric per round on the validation matrix
  int rounds_trained = 0;             // rounds run (<= n_rounds)
  int best_round = -1;                // 0-based; -1 without validation data
  double best_score = std::numeric_limits<double>::quiet_NaN();
};

enum class ModelFormat { kJson, kUbj };

// A trained or loaded model. Move-only; copy deleted (the handle is owned).
class Booster {
 public:
  // Trains on `train` (labels set). With `valid` (labels set), evaluates every round and, when
  // params.early_stopping_rounds > 0, stops early and keeps the trees up to the best round.
  static Booster train(const GbdtParams& params, const DMatrix& train,
                       const DMatrix* valid = nullptr, TrainReport* report = nullptr);

  // Bytes from save_buffer() (JSON or UBJ, told apart by XGBoost). Garbage -> kInvalidInput.
  static Result<Booster> load_buffer(std::string_view bytes);
  static Result<Booster> load_file(const std::string& path);

  std::string save_buffer(ModelFormat format = ModelFormat::kUbj) const;
  Status save_file(const std::string& path, ModelFormat format = ModelFormat::kUbj) const;

  // Batch prediction through a DMatrix: [rows].
  std::vector<float> predict(const DMatrix& m) const;
  // Row-major [rows, num_features()] floats (NaN = missing), no DMatrix built: the path for
  // batch-1 latency. Up to 32 rows it uses the native tree walker when the model allows
  // (native_predictor()), else and for bigger batches XGBoost's in-place prediction; both give the same floats as predict(DMatrix) (tested).
  void predict_dense(std::span<const float> data, size_t rows, std::span<float> out) const;
  float predict_row(std::span<const float> row) const;
  // XGBoost's own in-place prediction (XGBoosterPredictFromDense), always: the reference the
  // native walker is checked against, and the fallback.
  void predict_dense_xgboost(std::span<const float> data, size_t rows, std::span<float> out) const;
  bool native_predictor() const { return flat_ != nullptr; }

  size_t num_features() const { return num_features_; }
  int num_rounds() const;

 private:
  explicit Booster(void* h);
  void prepare();  // caches num_features_, configures the learner before sharing

  std::unique_ptr<void, detail::XgbBoosterFree> h_;
  size_t num_features_ = 0;
  std::string inplace_config_;  // JSON config for XGBoosterPredictFromDense
  std::shared_ptr<const detail::FlatForest> flat_;  // null: model not supported natively
};

}  // namespace peakcast::models
