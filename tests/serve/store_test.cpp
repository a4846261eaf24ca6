#include <sqlite3.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include "peakcast/core/log.h"
#include "peakcast/models/code/code_text.h"
#include "peakcast/serve/request.h"
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
  // Answers too, each counted as not kept.
  for (int i = 0; i < 3; ++i) EXPECT_EQ((*s)->record_answer({"u", "k", {}}).kind(), ErrorKind::kIo);
  EXPECT_EQ((*s)->health().answers_not_kept, 3u);
}

// The integer a one-row query gives, read on a connection of its own.
int query_int(const std::string& path, const char* sql) {
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
int user_version(const std::string& path) { return query_int(path, "PRAGMA user_version"); }

// The answers a store has on record, oldest first (an empty list, and a failed test, on error).
std::vector<AnswerRecord> answers_on_record(CompletionStore& s) {
  std::vector<AnswerRecord> out;
  const Status st = s.for_each_answer([&](AnswerRecord&& a) { out.push_back(std::move(a)); });
  EXPECT_TRUE(st.is_ok()) << st.message();
  return st.is_ok() ? out : std::vector<AnswerRecord>{};
}

// Runs `sql` on a connection of its own (an older schema made from a new file: SQLite >= 3.35
// drops a column). Fails the test where it does not run.
void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}


// A job the hook lowered keeps the limit it ran under beside its user's request.
TEST(SqliteStore, KeepsTheLimitALoweredJobRanUnder) {
  TempDir dir;
  Job j = sample_job("1");
  j.req_mem_bytes = 8ull << 30;
  j.ran_mem_bytes = 3ull << 30;
  j.peak_mem_bytes = 2ull << 30;
  compute_labels(j);
  {
    auto s = open_sqlite_store(dir.file("r.db"), SqliteOptions{.store_scripts = true});
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(*(*s)->insert(j));
    ASSERT_TRUE(*(*s)->insert(sample_job("2")));
  }
  auto s = open_sqlite_store(dir.file("r.db"));
  auto found = (*s)->find("1");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->req_mem_bytes, 8ull << 30);
  EXPECT_EQ((*found)->ran_mem_bytes, 3ull << 30);
  EXPECT_DOUBLE_EQ((*found)->util[0], 0.25);
  EXPECT_FALSE((**(*s)->find("2")).ran_mem_bytes.has_value());
  std::vector<Job> all;
  ASSERT_TRUE((*s)->for_each_with_scripts([&](Job&& x) { all.push_back(std::move(x)); }).is_ok());
  ASSERT_EQ(all.size(), 2u);
  for (const Job& x : all) {
    EXPECT_TRUE(x.script.has_value()) << x.job_id;  // kept where a scan asks for scripts
    EXPECT_EQ(x.ran_mem_bytes.has_value(), x.job_id == "1");
  }
}

