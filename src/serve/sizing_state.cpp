// The daemon's online upper bound and recommended request (peakcast/serve/sizing_state.h).
#include "peakcast/serve/sizing_state.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace peakcast::serve {
SizingState::SizingState(SizingOptions options)
    : options_(std::move(options)),
      bounds_{sizing::OnlineBound(options_.bound), sizing::OnlineBound(options_.bound)} {}

void SizingState::observe(const Job& job, const cascade::JobPrediction& p) {
  std::lock_guard lock(mu_);
  for (Resource r : kResources) {
    if (!job.is_valid(r)) continue;
    const cascade::ResourcePrediction* rp = p.of(r);
    if (!rp) continue;
    bounds_[idx(r)].observe(history::level_from_name(rp->history_level), rp->util, job.label(r),
                            censored_for(job, r), job.script_key);
  }
}

void SizingState::apply_bound(Resource r, const std::string& script_key,
                              cascade::ResourcePrediction& rp, Applied& a) const {
  const history::Level level = history::level_from_name(rp.history_level);
  const sizing::OnlineBound& b = bounds_[idx(r)];
  if (!b.has_scores(level, script_key)) {
    a.upper_source[idx(r)] = rp.upper_util ? "model" : "";
    return;
  }
  // Labels never exceed the cap, so a bound above it covers nothing more.
  rp.upper_util = std::clamp(b.upper(level, rp.util, script_key), rp.util, std::max(options_.util_cap, rp.util));
  rp.upper_coverage = options_.bound.coverage;
  a.upper_source[idx(r)] = "online";
}

SizingState::Applied SizingState::apply(const Job& job, std::optional<uint64_t> failed_request,
                                        cascade::JobPrediction& p) const {
  Applied a;
  {
    std::lock_guard lock(mu_);
    for (Resource r : kResources) {
      if (cascade::ResourcePrediction* rp = p.of(r)) apply_bound(r, job.script_key, *rp, a);
    }
  }
  // Memory: the recommended request, from the online bound only. Without a known request there
  // is no capacity to scale the bound by, and nothing to cap the answer at: no recommendation.
  // Nor without online evidence (a new script before 9 scripts have completed at the user level):
  // the model's own bound, fitted once at training, is shown but not acted on -- it is not
  // calibrated under drift, and `evaluate` measures the online bound with the request itself
  // (no lowering) in its place.
  const std::optional<double> cap = capacity_bytes(job, Resource::kMem);
  if (!cap || !p.mem.upper_util || a.upper_source[idx(Resource::kMem)] != "online") {
    p.mem.recommended_bytes.reset();
    return a;
  }
  sizing::RecommendInput in;
  in.upper_bytes = *p.mem.upper_util * *cap;
  in.request_bytes = job.req_mem_bytes;
  in.partition = job.partition;
  in.failed_request_bytes = failed_request;
  const sizing::Recommendation rec = sizing::recommend_request(in, options_.recommend);
  p.mem.recommended_bytes = rec.bytes;
  a.rule = rec.rule;
  return a;
}

void SizingState::annotate(const Applied& a, nlohmann::json& answer) {
  nlohmann::json& preds = answer["predictions"];
  for (Resource r : kResources) {
    nlohmann::json& rp = preds[std::string(resource_name(r))];
    if (!rp.is_object()) continue;
    const std::string& src = a.upper_source[idx(r)];
    rp["upper_source"] = src.empty() ? nlohmann::json(nullptr) : nlohmann::json(src);
  }
  if (preds["mem"].is_object()) {
    preds["mem"]["recommendation_rule"] = a.rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.rule);
  }
}

nlohmann::json SizingState::to_json() const {
  std::lock_guard lock(mu_);
  nlohmann::json out = {{"coverage", options_.bound.coverage},
                        {"config", options_.config_source}};
  for (Resource r : kResources) {
    nlohmann::json levels = nlohmann::json::object();
    for (history::Level l : {history::Level::kExactScript, history::Level::kUser, history::Level::kNone}) {
      const sizing::OnlineBound& b = bounds_[idx(r)];
      nlohmann::json& level = levels[std::string(history::level_name(l))];
      level = {{"scores", b.scores(l)}, {"updates", b.updates(l)}, {"alpha_t", b.alpha_t(l)}};
      if (l == history::Level::kExactScript && b.options().script_windows) {
        level["own_windows"] = b.own_windows();  // scripts bounded by their own scores
      }
    }
    out[std::string(resource_name(r))] = std::move(levels);
  }
  return out;
}

}  // namespace peakcast::serve
