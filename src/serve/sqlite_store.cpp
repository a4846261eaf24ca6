// SQLite implementation of CompletionStore (completions and the answers on record). One
// connection behind a mutex, prepared statements kept for the life of the store, RAII for every
// handle.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "peakcast/core/log.h"
#include "peakcast/ingest/bounds.h"
#include "peakcast/ingest/redact.h"
#include "peakcast/serve/store.h"

namespace peakcast::serve {
namespace {

struct DbClose {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalize {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using DbPtr = std::unique_ptr<sqlite3, DbClose>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalize>;

// Resets a statement on scope exit so the next use starts clean.
class StmtUse {
 public:
  explicit StmtUse(sqlite3_stmt* s) : s_(s) {}
  ~StmtUse() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  StmtUse(const StmtUse&) = delete;
  StmtUse& operator=(const StmtUse&) = delete;
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_;
};

Status db_error(sqlite3* db, int rc, const std::string& what) {
  const std::string msg = "database: " + what + ": " + sqlite3_errstr(rc) +
                          (db ? std::string(" (") + sqlite3_errmsg(db) + ")" : std::string());
  switch (rc & 0xff) {
    case SQLITE_FULL: case SQLITE_READONLY: case SQLITE_IOERR: case SQLITE_CANTOPEN:
    case SQLITE_BUSY: case SQLITE_LOCKED: case SQLITE_PERM: case SQLITE_NOLFS: case SQLITE_AUTH:
    case SQLITE_CORRUPT: case SQLITE_NOTADB:
      return Status::io(msg);
    default:
      return Status::internal(msg);
  }
}

// The completions table of version 6 (`{table}`: its name), answer_id (version 5) included, keyed
// by run (store.h): job_id and submit_time.
constexpr const char* kCompletionsTable = R"sql(
CREATE TABLE {table} (
  job_id TEXT NOT NULL,
  user TEXT NOT NULL,
  script_key TEXT NOT NULL,
  submit_time INTEGER NOT NULL,
  start_time INTEGER,
  end_time INTEGER NOT NULL,
  state TEXT NOT NULL,
  req_cpus REAL,
  req_mem_bytes INTEGER,
  req_gpus INTEGER,
  req_time_s INTEGER,
  gpu_mem_bytes INTEGER,
  peak_mem_bytes INTEGER,
  peak_vram_bytes INTEGER,
  mem_util REAL NOT NULL,
  vram_util REAL NOT NULL,
  valid_mask INTEGER NOT NULL,
  clipped_mask INTEGER NOT NULL,
  censored INTEGER NOT NULL,
  job_name TEXT NOT NULL,
  partition TEXT NOT NULL,
  account TEXT NOT NULL,
  workload TEXT,
  script TEXT,
  stored_at INTEGER NOT NULL DEFAULT (strftime('%s','now')),
  ran_mem_bytes INTEGER,
  answer_id TEXT,
  PRIMARY KEY (job_id, submit_time)
);
)sql";
constexpr const char* kCompletionsIndexes = R"sql(
CREATE INDEX IF NOT EXISTS completions_user ON completions(user, end_time);
CREATE INDEX IF NOT EXISTS completions_script ON completions(script_key, end_time);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
)sql";

std::string completions_table(const std::string& name) {
  std::string sql = kCompletionsTable;
  sql.replace(sql.find("{table}"), 7, name);
  return sql;
}

// Version 6 from 5 (after the steps that bring an older file to 5): SQLite cannot change a
// primary key in place; the table is copied into one of version 6 (its rows as they are, stored_at
// included) and takes its place.
std::string rebuild_completions_v6() {
  return completions_table("completions_v6") +
         "INSERT INTO completions_v6 (job_id, user, script_key, submit_time, start_time, end_time, state, "
         "req_cpus, req_mem_bytes, req_gpus, req_time_s, gpu_mem_bytes, peak_mem_bytes, peak_vram_bytes, "
         "mem_util, vram_util, valid_mask, clipped_mask, censored, job_name, partition, account, workload, "
         "script, stored_at, ran_mem_bytes, answer_id) SELECT job_id, user, script_key, submit_time, start_time, "
         "end_time, state, req_cpus, req_mem_bytes, req_gpus, req_time_s, gpu_mem_bytes, peak_mem_bytes, "
         "peak_vram_bytes, mem_util, vram_util, valid_mask, clipped_mask, censored, job_name, partition, "
         "account, workload, script, stored_at, ran_mem_bytes, answer_id FROM completions;"
         "DROP TABLE completions;"
         "ALTER TABLE completions_v6 RENAME TO completions;" +
         std::string(kCompletionsIndexes);
}

// Version 5: the answer id a completion carried (Job::answer_id). (No index on end_time for the
// start's scan in end-time order: measured on 1,000,000 completions, the daemon read them in
// 5.0-5.3 s with one and 5.7-5.8 s without where rows were stored in end-time order, as
// slurm-sync stores them, and 7.2-7.4 s against 6.0-6.1 s where they were not: not worth an
// index to update on every insert.)
constexpr const char* kV5Completions = R"sql(
ALTER TABLE completions ADD COLUMN answer_id TEXT;
)sql";

// Version 3: the answers on record (AnswerRecord), in the order they were given (seq); version 4
// adds job_name (redacted, as the completions' is), version 5 answer_id.
constexpr const char* kAnswersSchema = R"sql(
CREATE TABLE IF NOT EXISTS answers (
  seq INTEGER PRIMARY KEY,
  user TEXT NOT NULL,
  script_key TEXT NOT NULL,
  submit_time INTEGER NOT NULL,
  req_mem_bytes INTEGER,
  recommended_mem_bytes INTEGER,
  mem_util REAL,
  mem_upper REAL,
  vram_util REAL,
  vram_upper REAL,
  answered_at INTEGER NOT NULL DEFAULT (strftime('%s','now')),
  job_name TEXT,
  answer_id TEXT
);
)sql";

