// An online (adaptive) conformal upper bound for one resource, kept per history level.
//
// Units. The bound is unit-agnostic: `point` and `label` are in the same unit, whatever the
// caller predicts -- utilization in [0, cap] in `peakcast evaluate` and the daemon, bytes in
// `peakcast simulate`. The nonconformity score is label - point (Scale::kAdditive, the default:
// right for utilization, which has a common scale) or label / point (Scale::kRatio: right for
// bytes pooled over workloads of very different sizes; needs point > 0).
//
// Method: adaptive conformal inference (Gibbs & Candes, NeurIPS 2021). Per level (exact_script,
// user, none) the bound keeps a window of the most recent scores and a working miscoverage
// alpha_t. The bound for a new job is point (+ or x) the ceil((n+1)(1-alpha_t))/n empirical
// quantile of the level's window (the pooled window of all levels while the level has fewer
// than min_level_scores). After the job completes, err_t = 1 if its label exceeded the bound,
// else 0, and alpha_t += gamma * (alpha - err_t): misses widen the next bounds, hits narrow
// them, so the long-run miss rate is alpha whatever the drift (|mean err - alpha| <=
// (1 + gamma) / (gamma T) over T updates). alpha_t is kept in [alpha_floor, 1]; at or below
// 1/(n+1) the bound is the window's largest score (finite, unlike the paper's infinite interval).
//
// OOM (censored) completions: the label is a lower bound on the true peak. If the bound was
// below it, that is a miss (err = 1) and its score (a lower bound on the true score) enters the
// window: it can only raise later bounds. If the bound was at or above it, nothing is learned:
// the true peak may still have been above the bound, so it neither counts as a hit nor enters
// the window (it is never evidence that a smaller bound suffices).
//
// Deterministic: no randomness; the same calls in the same order give the same bounds.
// Not thread-safe: the caller serialises observe() and upper().
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <optional>

#include "peakcast/history/history.h"

namespace peakcast::sizing {

enum class Scale { kAdditive, kRatio };

struct OnlineBoundOptions {
  double coverage = 0.9;           // nominal c; alpha = 1 - c
  double gamma = 0.01;             // ACI step size
  size_t window = 500;             // most recent scores kept per level (and pooled)
  size_t min_level_scores = 30;    // fewer at a level: use the pooled window
  Scale scale = Scale::kAdditive;
  double alpha_floor = -0.05;      // alpha_t's lower clamp (below 1/(n+1): the window's max)
};

inline constexpr int kNumLevels = 3;

class OnlineBound {
 public:
  explicit OnlineBound(OnlineBoundOptions options = {});

  // The upper bound for a job whose point prediction is `point`, answered at `level`. Before any
  // score is known it is `point` itself (Scale::kAdditive) or `point` (kRatio): the caller's
  // floor/margin rules handle the cold start (has_scores() says whether there is evidence).
  double upper(history::Level level, double point) const;

  // A job completed: its point prediction at submission, its label (a lower bound when
  // censored). Updates alpha_t with the bound the current state gives for `point`.
  void observe(history::Level level, double point, double label, bool censored);
  // Same, with the bound that was actually issued at submission (the daemon and chrono replay
  // issue bounds before earlier jobs complete): err_t is judged against `issued_bound`.
  void observe_issued(history::Level level, double point, double label, bool censored,
                      double issued_bound);

  bool has_scores(history::Level level) const;
  double alpha_t(history::Level level) const;   // the working miscoverage
  size_t scores(history::Level level) const;    // scores in the level's window
  size_t updates(history::Level level) const;   // alpha_t updates so far
  const OnlineBoundOptions& options() const { return options_; }

 private:
  struct LevelState {
    std::deque<double> window;
    double alpha_t = 0.1;
    size_t updates = 0;
  };
  const std::deque<double>& scores_for(history::Level level) const;
  double score(double point, double label) const;
  double apply(double point, double q) const;
  void push(std::deque<double>& w, double s) const;

  OnlineBoundOptions options_;
  std::array<LevelState, kNumLevels> levels_;
  std::deque<double> pooled_;
};

// The conformal quantile of `scores` at miscoverage alpha: the ceil((n+1)(1-alpha))-th smallest,
// the largest when that rank exceeds n. nullopt for no scores.
std::optional<double> conformal_quantile(const std::deque<double>& scores, double alpha);

}  // namespace peakcast::sizing
