// The SQLite store's tables (sqlite_internal.h): the schema of each version, the steps that bring
// an older file to the current one, and a row's columns to and from a Job or an AnswerRecord.
#include <algorithm>
#include <string>

#include "peakcast/ingest/bounds.h"
#include "sqlite_internal.h"

namespace peakcast::serve::sqlite_detail {
namespace {

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

}  // namespace

// Version 2 adds ran_mem_bytes (the limit a job ran under when the hook lowered --mem), version 3
// the answers on record, version 4 their job_name, version 5 answer ids, version 6 keys the
// completions by run (the table rebuilt: a copy of every row, once).
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

void bind_text(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
void bind_text_or_null(sqlite3_stmt* s, int i, const std::string& v) {
  if (v.empty()) sqlite3_bind_null(s, i);
  else bind_text(s, i, v);
}
std::string col_text(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s, i))) : std::string();
}

namespace {

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

}  // namespace

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

}  // namespace peakcast::serve::sqlite_detail
