// CascadeModel: training entry, prediction (one job, or a batch with given history views),
// rationale and upper bound. Save/load live in cascade_io.cpp.
#include "peakcast/cascade/cascade_model.h"

#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "peakcast/core/units.h"

#include "cascade/cascade_internal.h"

namespace peakcast::cascade {
namespace {

// Utilizations and weights in rationales: 3 and 2 decimals.
std::string fixed3(double v) { return fmt::format("{:.3f}", v); }
std::string fixed2(double v) { return fmt::format("{:.2f}", v); }

// What is decided about one resource before the encoder runs (the gate's side of the cascade).
struct GateDecision {
  bool active = false;
  history::Level level = history::Level::kNone;
  double h = 0.0;
  double prob = -1.0;   // gate probability; -1 when not consulted
  bool bypass = false;
  GateFeatures gate{};
};

std::array<GateDecision, kNumResources> decide(const CascadeModel::Impl& m, const Job& job,
                                      const HistoryViews& views) {
  std::array<GateDecision, kNumResources> pre;
  for (Resource r : kResources) {
    const auto ri = idx(r);
    if (!relevant(job, r) || m.report.labelled[ri] == 0) continue;  // not learned: no answer
    GateDecision& p = pre[ri];
    const history::HistoryView& v = views[ri];
    const ResourcePolicy& pol = m.policy[ri];
    p.active = true;
    p.level = v.level;
    if (pol.history_only_at(v.level)) {
      p.h = v.estimate(pol.history_expert, m.fallback[ri], m.priors[ri]);
      p.bypass = true;  // history alone at this level
      continue;
    }
    p.h = v.estimate(pol.expert, m.fallback[ri], m.priors[ri]);
    p.gate = gate_features(job, v, pol.expert, m.fallback[ri], m.priors[ri]);
    if (v.level == history::Level::kExactScript) {
      // The gate only ever opens with exact-script history.
      p.prob = m.gate[ri].predict(p.gate);
      p.bypass = p.prob >= m.policy[ri].tau;
    }
  }
  return pre;
}

// Whether some resource needs Q from the code model (uses = uses_code_model) or from the tree
// route (uses_tree_route).
bool needs_q(const CascadeModel::Impl& m, const std::array<GateDecision, kNumResources>& pre,
             bool (*uses)(QSource)) {
  for (size_t ri = 0; ri < pre.size(); ++ri)
    if (pre[ri].active && !pre[ri].bypass && uses(m.q_source[ri])) return true;
  return false;
}

// Completes Q of the resources the tree route serves: its Q alone (tree_route) or the mean of it
// and the code model's, which `q` holds on entry (mean).
void add_tree_q(const CascadeModel::Impl& m, const Job& job, const HistoryViews& views,
                const std::array<GateDecision, kNumResources>& pre, models::code::CodePrediction& q) {
  for (Resource r : kResources) {
    const auto ri = idx(r);
    if (!pre[ri].active || pre[ri].bypass || !uses_tree_route(m.q_source[ri])) continue;
    if (!m.tree) throw std::logic_error("cascade: tree route chosen but not present");
    // As training saw it (cascade_train.cpp tree_q, chosen_q): the tree's Q as a float.
    const float t = static_cast<float>(std::clamp(m.tree->predict(job, views[ri], r), 0.0, m.util_cap));
    q.util[ri] = m.q_source[ri] == QSource::kMean ? mean_q(q.util[ri], t) : t;
  }
}

std::string history_phrase(const history::HistoryView& v, history::Expert e) {
  const history::KeyStats& s = v.answering();
  const std::string who = v.level == history::Level::kExactScript ? "earlier run(s) of the same script"
                                                                  : "job(s) of the same user";
  return std::string(history::expert_name(e)) + " of " + std::to_string(s.count) + " " + who;
}

ResourcePrediction finish(const CascadeModel::Impl& m, const Job& job, Resource r,
                          const history::HistoryView& v, const GateDecision& pre,
                          const models::code::CodePrediction* q, bool from_cache) {
  const auto ri = idx(r);
  const ResourcePolicy& pol = m.policy[ri];
  const std::string res(resource_name(r));
  ResourcePrediction p;
  p.history_level = std::string(history::level_name(v.level));
  p.history_n = v.level == history::Level::kNone ? 0 : v.answering().count;
  double gamma = 0.0;
  const double qr = q != nullptr ? static_cast<double>(q->util[ri]) : 0.0;
  if (!pre.bypass && v.level != history::Level::kNone) {
    if (q == nullptr) throw std::logic_error("cascade: encoder route without a code-model output");
    gamma = pol.q_alone_at(v.level)
                ? 1.0
                : std::clamp(m.fusion[ri].predict(fusion_features(pre.gate, pre.h, qr)), 0.0, 1.0);
  }
  if (v.level == history::Level::kNone && q == nullptr)
    throw std::logic_error("cascade: no-history route without a code-model output");
  p.util = resolve_util(v.level, pre.bypass, pre.h, qr, gamma, v.exact.mad, pol, m.util_cap);

  const bool tree = m.q_source[ri] == QSource::kTreeRoute;
  from_cache = from_cache && !tree;
  if (!pre.bypass) {
    p.q_origin = tree ? QOrigin::kTreeRoute : from_cache ? QOrigin::kCache : QOrigin::kCodeModel;
  }
  const bool mean = m.q_source[ri] == QSource::kMean;
  const char* src = tree ? "tree route"
                    : mean ? (from_cache ? "mean of cached code model and tree route" : "mean of code model and tree route")
                    : from_cache ? "cached code model" : "code model";
  if (v.level == history::Level::kNone) {
    p.route = tree ? Route::kTree : Route::kNoHistory;
    p.rationale = res + ": no history for this script or user; " + src + " Q = " + fixed3(p.util);
  } else if (pre.bypass) {
    p.route = Route::kBypass;
    const bool alone = pol.history_only_at(v.level);
    const history::Expert e = alone ? pol.history_expert : pol.expert;
    p.expert = std::string(history::expert_name(e));
    p.rationale = res + (alone ? std::string(": history (chosen on validation for this level): ")
                               : ": bypass (gate " + fixed2(pre.prob) + " >= " + fixed2(pol.tau) + "): ") +
                  history_phrase(v, e) + " = " + fixed3(p.util);
  } else {
    // The tree route's Q is not the code model's: a route of its own, so that routing shares and
    // latency do not count code-model calls that never happened.
    p.route = tree ? Route::kTree : from_cache ? Route::kCache : Route::kEncoder;
    p.expert = std::string(history::expert_name(pol.expert));
    p.gamma = gamma;
    if (pol.q_alone_at(v.level)) {
      p.rationale = res + ": " + src + " Q alone " + fixed3(qr) + " (no fusion weight was learned for " +
                    std::string(history::level_name(v.level)) + " history; " +
                    history_phrase(v, pol.expert) + " " + fixed3(pre.h) + ")";
    } else {
      p.rationale = res + ": " + fixed2(gamma) + " x " + src + " " + fixed3(qr) + " + " + fixed2(1.0 - gamma) +
                    " x " + history_phrase(v, pol.expert) + " " + fixed3(pre.h);
    }
    if (v.level == history::Level::kExactScript) {
      const double d = std::max(pol.trust_floor, pol.trust_coef * v.exact.mad);
      if (d < 1e6) p.rationale += ", trust region +/-" + fixed3(d);
    }
    p.rationale += " = " + fixed3(p.util);
  }

  const auto cap_bytes = capacity_bytes(job, r);
  if (cap_bytes) p.bytes = bytes_from_double(p.util * *cap_bytes);
  const UpperBound& ub = m.upper[ri];
  double hw = ub.q[static_cast<size_t>(route_class(v.level, pre.bypass))];
  if (std::isnan(hw)) hw = ub.pooled;
  if (!std::isnan(hw)) {
    p.upper_util = std::min(m.util_cap, p.util + hw);
    p.upper_coverage = m.cfg.coverage;
    if (cap_bytes) {
      const bool oom_recent = r == Resource::kMem && v.exact.count > 0 && v.exact.censored_recent > 0;
      const double share = oom_recent ? 1.0 : std::min(*p.upper_util, 1.0);
      p.recommended_bytes = bytes_from_double(share * *cap_bytes);
      if (oom_recent) p.rationale += "; recent run(s) hit OUT_OF_MEMORY: keep the full request";
    }
  }
  return p;
}

// A resource the model has no label of (CascadeTrainReport::labelled): the fallback, saying it is
// not a prediction, with no bound to size from.
ResourcePrediction not_learned(const CascadeModel::Impl& m, const Job& job, Resource r) {
  ResourcePrediction p;
  p.util = std::clamp(m.fallback[idx(r)], 0.0, m.util_cap);
  p.history_level = std::string(history::level_name(history::Level::kNone));
  const auto cap_bytes = capacity_bytes(job, r);
  if (cap_bytes) p.bytes = bytes_from_double(p.util * *cap_bytes);
  const std::string res(resource_name(r));
  p.rationale = res + ": the model was trained without any " + res + " label; no prediction (fallback " +
                fixed3(p.util) + ", no bound)";
  return p;
}

JobPrediction assemble(const CascadeModel::Impl& m, const Job& job, const HistoryViews& views,
                       const std::array<GateDecision, kNumResources>& pre,
                       const models::code::CodePrediction* q, bool from_cache) {
  JobPrediction out;
  out.job_id = job.job_id;
  out.scripts_absent = !job.script || job.script->empty();
  out.mem = pre[0].active ? finish(m, job, Resource::kMem, views[0], pre[0], q, from_cache)
                          : not_learned(m, job, Resource::kMem);
  if (pre[1].active) out.vram = finish(m, job, Resource::kVram, views[1], pre[1], q, from_cache);
  return out;
}

}  // namespace

CascadeModel::CascadeModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->cache = std::make_unique<ExactCache>(impl_->cfg.cache_capacity);
}
CascadeModel::~CascadeModel() = default;
CascadeModel::CascadeModel(CascadeModel&&) noexcept = default;
CascadeModel& CascadeModel::operator=(CascadeModel&&) noexcept = default;

