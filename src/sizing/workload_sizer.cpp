// peakcast's sizing policy per workload, bounded (peakcast/sizing/workload_sizer.h).
#include "peakcast/sizing/workload_sizer.h"

#include <algorithm>
#include <iterator>

namespace peakcast::sizing {

WorkloadSizer::WorkloadSizer(WorkloadSizerOptions options) : options_(std::move(options)) {
  options_.max_workloads = std::max<size_t>(options_.max_workloads, 1);
  options_.max_history = std::max(options_.max_history, kPeakcastMinHistory);
}

double WorkloadSizer::site_price() const {
  if (options_.policy.failure_price > 0) return options_.policy.failure_price;
  return site_runs_ > 0 ? site_usage_ / site_runs_ : 0.0;
}

size_t WorkloadSizer::runs(const std::string& workload) const {
  auto it = by_name_.find(workload);
  return it == by_name_.end() ? 0 : it->second->runs;
}

WorkloadSizer::Workload& WorkloadSizer::touch(const std::string& name) {
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return lru_.front();
  }
  if (lru_.size() >= options_.max_workloads) evict_last();
  lru_.push_front({name, make_peakcast(options_.policy, true), nullptr, 0});
  by_name_.emplace(name, lru_.begin());
  account(lru_.front());
  return lru_.front();
}

size_t WorkloadSizer::forget_ended_before(int64_t t_ms) {
  size_t gone = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->last_end_ms >= t_ms) {
      ++it;
      continue;
    }
    it = erase(it);
    ++gone;
  }
  return gone;
}

WorkloadSizer::Aged WorkloadSizer::age(int64_t now_ms) {
  Aged a;
  if (options_.max_age_ms <= 0) return a;
  a.forgotten = forget_ended_before(now_ms - options_.max_age_ms);
  aged_total_.forgotten += a.forgotten;
  for (Workload& w : lru_) {
    if (hand_over_if_due(w, now_ms)) {
      ++a.handed_over;
      recount(w);  // one policy where there were two: fewer bytes, nothing to evict
    }
  }
  return a;
}

bool WorkloadSizer::hand_over_if_due(Workload& w, int64_t now_ms) {
  if (!w.next) return false;
  const bool full = w.next_runs >= options_.max_history;
  const bool aged = options_.max_age_ms > 0 && w.next_first_end_ms <= now_ms - options_.max_age_ms;
  if (!full && !aged) return false;
  if (!full) ++aged_total_.handed_over;
  w.policy = std::move(w.next);
  w.runs = w.next_runs;
  w.first_end_ms = w.next_first_end_ms;
  w.next_runs = 0;
  w.next_first_end_ms = std::numeric_limits<int64_t>::max();
  return true;
}

std::list<WorkloadSizer::Workload>::iterator WorkloadSizer::erase(std::list<Workload>::iterator it) {
  bytes_ -= it->bytes;
  by_name_.erase(it->name);
  return lru_.erase(it);
}

void WorkloadSizer::evict_last() { erase(std::prev(lru_.end())); }

void WorkloadSizer::recount(Workload& w) {
  const size_t now = sizeof(Workload) + 2 * w.name.capacity() + w.policy->memory_bytes() +
                     (w.next ? w.next->memory_bytes() : 0);
  bytes_ = bytes_ - w.bytes + now;
  w.bytes = now;
}

void WorkloadSizer::account(Workload& w) {
  recount(w);
  // The workload just used is at the front: it stays, even alone over the budget.
  while (options_.max_bytes > 0 && bytes_ > options_.max_bytes && lru_.size() > 1 && &lru_.back() != &w) {
    evict_last();
  }
}

std::optional<WorkloadSizer::Answer> WorkloadSizer::first(const TaskInfo& task) {
  if (task.request_bytes <= 0) return std::nullopt;
  auto it = by_name_.find(task.workload);
  if (it == by_name_.end() || it->second->runs < kPeakcastMinHistory) return std::nullopt;
  Workload& w = touch(task.workload);
  w.policy->set_failure_price(site_price());
  Answer a;
  a.bytes = static_cast<uint64_t>(w.policy->first(task));
  SizingPolicy::Explanation why = w.policy->explain();
  a.rule = std::move(why.rule);
  a.basis = std::move(why.basis);
  a.runs = w.runs;
  return a;
}

void WorkloadSizer::add_to_price(double usage, double runs) {
  if (!(usage >= 0) || !(runs >= 0)) return;
  site_usage_ += usage;
  site_runs_ += runs;
}

void WorkloadSizer::observe(const SimTask& task) {
  if (!learnable(task.peak_bytes, task.runtime_ms)) return;
  site_usage_ += task.peak_bytes * task.runtime_ms;
  site_runs_ += 1;
  latest_end_ms_ = std::max(latest_end_ms_, task.end_ms);
  const int64_t max_age = options_.max_age_ms;
  // Older than the age limit: priced, not learned, as a restart reading the last max_age would.
  if (max_age > 0 && task.end_ms < latest_end_ms_ - max_age) return;
  Workload& w = touch(task.info.workload);
  const double price = site_price();
  w.policy->set_failure_price(price);
  w.policy->observe(task);
  ++w.runs;
  w.last_end_ms = std::max(w.last_end_ms, task.end_ms);
  w.first_end_ms = std::min(w.first_end_ms, task.end_ms);
  // Past max_history runs (or, with max_age, once the first run learned is that old) a second
  // policy learns the new ones too; when it holds max_history runs (or its own first run is
  // max_age old) it takes over: the answers of a policy rebuilt from its runs, without stopping to
  // replay them, and memory and answer time bounded on a workload that runs for years.
  const bool old = max_age > 0 && w.first_end_ms < w.last_end_ms - max_age;
  if (w.next || w.runs > options_.max_history || old) {
    if (!w.next) w.next = make_peakcast(options_.policy, true);
    w.next->set_failure_price(price);
    w.next->observe(task);
    ++w.next_runs;
    w.next_first_end_ms = std::min(w.next_first_end_ms, task.end_ms);
    hand_over_if_due(w, w.last_end_ms);
  }
  account(w);
}

}  // namespace peakcast::sizing
