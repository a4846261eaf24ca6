// What the SQLite store's tests share (store_test.cpp, store_migration_test.cpp,
// store_durability_test.cpp): a sample job, and SQL run or read on a connection of the test's own.
#pragma once

#include <sqlite3.h>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "peakcast/serve/store.h"

namespace peakcast::serve::store_testing {

// One completed job: its ids, sizes and labels set; `script` its text.
inline Job sample_job(const std::string& id, std::string script = "#!/bin/sh\nsecret-free\n") {
  Job j;
  j.job_id = id;
  j.user = "u";
  j.script_key = "k";
  j.submit_ms = 10;
  j.end_ms = 20;
  j.req_mem_bytes = 18'000'000'000'000'000'000ull;  // above INT64_MAX: stored bit for bit
  j.peak_mem_bytes = 9'000'000'000'000'000'000ull;
  j.script = std::move(script);
  compute_labels(j);
  return j;
}

// The integer a one-row query gives, read on a connection of its own.
inline int query_int(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
  const int v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

// The answers a store has on record, oldest first (an empty list, and a failed test, on error).
inline std::vector<AnswerRecord> answers_on_record(CompletionStore& s) {
  std::vector<AnswerRecord> out;
  const Status st = s.for_each_answer([&](AnswerRecord&& a) { out.push_back(std::move(a)); });
  EXPECT_TRUE(st.is_ok()) << st.message();
  return st.is_ok() ? out : std::vector<AnswerRecord>{};
}

// Runs `sql` on a connection of its own (an older schema made from a new file: SQLite >= 3.35
// drops a column). Fails the test where it does not run.
inline void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

}  // namespace peakcast::serve::store_testing
