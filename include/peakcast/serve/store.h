// Durable completions: the storage interface the service writes through, and its SQLite
// implementation. Tests wrap the interface to inject faults (disk full, read-only).
//
// Contract: insert() returns only after the row is committed (SQLite: WAL, synchronous=FULL), so
// a 2xx sent after it survives a crash. Inserting a job_id that is already stored changes
// nothing and returns false. Implementations are internally synchronized (any thread may call).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::serve {

struct HistoryFilter {
  std::string user;        // one of the two is set
  std::string script_key;
};

class CompletionStore {
 public:
  virtual ~CompletionStore() = default;
  // `job` has labels and script_key filled. The script is kept only when the store was opened
  // with store_scripts. true: stored now; false: already there (no change).
  virtual Result<bool> insert(const Job& job) = 0;
  virtual Result<bool> contains(const std::string& job_id) = 0;
  // Every stored completion (request, times, state, peaks, labels, script_key; no script), in
  // end-time order.
  virtual Status for_each(const std::function<void(Job&&)>& visit) = 0;
  // for_each() with the stored script text as well (kept only when the daemon ran with
  // --store-scripts): what `peakcast train --db` learns from. Default: no scripts.
  virtual Status for_each_with_scripts(const std::function<void(Job&&)>& visit) {
    return for_each(visit);
  }
  // The `limit` most recent completions matching the filter, newest first.
  virtual Result<std::vector<Job>> recent(const HistoryFilter& filter, size_t limit) = 0;
  virtual Result<size_t> count() = 0;
  // Small persistent key/value pairs (the slurm-sync cursor).
  virtual Result<std::optional<std::string>> get_meta(const std::string& key) = 0;
  virtual Status set_meta(const std::string& key, const std::string& value) = 0;
};

struct SqliteOptions {
  bool store_scripts = false;   // --store-scripts
  bool query_only = false;      // refuse every write (tests; a read-only replica)
  int busy_timeout_ms = 5000;
};

inline constexpr int kSchemaVersion = 1;  // PRAGMA user_version

// Opens (creating when absent) the database, sets WAL and synchronous=FULL, creates or checks
// the schema. A database with a newer user_version is refused.
Result<std::unique_ptr<CompletionStore>> open_sqlite_store(const std::string& path,
                                                           const SqliteOptions& options = {});

}  // namespace peakcast::serve
