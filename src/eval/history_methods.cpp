// The history baselines (docs/method.md §3): hierarchical experts, their walk-forward combination,
// the global median, and the history policy that picks one estimate per resource on validation.
#include <algorithm>
#include <cmath>
#include <array>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "peakcast/eval/method.h"
#include "peakcast/eval/metrics.h"

namespace peakcast::eval {
namespace {

using history::Expert;
using history::Level;

std::string level_route(Level l) {
  return l == Level::kNone ? "fallback" : std::string(history::level_name(l));
}

// exact script -> same user -> fallback, one expert for both resources.
class HierarchicalExpert final : public Method {
 public:
  HierarchicalExpert(std::string name, Expert e) : name_(std::move(name)), expert_(e) {}
  std::string_view name() const override { return name_; }
  Status fit(const EvalData& data, const ProgressFn&) override {
    fallback_ = data.fallback;
    return Status::ok();
  }
  Prediction predict(const Job&, const HistoryViews& view) const override {
    Prediction p;
    for (Resource r : kResources) {
      const auto& v = view[idx(r)];
      p.util[idx(r)] = v.estimate(expert_, fallback_[idx(r)]);
      p.route[idx(r)] = level_route(v.level);
    }
    return p;
  }
  std::vector<std::pair<std::string, std::string>> choices() const override {
    return {{"expert", std::string(history::expert_name(expert_))}};
  }

 private:
  std::string name_;
  Expert expert_;
  std::array<double, kNumResources> fallback_{};
};

// The training median for everyone: what "no history" costs.
class GlobalMedian final : public Method {
 public:
  std::string_view name() const override { return "global_median"; }
  Status fit(const EvalData& data, const ProgressFn&) override {
    fallback_ = data.fallback;
    return Status::ok();
  }
  Prediction predict(const Job&, const HistoryViews&) const override {
    Prediction p;
    p.util = fallback_;
    p.route = {"fallback", "fallback"};
    return p;
  }

 private:
  std::array<double, kNumResources> fallback_{};
};

// Priors of the combined estimate from the jobs of the given blocks (their walk-forward errors:
// each job's history view is the one it had at its submission). Exact labels only, as the
// cascade's priors: a censored label (label_exact) is a lower bound, no measure of an error.
std::array<history::ExpertPriors, kNumResources> learn_priors(const EvalData& data, bool with_validation) {
  std::array<history::ExpertPriorAccumulator, kNumResources> acc;
  for (const JobContext& c : data.jobs) {
    const bool use = c.block == Block::kTrain || (with_validation && c.block == Block::kValidation);
    if (!use) continue;
    for (Resource r : kResources) acc[idx(r)].add_exact(c.view[idx(r)], *c.job, r, data.util_cap);
  }
  return {acc[0].priors(), acc[1].priors()};
}

// The four experts weighted by their walk-forward record (history::combined_estimate), with the
// priors learned from every train and validation job.
class HierarchicalCombined final : public Method {
 public:
  std::string_view name() const override { return "hier_combined"; }
  Status fit(const EvalData& data, const ProgressFn&) override {
    fallback_ = data.fallback;
    priors_ = learn_priors(data, true);
    return Status::ok();
  }
  Prediction predict(const Job&, const HistoryViews& view) const override {
    Prediction p;
    for (Resource r : kResources) {
      const auto& v = view[idx(r)];
      p.util[idx(r)] = v.estimate(Expert::kCombined, fallback_[idx(r)], priors_[idx(r)]);
      p.route[idx(r)] = level_route(v.level);
    }
    return p;
  }

