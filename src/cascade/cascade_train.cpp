// Training the cascade: the protocol of cascade_train.h, the gates and fusions for every expert,
// then the policy and the upper bound (cascade_policy.cpp) on the policy set.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <unordered_set>

#include <fmt/format.h>

#include "cascade/cascade_internal.h"
#include "cascade/cascade_policy.h"

namespace peakcast::cascade {

std::vector<TrainingJob> with_history_views(const std::vector<const Job*>& jobs,
                                            const std::vector<Role>& roles) {
  if (jobs.size() != roles.size()) {
    throw std::invalid_argument("with_history_views: jobs and roles differ in size");
  }
  std::vector<TrainingJob> out;
  out.reserve(jobs.size());
  history::HistoryStore store;
  size_t i = 0;
  history::replay(jobs, store, [&](const Job& job, const history::HistoryStore& s) {
    TrainingJob t;
    t.job = &job;
    t.role = roles[i++];
    for (Resource r : kResources) t.views[static_cast<size_t>(idx(r))] = s.query(job, r);
    out.push_back(t);
  });
  return out;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Blocks {
  std::vector<size_t> code_fit, code_es, gate_fusion, policy;
  size_t gate_fusion_purged = 0;
};

size_t share_count(size_t n, double share) {
  const auto k = static_cast<size_t>(std::llround(share * static_cast<double>(n)));
  return std::clamp<size_t>(k, 1, n - 1);
}

Result<Blocks> make_blocks(const TrainingInput& in, const CascadeConfig& cfg) {
  std::vector<size_t> train, val;
  for (size_t i = 0; i < in.jobs.size(); ++i) {
    const TrainingJob& t = in.jobs[i];
    if (t.job == nullptr) return Status::invalid(fmt::format("cascade: jobs[{}]: null job", i));
    if (i > 0 && t.job->submit_time < in.jobs[i - 1].job->submit_time)
      return Status::invalid(fmt::format("cascade: jobs[{}] ({}): not in submit order", i, t.job->job_id));
    if (t.role == Role::kTrain) train.push_back(i);
    if (t.role == Role::kValidation) val.push_back(i);
  }
  if (train.size() < 2) return Status::invalid("cascade: the train block needs at least 2 jobs");
  if (val.size() < 2) return Status::invalid("cascade: the validation block needs at least 2 jobs");
  Blocks b;
  const size_t n_es = share_count(train.size(), cfg.code_holdout_share);
  b.code_fit.assign(train.begin(), train.end() - static_cast<std::ptrdiff_t>(n_es));
  b.code_es.assign(train.end() - static_cast<std::ptrdiff_t>(n_es), train.end());
  const size_t n_fit = share_count(val.size(), cfg.fit_share_of_validation);
  b.policy.assign(val.begin() + static_cast<std::ptrdiff_t>(n_fit), val.end());
  const int64_t first_policy_submit = in.jobs[b.policy.front()].job->submit_time;
  for (size_t k = 0; k < n_fit; ++k) {
    const size_t p = val[k];
    if (in.jobs[p].job->end_time >= first_policy_submit) {
      ++b.gate_fusion_purged;  // its label was not known when the policy set starts
    } else {
      b.gate_fusion.push_back(p);
    }
  }
  return b;
}

std::vector<std::string> ids_of(const TrainingInput& in, const std::vector<size_t>& pos) {
  std::vector<std::string> out;
  out.reserve(pos.size());
  for (size_t p : pos) out.push_back(in.jobs[p].job->job_id);
  return out;
}

std::vector<const Job*> jobs_of(const TrainingInput& in, const std::vector<size_t>& pos) {
  std::vector<const Job*> out;
  out.reserve(pos.size());
  for (size_t p : pos) out.push_back(in.jobs[p].job);
  return out;
}

// Gate and fusion examples of one (resource, expert) from the gate/fusion set.
struct ComponentData {
  std::vector<float> gate_x, gate_y;
  std::vector<size_t> gate_pos;
  std::vector<float> fusion_x, fusion_y, fusion_w;
  std::vector<size_t> fusion_pos;
  size_t censored_dropped = 0;
};

ComponentData component_data(const TrainingInput& in, const std::vector<size_t>& positions,
                             const std::vector<models::code::CodePrediction>& q, Resource r,
                             history::Expert e, const CascadeConfig& cfg) {
  ComponentData d;
  const auto ri = static_cast<size_t>(idx(r));
  for (size_t k = 0; k < positions.size(); ++k) {
    const TrainingJob& t = in.jobs[positions[k]];
    const Job& job = *t.job;
    const history::HistoryView& view = t.views[ri];
    if (!relevant(job, r) || view.level == history::Level::kNone) continue;
    const double h = view.estimate(e, in.fallback[ri]);
    const double qr = static_cast<double>(q[k].util[ri]);
    const GateFeatures g = gate_features(job, view, e, in.fallback[ri]);
    // Gate: only where it is consulted (exact-script history); the label needs no outcome.
    if (view.level == history::Level::kExactScript) {
      d.gate_x.insert(d.gate_x.end(), g.begin(), g.end());
      d.gate_y.push_back(std::abs(h - qr) <= cfg.agreement_tol ? 1.0f : 0.0f);
      d.gate_pos.push_back(positions[k]);
    }
    // Fusion: needs a measured label. An OOM-censored memory label is only a lower bound, so it
    // is not used as an exact target.
    if (!job.is_valid(r)) continue;
    if (r == Resource::kMem && job.censored) {
      ++d.censored_dropped;
      continue;
    }
    const double y = std::clamp(job.label(r), 0.0, in.util_cap);
    const double diff = qr - h;
    // |fused - y| = |q - h| |gamma - gamma*|: squared loss weighted by (q - h)^2 is the squared
    // error of the fused prediction (with gamma* clipped into [0, 1]).
    const double gamma_star = std::abs(diff) > 1e-9 ? std::clamp((y - h) / diff, 0.0, 1.0) : 0.5;
    const FusionFeatures f = fusion_features(g, h, qr);
    d.fusion_x.insert(d.fusion_x.end(), f.begin(), f.end());
    d.fusion_y.push_back(static_cast<float>(gamma_star));
    d.fusion_w.push_back(static_cast<float>(diff * diff + 1e-6));
    d.fusion_pos.push_back(positions[k]);
  }
  // Weights normalised to mean 1, so min_child_weight keeps its usual meaning.
  double sum = 0.0;
  for (float w : d.fusion_w) sum += w;
  if (sum > 0) {
    const double scale = static_cast<double>(d.fusion_w.size()) / sum;
    for (float& w : d.fusion_w) w = static_cast<float>(w * scale);
  }
  return d;
}

std::vector<double> column_means(const std::vector<float>& x, size_t cols) {
  std::vector<double> sum(cols, 0.0), n(cols, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;
    sum[i % cols] += x[i];
    n[i % cols] += 1.0;
  }
  for (size_t c = 0; c < cols; ++c) sum[c] = n[c] > 0 ? sum[c] / n[c] : std::nan("");
  return sum;
}

// The assertion that closes training: no gate/fusion example is a job whose label the code model
// saw, by position and (when ids are unique in the input) by job id.
void assert_disjoint(const TrainingInput& in, const CodeModelSight& sight,
                     const std::vector<size_t>& code_pos, const std::vector<size_t>& used) {
  for (size_t p : used) {
    if (sight.saw(p)) {
      throw std::logic_error("cascade: leakage: gate/fusion example " + in.jobs[p].job->job_id +
                             " is in the code model's training or early-stopping set");
    }
  }
  std::unordered_set<std::string> all_ids;
  bool unique = true;
  for (const TrainingJob& t : in.jobs) unique = all_ids.insert(t.job->job_id).second && unique;
  if (!unique) {
    peakcast::log(LogLevel::kWarn, "cascade: job ids are not unique in this trace; the leakage check "
                         "relies on positions only");
    return;
  }
  std::unordered_set<std::string> code_ids;
  for (size_t p : code_pos) code_ids.insert(in.jobs[p].job->job_id);
  for (size_t p : used) {
    if (code_ids.count(in.jobs[p].job->job_id) != 0) {
      throw std::logic_error("cascade: leakage: job id " + in.jobs[p].job->job_id +
                             " trained both the code model and the gate/fusion");
    }
  }
}

}  // namespace

Result<std::unique_ptr<CascadeModel::Impl>> train_cascade(const TrainingInput& in,
                                                          const CascadeConfig& cfg_in,
                                                          const ProgressFn& progress) {
  CascadeConfig cfg = cfg_in;
  if (!(std::isfinite(in.util_cap) && in.util_cap > 0)) return Status::invalid("cascade: util_cap must be > 0");
  cfg.code.util_cap = in.util_cap;  // Q lives in [0, cap] like everything else
  if (auto st = cfg.validate(); !st) return st.with_context("cascade config");
  auto blocks = make_blocks(in, cfg);
  if (!blocks) return blocks.status();
  const Blocks& b = *blocks;

  auto impl = std::make_unique<CascadeModel::Impl>();
  impl->cfg = cfg;
  impl->util_cap = in.util_cap;
  impl->fallback = in.fallback;
  impl->trained_on = in.trained_on;
  CascadeTrainReport& rep = impl->report;
  rep.sets.code_fit = ids_of(in, b.code_fit);
  rep.sets.code_early_stopping = ids_of(in, b.code_es);
  rep.sets.gate_fusion = ids_of(in, b.gate_fusion);
  rep.sets.policy = ids_of(in, b.policy);
  rep.sets.gate_fusion_purged = b.gate_fusion_purged;

  // 1. The code model: fit set + early stopping on the chronological end of the train block.
  auto t0 = std::chrono::steady_clock::now();
  CodeModelSight sight(in.jobs.size());
  for (size_t p : b.code_fit) sight.mark(p);
  for (size_t p : b.code_es) sight.mark(p);
  auto code = models::code::CodeModel::train(jobs_of(in, b.code_fit), jobs_of(in, b.code_es),
                                             cfg.code, progress);
  if (!code) return code.status().with_context("cascade: code model");
  impl->code = std::move(code).value();
  rep.code = impl->code.report();
  rep.seconds_code = seconds_since(t0);

  // 2. Q on the validation block, through the guard.
  t0 = std::chrono::steady_clock::now();
  const std::vector<models::code::CodePrediction> q_gf =
      out_of_sample_q(impl->code, sight, in, b.gate_fusion);
  const std::vector<models::code::CodePrediction> q_policy =
      out_of_sample_q(impl->code, sight, in, b.policy);

  // 3. Gate and fusion for every resource and expert (the policy picks one expert later).
  PolicyCandidates cand;
  std::vector<size_t> used;
  const size_t total = static_cast<size_t>(kNumResources * history::kNumExperts);
  size_t done = 0;
  for (Resource r : kResources) {
    const auto ri = static_cast<size_t>(idx(r));
    for (history::Expert e : history::kExperts) {
      const auto ei = static_cast<size_t>(static_cast<int>(e));
      ComponentData d = component_data(in, b.gate_fusion, q_gf, r, e, cfg);
      const double pos_share =
          d.gate_y.empty() ? 0.0
                           : static_cast<double>(std::count(d.gate_y.begin(), d.gate_y.end(), 1.0f)) /
                                 static_cast<double>(d.gate_y.size());
      cand.gate[ri][ei] = fit_component(cfg.gate, d.gate_x, kGateFeatures, d.gate_y, nullptr,
                                        cfg.min_component_examples, pos_share);
      double wsum = 0.0, gsum = 0.0;
      for (size_t k = 0; k < d.fusion_y.size(); ++k) {
        wsum += d.fusion_w[k];
        gsum += d.fusion_w[k] * d.fusion_y[k];
      }
      cand.fusion[ri][ei] = fit_component(cfg.fusion, d.fusion_x, kFusionFeatures, d.fusion_y,
                                          &d.fusion_w, cfg.min_component_examples,
                                          wsum > 0 ? gsum / wsum : 0.5);
      cand.gate_mean[ri][ei] = column_means(d.gate_x, kGateFeatures);
      rep.sets.gate[ri][ei] = ids_of(in, d.gate_pos);
      rep.sets.fusion[ri][ei] = ids_of(in, d.fusion_pos);
      if (e == history::Expert::kLast1) rep.sets.fusion_censored_dropped += d.censored_dropped;
      used.insert(used.end(), d.gate_pos.begin(), d.gate_pos.end());
      used.insert(used.end(), d.fusion_pos.begin(), d.fusion_pos.end());
      if (progress) progress("gate_fusion", ++done, total);
    }
  }
  std::vector<size_t> code_pos = b.code_fit;
  code_pos.insert(code_pos.end(), b.code_es.begin(), b.code_es.end());
  assert_disjoint(in, sight, code_pos, used);
  rep.seconds_components = seconds_since(t0);

  // 4. Policy and upper bound on the policy set; keep the chosen experts' components.
  t0 = std::chrono::steady_clock::now();
  choose_policy(in, b.policy, q_policy, cand, cfg, *impl);
  rep.policy = impl->policy;
  rep.seconds_policy = seconds_since(t0);
  if (progress) progress("policy", 1, 1);
  peakcast::log(LogLevel::kInfo,
      fmt::format("cascade: code fit {} / early stop {}, gate+fusion {} (purged {}), policy {}; "
                  "mem {} tau {:.2f} (policy MAE {:.4f} vs history {:.4f}); "
                  "vram {} tau {:.2f} (policy MAE {:.4f} vs history {:.4f})",
                  b.code_fit.size(), b.code_es.size(), b.gate_fusion.size(), b.gate_fusion_purged,
                  b.policy.size(), history::expert_name(impl->policy[0].expert), impl->policy[0].tau,
                  impl->policy[0].policy_mae, impl->policy[0].policy_history_mae,
                  history::expert_name(impl->policy[1].expert), impl->policy[1].tau,
                  impl->policy[1].policy_mae, impl->policy[1].policy_history_mae));
  return impl;
}

}  // namespace peakcast::cascade
