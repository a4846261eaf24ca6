#include <sqlite3.h>

#include <gtest/gtest.h>

#include "peakcast/serve/store.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using testing::TempDir;

Job sample_job(const std::string& id) {
  Job j;
  j.job_id = id;
  j.user = "u";
  j.script_key = "k";
  j.submit_ms = 10;
  j.end_ms = 20;
  j.req_mem_bytes = 18'000'000'000'000'000'000ull;  // above INT64_MAX: stored bit for bit
  j.peak_mem_bytes = 9'000'000'000'000'000'000ull;
  j.script = "#!/bin/sh\nsecret-free\n";
  compute_labels(j);
  return j;
}

TEST(SqliteStore, RoundTripsAndKeepsScriptsOnlyWhenAsked) {
  TempDir dir;
  for (bool keep : {false, true}) {
    const std::string path = dir.file(keep ? "a.db" : "b.db");
    {
      auto s = open_sqlite_store(path, SqliteOptions{.store_scripts = keep});
      ASSERT_TRUE(s.ok()) << s.status().message();
      EXPECT_TRUE(*(*s)->insert(sample_job("1")));
      EXPECT_FALSE(*(*s)->insert(sample_job("1")));
    }
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok());
    std::vector<Job> all;
    ASSERT_TRUE((*s)->for_each([&](Job&& j) { all.push_back(std::move(j)); }).is_ok());
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].req_mem_bytes, sample_job("1").req_mem_bytes);
    EXPECT_EQ(all[0].peak_mem_bytes, sample_job("1").peak_mem_bytes);
    EXPECT_TRUE(all[0].valid[0]);
    EXPECT_DOUBLE_EQ(all[0].util[0], sample_job("1").util[0]);
    // The script column holds text only with --store-scripts.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT script IS NOT NULL FROM completions", -1, &st, nullptr);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0) != 0, keep);
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
}

TEST(SqliteStore, RefusesANewerSchema) {
  TempDir dir;
  const std::string path = dir.file("new.db");
  { ASSERT_TRUE(open_sqlite_store(path).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto s = open_sqlite_store(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().kind(), ErrorKind::kUnsupported);
  EXPECT_NE(s.status().message().find("newer"), std::string::npos);
}

TEST(SqliteStore, MetaValuesPersist) {
  TempDir dir;
  {
    auto s = open_sqlite_store(dir.file("m.db"));
    ASSERT_TRUE(s.ok());
    EXPECT_FALSE((*(*s)->get_meta("cursor")).has_value());
    ASSERT_TRUE((*s)->set_meta("cursor", "100").is_ok());
    ASSERT_TRUE((*s)->set_meta("cursor", "200").is_ok());
  }
  auto s = open_sqlite_store(dir.file("m.db"));
  EXPECT_EQ(**(*s)->get_meta("cursor"), "200");
}

TEST(SqliteStore, QueryOnlyRefusesWritesWithAnIoError) {
  TempDir dir;
  auto s = open_sqlite_store(dir.file("q.db"), SqliteOptions{.query_only = true});
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto r = (*s)->insert(sample_job("1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().kind(), ErrorKind::kIo);
}

}  // namespace
}  // namespace peakcast::serve
