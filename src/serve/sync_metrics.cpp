#include "peakcast/serve/sync_metrics.h"

#include <cinttypes>
#include <cstdio>

namespace peakcast::serve {

void SyncMetrics::record(const Result<SyncReport>& report, int64_t now_s) {
  if (!report) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ok_.fetch_add(1, std::memory_order_relaxed);
  last_success_s_.store(now_s, std::memory_order_relaxed);
}

void SyncMetrics::record_rescan(const Result<SyncReport>& report, int64_t now_s) {
  if (!report) {
    rescan_failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (report->stopped) {  // neither done (its time is not kept: due again) nor failed
    rescan_stopped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  rescan_ok_.fetch_add(1, std::memory_order_relaxed);
  last_rescan_s_.store(now_s, std::memory_order_relaxed);
}

std::string SyncMetrics::render() const {
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "# HELP peakcast_sync_last_success_timestamp_seconds When the last sacct poll succeeded (0: none yet).\n"
                "# TYPE peakcast_sync_last_success_timestamp_seconds gauge\n"
                "peakcast_sync_last_success_timestamp_seconds %" PRId64 "\n"
                "# HELP peakcast_sync_runs_total sacct polls (--sync-interval) by result.\n"
                "# TYPE peakcast_sync_runs_total counter\n"
                "peakcast_sync_runs_total{result=\"ok\"} %" PRIu64 "\n"
                "peakcast_sync_runs_total{result=\"failed\"} %" PRIu64 "\n"
                "# HELP peakcast_sync_jobs_stored_total Completions the sacct polls stored.\n"
                "# TYPE peakcast_sync_jobs_stored_total counter\n"
                "peakcast_sync_jobs_stored_total %" PRIu64 "\n"
                "# HELP peakcast_sync_last_rescan_timestamp_seconds When the last re-scan (--sync-rescan-interval) succeeded (0: none yet).\n"
                "# TYPE peakcast_sync_last_rescan_timestamp_seconds gauge\n"
                "peakcast_sync_last_rescan_timestamp_seconds %" PRId64 "\n"
                "# HELP peakcast_sync_rescans_total Re-scans of the last --sync-rescan-lookback by result.\n"
                "# TYPE peakcast_sync_rescans_total counter\n"
                "peakcast_sync_rescans_total{result=\"ok\"} %" PRIu64 "\n"
                "peakcast_sync_rescans_total{result=\"failed\"} %" PRIu64 "\n"
                "peakcast_sync_rescans_total{result=\"stopped\"} %" PRIu64 "\n"
                "# HELP peakcast_sync_rescan_jobs_stored_total Completions only a re-scan found (slurmdbd recorded them after the polls' overlap); also in peakcast_sync_jobs_stored_total.\n"
                "# TYPE peakcast_sync_rescan_jobs_stored_total counter\n"
                "peakcast_sync_rescan_jobs_stored_total %" PRIu64 "\n",
                last_success_s_.load(), ok_.load(), failed_.load(), stored_.load(), last_rescan_s_.load(),
                rescan_ok_.load(), rescan_failed_.load(), rescan_stopped_.load(), rescan_stored_.load());
  return buf;
}

}  // namespace peakcast::serve
