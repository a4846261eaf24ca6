// `peakcast train --db FILE` and `peakcast report --db FILE` on a real daemon database (written
// through the daemon's own SQLite store), with and without --store-scripts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "peakcast/ingest/reader.h"
#include "peakcast/serve/store.h"
#include "report_test_util.h"

namespace {

namespace fs = std::filesystem;
using report_test::run;
using report_test::slurp;

const std::string& kPeakcast = peakcast::test_support::kPeakcastBinary;
const std::string kSmallModel =
    " --threads 1 --code-option token_dim=8 --code-option hash_buckets=4096 --code-option "
    "user_dim=8 --code-option fused_dim=32 --code-option max_epochs=2";

class TrainDb : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kPeakcast)) GTEST_SKIP() << kPeakcast << " not built";
    dir_ = fs::temp_directory_path() / ("peakcast_train_db_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    const std::string trace = (dir_ / "trace.jsonl").string();
    ASSERT_EQ(run(kPeakcast + " synth --jobs 900 --seed 4 --users 8 --days 15 -o " + trace).exit_code, 0);
    auto t = peakcast::ingest::read_trace(trace);
    ASSERT_TRUE(t.ok()) << t.status().message();
    jobs_ = std::move(t->jobs);
    ASSERT_TRUE(std::any_of(jobs_.begin(), jobs_.end(), [](const peakcast::Job& j) { return j.script.has_value(); }));
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // A daemon database holding every job of the trace; with `lowered`, the first completed jobs
  // that used under half their request, and the first killed for memory, ran at half their
  // request (as peakcastd stores a job the hook lowered: Job::ran_mem_bytes).
  std::string make_db(bool store_scripts, int lowered = 0) {
    const std::string db = (dir_ / (store_scripts ? "with.db" : "without.db")).string();
    peakcast::serve::SqliteOptions o;
    o.store_scripts = store_scripts;
    auto store = peakcast::serve::open_sqlite_store(db, o);
    EXPECT_TRUE(store.ok()) << store.status().message();
    if (!store) return db;
    int completed = 0, killed = 0;
    for (peakcast::Job j : jobs_) {
      if (j.req_mem_bytes && j.censored && killed < 1 && lowered > 0) {
        j.ran_mem_bytes = *j.req_mem_bytes / 2;
        ++killed;
      } else if (j.req_mem_bytes && j.peak_mem_bytes && !j.censored && *j.peak_mem_bytes < *j.req_mem_bytes / 2 &&
                 completed < lowered) {
        j.ran_mem_bytes = *j.req_mem_bytes / 2;
        ++completed;
      }
      peakcast::compute_labels(j);
      auto ins = (*store)->insert(j);
      EXPECT_TRUE(ins.ok() && *ins) << j.job_id;
    }
    return db;
  }
  fs::path dir_;
  std::vector<peakcast::Job> jobs_;
};

