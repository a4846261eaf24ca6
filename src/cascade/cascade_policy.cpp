// Policy selection on the policy set: expert e and tau_r jointly with the trust region, lowest
// MAE, ties to fewer encoder calls; then the split-conformal half-widths for the upper bound.
#include "cascade/cascade_policy.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace peakcast::cascade {
namespace {

constexpr double kTieTol = 1e-12;

// What one policy-set job offers for one resource and expert, everything but the grid choice.
struct Row {
  history::Level level;
  double h, q, y, mad, prob, gamma;
  bool exact;        // label_exact: false for an OOM's lower bound (scored one-sided)
  uint64_t cluster;  // LevelErrors::cluster
};

// The history a job is answered from: its script with exact-script history, else its user.
uint64_t history_cluster(const Job& job, history::Level level) {
  return std::hash<std::string>{}(level == history::Level::kExactScript ? "s:" + job.script_key
                                                                         : "u:" + job.user);
}

std::vector<Row> rows_for(const TrainingInput& in, const std::vector<size_t>& pos,
                          const std::vector<models::code::CodePrediction>& q, Resource r,
                          history::Expert e, const history::ExpertPriors& priors,
                          const Component& gate, const Component& fusion) {
  const auto ri = static_cast<size_t>(idx(r));
  std::vector<Row> rows;
  std::vector<float> gx, fx;
  for (size_t k = 0; k < pos.size(); ++k) {
    const TrainingJob& t = in.jobs[pos[k]];
    if (!t.job->is_valid(r)) continue;
    const history::HistoryView& v = t.views[ri];
    Row row{};
    row.level = v.level;
    row.h = v.estimate(e, in.fallback[ri], priors);
    row.q = static_cast<double>(q[k].util[ri]);
    row.y = std::clamp(t.job->label(r), 0.0, in.util_cap);
    row.exact = label_exact(*t.job, r, in.util_cap);
    row.mad = v.exact.mad;
    row.cluster = history_cluster(*t.job, v.level);
    const GateFeatures g = gate_features(*t.job, v, e, in.fallback[ri], priors);
    const FusionFeatures f = fusion_features(g, row.h, row.q);
    gx.insert(gx.end(), g.begin(), g.end());
    fx.insert(fx.end(), f.begin(), f.end());
    rows.push_back(row);
  }
  const std::vector<double> prob = gate.predict_rows(gx, rows.size(), kGateFeatures);
  const std::vector<double> gamma = fusion.predict_rows(fx, rows.size(), kFusionFeatures);
  for (size_t i = 0; i < rows.size(); ++i) {
    // The gate is consulted only with exact-script history.
    rows[i].prob = rows[i].level == history::Level::kExactScript ? prob[i] : -1.0;
    rows[i].gamma = gamma[i];
  }
  return rows;
}

struct Score {
  double mae = std::numeric_limits<double>::infinity();
  size_t encoder = 0;
};

// Whether the policy serves H without the encoder: history alone at the row's level, or the
// gate cleared tau.
bool bypassed(const Row& row, const ResourcePolicy& p) {
  if (p.history_only_at(row.level)) return true;
  return row.prob >= p.tau;
}

// What the policy serves for one job: `fused` is the job's row for p.expert, `hist` its row for
// p.history_expert (the same job).
double served(const Row& fused, const Row& hist, const ResourcePolicy& p, double cap) {
  if (p.history_only_at(fused.level)) return std::clamp(hist.h, 0.0, cap);
  const double gamma = p.q_alone_at(fused.level) ? 1.0 : fused.gamma;
  return resolve_util(fused.level, bypassed(fused, p), fused.h, fused.q, gamma, fused.mad, p, cap);
}

Score score(const std::vector<Row>& fused, const std::vector<Row>& hist, const ResourcePolicy& p,
            double cap) {
  Score s;
  if (fused.empty()) return {0.0, 0};
  double err = 0.0;
  for (size_t i = 0; i < fused.size(); ++i) {
    err += scored_error(served(fused[i], hist[i], p, cap), fused[i].y, fused[i].exact);
    s.encoder += bypassed(fused[i], p) ? 0 : 1;
  }
  s.mae = err / static_cast<double>(fused.size());
  return s;
}

// The per-level comparison rows of the chosen fused grid entry against history alone.
std::vector<LevelErrors> level_errors(const std::vector<Row>& fused, const std::vector<Row>& hist,
                                      const ResourcePolicy& p, double cap) {
  std::vector<LevelErrors> out;
  out.reserve(fused.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    out.push_back({fused[i].level, scored_error(served(fused[i], hist[i], p, cap), fused[i].y, fused[i].exact),
                   scored_error(std::clamp(hist[i].h, 0.0, cap), fused[i].y, fused[i].exact),
                   fused[i].cluster});
  }
  return out;
}

// History alone: the estimate history::choose_estimate picks on the policy set (jobs with some
// history; Q answers the others whatever the estimate).
history::Expert history_estimate(const std::array<std::vector<Row>, history::kNumEstimates>& rows,
                                 double cap, double margin_se) {
  std::vector<std::array<double, history::kNumEstimates>> errs;
  const auto& some = rows[0];
  for (size_t i = 0; i < some.size(); ++i) {
    if (some[i].level == history::Level::kNone) continue;
    std::array<double, history::kNumEstimates> row{};
    for (history::Expert e : history::kEstimates) {
      const auto ei = static_cast<size_t>(static_cast<int>(e));
      row[ei] = scored_error(std::clamp(rows[ei][i].h, 0.0, cap), some[i].y, some[i].exact);
    }
    errs.push_back(row);
  }
  return history::choose_estimate(errs, margin_se);
}

// The gated, fused grid: expert, tau and trust region with the lowest MAE (ties within kTieTol
// to fewer encoder calls, then to the earlier entry). Fills best, its score and its rows.
void search_grid(const std::array<std::vector<Row>, history::kNumEstimates>& rows_by_estimate,
                 const std::vector<Row>& hist_rows, history::Expert hist_expert, size_t ri,
                 const PolicyCandidates& cand, const CascadeConfig& cfg, double cap,
                 ResourcePolicy& best, Score& best_score, std::vector<Row>& best_rows) {
  bool first = true;
  for (history::Expert e : history::kEstimates) {
    const auto ei = static_cast<size_t>(static_cast<int>(e));
    const std::vector<Row>& rows = rows_by_estimate[ei];
    bool improved = false;
    for (double tau : cfg.tau_grid) {
      for (double coef : cfg.trust_coef_grid) {
        for (double floor : cfg.trust_floor_grid) {
          ResourcePolicy p;
          p.expert = e;
          p.history_expert = hist_expert;
          for (size_t l = 0; l < 2; ++l)
            p.q_alone[l] = cand.fusion_level_n[ri][ei][l] < cfg.min_component_examples;
          p.tau = tau;
          p.trust_coef = coef;
          p.trust_floor = floor;
          const Score s = score(rows, hist_rows, p, cap);
          const bool better = first || s.mae < best_score.mae - kTieTol ||
                              (std::abs(s.mae - best_score.mae) <= kTieTol &&
                               s.encoder < best_score.encoder);
          if (better) {
            best = p;
            best_score = s;
            improved = true;
            first = false;
          }
        }
      }
    }
    if (improved) best_rows = rows;
  }
}

// Upper bound: the split-conformal half-width of |y - prediction| per route class under the
// chosen policy, and pooled.
UpperBound upper_bound_of(const std::vector<Row>& best_rows, const std::vector<Row>& hist_rows,
                          const ResourcePolicy& best, const CascadeConfig& cfg, double cap) {
  std::array<std::vector<double>, kRouteClasses> res;
  std::vector<double> pooled;
  for (size_t i = 0; i < best_rows.size(); ++i) {
    const Row& row = best_rows[i];
    const bool bypass = bypassed(row, best);
    const double signed_miss = row.y - served(row, hist_rows[i], best, cap);
    // A lower bound's residual is known only where it was under-predicted (the job needed at
    // least that much more); over-predicted, its residual is unknown and it is left out.
    if (!row.exact && signed_miss <= 0.0) continue;
    const double a = std::abs(signed_miss);
    res[static_cast<size_t>(route_class(row.level, bypass))].push_back(a);
    pooled.push_back(a);
  }
  UpperBound ub;
  for (int c = 0; c < kRouteClasses; ++c) {
    ub.n[static_cast<size_t>(c)] = res[static_cast<size_t>(c)].size();
    ub.q[static_cast<size_t>(c)] =
        conformal_quantile(res[static_cast<size_t>(c)], cfg.coverage, cfg.min_conformal);
  }
  ub.pooled_n = pooled.size();
  ub.pooled = conformal_quantile(pooled, cfg.coverage, cfg.min_conformal);
  // A rank beyond n (tiny classes) means "no finite bound": a half-width of the cap covers all.
  for (double& v : ub.q) if (std::isinf(v)) v = cap;
  if (std::isinf(ub.pooled)) ub.pooled = cap;
  return ub;
}

}  // namespace

