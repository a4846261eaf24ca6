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
// OOM (censored) completions: the label is the limit the job was killed at, and its true peak
// was above it. If the bound was at or below the label, that is a miss (err = 1: a job killed at
// X needed more than X, so a bound of X missed it too) and its score (a lower bound on the true
// score) enters the window: it can only raise later bounds. If the bound was above the label,
// nothing is learned: the true peak may still have been above the bound, so it neither counts as
// a hit nor enters the window (it is never evidence that a smaller bound suffices).
//
// Script clusters at the user level (OnlineBoundOptions::cluster_user_level, off by default).
// A job answered at the user level is a script with no history of its own. In a workflow trace
// the jobs of one script arrive in a burst, all submitted before any completes, and share their
// fate: the exchangeable unit is the script, not the job. With the option on, the user level's
// window holds one score per script (its largest user-level score so far; the most recent
// `window` scripts), ACI updates as before, and the level has evidence only once it holds at
// least ceil(c/(1-c)) scripts (the fewest for which the conformal c-quantile is finite: 9 at
// 0.9); before that it never borrows the pooled window (has_scores() is false). A job without a
// cluster key is a script of its own. The other levels are unchanged.
//
// Scripts missed before (OnlineBoundOptions::split_missed_scripts, off by default). Mondrian
// conformal at the exact level, in two parts whose membership is known at submission: the
// scripts this bound has missed before (a completion of the script, at any level, above the bound
// issued for it) and the others. Each part has its own window and alpha_t (the pooled window
// while the part has fewer than min_level_scores). In a workflow most tasks are deterministic
// (residual ~0) and a few scripts' peaks move with their inputs; in one window the first set the
// quantile and the second are missed a whole burst at a time. The part is chosen by the script
// key passed to upper()/has_scores()/observe(); a job without one is in the "not missed" part.
// A score goes to the part its script is in when it completes, so the "not missed" part keeps
// only scripts that never moved: right where moving is a property of the script, an
// under-coverage where any script may drift now and then. Off in evaluate and peakcastd
// (docs/bounds-log.md, "Bursts at the exact level").
//
// Script windows at the exact level (OnlineBoundOptions::script_windows, off by default). Mondrian
// conformal by script: a script with at least ceil(c/(1-c)) exact-level scores of its own (the
// fewest for which the conformal c-quantile is finite: 9 at 0.9; its most recent `window`) is
// bounded by the quantile of its own scores, at the exact level's alpha_t; a script with fewer
// (or a job without a script key) by the level's window as before. Every exact-level completion
// still enters the level's window and updates its alpha_t: ACI corrects the shared drift, the
// script's own scores give its spread. In one window of a workflow the deterministic tasks
// (residual ~0) set the quantile and the few scripts whose peaks move are missed a burst at a
// time; their own scores bound them, and the deterministic ones get narrower bounds. Unlike
// split_missed_scripts, a score always goes to its own script: no selection by past misses. The
// most recent `max_scripts` scripts are kept (memory is bounded in the daemon).
//
// Deterministic: no randomness; the same calls in the same order give the same bounds.
// Not thread-safe: the caller serialises observe() and upper().
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "peakcast/history/history.h"
#include "peakcast/sizing/recent_keys.h"

namespace peakcast::sizing {

enum class Scale { kAdditive, kRatio };

struct OnlineBoundOptions {
  double coverage = 0.9;           // nominal c; alpha = 1 - c
  double gamma = 0.01;             // ACI step size
  size_t window = 500;             // most recent scores kept per level (and pooled)
  size_t min_level_scores = 30;    // fewer at a level: use the pooled window
  Scale scale = Scale::kAdditive;
  double alpha_floor = -0.05;      // alpha_t's lower clamp (below 1/(n+1): the window's max)
  bool cluster_user_level = false; // user level: one score per script (see above)
  bool split_missed_scripts = false; // exact level: missed scripts calibrated apart (see above)
  bool script_windows = false;     // exact level: a script's own scores once it has enough (above)
  size_t max_scripts = 4096;       // script_windows: scripts kept (least recently completed dropped)
};

inline constexpr int kNumLevels = 3;

// The settings `peakcast evaluate` measures and peakcastd serves, at nominal `coverage`: ACI step
// 0.02 and 500 residuals per level, the user level clustered by script (cluster_user_level: a new
// script's jobs share their fate, so its level calibrates on scripts, not jobs), and at the exact
// level a script with enough scores of its own bounded by them (script_windows: Mondrian
// conformal by script). The step was chosen on the five dev traces (docs/bounds-log.md): step 0.01
// over-covered chipseq (0.935 at 0.9), no adaptation (step 0) under-covered eager (0.73) and
// chipseq (0.83).
inline OnlineBoundOptions served_bound_options(double coverage) {
  OnlineBoundOptions o;
  o.coverage = coverage;
  o.gamma = 0.02;
  o.window = 500;
  o.cluster_user_level = true;
  o.script_windows = true;
  return o;
}

// Whether a bound covered a completed job: label <= bound, except that a censored (OOM) job's
// label is the limit it was killed at and its peak was above it, so only a bound above the label
// covers it. Within 1e-12 counts as equal (a bound built from the same label may round either
// way). The one rule for OnlineBound's misses and for the coverage figures of evaluate and the
// report.
inline bool bound_covers(double label, double bound, bool censored) {
  return censored ? bound > label + 1e-12 : label <= bound + 1e-12;
}

// ACI's update of the working miscoverage after a job judged by its bound: alpha_t moves by
// gamma x (alpha - err), err = 1 for a miss, and stays in [alpha_floor, 1]. The one rule for
// OnlineBound and the sizing policy's ratio bounds.
inline double aci_step(double alpha_t, double alpha, bool miss, const OnlineBoundOptions& o) {
  return std::clamp(alpha_t + o.gamma * (alpha - (miss ? 1.0 : 0.0)), o.alpha_floor, 1.0);
}

class OnlineBound {
 public:
  explicit OnlineBound(OnlineBoundOptions options = {});

