// The SQLite store's reads and writes in the current schema: completions (scripts kept only when
// asked, lowered limits, times at the schema's edge, a requeued job's runs), meta values, a
// reader's refused writes, and the answers on record. Opening files of older schemas is in
// store_migration_test.cpp, durability in store_durability_test.cpp.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "peakcast/models/code/code_text.h"
#include "peakcast/serve/request.h"
#include "peakcast/serve/store.h"
#include "serve_test_util.h"
#include "store_test_util.h"

namespace peakcast::serve {
namespace {

using namespace store_testing;
using testing::TempDir;

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

}  // namespace
}  // namespace peakcast::serve