std::string_view q_source_name(QSource s) {
  switch (s) {
    case QSource::kTreeRoute: return "tree_route";
    case QSource::kMean: return "mean";
    case QSource::kCodeModel: break;
  }
  return "code_model";
}

Result<CascadeModel> CascadeModel::train(const TrainingInput& input, const CascadeConfig& config,
                                         const ProgressFn& progress) {
  auto impl = train_cascade(input, config, progress);
  if (!impl) return impl.status();
  return CascadeModel(std::move(impl).value());
}

JobPrediction CascadeModel::predict(const Job& job, const history::HistoryStore& history) const {
  return predict_views(job, history.query_views(job, {relevant(job, Resource::kMem),
                                                       relevant(job, Resource::kVram)}));
}

JobPrediction CascadeModel::predict_views(const Job& job, const HistoryViews& views) const {
  const Impl& m = *impl_;
  const auto pre = decide(m, job, views);
  const bool code = needs_q(m, pre, uses_code_model);
  const bool tree = needs_q(m, pre, uses_tree_route);
  if (!code && !tree) return assemble(m, job, views, pre, nullptr, false);
  models::code::CodePrediction q{};
  bool from_cache = false;
  if (code) {
    const bool use_cache = m.cache->capacity() > 0;
    const std::string key = use_cache ? exact_cache_key(job) : std::string();
    std::optional<models::code::CodePrediction> hit;
    if (use_cache) hit = m.cache->get(key);
    if (hit) {
      q = *hit;
      from_cache = true;
    } else {
      q = m.code.predict(job);
      if (use_cache) m.cache->put(key, q);
    }
  }
  add_tree_q(m, job, views, pre, q);
  return assemble(m, job, views, pre, &q, from_cache);
}