std::array<bool, 2> history_alone_by_level(const std::vector<LevelErrors>& rows, double margin_se) {
  std::array<bool, 2> out{true, false};  // the defaults: history first with exact-script history
  for (history::Level l : {history::Level::kExactScript, history::Level::kUser}) {
    std::vector<double> d;  // fused minus history: < 0 where the fused cascade is better
    std::vector<uint64_t> cluster;
    for (const LevelErrors& r : rows) {
      if (r.level != l) continue;
      d.push_back(r.fused - r.history);
      cluster.push_back(r.cluster);
    }
    // Evidence is the jobs where the two choices differ: many identical answers and a few tiny
    // differences give a standard error near zero that says nothing.
    const auto differ = static_cast<size_t>(
        std::count_if(d.begin(), d.end(), [](double x) { return std::abs(x) > kTieTol; }));
    if (differ < kMinLevelJobs) continue;
    const history::MeanSe gain = history::clustered_mean_and_se(d, cluster);
    const double margin = margin_se * history::small_sample_factor(gain.df) * gain.se;
    const auto li = static_cast<size_t>(l);
    if (out[li]) {
      out[li] = !(gain.mean + margin < 0.0);  // fused clearly better: leave history
    } else {
      out[li] = gain.mean - margin > 0.0;     // history clearly better: take it
    }
  }
  return out;
}