// What brings a file of schema version `from` (0: a new file) to kSchemaVersion. Version 2 adds
// ran_mem_bytes (the limit a job ran under when the hook lowered --mem), version 3 the answers on
// record, version 4 their job_name, version 5 answer ids, version 6 keys the completions by run
// (the table rebuilt: a copy of every row, once).
std::string migration_steps(int from) {
  if (from == 0) return completions_table("completions") + kCompletionsIndexes + kAnswersSchema;
  std::string steps;
  if (from < 5) {
    std::string answers = kAnswersSchema;  // versions 1 and 2 have none: created whole
    if (from == 3) answers = "ALTER TABLE answers ADD COLUMN job_name TEXT;ALTER TABLE answers ADD COLUMN answer_id TEXT;";
    if (from == 4) answers = "ALTER TABLE answers ADD COLUMN answer_id TEXT;";
    steps = std::string(from == 1 ? "ALTER TABLE completions ADD COLUMN ran_mem_bytes INTEGER;" : "") +
            kV5Completions + answers;
  }
  return steps + rebuild_completions_v6();
}

#define PEAKCAST_COLUMNS_V1                                                                       \
  "job_id, user, script_key, submit_time, start_time, end_time, state, req_cpus, req_mem_bytes, " \
  "req_gpus, req_time_s, gpu_mem_bytes, peak_mem_bytes, peak_vram_bytes, mem_util, vram_util, "   \
  "valid_mask, clipped_mask, censored, job_name, partition, account, workload, "
constexpr const char* kColumns = PEAKCAST_COLUMNS_V1 "ran_mem_bytes, answer_id";
// Version 1 had no ran_mem_bytes, versions before 5 no answer_id: a reader that may not migrate
// (query_only) selects NULL for them.
constexpr const char* kColumnsV1 = PEAKCAST_COLUMNS_V1 "NULL, NULL";
constexpr const char* kColumnsV2 = PEAKCAST_COLUMNS_V1 "ran_mem_bytes, NULL";
#undef PEAKCAST_COLUMNS_V1
constexpr int kScriptColumn = 25;  // after kColumns, where a scan selects it
// The stored rows that are the run ?1 (job_id), ?4 (submit_time), ?6 (end_time) (store.h): its
// submit second, or a span that overlaps its own, compared at whole seconds (Slurm's times are;
// a client's may carry milliseconds of the same run). The primary key's index finds the job id's
// rows.
constexpr const char* kSameRun =
    "job_id = ?1 AND (CAST(submit_time AS INTEGER) = CAST(?4 AS INTEGER) OR "
    "(CAST(submit_time AS INTEGER) < CAST(?6 AS INTEGER) AND CAST(end_time AS INTEGER) > CAST(?4 AS INTEGER)))";

// Bytes are uint64 in the Job and int64 in SQLite: stored bit for bit.
template <typename T>
void bind_opt_int(sqlite3_stmt* s, int i, const std::optional<T>& v) {
  if (v) sqlite3_bind_int64(s, i, static_cast<sqlite3_int64>(*v));
  else sqlite3_bind_null(s, i);
}
void bind_text(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
// An empty string as NULL (an answer id that was not known).
void bind_text_or_null(sqlite3_stmt* s, int i, const std::string& v) {
  if (v.empty()) sqlite3_bind_null(s, i);
  else bind_text(s, i, v);
}
std::string col_text(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, i))) : std::string();
}
template <typename T>
std::optional<T> col_opt(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return static_cast<T>(sqlite3_column_int64(s, i));
}