std::vector<JobPrediction> CascadeModel::predict_views_batch(std::span<const Job* const> jobs,
                                                             std::span<const HistoryViews> views) const {
  if (jobs.size() != views.size())
    throw std::invalid_argument("CascadeModel::predict_views_batch: jobs and views differ in size");
  const Impl& m = *impl_;
  const size_t n = jobs.size();
  const bool use_cache = m.cache->capacity() > 0;
  std::vector<std::array<GateDecision, kNumResources>> pre(n);
  std::vector<models::code::CodePrediction> q(n);
  std::vector<int> source(n, -1);       // -1 none, 0 fresh, 1 cache, 2 tree route only
  std::vector<size_t> same_as(n, n);    // within-batch duplicate of an earlier fresh job
  std::vector<std::string> keys(n);
  std::unordered_map<std::string, size_t> first_fresh;
  std::vector<const Job*> to_run;
  std::vector<size_t> to_run_pos;
  for (size_t i = 0; i < n; ++i) {
    pre[i] = decide(m, *jobs[i], views[i]);
    if (needs_q(m, pre[i], uses_tree_route)) source[i] = 2;  // Q from the tree route only, so far
    if (!needs_q(m, pre[i], uses_code_model)) continue;
    if (use_cache) {
      keys[i] = exact_cache_key(*jobs[i]);
      if (auto hit = m.cache->get(keys[i])) {
        q[i] = *hit;
        source[i] = 1;
        continue;
      }
      if (auto it = first_fresh.find(keys[i]); it != first_fresh.end()) {
        same_as[i] = it->second;
        source[i] = 1;
        continue;
      }
      first_fresh.emplace(keys[i], i);
    }
    source[i] = 0;
    to_run.push_back(jobs[i]);
    to_run_pos.push_back(i);
  }
  const auto fresh = m.code.predict_batch(to_run);
  for (size_t k = 0; k < fresh.size(); ++k) {
    q[to_run_pos[k]] = fresh[k];
    if (use_cache) m.cache->put(keys[to_run_pos[k]], fresh[k]);
  }
  // Copied before add_tree_q changes any: a mean's code-model half is the code model's own Q.
  for (size_t i = 0; i < n; ++i)
    if (same_as[i] < n) q[i] = q[same_as[i]];
  std::vector<JobPrediction> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    add_tree_q(m, *jobs[i], views[i], pre[i], q[i]);
    const models::code::CodePrediction* qp = source[i] >= 0 ? &q[i] : nullptr;
    out.push_back(assemble(m, *jobs[i], views[i], pre[i], qp, source[i] == 1));
  }
  return out;
}