QSource q_source_by_margin(const std::vector<QErrors>& rows, double margin_se, QSource unclear) {
  // Evidence is the jobs where the two Qs differ, as for history_alone_by_level: with fewer than
  // kMinLevelJobs of them (none included) the default stands, the code model (a block whose
  // gate/fusion half was purged to one job would otherwise let that job pick the source of every
  // new script's Q).
  const auto differ = static_cast<size_t>(std::count_if(
      rows.begin(), rows.end(), [](const QErrors& r) { return std::abs(r.tree - r.code) > kTieTol; }));
  if (differ < kMinLevelJobs) return QSource::kCodeModel;
  if (margin_se <= 0.0) {
    double code = 0.0, tree = 0.0;
    for (const QErrors& r : rows) {
      code += r.code;
      tree += r.tree;
    }
    return tree < code ? QSource::kTreeRoute : QSource::kCodeModel;
  }
  std::vector<double> d;  // tree minus code: < 0 where the tree route is better
  std::vector<uint64_t> cluster;
  for (const QErrors& r : rows) {
    d.push_back(r.tree - r.code);
    cluster.push_back(r.cluster);
  }
  const history::MeanSe gain = history::clustered_mean_and_se(d, cluster);
  const double margin = margin_se * history::small_sample_factor(gain.df) * gain.se;
  if (gain.mean + margin < 0.0) return QSource::kTreeRoute;
  if (gain.mean - margin > 0.0) return QSource::kCodeModel;
  return unclear;
}

void choose_policy(const TrainingInput& in, const std::vector<size_t>& pos,
                   const std::vector<models::code::CodePrediction>& q, PolicyCandidates& cand,
                   const CascadeConfig& cfg, CascadeModel::Impl& out) {
  for (Resource r : kResources) {
    const auto ri = static_cast<size_t>(idx(r));
    std::array<std::vector<Row>, history::kNumEstimates> rows_by_estimate;
    for (history::Expert e : history::kEstimates) {
      const auto ei = static_cast<size_t>(static_cast<int>(e));
      rows_by_estimate[ei] = rows_for(in, pos, q, r, e, cand.priors[ri], cand.gate[ri][ei],
                                      cand.fusion[ri][ei]);
    }
    const history::Expert hist_expert = history_estimate(rows_by_estimate, in.util_cap,
                                                         cfg.history_margin_se);
    const std::vector<Row>& hist_rows = rows_by_estimate[static_cast<size_t>(hist_expert)];
    ResourcePolicy best;
    Score best_score;
    std::vector<Row> best_rows;
    search_grid(rows_by_estimate, hist_rows, hist_expert, ri, cand, cfg, in.util_cap, best,
                best_score, best_rows);
    // Per history level, history alone or the fused cascade (history_alone_by_level).
    const double fused_mae = best_score.mae;
    if (cfg.allow_history_only) {
      best.history_only = history_alone_by_level(
          level_errors(best_rows, hist_rows, best, in.util_cap), cfg.history_margin_se);
      best_score = score(best_rows, hist_rows, best, in.util_cap);
    }
    best.policy_fused_mae = best_rows.empty() ? 0.0 : fused_mae;
    best.policy_n = best_rows.size();
    best.policy_mae = best_score.mae;
    // The jobs not bypassed need Q: an encoder job where the code model gives it (alone or in the
    // mean), none where the tree route alone does (the routing's tree_share, as the daemon's
    // route `tree`).
    const bool code_q = uses_code_model(out.q_source[ri]);
    best.policy_encoder_share =
        best_rows.empty() || !code_q
            ? 0.0
            : static_cast<double>(best_score.encoder) / static_cast<double>(best_rows.size());
    double hist_err = 0.0;
    for (const Row& row : hist_rows) hist_err += scored_error(std::clamp(row.h, 0.0, in.util_cap), row.y, row.exact);
    best.policy_history_mae = hist_rows.empty() ? 0.0 : hist_err / static_cast<double>(hist_rows.size());

    const auto ei = static_cast<size_t>(static_cast<int>(best.expert));
    out.policy[ri] = best;
    out.upper[ri] = upper_bound_of(best_rows, hist_rows, best, cfg, in.util_cap);
    out.gate[ri] = std::move(cand.gate[ri][ei]);
    out.fusion[ri] = std::move(cand.fusion[ri][ei]);
    out.gate_feature_mean[ri] = cand.gate_mean[ri][ei];
  }
}

}  // namespace peakcast::cascade
