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
  // One re-scan's outcome (rescan_once) at `now_s`: ok (the last re-scan's time is now_s), failed,
  // or stopped (SyncReport::stopped: the daemon shutting down; its time is not kept, so it is due
  // again, and counted apart so that ok + failed + stopped is every re-scan begun).
  void record_rescan(const Result<SyncReport>& report, int64_t now_s);
  // One completion a re-scan stored (one slurmdbd recorded late), counted as it is stored; it is
  // counted by count_stored() too. A known job the re-scan reads again is counted by neither.
  void count_rescan_stored() { rescan_stored_.fetch_add(1, std::memory_order_relaxed); }
  // peakcast_sync_last_success_timestamp_seconds (0: none yet), peakcast_sync_runs_total{result},
  // peakcast_sync_jobs_stored_total, peakcast_sync_last_rescan_timestamp_seconds,
  // peakcast_sync_rescans_total{result}, peakcast_sync_rescan_jobs_stored_total.
  std::string render() const;

 private:
  std::atomic<int64_t> last_success_s_{0}, last_rescan_s_{0};
  std::atomic<uint64_t> ok_{0}, failed_{0}, stored_{0};
  std::atomic<uint64_t> rescan_ok_{0}, rescan_failed_{0}, rescan_stopped_{0}, rescan_stored_{0};
};

}  // namespace peakcast::serve
