// code_only, textcnn, bilstm: the code model Q alone (docs/method.md §4), one encoder each. Trained on
// the train block, early-stopped on the validation block; no history at prediction. A resource
// without a label in the train block has an untrained head: no prediction, the fallback (as the
// history methods and the cascade answer a resource they have no label of).
#include <algorithm>
#include <array>
#include <optional>

#include <fmt/format.h>

#include "tools/learned.h"
#include "peakcast/models/code/code_model.h"

namespace peakcast::eval::learned {
namespace {

std::string f6(double v) { return fmt::format("{:.6f}", v); }

class CodeOnly final : public Method {
 public:
  CodeOnly(std::string name, std::string encoder, MethodOptions o)
      : name_(std::move(name)), encoder_(std::move(encoder)), options_(std::move(o)) {}

  std::string_view name() const override { return name_; }
  bool seeded() const override { return true; }

  Status fit(const EvalData& data, const ProgressFn& progress) override {
    Result<models::code::CodeModelConfig> cfg = code_config_for(encoder_, options_, data.util_cap);
    if (!cfg) return cfg.status();
    models::code::set_torch_threads(cfg->threads);
    const std::vector<const Job*> train = block_jobs(data, Block::kTrain);
    const std::vector<const Job*> val = block_jobs(data, Block::kValidation);
    fallback_ = data.fallback;
    for (Resource r : kResources) {
      learned_[idx(r)] = std::any_of(train.begin(), train.end(), [r](const Job* j) { return j->is_valid(r); });
    }
    Result<models::code::CodeModel> model = models::code::CodeModel::train(train, val, *cfg, progress);
    if (!model) return model.status();
    model_ = std::move(model).value();
    // Inference threads too (training may restore the previous setting).
    models::code::set_torch_threads(cfg->threads);
    return Status::ok();
  }

  Prediction predict(const Job& job, const HistoryViews&) const override {
    return to_prediction(model().predict(job));
  }

  void predict_batch(std::span<const JobContext* const> jobs,
                     std::span<Prediction> out) const override {
    std::vector<const Job*> ptrs;
    ptrs.reserve(jobs.size());
    for (const JobContext* c : jobs) ptrs.push_back(c->job);
    const std::vector<models::code::CodePrediction> q = model().predict_batch(ptrs);
    for (size_t i = 0; i < q.size() && i < out.size(); ++i) out[i] = to_prediction(q[i]);
  }

  std::vector<std::pair<std::string, std::string>> choices() const override {
    if (!model_) return {};
    const models::code::CodeTrainReport& r = model_->report();
    std::vector<std::pair<std::string, std::string>> out = {
        {"encoder", encoder_},
        {"epochs_run", std::to_string(r.epochs_run)},
        {"best_epoch", std::to_string(r.best_epoch)}};
    for (Resource res : kResources) {  // an untrained head's validation error is no figure
      if (learned_[idx(res)]) out.emplace_back(std::string(resource_name(res)) + ".validation_mae", f6(r.val_mae[idx(res)]));
    }
    out.emplace_back("train_jobs", std::to_string(r.train_jobs));
    out.emplace_back("script_text", script_text_choice(model_->trained_without_scripts()));
    out.emplace_back("train_seconds", f6(r.seconds));
    return out;
  }

 private:
  const models::code::CodeModel& model() const {
    if (!model_) throw std::logic_error(name_ + ": predict before fit");
    return *model_;
  }
  Prediction to_prediction(const models::code::CodePrediction& q) const {
    Prediction p;
    for (Resource r : kResources) {
      const auto ri = idx(r);
      p.util[ri] = learned_[ri] ? static_cast<double>(q.util[ri]) : fallback_[ri];
      p.route[ri] = learned_[ri] ? "encoder" : "fallback";
    }
    return p;
  }

  std::string name_;
  std::string encoder_;
  MethodOptions options_;
  std::optional<models::code::CodeModel> model_;
  std::array<bool, kNumResources> learned_{false, false};  // a train-block label of the resource
  std::array<double, kNumResources> fallback_{};
};

}  // namespace

std::unique_ptr<Method> make_code_only(std::string name, std::string encoder, const MethodOptions& o) {
  return std::make_unique<CodeOnly>(std::move(name), std::move(encoder), o);
}

}  // namespace peakcast::eval::learned
