// xgboost: the study's gradient-boosted baseline (METHOD.md §8). One regressor per resource on
//   - the request and history features the cascade's gate reads (cascade::gate_features with the
//     Last-1 expert: the four experts, counts, MAD, spread, age and censored runs at the exact-
//     script and the user level, agreement between levels, the standardizable request numbers);
//   - the user, one-hot over kUserBuckets hashed ids;
//   - the script (or identity text) as hashed uni-/bi-gram presence over kTokenBuckets, from the
//     code model's own tokens (models::code::code_tokens).
// Sparse rows (absent = missing); trained on the train block, early stopping on validation.
// Only user and token columns present in at least kMinColumnJobs training jobs become features,
// renumbered densely after the history/request block: XGBoost's split search costs per feature
// and node, so 2^18 hashed columns of which a few thousand occur would mostly cost time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>

#include "eval/learned.h"
#include "peakcast/cascade/cascade_features.h"
#include "peakcast/features/tokenizer.h"
#include "peakcast/models/code/code_text.h"
#include "peakcast/models/gbdt.h"

namespace peakcast::eval::learned {
namespace {

constexpr size_t kUserBuckets = size_t{1} << 16;
constexpr size_t kTokenBuckets = size_t{1} << 18;
constexpr size_t kUserOffset = 0;  // hashed-column space, before renumbering
constexpr size_t kTokenOffset = kUserOffset + kUserBuckets;
constexpr size_t kMaxTokens = 4096;
constexpr size_t kMinColumnJobs = 2;

// Hashed column -> feature index (after the kGateFeatures dense ones).
using ColumnMap = std::unordered_map<uint32_t, uint32_t>;

// The resource-independent sparse part of a job's row: user and script columns, sorted.
std::vector<uint32_t> static_columns(const Job& job) {
  std::vector<uint32_t> cols;
  if (!job.user.empty()) {
    cols.push_back(static_cast<uint32_t>(
        kUserOffset + static_cast<size_t>(features::token_bucket("user:" + job.user,
                                                                 static_cast<int64_t>(kUserBuckets)))));
  }
  const auto tokens = models::code::code_tokens(models::code::code_text(job), kMaxTokens);
  for (int64_t id : features::hashed_ngrams(tokens, static_cast<int64_t>(kTokenBuckets))) {
    cols.push_back(static_cast<uint32_t>(kTokenOffset + static_cast<size_t>(id)));
  }
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  return cols;
}

void add_row(models::CsrMatrix& m, const Job& job, const history::HistoryView& view,
             double fallback, const std::vector<uint32_t>& static_cols, const ColumnMap& map) {
  const cascade::GateFeatures g = cascade::gate_features(job, view, history::Expert::kLast1, fallback);
  std::vector<uint32_t> idx;
  std::vector<float> val;
  idx.reserve(g.size() + static_cols.size());
  val.reserve(g.size() + static_cols.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) continue;  // missing
    idx.push_back(static_cast<uint32_t>(i));
    val.push_back(g[i]);
  }
  const size_t first = idx.size();
  for (uint32_t c : static_cols) {
    auto it = map.find(c);
    if (it == map.end()) continue;  // too rare in training: not a feature
    idx.push_back(it->second);
    val.push_back(1.0f);
  }
  std::sort(idx.begin() + static_cast<std::ptrdiff_t>(first), idx.end());
  m.add_row(idx, val);
}

models::CsrMatrix empty_matrix(const ColumnMap& map) {
  models::CsrMatrix m;
  m.cols = cascade::kGateFeatures + map.size();
  return m;
}

class XgboostMethod final : public Method {
 public:
  explicit XgboostMethod(MethodOptions o) : options_(std::move(o)) {}
  std::string_view name() const override { return "xgboost"; }
  bool seeded() const override { return true; }

