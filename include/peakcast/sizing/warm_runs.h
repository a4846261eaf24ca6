// What peakcastd replays into its workloads' sizing policies at start (serve::SizingState::warm),
// and what `peakcast report`'s replay of the daemon does likewise: of the stored completions,
// fed in the order they ended, each workload's `per_workload` most recent runs (a policy answers
// from no more: sizing::WorkloadSizer's max_history), for the most recently active workloads, at
// most `max_runs` runs in all. Past that budget the workload whose last run ended first is
// dropped whole, so the runs kept are those of the workloads a daemon that never stopped would
// hold at the front of its LRU. Every run fed counts in the site's failure price, kept or not.
//
// Replayed into a WorkloadSizer, a workload whose runs were all kept gets the policy it would have
// had from learning them one by one; one with more gets the policy the sizer's own handover builds
// from its `per_workload` most recent runs. What it costs (sizing_bench's workload_warm, 2 cores):
// a replayed run 9 µs where scripts have 30 runs, 105 µs where they have 1,000; a kept run holds
// 48 bytes until the replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "peakcast/sizing/sim_task.h"
#include "peakcast/sizing/workload_sizer.h"

namespace peakcast::sizing {

class WarmRuns {
 public:
  // A run that ended before `since_ms` is priced, not kept (a WorkloadSizer with max_age_ms
  // learns only the runs of its last max_age: since = now - max_age).
  WarmRuns(size_t per_workload, size_t max_runs, int64_t since_ms = std::numeric_limits<int64_t>::min());
  // What a start at `start_ms` (epoch ms) keeps for a WorkloadSizer with options `o`: each
  // workload's max_history most recent runs, rebuild_runs in all, those of the last max_age_ms.
  WarmRuns(const WorkloadSizerOptions& o, int64_t start_ms);

  // A completed run, in the order the runs ended; run.info.workload names its workload. Only what
  // a policy learns of a run is kept: its input size, request, peak, run time and end time.
  void add(const SimTask& run);

  size_t runs() const { return kept_; }                 // kept for the replay
  size_t workloads() const { return by_name_.size(); }  // with a run kept
  size_t seen() const { return seen_; }                 // every run added

  // Counts the runs not kept in `sizer`'s price (WorkloadSizer::add_to_price), then has it
  // observe the kept ones in the order they were added.
  void replay(WorkloadSizer& sizer) const;

 private:
  struct Run {
    double input_bytes = 0.0, request_bytes = 0.0, peak_bytes = 0.0, runtime_ms = 0.0;
    int64_t end_ms = 0;
    uint64_t seq = 0;  // the order added
  };
  struct Workload {
    std::string name;
    std::vector<Run> runs;  // a ring of at most per_workload_: the oldest at `oldest` once full
    size_t oldest = 0;
  };
  void drop(const Run& r);  // counted in the price only

  size_t per_workload_, max_runs_;
  int64_t since_ms_;
  std::list<Workload> lru_;  // the workload whose last run ended first at the front
  std::unordered_map<std::string_view, std::list<Workload>::iterator> by_name_;  // views of the names in lru_
  size_t kept_ = 0, seen_ = 0;
  double dropped_usage_ = 0.0, dropped_runs_ = 0.0;  // peak x run time of the runs not kept
};

}  // namespace peakcast::sizing
