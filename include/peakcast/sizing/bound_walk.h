// The bound as it is issued, and the walk that replays it in event time: the one protocol that
// `peakcast evaluate` measures, `peakcast report` shows and peakcastd follows when it rebuilds
// its bound at start (docs/bounds.md).
//
// Issued bound. For a job answered at history level `level` with point prediction `point`
// (label units), the bound is OnlineBound::upper clipped to [point, max(cap, point)]; where the
// level has no evidence yet it is the cap itself (`evidence` false: the daemon then shows no
// online bound and recommends nothing).
//
// Walk. Jobs in submit order. Before a job's bound is issued, every walked job that ended
// strictly before its submission has been observed, in end-time order (ties: submit order),
// with the bound that was issued for it (OnlineBound::observe_issued): ACI judges a completion
// by the bound the job got, not by the bound as it stands when the completion arrives. The two
// differ when feedback is late, e.g. a Nextflow burst submitted before any of it completes: by
// the time its misses arrive, the first of them have already widened the window, and judging the
// rest by that wider bound would hide them from alpha_t.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/history/history.h"
#include "peakcast/sizing/online_bound.h"

namespace peakcast::sizing {

struct IssuedBound {
  double bound = 0.0;
  bool evidence = false;
  double alpha_t = 0.0;  // the working miscoverage of the job's level when the bound was issued
};

// The bound `b` issues now for a job at `level` with `point` (see above). `script`: the job's
// script key ("" none), for script clusters and script windows.
IssuedBound issue_bound(const OnlineBound& b, history::Level level, double point,
                        std::string_view script, double util_cap);

// One job of a walk. Times in epoch ms; point and label in the bound's units.
struct BoundStep {
  int64_t submit_ms = 0;
  int64_t end_ms = 0;
  history::Level level = history::Level::kNone;
  double point = 0.0;
  double label = 0.0;
  bool censored = false;       // OOM: the label is the limit it was killed at; its peak was above
  std::string_view script;     // script key, "" none (must outlive the call)
};

// The step of a job for resource r (label units, utilization): its times, label, censoring and
// script key, with the history level and point it was answered with. `job` must outlive the step.
BoundStep bound_step(const Job& job, Resource r, history::Level level, double point);

// Walks `steps` (in submit order) through `bound` as above and returns the bound issued for each
// (parallel to `steps`). With `observe_all`, the steps still running at the last submission are
// observed at the end, in end-time order, so `bound` has learned every step (peakcastd's rebuild).
std::vector<IssuedBound> walk_bounds(OnlineBound& bound, std::span<const BoundStep> steps,
                                     double util_cap, bool observe_all = false);

}  // namespace peakcast::sizing