// A time outside the schema's range is only in a file edited by hand or damaged: it reads at
// the range's edge (0 to 1e11 s). Converted as it was, a REAL of 1e300 or Inf (SQLite's 9e999)
// went out of int64's range, and 1e16 whole seconds overflowed int64 when made milliseconds.
TEST(SqliteStore, ATimeOutsideTheSchemasRangeReadsAtItsEdge) {
  TempDir dir;
  const std::string path = dir.file("r.db");
  {
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (const char* id : {"1", "2", "3"}) ASSERT_TRUE(*(*s)->insert(sample_job(id)));
  }
  exec_sql(path, "UPDATE completions SET submit_time = 1e300 WHERE job_id = '1'; "
                 "UPDATE completions SET end_time = 9e999, start_time = -2.5 WHERE job_id = '2'; "
                 "UPDATE completions SET submit_time = 10000000000000000, end_time = -7 WHERE job_id = '3';");
  auto s = open_sqlite_store(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  constexpr int64_t kEdgeMs = 100'000'000'000'000;  // 1e11 s
  EXPECT_EQ((**(*s)->find("1")).submit_ms, kEdgeMs);
  EXPECT_EQ((**(*s)->find("2")).end_ms, kEdgeMs);
  EXPECT_EQ((**(*s)->find("2")).start_ms, 0);
  EXPECT_EQ((**(*s)->find("3")).submit_ms, kEdgeMs);
  EXPECT_EQ((**(*s)->find("3")).end_ms, 0);
}

// A job Slurm requeued keeps its id and gets a new submit time once its first run has ended: the
// later run is stored as a run of its own (keyed by job id alone, it was "already stored"). The
// same run again, or reported with its submit time rounded otherwise (its span overlaps the
// stored one's), is the run already stored.
TEST(SqliteStore, ARequeuedJobsLaterRunIsARunOfItsOwn) {
  TempDir dir;
  auto s = open_sqlite_store(dir.file("r.db"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  Job first = sample_job("7");
  first.submit_ms = 100'000;
  first.end_ms = 200'000;
  ASSERT_TRUE(*(*s)->insert(first));
  Job second = first;
  second.submit_ms = 200'000;  // requeued as the first run ended (the same second)
  second.end_ms = 300'000;
  EXPECT_TRUE(*(*s)->contains_run(first));
  EXPECT_FALSE(*(*s)->contains_run(second));
  ASSERT_TRUE(*(*s)->insert(second));
  EXPECT_FALSE(*(*s)->insert(second));
  Job rounded = first;
  rounded.submit_ms = 100'400;  // a client's fraction of a second
  EXPECT_FALSE(*(*s)->insert(rounded));
  EXPECT_EQ((**(*s)->find_run(rounded)).submit_ms, 100'000);
  EXPECT_EQ((**(*s)->find("7")).submit_ms, 200'000);  // the last run
  Job instant = sample_job("8");  // submitted and ended in the same millisecond
  instant.submit_ms = instant.end_ms = 500'000;
  ASSERT_TRUE(*(*s)->insert(instant));
  EXPECT_FALSE(*(*s)->insert(instant));
  EXPECT_EQ(*(*s)->count(), 3u);
}

// Slurm's times are whole seconds and a client's may carry milliseconds: runs are told apart at
// whole seconds. Compared as they were stored, a job that ran within one second, posted with
// milliseconds and polled from sacct, was two runs; and a requeued run submitted in the second
// the first run ended (kept with milliseconds) was taken for the first one.
TEST(SqliteStore, RunsAreToldApartAtWholeSeconds) {
  TempDir dir;
  auto s = open_sqlite_store(dir.file("w.db"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  Job posted = sample_job("9");
  posted.submit_ms = 1'000'400;
  posted.end_ms = 1'000'900;
  ASSERT_TRUE(*(*s)->insert(posted));
  Job polled = posted;  // the same run as sacct prints it
  polled.submit_ms = polled.end_ms = 1'000'000;
  EXPECT_TRUE(*(*s)->contains_run(polled));
  EXPECT_FALSE(*(*s)->insert(polled));

  Job first = sample_job("10");
  first.submit_ms = 1'500'000;
  first.end_ms = 2'000'700;
  ASSERT_TRUE(*(*s)->insert(first));
  Job requeued = first;  // submitted again in the second the first run ended
  requeued.submit_ms = 2'000'000;
  requeued.end_ms = 2'100'000;
  EXPECT_FALSE(*(*s)->contains_run(requeued));
  EXPECT_TRUE(*(*s)->insert(requeued));
  EXPECT_EQ(*(*s)->count(), 3u);
}

// A database as schema version 5 wrote it (completions keyed by job_id), with one completion.
constexpr const char* kVersion5File =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE completions (job_id TEXT PRIMARY KEY NOT NULL, user TEXT NOT NULL, script_key TEXT NOT "
    "NULL, submit_time INTEGER NOT NULL, start_time INTEGER, end_time INTEGER NOT NULL, state TEXT NOT NULL, "
    "req_cpus REAL, req_mem_bytes INTEGER, req_gpus INTEGER, req_time_s INTEGER, gpu_mem_bytes INTEGER, "
    "peak_mem_bytes INTEGER, peak_vram_bytes INTEGER, mem_util REAL NOT NULL, vram_util REAL NOT NULL, "
    "valid_mask INTEGER NOT NULL, clipped_mask INTEGER NOT NULL, censored INTEGER NOT NULL, job_name TEXT "
    "NOT NULL, partition TEXT NOT NULL, account TEXT NOT NULL, workload TEXT, script TEXT, stored_at "
    "INTEGER NOT NULL DEFAULT (strftime('%s','now')), ran_mem_bytes INTEGER, answer_id TEXT);"
    "CREATE INDEX completions_user ON completions(user, end_time);"
    "CREATE INDEX completions_script ON completions(script_key, end_time);"
    "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);"
    "CREATE TABLE answers (seq INTEGER PRIMARY KEY, user TEXT NOT NULL, script_key TEXT NOT NULL, "
    "submit_time INTEGER NOT NULL, req_mem_bytes INTEGER, recommended_mem_bytes INTEGER, mem_util REAL, "
    "mem_upper REAL, vram_util REAL, vram_upper REAL, answered_at INTEGER NOT NULL DEFAULT "
    "(strftime('%s','now')), job_name TEXT, answer_id TEXT);"
    "INSERT INTO completions (job_id, user, script_key, submit_time, start_time, end_time, state, "
    "req_mem_bytes, peak_mem_bytes, mem_util, vram_util, valid_mask, clipped_mask, censored, job_name, "
    "partition, account, script, stored_at, ran_mem_bytes, answer_id) VALUES ('7', 'u', 'k', 100, 110, "
    "200, 'COMPLETED', 1024, 512, 0.5, 0, 1, 0, 0, 'n', 'p', 'a', 'echo', 1234, 2048, 'a1');"
    "INSERT INTO meta VALUES ('slurm_sync.cursor', '150');"
    "PRAGMA user_version=5;";

// Collects the log's info lines while it lives (the library logs through a sink the caller owns).
class InfoLines {
 public:
  InfoLines() {
    set_log_sink([this](LogLevel level, std::string_view m) {
      if (level != LogLevel::kInfo) return;
      std::lock_guard lock(mu_);
      lines_.emplace_back(m);
    });
  }
  ~InfoLines() { set_log_sink({}); }
  InfoLines(const InfoLines&) = delete;
  InfoLines& operator=(const InfoLines&) = delete;
  // The lines that contain `text`.
  std::vector<std::string> with(const std::string& text) {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const std::string& l : lines_) {
      if (l.find(text) != std::string::npos) out.push_back(l);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// A database written by schema version 5 (completions keyed by job_id): a reader reads it as it
// is; the daemon migrates it to runs keyed by (job_id, submit_time), keeping every row and
// column, saying so first (the table is copied), and then stores a requeued job's later run.
TEST(SqliteStore, MigratesAVersionFiveDatabaseToRuns) {
  TempDir dir;
  const std::string path = dir.file("v5.db");
  exec_sql(path, kVersion5File);
  ASSERT_FALSE(HasFailure());
  InfoLines info;
  {
    auto r = open_sqlite_store(path, SqliteOptions{.query_only = true});
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto found = (*r)->find("7");
    ASSERT_TRUE(found.ok() && found->has_value()) << found.status().message();
    EXPECT_EQ((*found)->answer_id, "a1");  // version 5 has it
  }
  EXPECT_EQ(user_version(path), 5);
  EXPECT_TRUE(info.with("migrating").empty());  // a reader does not migrate
  {
    auto s = open_sqlite_store(path, SqliteOptions{.store_scripts = true});
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(user_version(path), kSchemaVersion);
    const std::vector<std::string> said = info.with("migrating");
    ASSERT_EQ(said.size(), 1u);
    EXPECT_NE(said[0].find("migrating 1 completions from schema 5 to 6"), std::string::npos) << said[0];
    std::vector<Job> all;
    ASSERT_TRUE((*s)->for_each_with_scripts([&](Job&& x) { all.push_back(std::move(x)); }).is_ok());
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].job_id, "7");
    EXPECT_EQ(all[0].submit_ms, 100'000);
    EXPECT_EQ(all[0].start_ms, std::optional<int64_t>(110'000));
    EXPECT_EQ(all[0].peak_mem_bytes, std::optional<uint64_t>(512));
    EXPECT_EQ(all[0].ran_mem_bytes, std::optional<uint64_t>(2048));
    EXPECT_EQ(all[0].answer_id, "a1");
    EXPECT_EQ(all[0].script, std::optional<std::string>("echo"));
    EXPECT_EQ(**(*s)->get_meta("slurm_sync.cursor"), "150");
    Job later = all[0];
    later.submit_ms = 300'000;
    later.start_ms = 310'000;
    later.end_ms = 400'000;
    EXPECT_FALSE(*(*s)->insert(all[0]));
    EXPECT_TRUE(*(*s)->insert(later));
    EXPECT_EQ(*(*s)->count(), 2u);
  }
  EXPECT_EQ(query_int(path, "SELECT stored_at FROM completions WHERE submit_time = 100"), 1234);
  EXPECT_EQ(query_int(path, "SELECT count(*) FROM sqlite_master WHERE name IN ('completions_user', "
                            "'completions_script')"),
            2);
}

// A database of schema version 1 (before ran_mem_bytes): the daemon migrates it and keeps its
// completions; a reader (query_only, `peakcast report --db` while the daemon runs) reads it as
// it is and changes nothing.
TEST(SqliteStore, MigratesAVersionOneDatabaseAndAReaderLeavesItAsItIs) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  {
    auto s = open_sqlite_store(path, SqliteOptions{.store_scripts = true});
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(*(*s)->insert(sample_job("old")));
  }
  // Back to version 1's table
  exec_sql(path, "ALTER TABLE completions DROP COLUMN answer_id; "
                 "ALTER TABLE completions DROP COLUMN ran_mem_bytes; PRAGMA user_version=1");
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(user_version(path), 1);
  {
    auto r = open_sqlite_store(path, SqliteOptions{.query_only = true});
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<Job> all;
    ASSERT_TRUE((*r)->for_each_with_scripts([&](Job&& x) { all.push_back(std::move(x)); }).is_ok());
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].job_id, "old");
    EXPECT_FALSE(all[0].ran_mem_bytes.has_value());
    EXPECT_TRUE(all[0].script.has_value());
    EXPECT_TRUE((**(*r)->find("old")).req_mem_bytes.has_value());
    auto w = (*r)->insert(sample_job("new"));
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().kind(), ErrorKind::kIo);
    size_t answers = 0;  // no answers table before version 3: none, and none kept
    ASSERT_TRUE((*r)->for_each_answer([&](AnswerRecord&&) { ++answers; }).is_ok());
    EXPECT_EQ(answers, 0u);
    EXPECT_EQ((*r)->record_answer({"u", "k", {}}).kind(), ErrorKind::kIo);
  }
  EXPECT_EQ(user_version(path), 1);
  auto s = open_sqlite_store(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(user_version(path), kSchemaVersion);
  Job lowered = sample_job("new");
  lowered.ran_mem_bytes = 5;
  ASSERT_TRUE(*(*s)->insert(lowered));
  EXPECT_EQ((**(*s)->find("new")).ran_mem_bytes, std::optional<uint64_t>(5));
  EXPECT_EQ(*(*s)->count(), 2u);
  AnswerRecord a{"u", "k", {}};
  a.answer.submit_ms = 10;
  ASSERT_TRUE((*s)->record_answer(a).is_ok());  // the answers table too
}

// The answers on record come back, oldest first, with every field; only the newest max_answers
// are read, and the table stays bounded. Keeping one leaves completions' commits synchronous.
TEST(SqliteStore, KeepsTheNewestAnswersOnRecord) {
  TempDir dir;
  const std::string path = dir.file("a.db");
  const auto answer = [](int i) {
    AnswerRecord a{"u" + std::to_string(i % 3), "k" + std::to_string(i), {}};
    a.answer.submit_ms = 1'700'000'000'000 + i * 1500;  // milliseconds kept
    a.answer.point_bound[0] = std::make_pair(0.25 + i * 0.01, 0.5 + i * 0.01);
    if (i % 2 == 0) a.answer.point_bound[1] = std::make_pair(0.125, 0.75);
    a.answer.request_bytes = uint64_t{8} << 30;
    if (i % 5 != 0) a.answer.recommended_bytes = (uint64_t{3} << 30) + static_cast<uint64_t>(i);
    if (i % 2 == 1) a.answer.job_name = "sweep_" + std::to_string(i);
    if (i % 3 != 0) a.answer.answer_id = "a" + std::to_string(1000 + i);
    return a;
  };
  const auto rows = [&] { return query_int(path, "SELECT count(*) FROM answers"); };
  {
    auto s = open_sqlite_store(path, SqliteOptions{.max_answers = 4});
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (int i = 1; i <= 30; ++i) {
      ASSERT_TRUE((*s)->record_answer(answer(i)).is_ok());
      EXPECT_LE(rows(), 8) << "after answer " << i;
    }
    EXPECT_EQ((*s)->health().synchronous, "full");
  }
  auto s = open_sqlite_store(path, SqliteOptions{.max_answers = 4});
  ASSERT_TRUE(s.ok());
  const std::vector<AnswerRecord> back = answers_on_record(**s);
  ASSERT_EQ(back.size(), 4u);
  for (size_t n = 0; n < back.size(); ++n) {
    const AnswerRecord want = answer(27 + static_cast<int>(n));
    const AnswerRecord& got = back[n];
    EXPECT_EQ(got.user, want.user);
    EXPECT_EQ(got.script_key, want.script_key);
    EXPECT_EQ(got.answer.submit_ms, want.answer.submit_ms);
    EXPECT_EQ(got.answer.point_bound, want.answer.point_bound);
    EXPECT_EQ(got.answer.request_bytes, want.answer.request_bytes);
    EXPECT_EQ(got.answer.recommended_bytes, want.answer.recommended_bytes);
    EXPECT_EQ(got.answer.job_name, want.answer.job_name);
    EXPECT_EQ(got.answer.answer_id, want.answer.answer_id);
  }
}

// Version 4 had no answer ids (answers or completions): a reader reads its completions as they
// are; the daemon migrates it, its old rows read back with no id, and new ones keep theirs.
TEST(SqliteStore, MigratesVersion4AndKeepsAnswerIds) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  {
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(*(*s)->insert(sample_job("old")));
    AnswerRecord a{"u", "k", {}};
    a.answer.submit_ms = 1'700'000'000'000;
    ASSERT_TRUE((*s)->record_answer(a).is_ok());
  }
  // Back to version 4's tables
  exec_sql(path, "ALTER TABLE completions DROP COLUMN answer_id; "
                 "ALTER TABLE answers DROP COLUMN answer_id; PRAGMA user_version=4");
  ASSERT_FALSE(HasFailure());
  {
    auto r = open_sqlite_store(path, SqliteOptions{.query_only = true});
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::vector<Job> all;
    ASSERT_TRUE((*r)->for_each([&](Job&& x) { all.push_back(std::move(x)); }).is_ok());
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].answer_id, "");
    EXPECT_EQ((*r)->insert(sample_job("new")).status().kind(), ErrorKind::kIo);  // it does not migrate
  }
  EXPECT_EQ(user_version(path), 4);
  {
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(user_version(path), kSchemaVersion);
    Job j = sample_job("new");
    j.answer_id = "0123456789abcdef";
    ASSERT_TRUE(*(*s)->insert(j));
    AnswerRecord a{"u", "k", {}};
    a.answer.submit_ms = 1'700'000'000'500;
    a.answer.answer_id = "0123456789abcdef";
    ASSERT_TRUE((*s)->record_answer(a).is_ok());
  }
  auto s = open_sqlite_store(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((**(*s)->find("old")).answer_id, "");
  EXPECT_EQ((**(*s)->find("new")).answer_id, "0123456789abcdef");
  const std::vector<AnswerRecord> back = answers_on_record(**s);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].answer.answer_id, "");
  EXPECT_EQ(back[1].answer.answer_id, "0123456789abcdef");
}

// Version 3 kept answers without the job's name: opened by the daemon it migrates to version 4,
// its answers read back with no name, and new ones keep theirs, redacted as a completion's is.
TEST(SqliteStore, MigratesVersion3AnswersAndKeepsTheirNamesRedacted) {
  TempDir dir;
  const std::string path = dir.file("v3.db");
  {
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok());
    AnswerRecord a{"u", "k", {}};
    a.answer.submit_ms = 1'700'000'000'000;
    a.answer.job_name = "kept before";
    ASSERT_TRUE((*s)->record_answer(a).is_ok());
  }
  // Back to version 3's table
  exec_sql(path, "ALTER TABLE completions DROP COLUMN answer_id; "
                 "ALTER TABLE answers DROP COLUMN answer_id; ALTER TABLE answers DROP COLUMN job_name; "
                 "PRAGMA user_version=3");
  ASSERT_FALSE(HasFailure());
  {  // a reader does not migrate: no answers from it
    auto r = open_sqlite_store(path, SqliteOptions{.query_only = true});
    ASSERT_TRUE(r.ok()) << r.status().message();
    size_t answers = 0;
    ASSERT_TRUE((*r)->for_each_answer([&](AnswerRecord&&) { ++answers; }).is_ok());
    EXPECT_EQ(answers, 0u);
  }
  EXPECT_EQ(user_version(path), 3);
  {
    auto s = open_sqlite_store(path);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(user_version(path), kSchemaVersion);
    AnswerRecord a{"u", "k", {}};
    a.answer.submit_ms = 1'700'000'000'500;
    a.answer.job_name = "deploy DB_PASSWORD=NameSecret77";
    ASSERT_TRUE((*s)->record_answer(a).is_ok());
  }
  auto s = open_sqlite_store(path);
  ASSERT_TRUE(s.ok());
  const std::vector<AnswerRecord> back = answers_on_record(**s);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].answer.submit_ms, 1'700'000'000'000);
  EXPECT_EQ(back[0].answer.job_name, "");
  EXPECT_EQ(back[1].answer.job_name, "deploy DB_PASSWORD=<SECRET>");
  EXPECT_EQ(query_int(path, "SELECT count(*) FROM answers WHERE job_name LIKE '%NameSecret77%'"), 0);
}

// Answers come from concurrent predictions; one caller writes the queued ones in batches while
// the others return at once. Every answer is on record once the calls have returned.
TEST(SqliteStore, AnswersRecordedConcurrentlyAreAllKept) {
  TempDir dir;
  auto s = open_sqlite_store(dir.file("c.db"));
  ASSERT_TRUE(s.ok());
  constexpr int kThreads = 8, kEach = 400;
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        AnswerRecord a{"u" + std::to_string(t), "k" + std::to_string(i), {}};
        a.answer.submit_ms = i;
        if (!(*s)->record_answer(a).is_ok()) ++failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  std::set<std::pair<std::string, std::string>> kept;
  ASSERT_TRUE((*s)->for_each_answer([&](AnswerRecord&& a) { kept.emplace(a.user, a.script_key); }).is_ok());
  EXPECT_EQ(kept.size(), static_cast<size_t>(kThreads * kEach));
}

// A job sent to /v1/predict and the same job stored at /v1/complete and read back (what `peakcast
// train --db` trains on) give the code model the same tokens: the request parser redacts the
// text as the store does. Before, the request kept the raw text and 21 of 22 token positions of
// a Slurm header with a user's paths and address differed from the stored ones.
TEST(SqliteStore, ARequestsTextIsTheTextTheStoreKeeps) {
  const std::string script =
      "#!/bin/bash\\n#SBATCH --mail-user=alice@uni.example.edu\\n#SBATCH -o /home/alice/logs/%j.out\\n"
      "export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567\\ncd /scratch/alice/run && ./train\\n";
  const std::string fields = R"("job_id": "7", "user": "alice", "submit_time": 100, "req_mem_bytes": 1000000,
      "job_name": "train-alice@uni.example.edu", "script": ")" + script + "\"";
  RequestLimits limits;
  ParsedJob asked = parse_job_body("{" + fields + "}", BodyKind::kPredict, limits);
  ParsedJob done = parse_job_body("{" + fields + R"(, "end_time": 200, "state": "COMPLETED", "peak_mem_bytes": 500000})",
                                  BodyKind::kComplete, limits);
  ASSERT_TRUE(std::holds_alternative<Job>(asked)) << std::get<ApiError>(asked).message;
  ASSERT_TRUE(std::holds_alternative<Job>(done)) << std::get<ApiError>(done).message;
  TempDir dir;
  auto s = open_sqlite_store(dir.file("t.db"), SqliteOptions{.store_scripts = true});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE(*(*s)->insert(std::get<Job>(done)));
  std::vector<Job> stored;
  ASSERT_TRUE((*s)->for_each_with_scripts([&](Job&& j) { stored.push_back(std::move(j)); }).is_ok());
  ASSERT_EQ(stored.size(), 1u);
  const Job& a = std::get<Job>(asked);
  const Job& b = stored[0];
  ASSERT_TRUE(a.script && b.script);
  EXPECT_EQ(*a.script, *b.script);
  EXPECT_EQ(a.job_name, b.job_name);
  EXPECT_EQ(a.script_key, b.script_key);
  EXPECT_EQ(a.script->find("alice"), std::string::npos) << *a.script;
  EXPECT_EQ(a.script->find("0123456789abcdef"), std::string::npos) << *a.script;
  const auto tokens = [](const Job& j) { return models::code::code_tokens(models::code::code_text(j), 4096); };
  EXPECT_EQ(tokens(a), tokens(b));
}

// ---- Two processes opening one file at once (peakcastd starting while cron's `peakcast
// slurm-sync` opens it): the one that waited for the write lock finds the file migrated.

// The default VFS, except that it counts the waits for a lock: SQLite's busy handler sleeps
// through xSleep between its tries.
std::atomic<int> g_lock_waits{0};
const char* register_lock_wait_counting_vfs() {
  static sqlite3_vfs vfs = [] {
    sqlite3_vfs v = *sqlite3_vfs_find(nullptr);
    v.zName = "peakcast-lock-waits";
    v.pNext = nullptr;
    v.xSleep = [](sqlite3_vfs*, int us) {
      ++g_lock_waits;
      sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
      return real->xSleep(real, us);
    };
    return v;
  }();
  static const int registered = sqlite3_vfs_register(&vfs, 0);
  (void)registered;
  return vfs.zName;
}

// A connection of its own, kept open: the other process.
class OtherProcess {
 public:
  explicit OtherProcess(const std::string& path) { EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK); }
  ~OtherProcess() { sqlite3_close(db_); }
  OtherProcess(const OtherProcess&) = delete;
  OtherProcess& operator=(const OtherProcess&) = delete;
  bool exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
    sqlite3_free(err);
    return rc == SQLITE_OK;
  }
  // The text a one-row query gives, inside this connection's transaction.
  std::string text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr);
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    std::string out = p ? p : "";
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// The text a one-row query gives ("" for NULL), read on a connection of its own.
std::string query_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  std::string out = p ? p : "";
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// Every table's and index's name, and every column's name, type and place in the primary key.
std::string schema_of(const std::string& path) {
  return query_text(path,
                    "SELECT group_concat(entry, ' | ') FROM (SELECT m.type || ' ' || m.name || coalesce(' ' || "
                    "(SELECT group_concat(c.name || ' ' || c.type || ' ' || c.pk, ', ') FROM pragma_table_info(m.name) c), "
                    "'') AS entry FROM sqlite_master m ORDER BY m.name)");
}

