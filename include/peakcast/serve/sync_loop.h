// slurm-sync inside the daemon: sacct polls whose finished jobs become the service's completions,
// once (--sync-once) or in the background every interval (--sync-interval) until stopped.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "peakcast/core/status.h"
#include "peakcast/serve/service.h"
#include "peakcast/serve/slurm_sync.h"

namespace peakcast::serve {

// One poll into the service: new finished jobs are added as completions (history and store).
Result<SyncReport> sync_service(Service& service, const SyncOptions& options);
// One re-scan into the service (rescan_once); what it stores is counted in the sync metrics
// (count_stored and count_rescan_stored) as it is stored.
Result<SyncReport> rescan_service(Service& service, const SyncOptions& options);
// rescan_service when rescan_due; nullopt when it is not.
Result<std::optional<SyncReport>> rescan_service_if_due(Service& service, const SyncOptions& options);

// Background polls: one every `interval_s`, each recorded in the service's sync metrics and
// logged; a failed poll (an error, or an exception thrown on the way) is logged, counted as
// failed (peakcast_sync_runs_total{result="failed"}) and retried at the next interval. After a
// poll that succeeded, the re-scan when it is due (rescan_due), recorded and logged apart
// (peakcast_sync_rescans_total); a failed re-scan is due again after the next poll, and so is one
// that stop() ended (counted as result="stopped", logged as stopped).
class SyncLoop {
 public:
  SyncLoop(Service& service, SyncOptions options, double interval_s);
  ~SyncLoop();  // stops
  SyncLoop(const SyncLoop&) = delete;
  SyncLoop& operator=(const SyncLoop&) = delete;

  void start();
  // Ends a poll in progress at its next window, stopping a sacct still running (within a
  // second), and waits for it; idempotent.
  void stop();

 private:
  void run();
  void poll_once();  // the poll, then the re-scan when due; an exception is its failure

  Service& service_;
  SyncOptions options_;
  double interval_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace peakcast::serve