std::string ResourcePolicy::history_only_text() const {
  if (!history_only[0] && !history_only[1]) return "";
  const char* where = all_history_only() ? "" : history_only[0] ? " at exact_script" : " at user";
  return std::string(" history only") + where + " (" + std::string(history::expert_name(history_expert)) + ")";
}

std::string CascadeModel::describe() const {
  const Impl& m = *impl_;
  std::string s = "cascade (format " + std::to_string(kCascadeFormatVersion) + "): code model " +
                  m.code.config().encoder +
                  (m.code.trained_without_scripts() ? " (trained without scripts)" : "");
  for (Resource r : kResources) {
    const ResourcePolicy& p = m.policy[idx(r)];
    const std::string history_only = p.history_only_text();
    s += ", " + std::string(resource_name(r)) + " Q " +
         std::string(q_source_name(m.q_source[idx(r)])) + history_only +
         (history_only.empty() ? " " : ", ") + std::string(history::expert_name(p.expert)) +
         " tau " + fixed2(p.tau) + " trust " + (p.trust_coef >= 1e6 ? std::string("off") :
                                             fixed2(p.trust_coef) + "xMAD floor " + fixed2(p.trust_floor));
  }
  s += ", cap " + fixed3(m.util_cap);
  if (!m.trained_on.empty()) s += ", trained on " + m.trained_on;
  return s;
}

double CascadeModel::util_cap() const { return impl_->util_cap; }
const models::code::CodeModel& CascadeModel::code_model() const { return impl_->code; }
const CascadeConfig& CascadeModel::config() const { return impl_->cfg; }
const std::array<ResourcePolicy, kNumResources>& CascadeModel::policy() const { return impl_->policy; }
const std::array<UpperBound, kNumResources>& CascadeModel::upper_bound() const { return impl_->upper; }
const std::array<double, kNumResources>& CascadeModel::fallback() const { return impl_->fallback; }
const CascadeTrainReport& CascadeModel::report() const { return impl_->report; }
const std::array<history::ExpertPriors, kNumResources>& CascadeModel::priors() const {
  return impl_->priors;
}
const std::array<QSource, kNumResources>& CascadeModel::q_source() const { return impl_->q_source; }
void CascadeModel::clear_cache() const { impl_->cache->clear(); }
size_t CascadeModel::cache_size() const { return impl_->cache->size(); }

}  // namespace peakcast::cascade
