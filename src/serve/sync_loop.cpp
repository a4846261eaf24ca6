#include "peakcast/serve/sync_loop.h"

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "peakcast/core/log.h"

namespace peakcast::serve {

Result<SyncReport> sync_service(Service& service, const SyncOptions& options) {
  // Counted as each is stored: a poll that fails on a later window keeps the earlier ones.
  return sync_once(
      service.store(),
      [&service](const Job& j) {
        Result<bool> stored = service.add_completion(j);
        if (stored && *stored) service.sync_metrics().count_stored();
        return stored;
      },
      options);
}

Result<SyncReport> rescan_service(Service& service, const SyncOptions& options) {
  return rescan_once(
      service.store(),
      [&service](const Job& j) {
        Result<bool> stored = service.add_completion(j);
        if (stored && *stored) {
          service.sync_metrics().count_stored();
          service.sync_metrics().count_rescan_stored();
        }
        return stored;
      },
      options);
}

Result<std::optional<SyncReport>> rescan_service_if_due(Service& service, const SyncOptions& options) {
  auto due = rescan_due(service.store(), options);
  if (!due) return due.status();
  if (!*due) return std::optional<SyncReport>();
  auto report = rescan_service(service, options);
  if (!report) return report.status();
  return std::optional<SyncReport>(std::move(*report));
}

SyncLoop::SyncLoop(Service& service, SyncOptions options, double interval_s)
    : service_(service), options_(std::move(options)), interval_(interval_s) {
  // A catch-up of many windows ends at the next one when the daemon stops (the cursor keeps
  // what was done).
  options_.stop_requested = [this] {
    std::lock_guard lock(mu_);
    return stopping_;
  };
  // A catch-up over several windows (a first poll, or after downtime) says how far it is.
  if (!options_.on_window) {
    options_.on_window = [full = options_.max_window_s](const SyncReport& r, int64_t from, int64_t to) {
      if (r.windows < 2 && to - from < full) return;  // a poll of one short window: its line at the end
      log(LogLevel::kInfo, "slurm-sync: " + describe_window(r, from, to));
    };
  }
}

SyncLoop::~SyncLoop() { stop(); }

void SyncLoop::start() { thread_ = std::thread([this] { run(); }); }

void SyncLoop::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SyncLoop::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    poll_once();
    lock.lock();
    cv_.wait_for(lock, std::chrono::duration<double>(interval_), [this] { return stopping_; });
  }
}

namespace {

// An exception is the poll's failure, never the daemon's: thrown out of this thread it would
// call std::terminate. The cursor stays where the last finished window left it, so the next
// interval reads the rest again (idempotent by run: job id and submit time). Its message is logged without the JSON
// parser's, which quotes the bytes it read (a script's secret, say). `what`: "poll" or "re-scan".
template <typename F>
auto guarded(const std::string& what, F&& run) -> decltype(run()) {
  try {
    return run();
  } catch (const nlohmann::json::exception& e) {
    return Status::internal(what + " failed on a JSON error (id " + std::to_string(e.id) +
                            "); retried at the next interval");
  } catch (const std::exception& e) {
    std::string text = std::string(e.what()).substr(0, 200);
    for (char& c : text) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    return Status::internal(what + " failed on an unexpected error (" + text + "); retried at the next interval");
  } catch (...) {
    return Status::internal(what + " failed on an unexpected error; retried at the next interval");
  }
}

int64_t epoch_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void log_notes(const SyncReport& report) {
  for (const std::string& n : report.notes) log(LogLevel::kDebug, "slurm-sync: " + n);
}

}  // namespace

void SyncLoop::poll_once() {
  auto report = guarded("poll", [this] { return sync_service(service_, options_); });
  service_.sync_metrics().record(report, epoch_now());
  if (!report) {
    log(LogLevel::kWarn, "slurm-sync: " + report.status().message());
    return;
  }
  if (report->added > 0 || report->skipped > 0 || report->stopped) log(LogLevel::kInfo, "slurm-sync: " + describe(*report));
  log_notes(*report);
  // The re-scan after a poll that succeeded (sacct answers), when it is due.
  auto rescan = guarded("re-scan", [this] { return rescan_service_if_due(service_, options_); });
  if (rescan && !*rescan) return;  // not due
  service_.sync_metrics().record_rescan(rescan ? Result<SyncReport>(**rescan) : Result<SyncReport>(rescan.status()),
                                        epoch_now());
  if (!rescan) {
    log(LogLevel::kWarn, "slurm-sync: re-scan: " + rescan.status().message());
    return;
  }
  // Every re-scan is logged (daily by default): that it ran, and what it found late, or that the
  // shutdown stopped it (describe says so).
  log(LogLevel::kInfo, "slurm-sync: " + describe(**rescan));
  log_notes(**rescan);
}

}  // namespace peakcast::serve