// Times are stored as the canonical schema's epoch seconds (an integer when whole, a real with
// the milliseconds otherwise), so databases written before millisecond times read unchanged.
// A time outside the canonical schema's range, which only a file edited by hand or damaged holds,
// is held at its edge: converted as it is, 1e300 (or Inf, SQLite's 9e999) seconds was a double's
// conversion out of int64's range, and 1e16 whole seconds overflowed int64 when made ms (both
// undefined).
int64_t col_epoch_ms(sqlite3_stmt* s, int i) {
  constexpr auto kMax = static_cast<int64_t>(ingest::kMaxEpochSeconds);
  if (sqlite3_column_type(s, i) == SQLITE_FLOAT) {
    const double d = sqlite3_column_double(s, i);
    if (!(d > 0)) return 0;
    return ms_from_seconds(std::min(d, ingest::kMaxEpochSeconds));
  }
  return std::clamp<int64_t>(sqlite3_column_int64(s, i), 0, kMax) * kMsPerSecond;
}
std::optional<int64_t> col_opt_epoch_ms(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return col_epoch_ms(s, i);
}
void bind_epoch(sqlite3_stmt* s, int i, int64_t ms) {
  if (ms % kMsPerSecond == 0) {
    sqlite3_bind_int64(s, i, ms / kMsPerSecond);
  } else {
    sqlite3_bind_double(s, i, seconds_from_ms(ms));
  }
}

Job job_from_row(sqlite3_stmt* s) {
  Job j;
  j.job_id = col_text(s, 0);
  j.user = col_text(s, 1);
  j.script_key = col_text(s, 2);
  j.submit_ms = col_epoch_ms(s, 3);
  j.start_ms = col_opt_epoch_ms(s, 4);
  j.end_ms = col_epoch_ms(s, 5);
  j.state = col_text(s, 6);
  if (sqlite3_column_type(s, 7) != SQLITE_NULL) j.req_cpus = sqlite3_column_double(s, 7);
  j.req_mem_bytes = col_opt<uint64_t>(s, 8);
  j.req_gpus = col_opt<int>(s, 9);
  j.req_time_s = col_opt<int64_t>(s, 10);
  j.gpu_mem_bytes = col_opt<uint64_t>(s, 11);
  j.peak_mem_bytes = col_opt<uint64_t>(s, 12);
  j.peak_vram_bytes = col_opt<uint64_t>(s, 13);
  j.util = {sqlite3_column_double(s, 14), sqlite3_column_double(s, 15)};
  const int valid = sqlite3_column_int(s, 16), clipped = sqlite3_column_int(s, 17);
  j.valid = {(valid & 1) != 0, (valid & 2) != 0};
  j.clipped = {(clipped & 1) != 0, (clipped & 2) != 0};
  j.censored = sqlite3_column_int(s, 18) != 0;
  j.job_name = col_text(s, 19);
  j.partition = col_text(s, 20);
  j.account = col_text(s, 21);
  if (sqlite3_column_type(s, 22) != SQLITE_NULL) j.workload = col_text(s, 22);
  j.ran_mem_bytes = col_opt<uint64_t>(s, 23);
  j.answer_id = col_text(s, 24);  // NULL (before version 5) reads as ""
  return j;
}

void bind_opt_double(sqlite3_stmt* s, int i, std::optional<double> v) {
  if (v) sqlite3_bind_double(s, i, *v);
  else sqlite3_bind_null(s, i);
}

AnswerRecord answer_from_row(sqlite3_stmt* s) {
  AnswerRecord a;
  a.user = col_text(s, 0);
  a.script_key = col_text(s, 1);
  a.answer.submit_ms = col_epoch_ms(s, 2);
  a.answer.request_bytes = col_opt<uint64_t>(s, 3);
  a.answer.recommended_bytes = col_opt<uint64_t>(s, 4);
  for (Resource r : kResources) {
    const int c = 5 + 2 * static_cast<int>(idx(r));
    if (sqlite3_column_type(s, c) == SQLITE_NULL || sqlite3_column_type(s, c + 1) == SQLITE_NULL) continue;
    a.answer.point_bound[idx(r)] = std::make_pair(sqlite3_column_double(s, c), sqlite3_column_double(s, c + 1));
  }
  a.answer.job_name = col_text(s, 9);  // NULL (a version 3 row) reads as ""
  a.answer.answer_id = col_text(s, 10);  // NULL (before version 5) reads as ""
  return a;
}

