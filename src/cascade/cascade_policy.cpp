// Policy selection on the policy set: expert e and tau_r jointly with the trust region, lowest
// MAE, ties to fewer encoder calls; then the split-conformal half-widths for the upper bound.
#include "cascade/cascade_policy.h"

#include <cmath>
#include <limits>

namespace peakcast::cascade {
namespace {

constexpr double kTieTol = 1e-12;

// What one policy-set job offers for one resource and expert, everything but the grid choice.
struct Row {
  history::Level level;
  double h, q, y, mad, prob, gamma;
};

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
    row.mad = v.exact.mad;
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

// Whether the policy serves H without the encoder: the gate cleared tau, or history_only with
// some history.
bool bypassed(const Row& row, const ResourcePolicy& p) {
  if (p.history_only) return row.level != history::Level::kNone;
  return row.prob >= p.tau;
}

double served(const Row& row, const ResourcePolicy& p, double cap) {
  return resolve_util(row.level, bypassed(row, p), row.h, row.q, row.gamma, row.mad, p, cap);
}

Score score(const std::vector<Row>& rows, const ResourcePolicy& p, double cap) {
  Score s;
  if (rows.empty()) return {0.0, 0};
  double err = 0.0;
  for (const Row& row : rows) {
    err += std::abs(served(row, p, cap) - row.y);
    s.encoder += bypassed(row, p) ? 0 : 1;
  }
  s.mae = err / static_cast<double>(rows.size());
  return s;
}

// The paired per-job difference |a - y| - |b - y|, summarized by history::mean_and_se.
history::MeanSe paired_difference(const std::vector<Row>& rows_a, const ResourcePolicy& a,
                                  const std::vector<Row>& rows_b, const ResourcePolicy& b, double cap) {
  std::vector<double> d(std::min(rows_a.size(), rows_b.size()));
  for (size_t i = 0; i < d.size(); ++i) {
    d[i] = std::abs(served(rows_a[i], a, cap) - rows_a[i].y) -
           std::abs(served(rows_b[i], b, cap) - rows_b[i].y);
  }
  return history::mean_and_se(d);
}

}  // namespace

void choose_policy(const TrainingInput& in, const std::vector<size_t>& pos,
                   const std::vector<models::code::CodePrediction>& q, PolicyCandidates& cand,
                   const CascadeConfig& cfg, CascadeModel::Impl& out) {
  for (Resource r : kResources) {
    const auto ri = static_cast<size_t>(idx(r));
    ResourcePolicy best;
    Score best_score;
    std::vector<Row> best_rows;
    bool first = true;
    // History alone, with the estimate history::choose_estimate picks on the policy set.
    std::array<std::vector<Row>, history::kNumEstimates> rows_by_estimate;
    for (history::Expert e : history::kEstimates) {
      const auto ei = static_cast<size_t>(static_cast<int>(e));
      rows_by_estimate[ei] = rows_for(in, pos, q, r, e, cand.priors[ri], cand.gate[ri][ei],
                                      cand.fusion[ri][ei]);
    }
    ResourcePolicy hist;
    hist.history_only = true;
    {
      std::vector<std::array<double, history::kNumEstimates>> errs;
      const auto& some = rows_by_estimate[0];
      for (size_t i = 0; i < some.size(); ++i) {
        if (some[i].level == history::Level::kNone) continue;  // Q there, whatever the estimate
        std::array<double, history::kNumEstimates> row{};
        for (history::Expert e : history::kEstimates) {
          const auto ei = static_cast<size_t>(static_cast<int>(e));
          row[ei] = std::abs(std::clamp(rows_by_estimate[ei][i].h, 0.0, in.util_cap) - some[i].y);
        }
        errs.push_back(row);
      }
      hist.expert = history::choose_estimate(errs, cfg.history_margin_se);
    }
    const std::vector<Row>& hist_rows = rows_by_estimate[static_cast<size_t>(hist.expert)];
    for (history::Expert e : history::kEstimates) {
      const auto ei = static_cast<size_t>(static_cast<int>(e));
      std::vector<Row>& rows = rows_by_estimate[ei];
      bool improved = false;
      for (double tau : cfg.tau_grid) {
        for (double coef : cfg.trust_coef_grid) {
          for (double floor : cfg.trust_floor_grid) {
            ResourcePolicy p;
            p.expert = e;
            p.tau = tau;
            p.trust_coef = coef;
            p.trust_floor = floor;
            const Score s = score(rows, p, in.util_cap);
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
    // A small policy set must show a clear gain before the fused cascade replaces history.
    const double fused_mae = best_score.mae;
    const history::MeanSe gain = paired_difference(best_rows, best, hist_rows, hist, in.util_cap);
    if (cfg.allow_history_only && !(gain.mean + cfg.history_margin_se * gain.se < 0.0)) {
      best = hist;
      best_score = score(hist_rows, hist, in.util_cap);
      best_rows = hist_rows;
    }
    best.policy_fused_mae = best_rows.empty() ? 0.0 : fused_mae;
    best.policy_n = best_rows.size();
    best.policy_mae = best_score.mae;
    best.policy_encoder_share =
        best_rows.empty() ? 0.0
                          : static_cast<double>(best_score.encoder) / static_cast<double>(best_rows.size());
    double hist_err = 0.0;
    for (const Row& row : best_rows) hist_err += std::abs(std::clamp(row.h, 0.0, in.util_cap) - row.y);
    best.policy_history_mae = best_rows.empty() ? 0.0 : hist_err / static_cast<double>(best_rows.size());

    // Upper bound: |y - prediction| per route class under the chosen policy.
    std::array<std::vector<double>, kRouteClasses> res;
    std::vector<double> pooled;
    for (const Row& row : best_rows) {
      const bool bypass = bypassed(row, best);
      const double u = served(row, best, in.util_cap);
      const double a = std::abs(row.y - u);
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
    for (double& v : ub.q) if (std::isinf(v)) v = in.util_cap;
    if (std::isinf(ub.pooled)) ub.pooled = in.util_cap;

    const auto ei = static_cast<size_t>(static_cast<int>(best.expert));
    out.policy[ri] = best;
    out.upper[ri] = ub;
    out.gate[ri] = std::move(cand.gate[ri][ei]);
    out.fusion[ri] = std::move(cand.fusion[ri][ei]);
    out.gate_feature_mean[ri] = cand.gate_mean[ri][ei];
  }
}

}  // namespace peakcast::cascade
