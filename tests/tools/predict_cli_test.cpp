// `peakcast predict`'s errors: a request line or a model file that cannot be read is named, with
// why. Skipped when the binary was not built.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/command.h"

namespace {

namespace fs = std::filesystem;

using peakcast::test_support::CmdResult;
using peakcast::test_support::run_peakcast;
const std::string& kBinary = peakcast::test_support::kPeakcastBinary;


class PredictCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built (cmake --build ... --target peakcast)";
    dir_ = peakcast::test_support::fresh_test_dir("predict_cli");
    jobs_ = (dir_ / "jobs.jsonl").string();
    std::ofstream(jobs_) << R"({"job_id":"j1","user":"u","submit_time":3000,"req_mem_bytes":1000000000})" << "\n";
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // A history-only model (no training needed).
  std::string history_model() const {
    const fs::path model = dir_ / "history-model";
    fs::create_directories(model);
    std::ofstream(model / "manifest.json")
        << R"({"format_version":1,"kind":"history","util_cap":1.0,"experts":{"mem":"last1","vram":"last1"},)"
        << R"("fallback":{"mem":0.5,"vram":0.5}})";
    return model.string();
  }
  fs::path dir_;
  std::string jobs_;
};

// A request line that is not JSON used to be "not a JSON object (one canonical job record per
// line expected)" whatever was wrong with it, as if it had been valid JSON of another kind; the
// trace readers say why and where ("json: invalid literal (column 41)"), and so does predict.
TEST_F(PredictCli, ARequestLineThatIsNotJsonSaysWhyAndWhere) {
  const std::string model = history_model();
  std::ofstream(jobs_, std::ios::app) << R"({"job_id":"j2","user":"u","submit_time":NaN})" << "\n";
  const CmdResult r = run_peakcast("predict --model " + model + " " + jobs_);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(jobs_ + ":2: json: invalid literal (column 41)"), std::string::npos) << r.out;
  // Valid JSON that is no object keeps its own message.
  std::ofstream(jobs_) << "[1, 2]\n";
  const CmdResult a = run_peakcast("predict --model " + model + " " + jobs_);
  EXPECT_EQ(a.exit_code, 2) << a.out;
  EXPECT_NE(a.out.find(jobs_ + ":1: not a JSON object"), std::string::npos) << a.out;
}

// A cut-short booster of the tree route was reported against manifest.json ("manifest.json:
// tree_route booster: gbdt model: ... cut short or corrupt"): the file to restore went unnamed.
TEST_F(PredictCli, ADamagedTreeRouteBoosterIsNamed) {
  const std::string trace = (dir_ / "t.jsonl").string();
  ASSERT_EQ(run_peakcast("synth --jobs 300 --seed 5 --users 6 --days 10 -o " + trace).exit_code, 0);
  const fs::path model = dir_ / "model";
  const CmdResult t =
      run_peakcast("train " + trace + " -o " + model.string() + " --threads 1 --code-option max_epochs=1");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  const fs::path booster = model / "tree_mem.ubj";
  ASSERT_TRUE(fs::exists(booster)) << "the model has no tree route: " << t.out;
  fs::resize_file(booster, 1000);
  const CmdResult r = run_peakcast("predict --model " + model.string() + " " + jobs_);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(booster.string() + ": gbdt model: not a complete XGBoost model"), std::string::npos)
      << r.out;
}

// JOBS and --history cannot both be standard input: the jobs took all of it, and the history
// then read nothing and said "-: cannot tell the trace format from its content", as if the
// trace were at fault. It is a usage error naming both.
TEST_F(PredictCli, JobsAndHistoryBothFromStandardInputIsAUsageError) {
  const std::string model = history_model();
  const CmdResult r = run_peakcast("predict --model " + model + " - --history - < " + jobs_);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("JOBS and --history both read standard input"), std::string::npos) << r.out;
  // Either alone is fine.
  EXPECT_EQ(run_peakcast("predict --model " + model + " - < " + jobs_).exit_code, 0);
  const std::string history = (dir_ / "history.jsonl").string();
  std::ofstream(history) << R"({"job_id":"h1","user":"u","submit_time":1000,"end_time":2000})" << "\n";
  const CmdResult h = run_peakcast("predict --model " + model + " " + jobs_ + " --history - < " + history);
  EXPECT_EQ(h.exit_code, 0) << h.out;
}

// A request without req_gpus was answered "vram - (no GPUs requested)" even when its script asks
// for a GPU: predict reads the count from req_gpus only (the Slurm hook sends it), so the line
// names the field instead of stating what the job asked for.
TEST_F(PredictCli, WithoutAGpuCountTheVramLineNamesTheField) {
  const std::string model = history_model();
  std::ofstream(jobs_) << R"({"job_id":"j1","user":"u","submit_time":3000,"req_mem_bytes":1000000000,)"
                       << R"("script":"#!/bin/bash\n#SBATCH --gres=gpu:a100:1\npython train.py\n"})" << "\n"
                       << R"({"job_id":"j2","user":"u","submit_time":3000,"req_gpus":0})" << "\n";
  const CmdResult r = run_peakcast("predict --model " + model + " " + jobs_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("vram -    (no GPU count: req_gpus is absent or 0)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no GPUs requested"), std::string::npos) << r.out;
}

}  // namespace
