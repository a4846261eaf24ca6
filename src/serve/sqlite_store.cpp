// SQLite implementation of CompletionStore (completions and the answers on record). One
// connection behind a mutex, prepared statements kept for the life of the store, RAII for every
// handle. The tables, their migrations and the rows' columns: sqlite_schema.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "peakcast/core/log.h"
#include "peakcast/ingest/redact.h"
#include "sqlite_internal.h"

namespace peakcast::serve {
namespace {

using namespace sqlite_detail;

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
    size_t writing = 0;  // the batch write_answers() has, while it has it
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
        writing = batch.size();
        Status s = write_answers(batch);
        writing = 0;
        if (!s) {  // every answer in it, whoever queued it
          answers_not_kept_.fetch_add(batch.size(), std::memory_order_relaxed);
          out = s;
        }
      }
    } catch (...) {  // out of memory: the batch is rolled back; the next caller writes what is queued
      answers_not_kept_.fetch_add(writing, std::memory_order_relaxed);
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

  // Ends a batch of answers however it ended (a failed step or COMMIT, or an exception): a
  // transaction still open rolled back, and synchronous=FULL again, for completions' commits.
  // Left open, the transaction would take in the completions acknowledged afterwards, uncommitted
  // and unsynced, and every later batch would fail (synchronous cannot be changed inside a
  // transaction) until the daemon stops and they are lost. SQLite calls alone: nothing here
  // throws (BatchCleanup's destructor calls it). Returns the pragma's result code.
  int end_answer_batch() noexcept {
    if (sqlite3_get_autocommit(db_.get()) == 0) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    return sqlite3_exec(db_.get(), "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
  }

  // Ends the batch where an exception leaves write_answers (std::bad_alloc from redact_script or a
  // vector's growth, between BEGIN and COMMIT).
  class BatchCleanup {
   public:
    explicit BatchCleanup(SqliteStore* store) : store_(store) {}
    ~BatchCleanup() {
      if (armed_) store_->end_answer_batch();
    }
    void dismiss() { armed_ = false; }  // the batch ended without an exception and ends itself
    BatchCleanup(const BatchCleanup&) = delete;
    BatchCleanup& operator=(const BatchCleanup&) = delete;

   private:
    SqliteStore* store_;
    bool armed_ = true;
  };

  Status write_answers(const std::vector<AnswerRecord>& batch) {
    std::lock_guard lock(mu_);
    if (Status w = writable(); !w) return w;
    if (Status w = wal_within_limit(); !w) return w;
    if (!insert_answer_) {
      return Status::io("database: " + path_ + " is open read-only (schema version before 4, not migrated)");
    }
    BatchCleanup cleanup(this);
    // Executed each time, not prepared once: SQLite sets the level while it compiles the pragma
    // (at prepare, and at each re-prepare), not when the statement is stepped.
    Status out = exec("PRAGMA synchronous=NORMAL");
    if (out) out = exec("BEGIN IMMEDIATE");
    for (size_t i = 0; out && i < batch.size(); ++i) {
      if (options_.test_before_answer_insert) options_.test_before_answer_insert(batch[i]);
      out = insert_answer(batch[i]);
    }
    if (out) out = exec("COMMIT");
    cleanup.dismiss();
    const int back = end_answer_batch();  // completions' commits wait for the disk
    if (!out) return out;
    if (back != SQLITE_OK) return db_error(db_.get(), back, "setting synchronous");
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

  // Another program's database (no schema version of ours, and tables of its own) is refused
  // before anything is written to it: migrating would add peakcastd's tables to it, and
  // journal_mode=WAL would change how its owner's file is journalled.
  Status check_ours(const std::string& path) {
    auto v = user_version();
    if (!v) return v.status().with_context(path);
    if (*v != 0) return Status::ok();
    StmtPtr tables;
    if (Status s = prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 4", tables); !s) {
      return s.with_context(path);
    }
    std::vector<std::string> names;
    while (sqlite3_step(tables.get()) == SQLITE_ROW) {
      names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(tables.get(), 0)));
    }
    if (names.empty()) return Status::ok();  // a new file
    if (names.size() > 3) names.back() = "...";
    return Status::invalid(fmt::format("{}: not a peakcastd database: it holds tables peakcastd did not "
                                       "write ({}) and no schema version; left as it was",
                                       path, fmt::join(names, ", ")));
  }

  Status init(const std::string& path) {
    sqlite3_busy_timeout(db_.get(), options_.busy_timeout_ms);
    if (Status s = check_ours(path); !s) return s;
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
  StmtPtr insert_answer_, prune_answers_, select_answers_;
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