  // The upper bound for a job whose point prediction is `point`, answered at `level`. Before any
  // score is known it is `point` itself (Scale::kAdditive) or `point` (kRatio): the caller's
  // floor/margin rules handle the cold start (has_scores() says whether there is evidence).
  // `cluster`: the job's script key (used with split_missed_scripts and script_windows).
  double upper(history::Level level, double point, std::string_view cluster = {}) const;

  // A job completed: its point prediction at submission, its label (a lower bound when
  // censored). Updates alpha_t with the bound the current state gives for `point`.
  // `cluster`: the job's script key (used by cluster_user_level, where empty = a script of its
  // own, and by split_missed_scripts and script_windows).
  void observe(history::Level level, double point, double label, bool censored,
               std::string_view cluster = {});
  // Same, with the bound that was actually issued at submission (the daemon and chrono replay
  // issue bounds before earlier jobs complete): err_t is judged against `issued_bound`.
  void observe_issued(history::Level level, double point, double label, bool censored,
                      double issued_bound, std::string_view cluster = {});

  bool has_scores(history::Level level, std::string_view cluster = {}) const;
  size_t missed_scripts() const { return missed_.size(); }  // with split_missed_scripts
  // With script_windows: the script's own exact-level scores kept, and how many it needs before
  // its own window bounds it (ceil(c/(1-c))).
  size_t script_scores(std::string_view script) const;
  size_t min_script_scores() const;
  size_t own_windows() const;  // scripts whose own window bounds them now
  double alpha_t(history::Level level) const;   // the working miscoverage
  size_t scores(history::Level level) const;    // scores in the level's window (scripts when clustered)
  size_t updates(history::Level level) const;   // alpha_t updates so far
  const OnlineBoundOptions& options() const { return options_; }

 private:
  struct LevelState {
    std::deque<double> window;
    double alpha_t = 0.1;
    size_t updates = 0;
  };
  // The state a job's bound uses: the level's, or the missed scripts' part of the exact level.
  const LevelState& state_for(history::Level level, std::string_view cluster) const;
  LevelState& state_for(history::Level level, std::string_view cluster);
  // The scores an unclustered level's bound is computed from: its own window or the pooled one.
  const std::deque<double>& window_or_pooled(const LevelState& st) const;
  // The clustered level's quantile at alpha: one copy of the per-script scores (nullopt until
  // enough_clusters()); the bound is asked under the daemon's sizing lock on every request.
  std::optional<double> cluster_quantile(double alpha) const;
  bool clustered(history::Level level) const;
  bool enough_clusters() const;
  void push_cluster(std::string_view cluster, double s);
  // script_windows: the script's own scores when it has enough of them, else nullptr.
  const std::deque<double>* own_window(history::Level level, std::string_view script) const;
  void push_script(std::string_view script, double s);
  double score(double point, double label) const;
  double apply(double point, double q) const;
  void push(std::deque<double>& w, double s) const;

  OnlineBoundOptions options_;
  size_t min_evidence_;  // ceil(c/(1-c)): the fewest scores (or scripts) with a finite c-quantile
  std::array<LevelState, kNumLevels> levels_;
  std::deque<double> pooled_;
  // Clustered user level: scripts in recency order (front = oldest) with their largest score.
  RecentKeys<double> clusters_;
  size_t anonymous_ = 0;  // names for jobs without a cluster key
  // script_windows: each script's own exact-level scores, the most recently completed scripts.
  RecentKeys<std::deque<double>> scripts_;
  // split_missed_scripts: the exact level's part for scripts missed before, and those scripts.
  LevelState missed_exact_;
  std::unordered_set<std::string> missed_;
};

// The conformal quantile of `scores` at miscoverage alpha: the ceil((n+1)(1-alpha))-th smallest,
// the largest when that rank exceeds n. nullopt for no scores. The vector form works in place.
std::optional<double> conformal_quantile(const std::deque<double>& scores, double alpha);
std::optional<double> conformal_quantile(std::vector<double> scores, double alpha);
// The same of scores already sorted ascending, without a copy: O(1).
std::optional<double> sorted_conformal_quantile(const std::vector<double>& sorted, double alpha);

}  // namespace peakcast::sizing