// A store's open reads the file's schema version, then waits for the write lock to migrate it;
// meanwhile another process (holding the lock) migrates the file to the next version, or to the
// current one, and commits. The open then takes only the steps still needed: before, it took
// them all again from the version it had read ("duplicate column name", "table completions
// already exists" on a file another process had just created) or copied the completions table a
// second time. Every row is kept once, the schema is the current one, and the copy is announced
// only where this open makes it.
TEST(SqliteStore, AFileAnotherProcessMigratedWhileTheOpenWaitedIsMigratedOnce) {
  TempDir dir;
  const std::string reference = dir.file("reference.db");
  { ASSERT_TRUE(open_sqlite_store(reference).ok()); }
  // The current schema's statements, as a new file has them (tables before their indexes).
  std::vector<std::string> current;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(reference.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid", -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW) current.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  ASSERT_GE(current.size(), 4u);
  std::string create_all, completions_v6, completions_indexes;
  for (const std::string& sql : current) {
    create_all += sql + ";";
    if (sql.starts_with("CREATE TABLE completions ")) {
      completions_v6 = "CREATE TABLE completions_v6 " + sql.substr(sql.find('(')) + ";";
    }
    if (sql.starts_with("CREATE INDEX completions_")) completions_indexes += sql + ";";
  }
  ASSERT_FALSE(completions_v6.empty());
  const std::string v = std::to_string(kSchemaVersion);
  struct Case {
    int from, to;
    std::string downgrade;  // from a current file with two completions and an answer
    std::string migrate;    // what the other process does
  };
  const std::vector<Case> cases = {
      {0, kSchemaVersion, "", create_all + "PRAGMA user_version=" + v},
      {1, 2,
       "ALTER TABLE completions DROP COLUMN answer_id; ALTER TABLE completions DROP COLUMN ran_mem_bytes; "
       "DROP TABLE answers; PRAGMA user_version=1",
       "ALTER TABLE completions ADD COLUMN ran_mem_bytes INTEGER; PRAGMA user_version=2"},
      {3, 4,
       "ALTER TABLE completions DROP COLUMN answer_id; ALTER TABLE answers DROP COLUMN answer_id; "
       "ALTER TABLE answers DROP COLUMN job_name; PRAGMA user_version=3",
       "ALTER TABLE answers ADD COLUMN job_name TEXT; PRAGMA user_version=4"},
      {4, 5,
       "ALTER TABLE completions DROP COLUMN answer_id; ALTER TABLE answers DROP COLUMN answer_id; "
       "PRAGMA user_version=4",
       "ALTER TABLE completions ADD COLUMN answer_id TEXT; ALTER TABLE answers ADD COLUMN answer_id TEXT; "
       "PRAGMA user_version=5"},
      {5, kSchemaVersion, "",
       completions_v6 + "INSERT INTO completions_v6 SELECT * FROM completions; DROP TABLE completions; "
                        "ALTER TABLE completions_v6 RENAME TO completions;" + completions_indexes +
           "PRAGMA user_version=" + v},
  };
  const char* vfs = register_lock_wait_counting_vfs();
  for (const Case& c : cases) {
    SCOPED_TRACE("schema version " + std::to_string(c.from) + ", migrated to " + std::to_string(c.to) +
                 " by the other process");
    const std::string path = dir.file("v" + std::to_string(c.from) + ".db");
    if (c.from == 0) {
      exec_sql(path, "PRAGMA journal_mode=WAL");  // a new file, as the other process's open left it
    } else if (c.from == 5) {
      exec_sql(path, kVersion5File);
    } else {
      {
        auto s = open_sqlite_store(path);
        ASSERT_TRUE(s.ok()) << s.status().message();
        ASSERT_TRUE(*(*s)->insert(sample_job("a")));
        ASSERT_TRUE(*(*s)->insert(sample_job("b")));
        ASSERT_TRUE((*s)->record_answer({"u", "k", {}}).is_ok());
      }
      exec_sql(path, c.downgrade);
    }
    ASSERT_EQ(user_version(path), c.from);
    const int completions = c.from == 0 ? 0 : query_int(path, "SELECT count(*) FROM completions");
    const int answers = c.from < 3 ? 0 : query_int(path, "SELECT count(*) FROM answers");

    InfoLines info;
    OtherProcess other(path);
    ASSERT_TRUE(other.exec("BEGIN IMMEDIATE"));
    const int waits = g_lock_waits.load();
    std::atomic<bool> opened{false};
    std::optional<Result<std::unique_ptr<CompletionStore>>> store;
    std::thread daemon([&] {
      store.emplace(open_sqlite_store(path, SqliteOptions{.busy_timeout_ms = 600'000, .vfs = vfs}));
      opened = true;
    });
    while (!opened && g_lock_waits.load() == waits) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool waited = !opened;
    other.exec(c.migrate);
    const std::string root = other.text("SELECT rootpage FROM sqlite_master WHERE name = 'completions'");
    other.exec("COMMIT");
    daemon.join();
    ASSERT_TRUE(waited) << "the open did not wait for the other process's lock";
    ASSERT_TRUE(store.has_value());
    if (!store->ok()) {
      ADD_FAILURE() << store->status().message();
      continue;
    }
    store->value().reset();
    EXPECT_EQ(user_version(path), kSchemaVersion);
    EXPECT_EQ(schema_of(path), schema_of(reference));
    EXPECT_EQ(query_int(path, "SELECT count(*) FROM completions"), completions);
    EXPECT_EQ(query_int(path, "SELECT count(DISTINCT job_id) FROM completions"), completions);
    EXPECT_EQ(query_int(path, "SELECT count(*) FROM answers"), answers);
    const std::vector<std::string> said = info.with("migrating");
    if (c.to == kSchemaVersion) {
      // Nothing left to do: the other process's table is the one kept, not copied again.
      EXPECT_EQ(query_text(path, "SELECT rootpage FROM sqlite_master WHERE name = 'completions'"), root);
      EXPECT_TRUE(said.empty()) << said[0];
    } else {
      ASSERT_EQ(said.size(), 1u);
      EXPECT_NE(said[0].find("migrating " + std::to_string(completions) + " completions from schema " +
                             std::to_string(c.to) + " to " + v),
                std::string::npos)
          << said[0];
    }
  }
}

}  // namespace
}  // namespace peakcast::serve