 private:
  std::array<double, kNumResources> fallback_{};
  std::array<history::ExpertPriors, kNumResources> priors_;
};

// Per resource, one estimate (an expert or the combined one) chosen on validation with
// history::choose_estimate: the combined estimate unless another is clearly better there.
class HistoryPolicy final : public Method {
 public:
  std::string_view name() const override { return "history_policy"; }
  Status fit(const EvalData& data, const ProgressFn&) override {
    fallback_ = data.fallback;
    const auto train_priors = learn_priors(data, false);  // out of sample for validation jobs
    priors_ = learn_priors(data, true);
    for (Resource r : kResources) {
      std::vector<std::array<double, history::kNumEstimates>> errs;
      for (const JobContext& c : data.jobs) {
        if (c.block != Block::kValidation || !c.job->is_valid(r)) continue;
        std::array<double, history::kNumEstimates> row{};
        for (Expert e : history::kEstimates) {
          const double pred = std::clamp(
              c.view[idx(r)].estimate(e, fallback_[idx(r)], train_priors[idx(r)]), 0.0, data.util_cap);
          // One-sided on a lower bound, as the cascade's policy scores it.
          row[static_cast<size_t>(e)] = scored_error(pred, c.job->label(r), label_exact(*c.job, r, data.util_cap));
        }
        errs.push_back(row);
      }
      validation_n_[idx(r)] = errs.size();
      chosen_[idx(r)] = history::choose_estimate(errs);
      double sum = 0.0;
      for (const auto& row : errs) sum += row[static_cast<size_t>(chosen_[idx(r)])];
      validation_mae_[idx(r)] = errs.empty() ? 0.0 : sum / static_cast<double>(errs.size());
    }
    return Status::ok();
  }
  Prediction predict(const Job&, const HistoryViews& view) const override {
    Prediction p;
    for (Resource r : kResources) {
      const auto& v = view[idx(r)];
      p.util[idx(r)] = v.estimate(chosen_[idx(r)], fallback_[idx(r)], priors_[idx(r)]);
      p.route[idx(r)] = level_route(v.level);
    }
    return p;
  }
  std::vector<std::pair<std::string, std::string>> choices() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (Resource r : kResources) {
      if (validation_n_[idx(r)] == 0) continue;  // nothing was chosen for this resource
      const std::string res(resource_name(r));
      out.emplace_back(res + ".expert", std::string(history::expert_name(chosen_[idx(r)])));
      out.emplace_back(res + ".validation_n", std::to_string(validation_n_[idx(r)]));
      out.emplace_back(res + ".validation_mae", fmt_double(validation_mae_[idx(r)]));
    }
    return out;
  }

 private:
  static std::string fmt_double(double v) { return fmt::format("{:.6f}", v); }
  std::array<double, kNumResources> fallback_{};
  std::array<history::ExpertPriors, kNumResources> priors_;
  std::array<Expert, kNumResources> chosen_{Expert::kCombined, Expert::kCombined};
  std::array<size_t, kNumResources> validation_n_{0, 0};
  std::array<double, kNumResources> validation_mae_{0.0, 0.0};
};

}  // namespace

void register_builtins(MethodRegistry& registry) {
  const std::array<std::pair<const char*, Expert>, 4> experts = {{{"hier_last1", Expert::kLast1},
                                                                 {"hier_median3", Expert::kMedian3},
                                                                 {"hier_median5", Expert::kMedian5},
                                                                 {"hier_ewma", Expert::kEwma}}};
  const std::array<const char*, 4> descriptions = {
      "last label at the exact script, else the user's last, else the training median (baseline)",
      "median of the last 3 labels, exact script -> user -> training median",
      "median of the last 5 labels, exact script -> user -> training median",
      "time-decay mean (168 h half-life), exact script -> user -> training median"};
  for (size_t i = 0; i < experts.size(); ++i) {
    const auto [name, e] = experts[i];
    registry.add(name, descriptions[i], [n = std::string(name), e = e](const MethodOptions&) {
      return std::make_unique<HierarchicalExpert>(n, e);
    });
  }
  registry.add("global_median", "median label of the purged training block for every job",
               [](const MethodOptions&) { return std::make_unique<GlobalMedian>(); });
  registry.add("hier_combined",
               "the four experts weighted by their recent walk-forward errors at the key, shrunk "
               "towards priors learned on train and validation; exact script -> user -> median",
               [](const MethodOptions&) { return std::make_unique<HierarchicalCombined>(); });
  registry.add("history_policy",
               "per resource, an expert or hier_combined chosen on validation: hier_combined "
               "unless another is better by more than 2 standard errors, frozen",
               [](const MethodOptions&) { return std::make_unique<HistoryPolicy>(); });
}

}  // namespace peakcast::eval
