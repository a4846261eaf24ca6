// What the daemon's own sacct polling (--sync-interval) did, for /metrics: the sync-lag panel of
// contrib/grafana reads the last success's time. Thread-safe (atomics).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "peakcast/core/status.h"
#include "peakcast/serve/slurm_sync.h"

namespace peakcast::serve {

class SyncMetrics {
 public:
  // One poll's outcome at `now_s` (epoch seconds).
  void record(const Result<SyncReport>& report, int64_t now_s);
  // One completion a poll stored, counted as it is stored (sync_service): a poll that fails
  // after some windows keeps what those stored, and so does the counter.
  void count_stored() { stored_.fetch_add(1, std::memory_order_relaxed); }
  // peakcast_sync_last_success_timestamp_seconds (0: none yet), peakcast_sync_runs_total{result},
  // peakcast_sync_jobs_stored_total.
  std::string render() const;

 private:
  std::atomic<int64_t> last_success_s_{0};
  std::atomic<uint64_t> ok_{0}, failed_{0}, stored_{0};
};

}  // namespace peakcast::serve
