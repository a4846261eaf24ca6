// Implementation of history::replay (included from history.h).
#pragma once

#include <algorithm>
#include <stdexcept>

namespace peakcast::history {

template <typename Visitor>
void replay(const std::vector<const Job*>& jobs_in_submit_order, HistoryStore& store,
            Visitor&& visit) {
  std::vector<const Job*> by_end(jobs_in_submit_order);
  std::stable_sort(by_end.begin(), by_end.end(),
                   [](const Job* a, const Job* b) { return a->end_ms < b->end_ms; });
  size_t next = 0;
  const Job* prev = nullptr;
  for (const Job* job : jobs_in_submit_order) {
    if (prev != nullptr && job->submit_ms < prev->submit_ms) {
      throw std::invalid_argument("history::replay: jobs are not in submit order");
    }
    prev = job;
    while (next < by_end.size() && by_end[next]->end_ms < job->submit_ms) {
      store.add_completion(*by_end[next++]);
    }
    store.advance_watermark(job->submit_ms);
    visit(*job, static_cast<const HistoryStore&>(store));
  }
}

}  // namespace peakcast::history
