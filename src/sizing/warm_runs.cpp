// The runs a restarted daemon warms its workloads' policies with (peakcast/sizing/warm_runs.h).
#include "peakcast/sizing/warm_runs.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace peakcast::sizing {

WarmRuns::WarmRuns(size_t per_workload, size_t max_runs, int64_t since_ms)
    : per_workload_(std::max<size_t>(per_workload, 1)), max_runs_(max_runs), since_ms_(since_ms) {}

WarmRuns::WarmRuns(const WorkloadSizerOptions& o, int64_t start_ms)
    : WarmRuns(o.max_history, o.rebuild_runs,
               o.max_age_ms > 0 ? start_ms - o.max_age_ms : std::numeric_limits<int64_t>::min()) {}

void WarmRuns::drop(const Run& r) {
  if (!WorkloadSizer::learnable(r.peak_bytes, r.runtime_ms)) return;
  dropped_usage_ += r.peak_bytes * r.runtime_ms;
  dropped_runs_ += 1;
}

void WarmRuns::add(const SimTask& t) {
  const Run run{t.info.input_bytes, t.info.request_bytes, t.peak_bytes, t.runtime_ms, t.end_ms, seen_++};
  if (max_runs_ == 0 || t.end_ms < since_ms_) {
    drop(run);
    return;
  }
  auto it = by_name_.find(t.info.workload);
  if (it == by_name_.end()) {
    lru_.push_back({t.info.workload, {}, 0});
    it = by_name_.emplace(lru_.back().name, std::prev(lru_.end())).first;
  } else {
    lru_.splice(lru_.end(), lru_, it->second);  // now the most recently active
  }
  Workload& w = *it->second;
  const size_t cap = std::min(per_workload_, max_runs_);  // the most one workload may keep
  if (w.runs.size() < cap) {
    w.runs.push_back(run);
    ++kept_;
  } else {  // full: the new run takes the oldest's place
    drop(w.runs[w.oldest]);
    w.runs[w.oldest] = run;
    w.oldest = (w.oldest + 1) % w.runs.size();
  }
  // Over the budget: the least recently active workloads go whole (the one just fed is the most
  // recent, and keeps at most the budget).
  while (kept_ > max_runs_) {
    Workload& gone = lru_.front();
    for (const Run& r : gone.runs) drop(r);
    kept_ -= gone.runs.size();
    by_name_.erase(std::string_view(gone.name));
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