  Status fit(const EvalData& data, const ProgressFn& progress) override {
    fallback_ = data.fallback;
    models::GbdtParams p;
    p.objective = models::GbdtObjective::kRegSquaredError;
    p.max_depth = 6;
    p.eta = 0.1;
    p.n_rounds = 300;
    p.early_stopping_rounds = 20;
    p.subsample = 0.8;
    p.colsample_bytree = 0.8;
    p.min_child_weight = 1.0;
    p.nthread = resolve_threads(options_.threads);
    p.seed = options_.seed;
    if (Status s = p.validate(); !s) return s;

    // Script columns once per job, shared by both resources.
    std::vector<const JobContext*> used;
    for (const JobContext& c : data.jobs) {
      if (c.block == Block::kTrain || c.block == Block::kValidation) used.push_back(&c);
    }
    std::vector<std::vector<uint32_t>> cols(used.size());
    for (size_t i = 0; i < used.size(); ++i) cols[i] = static_columns(*used[i]->job);
    std::map<uint32_t, size_t> seen;  // ordered: the numbering does not depend on hashing order
    for (size_t i = 0; i < used.size(); ++i) {
      if (used[i]->block != Block::kTrain) continue;
      for (uint32_t c : cols[i]) ++seen[c];
    }
    columns_.clear();
    for (const auto& [c, n] : seen) {
      if (n >= kMinColumnJobs) {
        columns_.emplace(c, static_cast<uint32_t>(cascade::kGateFeatures + columns_.size()));
      }
    }

    for (Resource r : kResources) {
      const int ri = idx(r);
      models::CsrMatrix train = empty_matrix(columns_), valid = empty_matrix(columns_);
      std::vector<float> ytrain, yvalid;
      for (size_t i = 0; i < used.size(); ++i) {
        const JobContext& c = *used[i];
        if (!c.job->is_valid(r)) continue;
        const bool is_train = c.block == Block::kTrain;
        add_row(is_train ? train : valid, *c.job, c.view[ri], fallback_[ri], cols[i], columns_);
        (is_train ? ytrain : yvalid).push_back(static_cast<float>(c.job->label(r)));
      }
      train_n_[ri] = ytrain.size();
      if (ytrain.empty()) continue;  // no label to learn from: fallback
      models::DMatrix dtrain = models::DMatrix::from_csr(train);
      dtrain.set_labels(ytrain);
      std::optional<models::DMatrix> dvalid;
      if (!yvalid.empty()) {
        dvalid.emplace(models::DMatrix::from_csr(valid));
        dvalid->set_labels(yvalid);
      }
      models::GbdtParams pr = p;
      if (!dvalid) pr.early_stopping_rounds = 0;
      booster_[ri].emplace(models::Booster::train(pr, dtrain, dvalid ? &*dvalid : nullptr,
                                                  &report_[ri]));
      if (progress) progress("xgboost", static_cast<size_t>(ri + 1), kNumResources);
    }
    return Status::ok();
  }

  Prediction predict(const Job& job, const HistoryViews& view) const override {
    Prediction p;
    const std::vector<uint32_t> cols = static_columns(job);
    for (Resource r : kResources) {
      const int ri = idx(r);
      p.route[ri] = "xgboost";
      if (!booster_[ri]) {
        p.util[ri] = fallback_[ri];
        continue;
      }
      models::CsrMatrix m = empty_matrix(columns_);
      add_row(m, job, view[ri], fallback_[ri], cols, columns_);
      p.util[ri] = booster_[ri]->predict(models::DMatrix::from_csr(m)).at(0);
    }
    return p;
  }

  void predict_batch(std::span<const JobContext* const> jobs,
                     std::span<Prediction> out) const override {
    std::vector<std::vector<uint32_t>> cols(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) cols[i] = static_columns(*jobs[i]->job);
    for (Resource r : kResources) {
      const int ri = idx(r);
      for (size_t i = 0; i < jobs.size(); ++i) out[i].route[ri] = "xgboost";
      if (!booster_[ri] || jobs.empty()) {
        for (size_t i = 0; i < jobs.size(); ++i) out[i].util[ri] = fallback_[ri];
        continue;
      }
      models::CsrMatrix m = empty_matrix(columns_);
      for (size_t i = 0; i < jobs.size(); ++i) {
        add_row(m, *jobs[i]->job, jobs[i]->view[ri], fallback_[ri], cols[i], columns_);
      }
      const std::vector<float> y = booster_[ri]->predict(models::DMatrix::from_csr(m));
      for (size_t i = 0; i < jobs.size(); ++i) out[i].util[ri] = y.at(i);
    }
  }

  std::vector<std::pair<std::string, std::string>> choices() const override {
    std::vector<std::pair<std::string, std::string>> out;
    out.emplace_back("sparse_features", std::to_string(columns_.size()));
    for (Resource r : kResources) {
      const int ri = idx(r);
      if (!booster_[ri]) continue;
      const std::string res(resource_name(r));
      out.emplace_back(res + ".train_n", std::to_string(train_n_[ri]));
      out.emplace_back(res + ".rounds", std::to_string(booster_[ri]->num_rounds()));
      if (report_[ri].best_round >= 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.6f", report_[ri].best_score);
        out.emplace_back(res + ".validation_rmse", buf);
      }
    }
    return out;
  }

 private:
  MethodOptions options_;
  ColumnMap columns_;
  std::array<double, kNumResources> fallback_{};
  std::array<std::optional<models::Booster>, kNumResources> booster_;
  std::array<models::TrainReport, kNumResources> report_;
  std::array<size_t, kNumResources> train_n_{0, 0};
};

}  // namespace

std::unique_ptr<Method> make_xgboost(const MethodOptions& o) {
  return std::make_unique<XgboostMethod>(o);
}

}  // namespace peakcast::eval::learned