TEST_F(TrainDb, TrainsFromStoredScripts) {
  const std::string db = make_db(true);
  const std::string model = (dir_ / "model").string();
  const auto r = run(kPeakcast + " train --db " + db + " -o " + model + kSmallModel);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string n = std::to_string(jobs_.size());
  EXPECT_NE(r.out.find(db + ": " + n + " completions, " + n + " with their script"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("identity text"), std::string::npos) << r.out;
  const auto manifest = nlohmann::json::parse(slurp(fs::path(model) / "manifest.json"), nullptr, false);
  ASSERT_FALSE(manifest.is_discarded());
  EXPECT_NE(manifest.dump().find(db), std::string::npos) << "the manifest names what it was trained on";
  // The model predicts: the daemon's own history as --history.
  EXPECT_EQ(run(kPeakcast + " predict --model " + model + " " + (dir_ / "trace.jsonl").string() + " --json").exit_code, 0);
}

TEST_F(TrainDb, WithoutStoredScriptsTheCodeModelReadsIdentityText) {
  const std::string db = make_db(false);
  const std::string model = (dir_ / "model").string();
  const auto r = run(kPeakcast + " train --db " + db + " -o " + model + kSmallModel);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0 with their script"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("identity text"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(fs::path(model) / "manifest.json"));
  // 900 jobs leave the policy to fewer than 100 validation jobs: the warning names the check for
  // a database (evaluate reads no --db), and that command runs.
  const std::string check = "peakcast report --db " + db + " --methods hier_last1,cascade -o report.html";
  EXPECT_NE(r.out.find("warning: mem's policy was chosen on "), std::string::npos) << r.out;
  ASSERT_NE(r.out.find("`" + check + "`"), std::string::npos) << r.out;
  const std::string page = (dir_ / "report.html").string();
  const auto c = run(kPeakcast + " report --db " + db + " --methods hier_last1,cascade -o " + page +
                     " --bootstrap 20 --latency-jobs 10" + kSmallModel);
  EXPECT_EQ(c.exit_code, 0) << c.out;
}

TEST_F(TrainDb, ReportFromTheDatabase) {
  const std::string db = make_db(false, 3);
  const std::string page = (dir_ / "db.html").string();
  const auto r = run(kPeakcast + " report --db " + db + " -o " + page +
                     " --methods hier_last1,history_policy --bootstrap 20 --latency-jobs 10" + kSmallModel);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string html = slurp(page);
  for (const char* id : {"plot-accuracy-mem", "plot-methods", "plot-coverage", "plot-usage-user"}) {
    EXPECT_NE(html.find(id), std::string::npos) << id;
  }
  EXPECT_NE(html.find("peakcastd database"), std::string::npos);
  const std::string note = "4 of the " + std::to_string(jobs_.size()) +
                           " stored completions ran at a memory limit below their user";  // ' is escaped
  EXPECT_NE(html.find(note), std::string::npos) << note;
  EXPECT_NE(html.find("1 of them killed for memory there"), std::string::npos);
}

// The database holds each completion's labels clipped at the daemon's util_cap; `train --db
// --util-cap C` recorded C as the model's cap but trained on those labels as stored, so a model
// meant to learn utilizations up to C never saw one above the daemon's cap, while `predict
// --history` then fed its experts labels clipped at C. The labels are recomputed at C from
// what the store keeps (peaks, requests, state, the limit the job ran under).
TEST_F(TrainDb, UtilCapAppliesToTheStoredLabels) {
  for (peakcast::Job& j : jobs_) {  // every completed job used 1.5x its request
    if (j.state == "COMPLETED" && j.req_mem_bytes && j.peak_mem_bytes) j.peak_mem_bytes = *j.req_mem_bytes / 2 * 3;
  }
  const std::string db = make_db(true);  // stored at the daemon's cap 1.0: those labels are 1.0
  const std::string model = (dir_ / "model").string();
  const auto r = run(kPeakcast + " train --db " + db + " -o " + model + " --util-cap 2" + kSmallModel);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("fallback mem 1.500"), std::string::npos) << "the median label at cap 2: " << r.out;
  const auto manifest = nlohmann::json::parse(slurp(fs::path(model) / "manifest.json"), nullptr, false);
  ASSERT_FALSE(manifest.is_discarded());
  EXPECT_EQ(manifest.value("util_cap", 0.0), 2.0);
}

// `report --db --util-cap C` evaluated and plotted the labels as the daemon stored them, clipped
// at its own cap, while the page said C: with the daemon at 1.0 and C = 2 a job that used 1.5x
// its request showed as 1.0. The report's jobs are relabelled at C like `train --db`'s.
TEST_F(TrainDb, ReportAppliesTheUtilCapToTheStoredLabels) {
  for (peakcast::Job& j : jobs_) {  // every completed job used 1.5x its request
    if (j.state == "COMPLETED" && j.req_mem_bytes && j.peak_mem_bytes) j.peak_mem_bytes = *j.req_mem_bytes / 2 * 3;
  }
  const std::string db = make_db(false);  // stored at the daemon's cap 1.0: those labels are 1.0
  const std::string page = (dir_ / "db.html").string();
  const auto r = run(kPeakcast + " report --db " + db + " -o " + page + " --util-cap 2" +
                     " --methods hier_last1 --bootstrap 20 --latency-jobs 10" + kSmallModel);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string html = slurp(page);
  EXPECT_NE(html.find("\"actual\":1.5"), std::string::npos) << "a job's actual utilization at cap 2";
}

TEST(TrainDbCli, InputErrors) {
  if (!fs::exists(kPeakcast)) GTEST_SKIP() << kPeakcast << " not built";
  const std::string missing = (fs::temp_directory_path() / "peakcast_no_such.db").string();
  const auto r = run(kPeakcast + " train --db " + missing + " -o /tmp/peakcast_never_model");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("no such database"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(missing)) << "a missing database is not created";
  EXPECT_EQ(run(kPeakcast + " train some.jsonl --db " + missing + " -o /tmp/x").exit_code, 2);
  EXPECT_EQ(run(kPeakcast + " train -o /tmp/x").exit_code, 2);
}

}  // namespace
