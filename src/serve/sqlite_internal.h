// Internals of the SQLite store (sqlite_store.cpp), shared by its .cpp files; not part of the
// public contract (include/peakcast/serve/store.h):
//   sqlite_store.cpp   the store: one connection behind a mutex, its prepared statements, the
//                      opening and migrating of a file, WAL limits
//   sqlite_schema.cpp  the tables of each schema version, the steps between them, and a row's
//                      columns to and from a Job or an AnswerRecord
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"
#include "peakcast/serve/store.h"

namespace peakcast::serve::sqlite_detail {

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

// A database error as a Status: an I/O kind for the disk, locks and damage, internal otherwise.
Status db_error(sqlite3* db, int rc, const std::string& what);

// What brings a file of schema version `from` (0: a new file) to kSchemaVersion (sqlite_schema.cpp).
std::string migration_steps(int from);

#define PEAKCAST_COLUMNS_V1                                                                       \
  "job_id, user, script_key, submit_time, start_time, end_time, state, req_cpus, req_mem_bytes, " \
  "req_gpus, req_time_s, gpu_mem_bytes, peak_mem_bytes, peak_vram_bytes, mem_util, vram_util, "   \
  "valid_mask, clipped_mask, censored, job_name, partition, account, workload, "
inline constexpr const char* kColumns = PEAKCAST_COLUMNS_V1 "ran_mem_bytes, answer_id";
// Version 1 had no ran_mem_bytes, versions before 5 no answer_id: a reader that may not migrate
// (query_only) selects NULL for them.
inline constexpr const char* kColumnsV1 = PEAKCAST_COLUMNS_V1 "NULL, NULL";
inline constexpr const char* kColumnsV2 = PEAKCAST_COLUMNS_V1 "ran_mem_bytes, NULL";
#undef PEAKCAST_COLUMNS_V1
inline constexpr int kScriptColumn = 25;  // after kColumns, where a scan selects it
// The stored rows that are the run ?1 (job_id), ?4 (submit_time), ?6 (end_time) (store.h): its
// submit second, or a span that overlaps its own, compared at whole seconds (Slurm's times are;
// a client's may carry milliseconds of the same run). The primary key's index finds the job id's
// rows.
inline constexpr const char* kSameRun =
    "job_id = ?1 AND (CAST(submit_time AS INTEGER) = CAST(?4 AS INTEGER) OR "
    "(CAST(submit_time AS INTEGER) < CAST(?6 AS INTEGER) AND CAST(end_time AS INTEGER) > CAST(?4 AS INTEGER)))";

// Bytes are uint64 in the Job and int64 in SQLite: stored bit for bit.
template <typename T>
void bind_opt_int(sqlite3_stmt* s, int i, const std::optional<T>& v) {
  if (v) sqlite3_bind_int64(s, i, static_cast<sqlite3_int64>(*v));
  else sqlite3_bind_null(s, i);
}
template <typename T>
std::optional<T> col_opt(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) return std::nullopt;
  return static_cast<T>(sqlite3_column_int64(s, i));
}
void bind_text(sqlite3_stmt* s, int i, const std::string& v);
// An empty string as NULL (an answer id that was not known).
void bind_text_or_null(sqlite3_stmt* s, int i, const std::string& v);
std::string col_text(sqlite3_stmt* s, int i);
void bind_opt_double(sqlite3_stmt* s, int i, std::optional<double> v);
// Times as the canonical schema's epoch seconds: an integer when whole, a real with the
// milliseconds otherwise (sqlite_schema.cpp says how a time out of range reads).
void bind_epoch(sqlite3_stmt* s, int i, int64_t ms);

// A row of kColumns (in its order) as a Job; a row of the answers table as an AnswerRecord.
Job job_from_row(sqlite3_stmt* s);
AnswerRecord answer_from_row(sqlite3_stmt* s);

}  // namespace peakcast::serve::sqlite_detail
