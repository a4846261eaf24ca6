// xgboost: the study's gradient-boosted baseline (docs/method.md §8), the cascade's tree route
// (cascade/tree_route.h) with the Last-1 expert leading the gate features: request and history
// features (the four experts with their walk-forward errors, counts, MAD, spread, age, censored
// runs at the exact-script and the user level), the user one-hot and the script's hashed
// uni-/bi-grams. Trained on the train block's exact labels (label_exact), early stopping on
// validation; columns from train.
#include <optional>

#include <fmt/format.h>

#include "tools/learned.h"
#include "peakcast/cascade/cascade_config.h"
#include "peakcast/cascade/tree_route.h"

namespace peakcast::eval::learned {
namespace {

class XgboostMethod final : public Method {
 public:
  explicit XgboostMethod(MethodOptions o) : options_(std::move(o)) {}
  std::string_view name() const override { return "xgboost"; }
  bool seeded() const override { return true; }

  Status fit(const EvalData& data, const ProgressFn& progress) override {
    models::GbdtParams p = cascade::CascadeConfig::default_tree_params();
    p.nthread = resolve_threads(options_.threads);
    p.seed = options_.seed;
    if (Status s = p.validate(); !s) return s;
    // The study's baseline reads Last-1 first; no combined-estimate priors (uniform ones).
    route_ = cascade::TreeRoute(history::Expert::kLast1, data.fallback, {});
    std::vector<const Job*> train_jobs;
    for (const JobContext& c : data.jobs) {
      if (c.block == Block::kTrain) train_jobs.push_back(c.job);
    }
    route_.build_columns(train_jobs);
    for (Resource r : kResources) {
      const int ri = idx(r);
      std::vector<cascade::TreeRoute::Row> train, valid;
      std::vector<float> ytrain, yvalid;
      for (const JobContext& c : data.jobs) {
        if (!c.job->is_valid(r)) continue;
        if (c.block != Block::kTrain && c.block != Block::kValidation) continue;
        // An OOM's label above a cap of 1 is only a lower bound: no exact target (as the
        // cascade's tree route, cascade_train.cpp).
        if (!label_exact(*c.job, r, data.util_cap)) continue;
        const bool is_train = c.block == Block::kTrain;
        (is_train ? train : valid).push_back({c.job, &c.view[ri]});
        (is_train ? ytrain : yvalid).push_back(static_cast<float>(c.job->label(r)));
      }
      train_n_[ri] = ytrain.size();
      report_[ri] = route_.fit(r, train, ytrain, valid, yvalid, p);
      if (progress) progress("xgboost", static_cast<size_t>(ri + 1), kNumResources);
    }
    return Status::ok();
  }

  Prediction predict(const Job& job, const HistoryViews& view) const override {
    Prediction p;
    for (Resource r : kResources) {
      p.util[idx(r)] = route_.predict(job, view[idx(r)], r);
      p.route[idx(r)] = "xgboost";
    }
    return p;
  }

  void predict_batch(std::span<const JobContext* const> jobs,
                     std::span<Prediction> out) const override {
    for (Resource r : kResources) {
      const int ri = idx(r);
      std::vector<cascade::TreeRoute::Row> rows;
      rows.reserve(jobs.size());
      for (const JobContext* c : jobs) rows.push_back({c->job, &c->view[ri]});
      const std::vector<double> y = route_.predict_batch(rows, r);
      for (size_t i = 0; i < jobs.size(); ++i) {
        out[i].util[ri] = y[i];
        out[i].route[ri] = "xgboost";
      }
    }
  }

  std::vector<std::pair<std::string, std::string>> choices() const override {
    std::vector<std::pair<std::string, std::string>> out;
    out.emplace_back("sparse_features", std::to_string(route_.sparse_columns()));
    for (Resource r : kResources) {
      const int ri = idx(r);
      if (!route_.fitted(r)) continue;
      const std::string res(resource_name(r));
      out.emplace_back(res + ".train_n", std::to_string(train_n_[ri]));
      out.emplace_back(res + ".rounds", std::to_string(route_.rounds(r)));
      if (report_[ri].best_round >= 0) {
        out.emplace_back(res + ".validation_rmse", fmt::format("{:.6f}", report_[ri].best_score));
      }
    }
    return out;
  }

 private:
  MethodOptions options_;
  cascade::TreeRoute route_;
  std::array<models::TrainReport, kNumResources> report_;
  std::array<size_t, kNumResources> train_n_{0, 0};
};

}  // namespace

std::unique_ptr<Method> make_xgboost(const MethodOptions& o) {
  return std::make_unique<XgboostMethod>(o);
}

}  // namespace peakcast::eval::learned
