// Durable completions and answers: the storage interface the service writes through, and its
// SQLite implementation. Tests wrap the interface to inject faults (disk full, read-only).
//
// Contract: insert() returns only after the row is committed (SQLite: WAL, synchronous=FULL), so
// a 2xx sent after it survives a crash. Inserting a run that is already stored changes nothing
// and returns false. Implementations are internally synchronized (any thread may call).
//
// A run is a job id and its submit time, as slurmdbd keys a job record (id_job, time_submit).
// Slurm keeps the id of a job it requeues (scontrol requeue, --requeue after a node failure)
// and resets its submit time once the first run has ended; sacct without --duplicates lists the
// last run only. A later run of a stored job id is stored as a run of its own. A completion is a
// run already stored when a stored one has its job id and either its submit time or a span
// [submit_time, end_time] that overlaps its own, compared at whole seconds: the same run
// reported with a submit time rounded otherwise (a client's fraction, sacct's whole seconds) is
// not a second run.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::serve {

// How the storage is doing, for /healthz and /metrics.
struct StoreHealth {
  uint64_t wal_bytes = 0;         // size of the write-ahead log file
  std::string checkpoint_error;   // the last checkpoint's failure; empty when it succeeded
  uint64_t checkpoint_failures = 0;
  std::string synchronous;        // PRAGMA synchronous as the store's own connection has it
  uint64_t answers_not_kept = 0;  // answers record_answer() did not write (each of a failed batch)
};

struct HistoryFilter {
  std::string user;        // one of the two is set
  std::string script_key;
};

// What the daemon answered for one submission (POST /v1/predict), as serve::SizingState keeps
// it: per resource the point and the bound issued (nullopt where the answer had no such
// resource), the memory request the job was submitted with and the recommendation (bytes), and
// the job's name, redacted (ingest::redact_script; "" when the submission named none): jobs of one
// script submitted within a second are told apart by it (SizingState matches by name too), and
// the answer's id (the answer's "answer_id"; "" for an answer kept before schema version 5): a
// completion that carries it (Job::answer_id, from the comment the hook wrote) takes this answer
// and no other.
struct IssuedAnswer {
  int64_t submit_ms = 0;
  std::array<std::optional<std::pair<double, double>>, kNumResources> point_bound;
  std::optional<uint64_t> request_bytes, recommended_bytes;
  std::string job_name;
  std::string answer_id;
};

// An answer on record: whose submission it was. Kept so that a completion arriving after a
// daemon restart is still matched to the answer its submission got (a job the Slurm hook
// lowered is learned at its user's request; the bound judges it by the bound it was given).
struct AnswerRecord {
  std::string user, script_key;
  IssuedAnswer answer;
};

class CompletionStore {
 public:
  virtual ~CompletionStore() = default;
  // `job` has labels and script_key filled. The script is kept only when the store was opened
  // with store_scripts. true: stored now; false: already there (no change).
  virtual Result<bool> insert(const Job& job) = 0;
  // Whether a run of this job id is stored.
  virtual Result<bool> contains(const std::string& job_id) = 0;
  // The stored run of this id that was submitted last (no script), or nullopt.
  virtual Result<std::optional<Job>> find(const std::string& job_id) = 0;
  // Whether `run` (its job_id, submit_ms, end_ms) is stored (see the top of this file), and the
  // stored run it is (no script). Default: by job id alone.
  virtual Result<bool> contains_run(const Job& run) { return contains(run.job_id); }
  virtual Result<std::optional<Job>> find_run(const Job& run) { return find(run.job_id); }
  // Every stored completion (request, times, state, peaks, labels, script_key; no script), in
  // end-time order.
  virtual Status for_each(const std::function<void(Job&&)>& visit) = 0;
  // for_each() with the stored script text as well (kept only when the daemon ran with
  // --store-scripts): what `peakcast train --db` learns from. Default: no scripts.
  virtual Status for_each_with_scripts(const std::function<void(Job&&)>& visit) {
    return for_each(visit);
  }
  // for_each() of the completions that ended at or after `since_ms` (epoch ms).
  virtual Status for_each_ended_since(int64_t since_ms, const std::function<void(Job&&)>& visit) {
    return for_each([&](Job&& j) {
      if (j.end_ms >= since_ms) visit(std::move(j));
    });
  }
  // The `limit` most recent completions matching the filter, newest first.
  virtual Result<std::vector<Job>> recent(const HistoryFilter& filter, size_t limit) = 0;
  virtual Result<size_t> count() = 0;
  // Small persistent key/value pairs (the slurm-sync cursor).
  virtual Result<std::optional<std::string>> get_meta(const std::string& key) = 0;
  virtual Status set_meta(const std::string& key, const std::string& value) = 0;
  virtual StoreHealth health() { return {}; }
  // Answers on record. record_answer() keeps one (committed before it returns; SQLite: without
  // waiting for the disk, so it survives the daemon's crash, not the machine's); only the most
  // recent SqliteOptions::max_answers are kept. for_each_answer() visits those kept, oldest
  // first. Default: none kept.
  virtual Status record_answer(const AnswerRecord&) { return Status::ok(); }
  virtual Status for_each_answer(const std::function<void(AnswerRecord&&)>&) { return Status::ok(); }
};

struct SqliteOptions {
  bool store_scripts = false;   // --store-scripts: keeps the REDACTED text (docs/redaction.md)
  bool query_only = false;      // refuse every write (tests; a read-only replica)
  int busy_timeout_ms = 5000;
  // --max-wal-bytes: while the write-ahead log is larger than this and a checkpoint cannot
  // shrink it (the database file cannot be written), inserts fail (503) instead of growing it.
  uint64_t max_wal_bytes = uint64_t{64} << 20;
  int checkpoint_pages = 1000;  // checkpoint after a commit once the WAL holds this many pages
  std::string vfs = {};         // SQLite VFS name; empty: the default (tests count syncs)
  // Answers kept on record (record_answer); older ones are deleted as new ones come. The daemon
  // keeps as many in memory (serve::SizingState::kMaxIssued).
  size_t max_answers = 100'000;
  // Tests only (empty in the programs): called inside the answers' transaction before each answer
  // of a batch is inserted; it may throw, as running out of memory mid-batch would.
  std::function<void(const AnswerRecord&)> test_before_answer_insert = {};
};

// PRAGMA user_version. 2 added ran_mem_bytes (Job::ran_mem_bytes), 3 the answers table, 4 the
// answers' job_name, 5 the answers' and the completions' answer_id, 6 keys the completions by
// (job_id, submit_time) instead of job_id (a requeued job's runs; the table is rebuilt).
inline constexpr int kSchemaVersion = 6;

// Opens (creating when absent) the database, sets WAL and synchronous=FULL, creates or checks
// the schema. A database with a newer user_version is refused; an older one is migrated (columns
// and a table added, the completions table copied once for version 6; logged at info), except
// with query_only, where it is read as it is (ran_mem_bytes absent from version 1, no answers
// before version 4). The schema is created or migrated in one write transaction that reads the
// version again once it holds the lock, so another process that opened the file at the same time
// and migrated it first leaves this one nothing to do.
//
// Files that cannot be written (read-only, immutable) make operations fail with kIo before
// SQLite touches them: the WAL index (-shm) is memory-mapped, and writing into the mapping of a
// file that became immutable kills the process with SIGBUS. Checkpoints run after commits; their
// failures are kept (health()) and bound the WAL (max_wal_bytes).
Result<std::unique_ptr<CompletionStore>> open_sqlite_store(const std::string& path,
                                                           const SqliteOptions& options = {});

}  // namespace peakcast::serve