class SqliteStore final : public CompletionStore {
 public:
  static Result<std::unique_ptr<CompletionStore>> open(const std::string& path,
                                                        const SqliteOptions& o) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                   o.vfs.empty() ? nullptr : o.vfs.c_str());
    DbPtr db(raw);
    if (rc != SQLITE_OK) return db_error(db.get(), rc, "opening " + path);
    auto store = std::unique_ptr<SqliteStore>(new SqliteStore(std::move(db), o, path));
    if (Status s = store->init(path); !s) return s;
    return std::unique_ptr<CompletionStore>(std::move(store));
  }

  Result<bool> insert(const Job& j) override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    if (Status w = wal_within_limit(); !w) return w;
    if (!insert_) return Status::io("database: " + path_ + " is open read-only (an older schema version, not migrated)");
    StmtUse u(insert_.get());
    sqlite3_stmt* s = u.get();
    bind_text(s, 1, j.job_id);
    bind_text(s, 2, j.user);
    bind_text(s, 3, j.script_key);
    bind_epoch(s, 4, j.submit_ms);
    if (j.start_ms) bind_epoch(s, 5, *j.start_ms); else sqlite3_bind_null(s, 5);
    bind_epoch(s, 6, j.end_ms);
    bind_text(s, 7, j.state);
    if (j.req_cpus) sqlite3_bind_double(s, 8, *j.req_cpus); else sqlite3_bind_null(s, 8);
    bind_opt_int(s, 9, j.req_mem_bytes);
    bind_opt_int(s, 10, j.req_gpus);
    bind_opt_int(s, 11, j.req_time_s);
    bind_opt_int(s, 12, j.gpu_mem_bytes);
    bind_opt_int(s, 13, j.peak_mem_bytes);
    bind_opt_int(s, 14, j.peak_vram_bytes);
    sqlite3_bind_double(s, 15, j.util[0]);
    sqlite3_bind_double(s, 16, j.util[1]);
    sqlite3_bind_int(s, 17, (j.valid[0] ? 1 : 0) | (j.valid[1] ? 2 : 0));
    sqlite3_bind_int(s, 18, (j.clipped[0] ? 1 : 0) | (j.clipped[1] ? 2 : 0));
    sqlite3_bind_int(s, 19, j.censored ? 1 : 0);
    // Only redacted text is ever stored: no secret reaches the database file. A job's name and
    // workload are free text too ("deploy DB_PASS=...", a URL with credentials): the script's
    // rules apply to them.
    bind_text(s, 20, ingest::redact_script(j.job_name));
    bind_text(s, 21, j.partition);
    bind_text(s, 22, j.account);
    if (j.workload) bind_text(s, 23, ingest::redact_script(*j.workload)); else sqlite3_bind_null(s, 23);
    if (options_.store_scripts && j.script) bind_text(s, 24, ingest::redact_script(*j.script));
    else sqlite3_bind_null(s, 24);
    bind_opt_int(s, 25, j.ran_mem_bytes);
    bind_text_or_null(s, 26, j.answer_id);
    const int rc = sqlite3_step(s);
    if (rc != SQLITE_DONE) return db_error(db_.get(), rc, "storing job " + j.job_id);
    return sqlite3_changes(db_.get()) > 0;
  }

  Result<bool> contains(const std::string& job_id) override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    StmtUse u(contains_.get());
    bind_text(u.get(), 1, job_id);
    const int rc = sqlite3_step(u.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return db_error(db_.get(), rc, "looking up job " + job_id);
  }

  Result<std::optional<Job>> find(const std::string& job_id) override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    StmtUse u(find_.get());
    bind_text(u.get(), 1, job_id);
    const int rc = sqlite3_step(u.get());
    if (rc == SQLITE_ROW) return std::optional<Job>(job_from_row(u.get()));
    if (rc == SQLITE_DONE) return std::optional<Job>();
    return db_error(db_.get(), rc, "looking up job " + job_id);
  }

  Result<bool> contains_run(const Job& run) override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    StmtUse u(contains_run_.get());
    bind_run(u.get(), run);
    const int rc = sqlite3_step(u.get());
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return db_error(db_.get(), rc, "looking up job " + run.job_id);
  }

  Result<std::optional<Job>> find_run(const Job& run) override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    StmtUse u(find_run_.get());
    bind_run(u.get(), run);
    const int rc = sqlite3_step(u.get());
    if (rc == SQLITE_ROW) return std::optional<Job>(job_from_row(u.get()));
    if (rc == SQLITE_DONE) return std::optional<Job>();
    return db_error(db_.get(), rc, "looking up job " + run.job_id);
  }

  // kSameRun's parameters, where the insert has them.
  static void bind_run(sqlite3_stmt* s, const Job& run) {
    bind_text(s, 1, run.job_id);
    bind_epoch(s, 4, run.submit_ms);
    bind_epoch(s, 6, run.end_ms);
  }

  Status for_each(const std::function<void(Job&&)>& visit) override {
    return scan(visit, false, std::nullopt);
  }

  Status for_each_with_scripts(const std::function<void(Job&&)>& visit) override {
    return scan(visit, true, std::nullopt);
  }

  Status for_each_ended_since(int64_t since_ms, const std::function<void(Job&&)>& visit) override {
    return scan(visit, false, since_ms);
  }

  Status scan(const std::function<void(Job&&)>& visit, bool scripts, std::optional<int64_t> since_ms) {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    StmtPtr stmt;
    if (Status s = prepare(std::string("SELECT ") + columns_ + (scripts ? ", script" : "") + " FROM completions" +
                               (since_ms ? " WHERE end_time >= ?1" : "") + " ORDER BY end_time, job_id",
                           stmt);
        !s) {
      return s;
    }
    // Stored as seconds (a fraction where the ms are not whole): compared as such.
    if (since_ms) sqlite3_bind_double(stmt.get(), 1, static_cast<double>(*since_ms) / kMsPerSecond);
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      Job j = job_from_row(stmt.get());
      if (scripts && sqlite3_column_type(stmt.get(), kScriptColumn) != SQLITE_NULL) {
        j.script = col_text(stmt.get(), kScriptColumn);
      }
      visit(std::move(j));
    }
    if (rc != SQLITE_DONE) return db_error(db_.get(), rc, "reading completions");
    return Status::ok();
  }

  Result<std::vector<Job>> recent(const HistoryFilter& f, size_t limit) override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    sqlite3_stmt* stmt = f.user.empty() ? recent_script_.get() : recent_user_.get();
    StmtUse u(stmt);
    bind_text(stmt, 1, f.user.empty() ? f.script_key : f.user);
    sqlite3_bind_int64(stmt, 2, static_cast<sqlite3_int64>(limit));
    std::vector<Job> out;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) out.push_back(job_from_row(stmt));
    if (rc != SQLITE_DONE) return db_error(db_.get(), rc, "reading history");
    return out;
  }

  Result<size_t> count() override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    StmtUse u(count_.get());
    const int rc = sqlite3_step(u.get());
    if (rc != SQLITE_ROW) return db_error(db_.get(), rc, "counting completions");
    return static_cast<size_t>(sqlite3_column_int64(u.get(), 0));
  }

  Result<std::optional<std::string>> get_meta(const std::string& key) override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    StmtUse u(get_meta_.get());
    bind_text(u.get(), 1, key);
    const int rc = sqlite3_step(u.get());
    if (rc == SQLITE_ROW) return std::optional<std::string>(col_text(u.get(), 0));
    if (rc == SQLITE_DONE) return std::optional<std::string>();
    return db_error(db_.get(), rc, "reading " + key);
  }

  Status set_meta(const std::string& key, const std::string& value) override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    StmtUse u(set_meta_.get());
    bind_text(u.get(), 1, key);
    bind_text(u.get(), 2, value);
    const int rc = sqlite3_step(u.get());
    if (rc != SQLITE_DONE) return db_error(db_.get(), rc, "writing " + key);
    return Status::ok();
  }

  // Group commit: the hook waits on the answer, under slurmctld's job lock, and predictions run
  // concurrently. The caller that finds no write in progress writes every answer queued until
  // the queue is empty, one transaction per batch; the others return at once (their answer is in
  // that writer's next batch). The commits do not wait for the disk (synchronous=NORMAL for them
  // alone): in the WAL before the writer returns, an answer survives the daemon's crash, and the
  // next completion's commit (synchronous=FULL) syncs it with its own.
  Status record_answer(const AnswerRecord& a) override {
    {
      std::lock_guard q(queue_mu_);
      if (answer_queue_.size() >= kMaxQueuedAnswers) {
        answers_not_kept_.fetch_add(1, std::memory_order_relaxed);
        return Status::io("database: " + std::to_string(answer_queue_.size()) +
                          " answers wait to be written (the database is slow or stuck): this one is not kept");
      }
      answer_queue_.push_back(a);
      if (writing_answers_) return Status::ok();
      writing_answers_ = true;
    }
    Status out = Status::ok();
    try {
      for (;;) {
        std::vector<AnswerRecord> batch;
        {
          std::lock_guard q(queue_mu_);
          if (answer_queue_.empty()) {
            writing_answers_ = false;
            return out;
          }
          batch.swap(answer_queue_);
        }
        if (Status s = write_answers(batch); !s) {  // every answer in it, whoever queued it
          answers_not_kept_.fetch_add(batch.size(), std::memory_order_relaxed);
          out = s;
        }
      }
    } catch (...) {  // out of memory: the next caller writes what is queued
      std::lock_guard q(queue_mu_);
      writing_answers_ = false;
      throw;
    }
  }

  Status for_each_answer(const std::function<void(AnswerRecord&&)>& visit) override {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    if (!select_answers_) return Status::ok();  // a reader of a file from before version 4
    StmtUse u(select_answers_.get());
    sqlite3_bind_int64(u.get(), 1, static_cast<sqlite3_int64>(options_.max_answers));
    int rc;
    while ((rc = sqlite3_step(u.get())) == SQLITE_ROW) visit(answer_from_row(u.get()));
    if (rc != SQLITE_DONE) return db_error(db_.get(), rc, "reading the answers on record");
    return Status::ok();
  }

  StoreHealth health() override {
    std::lock_guard lock(mu_);
    StoreHealth h;
    h.wal_bytes = file_size(path_ + "-wal");
    h.checkpoint_error = checkpoint_error_;
    h.checkpoint_failures = checkpoint_failures_;
    h.answers_not_kept = answers_not_kept_.load(std::memory_order_relaxed);
    StmtPtr st;
    if (prepare("PRAGMA synchronous", st) && sqlite3_step(st.get()) == SQLITE_ROW) {
      static constexpr const char* kNames[] = {"off", "normal", "full", "extra"};
      const int v = sqlite3_column_int(st.get(), 0);
      h.synchronous = v >= 0 && v <= 3 ? kNames[v] : std::to_string(v);
    }
    return h;
  }

 private:
  SqliteStore(DbPtr db, const SqliteOptions& o, std::string path)
      : db_(std::move(db)), options_(o), path_(std::move(path)) {}

  static uint64_t file_size(const std::string& p) {
    struct stat st{};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }

  // SQLite writes into a memory mapping of the -shm file; if that file cannot be written any more
  // (chattr +i, a read-only remount) the write faults with SIGBUS and the daemon dies. access()
  // sees both, so every operation checks first and fails like a full disk instead (503).
  Status writable() const {
    for (const char* suffix : {"-shm", "-wal"}) {
      const std::string p = path_ + suffix;
      if (::access(p.c_str(), W_OK) != 0 && errno != ENOENT) {
        return Status::io("database: " + p + " cannot be written (" + std::strerror(errno) +
                          "): read-only or immutable");
      }
    }
    return Status::ok();
  }

  // Checkpoints run from SQLite's WAL hook after a commit (the default auto-checkpoint ignores
  // failures; this one keeps them).
  static int on_wal_commit(void* self, sqlite3* db, const char* name, int pages) {
    auto* store = static_cast<SqliteStore*>(self);
    if (pages >= store->options_.checkpoint_pages) store->checkpoint(db, name, SQLITE_CHECKPOINT_PASSIVE);
    return SQLITE_OK;
  }

  bool checkpoint(sqlite3* db, const char* name, int mode) {
    const int rc = sqlite3_wal_checkpoint_v2(db, name, mode, nullptr, nullptr);
    if (rc == SQLITE_OK) {
      checkpoint_error_.clear();
      return true;
    }
    ++checkpoint_failures_;
    checkpoint_error_ = db_error(db, rc, "checkpoint").message();
    return false;
  }

  // A WAL over the limit means checkpoints have been failing: try once more (TRUNCATE shrinks
  // the file to zero), and refuse the write when that fails too.
  Status wal_within_limit() {
    const uint64_t size = file_size(path_ + "-wal");
    if (size <= options_.max_wal_bytes) return Status::ok();
    if (checkpoint(db_.get(), "main", SQLITE_CHECKPOINT_TRUNCATE)) return Status::ok();
    return Status::io("database: the write-ahead log is " + std::to_string(size >> 20) +
                      " MiB, over --max-wal-bytes (" + std::to_string(options_.max_wal_bytes >> 20) +
                      " MiB), and checkpoints fail: " + checkpoint_error_);
  }

  Status exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &err);
    std::string why = err ? err : "";
    sqlite3_free(err);
    if (rc != SQLITE_OK) return db_error(db_.get(), rc, sql.substr(0, 40));
    return Status::ok();
  }

  Status write_answers(const std::vector<AnswerRecord>& batch) {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    if (Status w = wal_within_limit(); !w) return w;
    if (!insert_answer_) {
      return Status::io("database: " + path_ + " is open read-only (schema version before 4, not migrated)");
    }
    if (Status st = step_pragma(sync_normal_.get()); !st) return st;
    Status out = exec("BEGIN IMMEDIATE");
    for (size_t i = 0; out && i < batch.size(); ++i) out = insert_answer(batch[i]);
    if (out) out = exec("COMMIT");
    if (!out) exec("ROLLBACK");
    const Status back = step_pragma(sync_full_.get());  // completions' commits wait for the disk
    if (!out) return out;
    if (!back) return back;
    // The oldest go once max_answers are kept (seq only grows: the newest row is never deleted),
    // checked each time the numbering passes a multiple of `every`.
    const sqlite3_int64 last = sqlite3_last_insert_rowid(db_.get());
    const auto every = static_cast<sqlite3_int64>(std::clamp<size_t>(options_.max_answers, 1, 1024));
    const sqlite3_int64 first = last - static_cast<sqlite3_int64>(batch.size()) + 1;
    if ((first - 1) / every != last / every) {
      StmtUse u(prune_answers_.get());
      sqlite3_bind_int64(u.get(), 1, last - static_cast<sqlite3_int64>(options_.max_answers));
      if (const int rc = sqlite3_step(u.get()); rc != SQLITE_DONE) {
        return db_error(db_.get(), rc, "deleting the oldest answers");
      }
    }
    return Status::ok();
  }

  Status insert_answer(const AnswerRecord& a) {
    StmtUse u(insert_answer_.get());
    sqlite3_stmt* s = u.get();
    bind_text(s, 1, a.user);
    bind_text(s, 2, a.script_key);
    bind_epoch(s, 3, a.answer.submit_ms);
    bind_opt_int(s, 4, a.answer.request_bytes);
    bind_opt_int(s, 5, a.answer.recommended_bytes);
    for (Resource r : kResources) {
      const auto& pb = a.answer.point_bound[idx(r)];
      const int c = 6 + 2 * static_cast<int>(idx(r));
      bind_opt_double(s, c, pb ? std::optional<double>(pb->first) : std::nullopt);
      bind_opt_double(s, c + 1, pb ? std::optional<double>(pb->second) : std::nullopt);
    }
    bind_text(s, 10, ingest::redact_script(a.answer.job_name));  // already redacted: idempotent
    bind_text_or_null(s, 11, a.answer.answer_id);
    const int rc = sqlite3_step(s);
    if (rc != SQLITE_DONE) return db_error(db_.get(), rc, "keeping an answer");
    return Status::ok();
  }

  Status step_pragma(sqlite3_stmt* stmt) {
    StmtUse u(stmt);
    const int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return db_error(db_.get(), rc, "setting synchronous");
    return Status::ok();
  }

  Status prepare(const std::string& sql, StmtPtr& out) {
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &s, nullptr);
    out.reset(s);
    if (rc != SQLITE_OK) return db_error(db_.get(), rc, "preparing a statement");
    return Status::ok();
  }

  Result<int> user_version() {
    StmtPtr s;
    if (Status st = prepare("PRAGMA user_version", s); !st) return st;
    const int rc = sqlite3_step(s.get());
    if (rc != SQLITE_ROW) return db_error(db_.get(), rc, "reading user_version");
    return sqlite3_column_int(s.get(), 0);
  }

  static Status newer_schema(const std::string& path, int version) {
    return Status::unsupported(path + ": database schema version " + std::to_string(version) +
                               " is newer than this build reads (" + std::to_string(kSchemaVersion) +
                               "); upgrade peakcast");
  }

  // Creates the schema in a new file, or brings an older one to kSchemaVersion, in one write
  // transaction. The version is read again once the write lock is held: another process (a cron
  // `peakcast slurm-sync` while the daemon starts) may have created or migrated the file since
  // init() read it, and only the steps still needed are taken (taken again, a step fails,
  // "duplicate column name", or copies the completions table a second time).
  Status migrate(const std::string& path) {
    if (Status s = exec("BEGIN IMMEDIATE"); !s) return s.with_context(path);
    auto v = user_version();
    Status out = v ? Status::ok() : v.status().with_context(path);
    if (out && *v > kSchemaVersion) out = newer_schema(path, *v);
    if (out && *v > 0 && *v < kSchemaVersion) {  // a copy of the completions table: it takes a while
      StmtPtr count;
      out = prepare("SELECT count(*) FROM completions", count);
      if (out && sqlite3_step(count.get()) == SQLITE_ROW) {
        log(LogLevel::kInfo, path + ": migrating " + std::to_string(sqlite3_column_int64(count.get(), 0)) +
                                 " completions from schema " + std::to_string(*v) + " to " +
                                 std::to_string(kSchemaVersion));
      }
    }
    if (out && *v < kSchemaVersion) {
      out = exec(migration_steps(*v) + "PRAGMA user_version=" + std::to_string(kSchemaVersion))
                .with_context(*v == 0 ? path
                                      : path + ": migrating the database from schema version " + std::to_string(*v) +
                                            " to " + std::to_string(kSchemaVersion));
    }
    if (out) out = exec("COMMIT").with_context(path);
    if (!out) exec("ROLLBACK");
    return out;
  }

  Status init(const std::string& path) {
    sqlite3_busy_timeout(db_.get(), options_.busy_timeout_ms);
    if (Status s = exec("PRAGMA journal_mode=WAL"); !s) return s.with_context(path);
    if (Status s = exec("PRAGMA synchronous=FULL"); !s) return s.with_context(path);
    if (Status s = exec("PRAGMA journal_size_limit=" + std::to_string(options_.max_wal_bytes / 4)); !s) {
      return s.with_context(path);
    }
    sqlite3_wal_hook(db_.get(), &SqliteStore::on_wal_commit, this);
    auto v = user_version();
    if (!v) return v.status().with_context(path);
    if (*v > kSchemaVersion) return newer_schema(path, *v);
    const bool as_it_is = options_.query_only && *v < kSchemaVersion;  // a reader does not migrate
    if (*v == 0 || (!as_it_is && *v < kSchemaVersion)) {  // a new file, or one to migrate
      if (Status s = migrate(path); !s) return s;
    } else if (as_it_is) {
      // no ran_mem_bytes (1), no answer_id (< 5); keyed by job_id (< 6): read the same
      columns_ = *v == 1 ? kColumnsV1 : *v < 5 ? kColumnsV2 : kColumns;
    }
    // The insert names script (?24) before ran_mem_bytes and answer_id (?25, ?26), so its order
    // differs from kColumns'. An older file opened query_only never inserts, and the statement
    // (which names columns it may lack) is not prepared there.
    Status s = as_it_is
                   ? Status::ok()
                   // One statement: the check and the write are one step for another writer
                   // (peakcast slurm-sync on the same file) too.
                   : prepare(std::string("INSERT OR IGNORE INTO completions (job_id, user, script_key, submit_time, "
                             "start_time, end_time, state, req_cpus, req_mem_bytes, req_gpus, req_time_s, "
                             "gpu_mem_bytes, peak_mem_bytes, peak_vram_bytes, mem_util, vram_util, "
                             "valid_mask, clipped_mask, censored, job_name, partition, account, workload, "
                             "script, ran_mem_bytes, answer_id) SELECT ?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,"
                             "?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26 WHERE NOT EXISTS "
                             "(SELECT 1 FROM completions WHERE ") + kSameRun + ")", insert_);
    if (s) s = prepare("SELECT 1 FROM completions WHERE job_id = ?1", contains_);
    if (s) s = prepare(std::string("SELECT ") + columns_ +
                       " FROM completions WHERE job_id = ?1 ORDER BY submit_time DESC LIMIT 1", find_);
    if (s) s = prepare(std::string("SELECT 1 FROM completions WHERE ") + kSameRun + " LIMIT 1", contains_run_);
    if (s) s = prepare(std::string("SELECT ") + columns_ + " FROM completions WHERE " + kSameRun +
                       " ORDER BY submit_time DESC LIMIT 1", find_run_);
    if (s) s = prepare(std::string("SELECT ") + columns_ +
                       " FROM completions WHERE user = ?1 ORDER BY end_time DESC LIMIT ?2", recent_user_);
    if (s) s = prepare(std::string("SELECT ") + columns_ +
                       " FROM completions WHERE script_key = ?1 ORDER BY end_time DESC LIMIT ?2",
                       recent_script_);
    if (s) s = prepare("SELECT count(*) FROM completions", count_);
    if (s) s = prepare("SELECT value FROM meta WHERE key = ?1", get_meta_);
    if (s) s = prepare("INSERT INTO meta (key, value) VALUES (?1, ?2) "
                       "ON CONFLICT(key) DO UPDATE SET value = excluded.value", set_meta_);
    if (s && !as_it_is) {
      s = prepare("INSERT INTO answers (user, script_key, submit_time, req_mem_bytes, recommended_mem_bytes, "
                  "mem_util, mem_upper, vram_util, vram_upper, job_name, answer_id) "
                  "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
                  insert_answer_);
      if (s) s = prepare("DELETE FROM answers WHERE seq <= ?1", prune_answers_);
      if (s) s = prepare("SELECT user, script_key, submit_time, req_mem_bytes, recommended_mem_bytes, "
                         "mem_util, mem_upper, vram_util, vram_upper, job_name, answer_id FROM answers "
                         "WHERE seq > (SELECT coalesce(max(seq), 0) FROM answers) - ?1 ORDER BY seq",
                         select_answers_);
      if (s) s = prepare("PRAGMA synchronous=NORMAL", sync_normal_);
      if (s) s = prepare("PRAGMA synchronous=FULL", sync_full_);
    }
    if (!s) return s.with_context(path);
    if (options_.query_only) {
      if (Status q = exec("PRAGMA query_only=ON"); !q) return q.with_context(path);
    }
    return Status::ok();
  }

  std::mutex mu_;
  DbPtr db_;
  SqliteOptions options_;
  std::string path_;
  const char* columns_ = kColumns;  // what a SELECT reads (kColumnsV1/V2 from an older file, query_only)
  std::string checkpoint_error_;  // guarded by mu_ (the WAL hook runs inside insert)
  uint64_t checkpoint_failures_ = 0;
  // Declared after db_: finalized before the connection closes.
  StmtPtr insert_, contains_, find_, contains_run_, find_run_, recent_user_, recent_script_, count_, get_meta_,
      set_meta_;
  // The answers on record: absent where a reader opened a file from before version 4.
  StmtPtr insert_answer_, prune_answers_, select_answers_, sync_normal_, sync_full_;
  // Answers waiting for the writer (record_answer), bounded.
  static constexpr size_t kMaxQueuedAnswers = 65'536;
  std::mutex queue_mu_;
  std::vector<AnswerRecord> answer_queue_;
  bool writing_answers_ = false;
  std::atomic<uint64_t> answers_not_kept_{0};
};

}  // namespace

Result<std::unique_ptr<CompletionStore>> open_sqlite_store(const std::string& path,
                                                           const SqliteOptions& options) {
  return SqliteStore::open(path, options);
}

}  // namespace peakcast::serve
