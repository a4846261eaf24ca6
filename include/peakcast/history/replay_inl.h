// Implementation of history::replay (included from history.h).
#pragma once

#include <algorithm>
#include <stdexcept>

namespace peakcast::history {

template <typename Visitor>
void replay(const std::vector<const Job*>& jobs_in_submit_order, HistoryStore& store,
            Visitor&& visit) {
  const std::vector<const Job*>& jobs = jobs_in_submit_order;
  std::vector<size_t> by_end(jobs.size());  // positions in submit order, by end time
  for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = i;
  std::stable_sort(by_end.begin(), by_end.end(),
                   [&](size_t a, size_t b) { return jobs[a]->end_ms < jobs[b]->end_ms; });
  std::vector<char> added(jobs.size(), 0);
  size_t next = 0;
  size_t oldest = 0;  // the first job in submit order not added yet
  const Job* prev = nullptr;
  for (const Job* job : jobs) {
    if (prev != nullptr && job->submit_ms < prev->submit_ms) {
      throw std::invalid_argument("history::replay: jobs are not in submit order");
    }
    prev = job;
    // Every job added from here on is this one, a later one, or one still running.
    while (oldest < jobs.size() && added[oldest]) ++oldest;
    store.advance_pending_submit(
        oldest < jobs.size() ? std::min(jobs[oldest]->submit_ms, job->submit_ms) : job->submit_ms);
    while (next < by_end.size() && jobs[by_end[next]]->end_ms < job->submit_ms) {
      added[by_end[next]] = 1;
      store.add_completion(*jobs[by_end[next++]]);
    }
    store.advance_watermark(job->submit_ms);
    visit(*job, static_cast<const HistoryStore&>(store));
  }
}

}  // namespace peakcast::history
