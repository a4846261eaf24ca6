// Training the cascade: the protocol of cascade_train.h, the gates and fusions for every expert,
// then the policy and the upper bound (cascade_policy.cpp) on the policy set.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>
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
    t.views = s.query_views(job);
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
  std::vector<size_t> code_fit_purged;  // train jobs still running when early stopping starts
  std::vector<size_t> code_refit;       // code_fit with the purged jobs back in, submit order
  std::vector<size_t> train;            // the whole train block, submit order
  std::vector<size_t> gate_fusion_purged;  // validation jobs still running when the policy set starts
};

size_t share_count(size_t n, double share) {
  const auto k = static_cast<size_t>(std::llround(share * static_cast<double>(n)));
  return std::clamp<size_t>(k, 1, n - 1);
}

// Splits `positions` at `boundary` (a submission time): a job that ended before it goes to
// `kept`, one still running then to `purged`. Order is kept.
void split_at(const TrainingInput& in, std::span<const size_t> positions, int64_t boundary,
              std::vector<size_t>& kept, std::vector<size_t>& purged) {
  for (size_t p : positions) (in.jobs[p].job->end_ms >= boundary ? purged : kept).push_back(p);
}

Result<Blocks> make_blocks(const TrainingInput& in, const CascadeConfig& cfg) {
  std::vector<size_t> train, val;
  for (size_t i = 0; i < in.jobs.size(); ++i) {
    const TrainingJob& t = in.jobs[i];
    if (t.job == nullptr) return Status::invalid(fmt::format("cascade: jobs[{}]: null job", i));
    if (i > 0 && t.job->submit_ms < in.jobs[i - 1].job->submit_ms)
      return Status::invalid(fmt::format("cascade: jobs[{}] ({}): not in submit order", i, t.job->job_id));
    if (t.role == Role::kTrain) train.push_back(i);
    if (t.role == Role::kValidation) val.push_back(i);
  }
  if (train.size() < 2) return Status::invalid("cascade: the train block needs at least 2 jobs");
  if (val.size() < 2) return Status::invalid("cascade: the validation block needs at least 2 jobs");
  Blocks b;
  b.train = train;
  const size_t n_es = share_count(train.size(), cfg.code_holdout_share);
  b.code_es.assign(train.end() - static_cast<std::ptrdiff_t>(n_es), train.end());
  // The fit set's labels must be known when the early-stopping set starts, as the split's
  // completion-boundary purge asks of train against validation: a fit job still running then
  // would tell the choice of epoch (and the tree route's rounds) about its own time.
  const int64_t first_es_submit = in.jobs[b.code_es.front()].job->submit_ms;
  b.code_refit.assign(train.begin(), train.end() - static_cast<std::ptrdiff_t>(n_es));
  split_at(in, b.code_refit, first_es_submit, b.code_fit, b.code_fit_purged);
  if (b.code_fit.empty()) {
    return Status::invalid(fmt::format(
        "cascade: every one of the {} code-model fit jobs ended at or after the first early-stopping "
        "submission (the purge at that boundary emptied the fit set); lower code_holdout_share or "
        "train on a longer trace", b.code_fit_purged.size()));
  }
  const size_t n_fit = share_count(val.size(), cfg.fit_share_of_validation);
  b.policy.assign(val.begin() + static_cast<std::ptrdiff_t>(n_fit), val.end());
  // Likewise the gate/fusion set's labels must be known when the policy set starts.
  split_at(in, std::span<const size_t>(val).first(n_fit), in.jobs[b.policy.front()].job->submit_ms,
           b.gate_fusion, b.gate_fusion_purged);
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
                             history::Expert e, const history::ExpertPriors& priors,
                             const CascadeConfig& cfg) {
  ComponentData d;
  const auto ri = static_cast<size_t>(idx(r));
  for (size_t k = 0; k < positions.size(); ++k) {
    const TrainingJob& t = in.jobs[positions[k]];
    const Job& job = *t.job;
    const history::HistoryView& view = t.views[ri];
    if (!relevant(job, r) || view.level == history::Level::kNone) continue;
    const double h = view.estimate(e, in.fallback[ri], priors);
    const double qr = static_cast<double>(q[k].util[ri]);
    const GateFeatures g = gate_features(job, view, e, in.fallback[ri], priors);
    // Gate: only where it is consulted (exact-script history); the label needs no outcome.
    if (view.level == history::Level::kExactScript) {
      d.gate_x.insert(d.gate_x.end(), g.begin(), g.end());
      d.gate_y.push_back(std::abs(h - qr) <= cfg.agreement_tol ? 1.0f : 0.0f);
      d.gate_pos.push_back(positions[k]);
    }
    // Fusion: needs an exact label. An OOM-censored label is one when clipped at a cap <= 1
    // (label_exact); above that it is only a lower bound, not an exact target.
    if (!job.is_valid(r)) continue;
    if (!label_exact(job, r, in.util_cap)) {
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

// Priors of the combined estimate from the jobs at `positions` (their event-time views).
std::array<history::ExpertPriors, kNumResources> priors_of(const TrainingInput& in,
                                                          const std::vector<size_t>& positions) {
  std::array<history::ExpertPriorAccumulator, kNumResources> acc;
  for (size_t p : positions) {
    const TrainingJob& t = in.jobs[p];
    for (Resource r : kResources) {
      const auto ri = static_cast<size_t>(idx(r));
      acc[ri].add_exact(t.views[ri], *t.job, r, in.util_cap);  // exact labels only
    }
  }
  return {acc[0].priors(), acc[1].priors()};
}

std::vector<size_t> concat(std::vector<size_t> a, const std::vector<size_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Fits the tree route's regressor for every resource: on `fit` with early stopping on `stop`,
// or, with `rounds` given, on `fit` for that many rounds.
TreeRoute fit_tree(const TrainingInput& in, const std::vector<size_t>& fit,
                   const std::vector<size_t>& stop, const std::array<history::ExpertPriors, kNumResources>& priors,
                   const CascadeConfig& cfg, const std::array<int, kNumResources>* rounds) {
  TreeRoute tree(history::Expert::kCombined, in.fallback, priors);
  std::vector<const Job*> jobs;
  for (size_t p : fit) jobs.push_back(in.jobs[p].job);
  tree.build_columns(jobs);
  for (Resource r : kResources) {
    const auto ri = static_cast<size_t>(idx(r));
    auto rows_of = [&](const std::vector<size_t>& pos, std::vector<TreeRoute::Row>& rows,
                       std::vector<float>& y) {
      for (size_t p : pos) {
        const TrainingJob& t = in.jobs[p];
        // A regression target must be a measurement, not an OOM's lower bound.
        if (!t.job->is_valid(r) || !label_exact(*t.job, r, in.util_cap)) continue;
        rows.push_back({t.job, &t.views[ri]});
        y.push_back(static_cast<float>(std::clamp(t.job->label(r), 0.0, in.util_cap)));
      }
    };
    std::vector<TreeRoute::Row> rt, rv;
    std::vector<float> yt, yv;
    rows_of(fit, rt, yt);
    models::GbdtParams params = cfg.tree;  // as the manifest records it
    if (rounds != nullptr) {
      if ((*rounds)[ri] <= 0) continue;
      params.n_rounds = (*rounds)[ri];
      params.early_stopping_rounds = 0;
    } else {
      rows_of(stop, rv, yv);
    }
    tree.fit(r, rt, yt, rv, yv, params, cfg.tree_bag);
  }
  return tree;
}

// Q of the tree route for the jobs at `positions`, in CodePrediction form.
std::vector<models::code::CodePrediction> tree_q(const TreeRoute& tree, const TrainingInput& in,
                                                 const std::vector<size_t>& positions) {
  std::vector<models::code::CodePrediction> out(positions.size());
  for (Resource r : kResources) {
    const auto ri = static_cast<size_t>(idx(r));
    std::vector<TreeRoute::Row> rows;
    for (size_t p : positions) rows.push_back({in.jobs[p].job, &in.jobs[p].views[ri]});
    const std::vector<double> q = tree.predict_batch(rows, r);
    for (size_t k = 0; k < positions.size(); ++k) {
      out[k].util[ri] = static_cast<float>(std::clamp(q[k], 0.0, in.util_cap));
    }
  }
  return out;
}

// Per resource, the Q source on the jobs at `positions` (valid labels; a lower bound scored
// one-sided: scored_error): q_source_by_margin with `margin_se` standard errors clustered by
// script and `unclear` where neither source clears them; fewer than kMinLevelJobs jobs on which the
// two differ (an empty set too) keep the code model. `mae` gets both sources' MAE there and
// `n_jobs` the number of jobs.
std::array<QSource, kNumResources> choose_q_source(const TrainingInput& in,
                                                   const std::vector<size_t>& positions,
                                                   const std::vector<models::code::CodePrediction>& q_code,
                                                   const std::vector<models::code::CodePrediction>& q_tree,
                                                   double margin_se, QSource unclear,
                                                   std::array<std::array<double, 2>, kNumResources>& mae,
                                                   std::array<size_t, kNumResources>& n_jobs) {
  std::array<QSource, kNumResources> out{QSource::kCodeModel, QSource::kCodeModel};
  for (Resource r : kResources) {
    const auto ri = static_cast<size_t>(idx(r));
    double ec = 0.0, et = 0.0;
    std::vector<QErrors> rows;
    for (size_t k = 0; k < positions.size(); ++k) {
      const Job& job = *in.jobs[positions[k]].job;
      if (!job.is_valid(r)) continue;
      const double y = std::clamp(job.label(r), 0.0, in.util_cap);
      const bool exact = label_exact(job, r, in.util_cap);
      const double c = scored_error(static_cast<double>(q_code[k].util[ri]), y, exact);
      const double t = scored_error(static_cast<double>(q_tree[k].util[ri]), y, exact);
      ec += c;
      et += t;
      // A job without a script key is a script of its own.
      const uint64_t cluster = std::hash<std::string>{}(job.script_key.empty() ? "j:" + job.job_id
                                                                               : "s:" + job.script_key);
      rows.push_back({c, t, cluster});
    }
    const auto n = static_cast<double>(rows.size());
    mae[ri] = {rows.empty() ? 0.0 : ec / n, rows.empty() ? 0.0 : et / n};
    n_jobs[ri] = rows.size();
    out[ri] = q_source_by_margin(rows, margin_se, unclear);
  }
  return out;
}

// Q as the cascade uses it: per resource from the chosen source.
std::vector<models::code::CodePrediction> chosen_q(const std::array<QSource, kNumResources>& source,
                                                   std::vector<models::code::CodePrediction> q_code,
                                                   const std::vector<models::code::CodePrediction>& q_tree) {
  for (size_t k = 0; k < q_code.size(); ++k) {
    for (size_t ri = 0; ri < static_cast<size_t>(kNumResources); ++ri) {
      if (source[ri] == QSource::kTreeRoute) q_code[k].util[ri] = q_tree[k].util[ri];
      if (source[ri] == QSource::kMean) q_code[k].util[ri] = mean_q(q_code[k].util[ri], q_tree[k].util[ri]);
    }
  }
  return q_code;
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
  // By run: job id and submit time (a job Slurm requeued keeps its id; its runs are jobs of their own).
  const auto run = [&](size_t p) { return in.jobs[p].job->job_id + '\x1f' + std::to_string(in.jobs[p].job->submit_ms); };
  std::unordered_set<std::string> all_runs;
  bool unique = true;
  for (size_t p = 0; p < in.jobs.size(); ++p) unique = all_runs.insert(run(p)).second && unique;
  if (!unique) {
    peakcast::log(LogLevel::kWarn, "cascade: runs (job id and submit time) are not unique in this trace; "
                         "the leakage check relies on positions only");
    return;
  }
  std::unordered_set<std::string> code_runs;
  for (size_t p : code_pos) code_runs.insert(run(p));
  for (size_t p : used) {
    if (code_runs.count(run(p)) != 0) {
      throw std::logic_error("cascade: leakage: job id " + in.jobs[p].job->job_id + " submitted at " +
                             std::to_string(in.jobs[p].job->submit_ms) + " ms trained both the code model and the gate/fusion");
    }
  }
}

// Gate and fusion for every resource and estimate on the gate/fusion set (the policy picks one
// expert later); `used` gets every position an example came from, for the leakage check.
PolicyCandidates fit_candidates(const TrainingInput& in, const std::vector<size_t>& gate_fusion,
                                const std::vector<models::code::CodePrediction>& q_gf,
                                const std::array<history::ExpertPriors, kNumResources>& train_priors,
                                const CascadeConfig& cfg, CascadeTrainReport& rep,
                                std::vector<size_t>& used, const ProgressFn& progress) {
  PolicyCandidates cand;
  cand.priors = train_priors;
  const size_t total = static_cast<size_t>(kNumResources * history::kNumEstimates);
  size_t done = 0;
  for (Resource r : kResources) {
    const auto ri = static_cast<size_t>(idx(r));
    for (history::Expert e : history::kEstimates) {
      const auto ei = static_cast<size_t>(static_cast<int>(e));
      ComponentData d = component_data(in, gate_fusion, q_gf, r, e, train_priors[ri], cfg);
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
      for (size_t p : d.fusion_pos) {
        const history::Level l = in.jobs[p].views[ri].level;
        if (l != history::Level::kNone) ++cand.fusion_level_n[ri][ei][static_cast<size_t>(l)];
      }
      used.insert(used.end(), d.gate_pos.begin(), d.gate_pos.end());
      used.insert(used.end(), d.fusion_pos.begin(), d.fusion_pos.end());
      if (progress) progress("gate_fusion", ++done, total);
    }
  }
  return cand;
}

// The model before training: its settings, and the report's training sets.
std::unique_ptr<CascadeModel::Impl> new_impl(const TrainingInput& in, const CascadeConfig& cfg,
                                             const Blocks& b) {
  auto impl = std::make_unique<CascadeModel::Impl>();
  impl->cfg = cfg;
  impl->util_cap = in.util_cap;
  impl->fallback = in.fallback;
  impl->trained_on = in.trained_on;
  impl->trained_at_s = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  CascadeTrainReport& rep = impl->report;
  rep.sets.code_fit = ids_of(in, b.code_fit);
  rep.sets.code_early_stopping = ids_of(in, b.code_es);
  rep.sets.gate_fusion = ids_of(in, b.gate_fusion);
  rep.sets.policy = ids_of(in, b.policy);
  rep.sets.code_fit_purged = b.code_fit_purged.size();
  rep.sets.gate_fusion_purged = b.gate_fusion_purged.size();
  for (size_t p : b.train) {  // every label the code model saw (the purged ones in its refit)
    for (Resource r : kResources) rep.labelled[idx(r)] += in.jobs[p].job->is_valid(r) ? 1 : 0;
  }
  return impl;
}

void log_training(const Blocks& b, const CascadeModel::Impl& m) {
  peakcast::log(LogLevel::kInfo,
      fmt::format("cascade: code fit {} (purged {}) / early stop {}, gate+fusion {} (purged {}), policy {}; "
                  "mem {}{} tau {:.2f} (policy MAE {:.4f} vs history {:.4f}); "
                  "vram {}{} tau {:.2f} (policy MAE {:.4f} vs history {:.4f})",
                  b.code_fit.size(), b.code_fit_purged.size(), b.code_es.size(), b.gate_fusion.size(), b.gate_fusion_purged.size(),
                  b.policy.size(), history::expert_name(m.policy[0].expert),
                  m.policy[0].history_only_text(), m.policy[0].tau,
                  m.policy[0].policy_mae, m.policy[0].policy_history_mae,
                  history::expert_name(m.policy[1].expert),
                  m.policy[1].history_only_text(), m.policy[1].tau,
                  m.policy[1].policy_mae, m.policy[1].policy_history_mae));
}

}  // namespace

std::vector<std::string> CascadeModel::training_notes() const {
  const CascadeModel::Impl& m = *impl_;
  std::vector<std::string> notes;
  const size_t gf = m.report.sets.gate_fusion.size();
  const size_t purged = m.report.sets.gate_fusion_purged;
  if (gf < m.cfg.min_component_examples) {
    const std::string left_out =
        purged == 0 ? std::string()
                    : fmt::format(" ({} more were still running when the policy set began and were left out, so "
                                  "that the policy is chosen on jobs they never saw)", purged);
    notes.push_back(fmt::format(
        "gate and fusion were fit on {} validation job{}{}: with fewer than {} each is a constant, and a history "
        "level they saw too few jobs of gets Q alone",
        gf, gf == 1 ? "" : "s", left_out, m.cfg.min_component_examples));
  }
  if (m.cfg.q_source == "auto") {
    for (Resource r : kResources) {
      const auto ri = static_cast<size_t>(idx(r));
      if (m.policy[ri].policy_n == 0 || m.report.q_n[ri] >= kMinLevelJobs) continue;
      notes.push_back(fmt::format(
          "{}: Q comes from the code model by default: the gate/fusion set held {} job{} with a label to compare "
          "it and the tree route on (fewer than {})",
          resource_name(r), m.report.q_n[ri], m.report.q_n[ri] == 1 ? "" : "s", kMinLevelJobs));
    }
  }
  return notes;
}

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

  auto impl = new_impl(in, cfg, b);
  CascadeTrainReport& rep = impl->report;

  // 1. The code model: fit set + early stopping on the chronological end of the train block.
  //    The purge keeps the labels of jobs still running when early stopping starts out of the
  //    choice of epoch only: where it took any, the model is trained again on the fit set with
  //    them back in (they ended before validation) for the epochs early stopping chose.
  auto t0 = std::chrono::steady_clock::now();
  CodeModelSight sight(in.jobs.size());
  for (size_t p : b.train) sight.mark(p);
  auto code = models::code::CodeModel::train(jobs_of(in, b.code_fit), jobs_of(in, b.code_es),
                                             cfg.code, progress);
  if (!code) return code.status().with_context("cascade: code model");
  rep.code = code->report();  // the early-stopping run: its validation loss and chosen epoch
  if (b.code_fit_purged.empty()) {
    impl->code = std::move(code).value();
  } else {
    models::code::CodeModelConfig refit = cfg.code;
    refit.max_epochs = std::max<int64_t>(1, rep.code.best_epoch);
    auto again = models::code::CodeModel::train(jobs_of(in, b.code_refit), {}, refit, progress);
    if (!again) return again.status().with_context("cascade: code model (refit after the purge)");
    impl->code = std::move(again).value();
  }
  rep.seconds_code = seconds_since(t0);

  // 2. The tree route on the same jobs (fit set, early stopping on the code model's holdout,
  //    refit with the purged jobs for the rounds it chose), with the combined estimate's priors
  //    from the whole train block (a purged fit job's too: it ended before validation).
  t0 = std::chrono::steady_clock::now();
  const std::vector<size_t>& train_pos = b.train;
  const auto train_priors = priors_of(in, train_pos);
  TreeRoute es_tree = fit_tree(in, b.code_fit, b.code_es, train_priors, cfg, nullptr);
  const std::array<int, kNumResources> es_rounds{es_tree.rounds(Resource::kMem), es_tree.rounds(Resource::kVram)};
  const TreeRoute tree = b.code_fit_purged.empty()
                             ? std::move(es_tree)
                             : fit_tree(in, b.code_refit, {}, train_priors, cfg, &es_rounds);

  // 3. Q on the validation block, through the guard; the source per resource is chosen on the
  //    gate/fusion set.
  const std::vector<models::code::CodePrediction> q_gf_code =
      out_of_sample_q(impl->code, sight, in, b.gate_fusion);
  const std::vector<models::code::CodePrediction> q_policy_code =
      out_of_sample_q(impl->code, sight, in, b.policy);
  for (size_t p : b.gate_fusion) {
    if (sight.saw(p)) throw std::logic_error("cascade: leakage: tree route Q for a training job");
  }
  const auto q_gf_tree = tree_q(tree, in, b.gate_fusion);
  const auto q_policy_tree = tree_q(tree, in, b.policy);
  const QSource unclear = cfg.q_source_unclear == "mean" ? QSource::kMean : QSource::kCodeModel;
  impl->q_source = choose_q_source(in, b.gate_fusion, q_gf_code, q_gf_tree, cfg.q_source_margin_se, unclear,
                                   rep.q_mae, rep.q_n);
  if (cfg.q_source != "auto") {
    const QSource forced = cfg.q_source == "tree_route" ? QSource::kTreeRoute
                           : cfg.q_source == "mean"     ? QSource::kMean
                                                        : QSource::kCodeModel;
    impl->q_source = {forced, forced};
  }
  const auto q_gf = chosen_q(impl->q_source, q_gf_code, q_gf_tree);
  const auto q_policy = chosen_q(impl->q_source, q_policy_code, q_policy_tree);

  // 4. Gate and fusion for every resource and estimate (the policy picks one later).
  std::vector<size_t> used;
  PolicyCandidates cand = fit_candidates(in, b.gate_fusion, q_gf, train_priors, cfg, rep, used, progress);
  assert_disjoint(in, sight, b.train, used);
  rep.seconds_components = seconds_since(t0);

  // 5. Policy and upper bound on the policy set; keep the chosen experts' components.
  t0 = std::chrono::steady_clock::now();
  choose_policy(in, b.policy, q_policy, cand, cfg, *impl);
  rep.policy = impl->policy;

  // 6. Serving: priors from every train and validation job; the tree route (where a resource
  //    uses it) refit on all of them for the rounds early stopping chose. Gate, fusion and
  //    policy saw the train-block route's outputs; the refit only adds data.
  const std::vector<size_t> all_pos = concat(train_pos, concat(b.gate_fusion, b.policy));
  impl->priors = priors_of(in, all_pos);
  if (uses_tree_route(impl->q_source[0]) || uses_tree_route(impl->q_source[1])) {
    std::array<int, kNumResources> rounds{tree.rounds(Resource::kMem), tree.rounds(Resource::kVram)};
    impl->tree.emplace(fit_tree(in, all_pos, {}, impl->priors, cfg, &rounds));
  }
  rep.q_source = impl->q_source;
  rep.seconds_policy = seconds_since(t0);
  if (progress) progress("policy", 1, 1);
  log_training(b, *impl);
  return impl;
}

}  // namespace peakcast::cascade
