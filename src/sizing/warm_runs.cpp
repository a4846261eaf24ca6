// The runs a restarted daemon warms its workloads' policies with (peakcast/sizing/warm_runs.h).
#include "peakcast/sizing/warm_runs.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace peakcast::sizing {

WarmRuns::WarmRuns(size_t per_workload, size_t max_runs)
    : per_workload_(std::max<size_t>(per_workload, 1)), max_runs_(max_runs) {}

void WarmRuns::drop(const Run& r) {
  if (!(r.peak_bytes > 0) || !(r.runtime_ms >= 0)) return;  // WorkloadSizer::observe's rule
  dropped_usage_ += r.peak_bytes * r.runtime_ms;
  dropped_runs_ += 1;
}

void WarmRuns::add(const SimTask& t) {
  const Run run{t.info.input_bytes, t.info.request_bytes, t.peak_bytes, t.runtime_ms, t.end_ms, seen_++};
  if (max_runs_ == 0) {
    drop(run);
    return;
  }
  auto it = by_name_.find(t.info.workload);
  if (it == by_name_.end()) {
    lru_.push_back({t.info.workload, {}});
    it = by_name_.emplace(t.info.workload, std::prev(lru_.end())).first;
  } else {
    lru_.splice(lru_.end(), lru_, it->second);  // now the most recently active
  }
  std::deque<Run>& runs = it->second->runs;
  runs.push_back(run);
  ++kept_;
  if (runs.size() > per_workload_) {
    drop(runs.front());
    runs.pop_front();
    --kept_;
  }
  // Over the budget: the least recently active workloads go whole; the one just fed keeps its
  // most recent runs if it alone is over.
  while (kept_ > max_runs_) {
    Workload& oldest = lru_.front();
    if (&oldest == &*it->second) {
      drop(runs.front());
      runs.pop_front();
      --kept_;
      continue;
    }
    for (const Run& r : oldest.runs) drop(r);
    kept_ -= oldest.runs.size();
    by_name_.erase(oldest.name);
    lru_.pop_front();
  }
}

void WarmRuns::replay(WorkloadSizer& sizer) const {
  sizer.add_to_price(dropped_usage_, dropped_runs_);
  std::vector<std::pair<const Workload*, const Run*>> order;
  order.reserve(kept_);
  for (const Workload& w : lru_) {
    for (const Run& r : w.runs) order.emplace_back(&w, &r);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second->seq < b.second->seq; });
  SimTask t;
  for (const auto& [w, r] : order) {
    t.info.workload = w->name;
    t.info.input_bytes = r->input_bytes;
    t.info.request_bytes = r->request_bytes;
    t.peak_bytes = r->peak_bytes;
    t.runtime_ms = r->runtime_ms;
    t.end_ms = r->end_ms;
    sizer.observe(t);
  }
}

}  // namespace peakcast::sizing
