// peakcast's sizing policy kept per workload, as peakcastd runs it: one policy (the `peakcast`
// that `peakcast simulate` replays) for each workload (TaskInfo::workload; peakcastd keys it by
// sizing::script_workload_of), learning from each completed run of it and answering a
// submission with a recommended request once kPeakcastMinHistory runs have completed.
//
// Bounded: at most `max_workloads` workloads, and at most `max_bytes` of them in memory (the
// policies' own estimate, SizingPolicy::memory_bytes): the least recently used go first, and
// start over when they come back. Each answers from at most its 2 x `max_history` - 1 most
// recent runs:
// past max_history runs a second policy learns each new run as well, and at 2 x max_history it
// takes over, with the max_history most recent (the answers of a policy rebuilt from them, with
// no pause to replay them). With `max_age_ms` a policy also hands over by age: once the first run
// it learned ended more than max_age before the latest, a second policy starts with the next run,
// and takes over when its own first run is max_age old (at a run or at age()): a workload is
// answered from its runs of about the last max_age to 2 x max_age, and a run that ended more than
// max_age before the latest run the sizer has seen is priced, not learned (what a restart that
// reads only the last max_age would learn). The price of a failed
// attempt is the site's mean run (peak x run time) over every completion learned, as simulate's
// is over the runs known before its replay, unless PolicyOptions::failure_price sets one.
//
// Not thread-safe: the caller (serve::SizingState) holds its lock.
#pragma once

#include <cstdint>
#include <limits>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "peakcast/core/job.h"
#include "peakcast/sizing/policy.h"

namespace peakcast::sizing {

struct WorkloadSizerOptions {
  // recommend: the site's settings (peakcastd's --sizing-config); failure_price 0 = the site's
  // mean run as it stands.
  PolicyOptions policy;
  // A workload's policy holds about 30 KiB at 10-30 runs, 60 KiB at 100 and 600 KiB at 1,999
  // (sizing_bench's workload_memory): by default the memory budget binds before the count, and
  // holds about 4,000 scripts with few runs, or 200 at the longest history.
  size_t max_workloads = 10000;
  size_t max_bytes = size_t{128} << 20;  // 0: no budget
  size_t max_history = 1000;
  // At start (peakcastd, and `peakcast report`'s replay of it): stored runs replayed into the
  // policies, each workload's max_history most recent, the most recently active workloads first
  // (sizing::WarmRuns). The default takes 1 s (scripts of 30 runs) to 10.5 s (of 1,000) here
  // (sizing_bench's workload_warm).
  size_t rebuild_runs = 100000;
  // 0: no age limit. Else a workload's policy answers from its runs of about the last max_age_ms
  // to twice that (above); peakcastd's --sizing-days, or --history-days.
  int64_t max_age_ms = 0;
  double max_age_days() const { return static_cast<double>(max_age_ms) / kMsPerDay; }
};

class WorkloadSizer {
 public:
  explicit WorkloadSizer(WorkloadSizerOptions options = {});

  struct Answer {
    uint64_t bytes = 0;
    std::string rule;   // recommend_request's rule, e.g. "default: capped at request"
    std::string basis;  // the allocation the policy chose, e.g. "the largest peak + 3 %"
    size_t runs = 0;    // completed runs of the workload it learned from
  };
  // The recommendation for `task` (workload = task.workload), or nullopt when the task has no
  // request or its workload has fewer than kPeakcastMinHistory completed runs here.
  std::optional<Answer> first(const TaskInfo& task);
  // A completed run (its peak, run time and request); task.info.workload is its identity. Only a
  // run with a positive peak and a run time (learnable) is learned and priced.
  void observe(const SimTask& task);
  static bool learnable(double peak_bytes, double runtime_ms) { return peak_bytes > 0 && runtime_ms >= 0; }
  // Runs known but not learned (a restart's older completions: sizing::WarmRuns), counted in the
  // site's failure price only: `usage` their summed peak x run time, `runs` how many.
  void add_to_price(double usage, double runs);
  // Drops the workloads whose most recent run ended before `t_ms` (epoch ms; SimTask::end_ms): what
  // peakcastd's --history-days sweep does, as a restart, which learns only the runs since, would
  // not have them. Returns how many went.
  size_t forget_ended_before(int64_t t_ms);
  // With max_age_ms, at `now_ms` (epoch ms): the workloads whose last run ended more than max_age
  // before go (forget_ended_before), and a second policy whose first run is max_age old takes over.
  struct Aged {
    size_t forgotten = 0, handed_over = 0;
  };
  Aged age(int64_t now_ms);
  // Since the start: workloads dropped by age(), and policies that took over by age (at a run or
  // at age(); not those that took over by count).
  Aged aged_total() const { return aged_total_; }

  size_t workloads() const { return by_name_.size(); }
  size_t memory_bytes() const { return bytes_; }  // the workloads' policies, as they estimate it
  size_t runs(const std::string& workload) const;  // completed runs its policy learned from now
  double site_price() const;                        // byte x ms: what a failed attempt is priced at
  const WorkloadSizerOptions& options() const { return options_; }

 private:
  struct Workload {
    std::string name;
    std::unique_ptr<SizingPolicy> policy;  // answers; learned from the last `runs` runs
    std::unique_ptr<SizingPolicy> next;    // past max_history runs, or max_age: the runs since, to take over
    size_t runs = 0;
    size_t next_runs = 0;
    size_t bytes = 0;  // what it holds, counted in bytes_
    int64_t last_end_ms = std::numeric_limits<int64_t>::min();  // of the runs learned
    int64_t first_end_ms = std::numeric_limits<int64_t>::max();  // the earliest `policy` learned
    int64_t next_first_end_ms = std::numeric_limits<int64_t>::max();  // the earliest `next` learned
  };
  // `next` takes over when it holds max_history runs, or (max_age_ms) its first run ended
  // max_age before `now_ms`.
  bool hand_over_if_due(Workload& w, int64_t now_ms);
  Workload& touch(const std::string& name);  // found or made, now the most recently used
  void recount(Workload& w);  // w's bytes, in bytes_
  // Recounts w's bytes, then drops the least recently used others while over max_bytes.
  void account(Workload& w);
  void evict_last();
  std::list<Workload>::iterator erase(std::list<Workload>::iterator it);  // with its bytes; the next

  WorkloadSizerOptions options_;
  std::list<Workload> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Workload>::iterator> by_name_;
  size_t bytes_ = 0;          // the workloads' bytes
  double site_usage_ = 0.0;  // sum of peak x run time over every completion learned
  double site_runs_ = 0.0;
  int64_t latest_end_ms_ = std::numeric_limits<int64_t>::min();  // of every run observed
  Aged aged_total_;
};

}  // namespace peakcast::sizing
