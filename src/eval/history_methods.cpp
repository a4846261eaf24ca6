// The history baselines (METHOD.md §3): hierarchical experts, the global median, and the
// history policy that picks one expert per resource on validation.
#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <memory>

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

// Best expert per resource by validation MAE (ties: the earlier expert in kExperts), frozen.
class HistoryPolicy final : public Method {
 public:
  std::string_view name() const override { return "history_policy"; }
  Status fit(const EvalData& data, const ProgressFn&) override {
    fallback_ = data.fallback;
    for (Resource r : kResources) {
      std::array<MetricsAccumulator, history::kNumExperts> acc;
      for (const JobContext& c : data.jobs) {
        if (c.block != Block::kValidation || !c.job->is_valid(r)) continue;
        for (Expert e : history::kExperts) {
          const double pred = std::clamp(c.view[idx(r)].estimate(e, fallback_[idx(r)]), 0.0,
                                         data.util_cap);
          acc[static_cast<int>(e)].add(pred, c.job->label(r));
        }
      }
      double best = std::numeric_limits<double>::infinity();
      chosen_[idx(r)] = Expert::kLast1;
      validation_n_[idx(r)] = 0;
      for (Expert e : history::kExperts) {
        const Metrics m = acc[static_cast<int>(e)].finish();
        validation_n_[idx(r)] = m.n;
        if (m.n > 0 && m.mae < best) {
          best = m.mae;
          chosen_[idx(r)] = e;
        }
      }
      validation_mae_[idx(r)] = validation_n_[idx(r)] > 0 ? best : 0.0;
    }
    return Status::ok();
  }
  Prediction predict(const Job&, const HistoryViews& view) const override {
    Prediction p;
    for (Resource r : kResources) {
      const auto& v = view[idx(r)];
      p.util[idx(r)] = v.estimate(chosen_[idx(r)], fallback_[idx(r)]);
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
  static std::string fmt_double(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6f", v);
    return buf;
  }
  std::array<double, kNumResources> fallback_{};
  std::array<Expert, kNumResources> chosen_{Expert::kLast1, Expert::kLast1};
  std::array<size_t, kNumResources> validation_n_{0, 0};
  std::array<double, kNumResources> validation_mae_{0.0, 0.0};
};

}  // namespace

void register_builtins(MethodRegistry& registry) {
  const std::array<std::pair<const char*, Expert>, 4> experts = {{{"hier_last1", Expert::kLast1},
                                                                 {"hier_median3", Expert::kMedian3},
                                                                 {"hier_median5", Expert::kMedian5},
                                                                 {"hier_ewma", Expert::kDecay}}};
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
  registry.add("history_policy",
               "per resource, the hierarchical expert with the lowest validation MAE, frozen",
               [](const MethodOptions&) { return std::make_unique<HistoryPolicy>(); });
}

}  // namespace peakcast::eval
