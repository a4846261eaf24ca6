// cascade: the reliability-gated cascade (docs/method.md §4–7) in the harness. The harness's blocks
// become the cascade's roles (purged jobs are ignored) and its event-time views are passed as
// they are; the cascade's own protocol (cascade_train.h) splits train and validation further.
// The exact cache is cleared before each scoring or timing pass, so test jobs fill it in submit
// order, as a service started at the test boundary would.
#include <optional>

#include <fmt/format.h>

#include "tools/learned.h"
#include "peakcast/cascade/cascade_model.h"

namespace peakcast::eval::learned {
namespace {

std::string fmt6(double v) { return fmt::format("{:.6g}", v); }

cascade::Role role_of(Block b) {
  switch (b) {
    case Block::kTrain: return cascade::Role::kTrain;
    case Block::kValidation: return cascade::Role::kValidation;
    case Block::kTest: return cascade::Role::kTest;
    default: return cascade::Role::kIgnore;  // purged: history only, never learned from
  }
}

void put(Prediction& p, Resource r, const cascade::ResourcePrediction& rp) {
  p.util[idx(r)] = rp.util;
  p.route[idx(r)] = std::string(cascade::route_name(rp.route));
}

Prediction to_prediction(const cascade::JobPrediction& jp) {
  Prediction p;
  put(p, Resource::kMem, jp.mem);
  if (jp.vram) put(p, Resource::kVram, *jp.vram);
  return p;
}

class CascadeMethod final : public Method {
 public:
  explicit CascadeMethod(MethodOptions o) : options_(std::move(o)) {}

  std::string_view name() const override { return "cascade"; }
  bool seeded() const override { return true; }

  Status fit(const EvalData& data, const ProgressFn& progress) override {
    const std::string encoder =
        options_.encoder.empty() ? cascade::CascadeConfig{}.code.encoder : options_.encoder;
    Result<cascade::CascadeConfig> cfg = cascade_config_for(encoder, options_, data.util_cap);
    if (!cfg) return cfg.status();
    const int threads = resolve_threads(options_.threads);
    models::code::set_torch_threads(threads);

    cascade::TrainingInput in;
    in.jobs.reserve(data.jobs.size());
    for (const JobContext& c : data.jobs) in.jobs.push_back({c.job, role_of(c.block), c.view});
    in.fallback = data.fallback;
    in.util_cap = data.util_cap;
    in.trained_on = "peakcast evaluate (train and validation blocks)";
    Result<cascade::CascadeModel> model = cascade::CascadeModel::train(in, *cfg, progress);
    if (!model) return model.status();
    model_.emplace(std::move(model).value());
    models::code::set_torch_threads(threads);
    return Status::ok();
  }

  Prediction predict(const Job& job, const HistoryViews& view) const override {
    return to_prediction(model().predict_views(job, view));
  }

  void predict_batch(std::span<const JobContext* const> jobs,
                     std::span<Prediction> out) const override {
    std::vector<const Job*> ptrs;
    std::vector<cascade::HistoryViews> views;
    ptrs.reserve(jobs.size());
    views.reserve(jobs.size());
    for (const JobContext* c : jobs) {
      ptrs.push_back(c->job);
      views.push_back(c->view);
    }
    const std::vector<cascade::JobPrediction> jp = model().predict_views_batch(ptrs, views);
    for (size_t i = 0; i < jp.size() && i < out.size(); ++i) out[i] = to_prediction(jp[i]);
  }

  void clear_caches() const override {
    if (model_) model_->clear_cache();
  }

  std::vector<std::pair<std::string, std::string>> choices() const override {
    if (!model_) return {};
    std::vector<std::pair<std::string, std::string>> out;
    const auto& rep = model_->report();
    out.emplace_back("encoder", model_->config().code.encoder);
    if (!options_.cascade_options.empty()) {  // the row is not the default cascade: say which
      std::string given;
      for (const auto& [key, value] : options_.cascade_options) {
        given += (given.empty() ? "" : " ") + key + "=" + value;
      }
      out.emplace_back("cascade_options", given);
    }
    out.emplace_back("code.epochs_run", std::to_string(rep.code.epochs_run));
    out.emplace_back("code.best_epoch", std::to_string(rep.code.best_epoch));
    out.emplace_back("script_text", script_text_choice(model_->code_model().trained_without_scripts()));
    for (Resource r : kResources) {
      const cascade::ResourcePolicy& p = model_->policy()[idx(r)];
      if (p.policy_n == 0) continue;
      const std::string res(resource_name(r));
      out.emplace_back(res + ".q_source", std::string(cascade::q_source_name(rep.q_source[idx(r)])));
      // With no job to choose on there is no error to show: "none", not an error of 0.
      const size_t qn = rep.q_n[idx(r)];
      out.emplace_back(res + ".q_source_n", std::to_string(qn));
      out.emplace_back(res + ".q_mae_code_model", qn == 0 ? "none" : fmt6(rep.q_mae[idx(r)][0]));
      out.emplace_back(res + ".q_mae_tree_route", qn == 0 ? "none" : fmt6(rep.q_mae[idx(r)][1]));
      out.emplace_back(res + ".history_only", std::string(cascade::ResourcePolicy::levels_name(p.history_only)));
      out.emplace_back(res + ".history_expert", std::string(history::expert_name(p.history_expert)));
      out.emplace_back(res + ".q_alone", std::string(cascade::ResourcePolicy::levels_name(p.q_alone)));
      out.emplace_back(res + ".expert", std::string(history::expert_name(p.expert)));
      out.emplace_back(res + ".tau", fmt6(p.tau));
      out.emplace_back(res + ".trust_coef", p.trust_coef >= 1e8 ? "off" : fmt6(p.trust_coef));
      out.emplace_back(res + ".trust_floor", fmt6(p.trust_floor));
      out.emplace_back(res + ".policy_n", std::to_string(p.policy_n));
      out.emplace_back(res + ".policy_mae", fmt6(p.policy_mae));
      out.emplace_back(res + ".policy_history_mae", fmt6(p.policy_history_mae));
      out.emplace_back(res + ".policy_fused_mae", fmt6(p.policy_fused_mae));
      out.emplace_back(res + ".policy_encoder_share", fmt6(p.policy_encoder_share));
    }
    out.emplace_back("train_seconds",
                     fmt6(rep.seconds_code + rep.seconds_components + rep.seconds_policy));
    return out;
  }

 private:
  const cascade::CascadeModel& model() const {
    if (!model_) throw std::logic_error("cascade: predict before fit");
    return *model_;
  }

  MethodOptions options_;
  std::optional<cascade::CascadeModel> model_;
};

}  // namespace

std::unique_ptr<Method> make_cascade(const MethodOptions& o) {
  return std::make_unique<CascadeMethod>(o);
}

}  // namespace peakcast::eval::learned
