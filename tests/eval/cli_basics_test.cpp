// The peakcast binary's basics, as a reviewer ran it: an unknown subcommand is named, --version
// prints the project version, -v works after the subcommand, the help texts say what the options
// take, inspect refuses a trace with no jobs and counts no user as none, simulate's default
// protocol says it reads Nextflow traces. Skipped when the binary was not built.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "support/command.h"

namespace {

namespace fs = std::filesystem;

using peakcast::test_support::CmdResult;
using peakcast::test_support::slurp;
const std::string& kBinary = peakcast::test_support::kPeakcastBinary;

CmdResult run_all(const std::string& args) {  // stdout and stderr together
  return peakcast::test_support::run_peakcast(args, "2>&1 </dev/null");
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class CliBasics : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built";
    dir_ = peakcast::test_support::fresh_test_dir("cli_basics");
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  fs::path dir_;
};

TEST_F(CliBasics, AnUnknownSubcommandIsNamed) {
  for (const char* args : {"bogus", "-v bogus --json x"}) {
    const CmdResult r = run_all(args);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_TRUE(has(r.out, "unknown subcommand 'bogus'")) << r.out;
    EXPECT_TRUE(has(r.out, "inspect")) << "lists the subcommands: " << r.out;
  }
  const CmdResult none = run_all("");
  EXPECT_EQ(none.exit_code, 2) << none.out;
}

TEST_F(CliBasics, VersionIsTheProjectVersion) {
  const std::string cmake = slurp(std::string(PEAKCAST_SOURCE_DIR) + "/CMakeLists.txt");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cmake, m, std::regex(R"(project\(peakcast VERSION ([0-9.]+))")));
  const CmdResult r = run_all("--version");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "peakcast " + m[1].str() + "\n");
}

TEST_F(CliBasics, VerboseAfterTheSubcommand) {
  const std::string trace = write("t.jsonl",
                                  "{\"job_id\":\"1\",\"user\":\"u\",\"submit_time\":1000,\"end_time\":2000,"
                                  "\"req_mem_bytes\":100,\"peak_mem_bytes\":50}\n");
  for (const std::string& args : {"-v inspect " + trace, "inspect " + trace + " -v",
                                 "inspect " + trace + " --verbose"}) {
    const CmdResult r = run_all(args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "jobs       1")) << r.out;
  }
}

TEST_F(CliBasics, HelpTextsSayWhatTheOptionsTake) {
  const CmdResult sim = run_all("simulate --help");
  EXPECT_FALSE(has(sim.out, "Excludes")) << "run into the option's column: " << sim.out;
  EXPECT_TRUE(has(sim.out, "Not with --def-mem-per-cpu")) << sim.out;
  EXPECT_TRUE(std::regex_search(run_all("slurm-sync --help").out, std::regex(R"(--gpu-mem-bytes SIZE\b)")));
  const CmdResult predict = run_all("predict --help");
  EXPECT_FALSE(has(predict.out, "--util-cap FLOAT=1.0")) << predict.out;
  EXPECT_TRUE(has(predict.out, "the model's util_cap")) << predict.out;
  for (const char* cmd : {"inspect", "synth", "simulate", "slurm-sync", "evaluate", "predict"}) {
    EXPECT_TRUE(has(run_all(std::string(cmd) + " --help").out, "Exit codes:")) << cmd;
  }
  EXPECT_TRUE(has(run_all("inspect --help").out, "'-' = stdin"));
  const CmdResult synth = run_all("synth --help");
  EXPECT_TRUE(has(synth.out, "--jobs at most 10000000")) << synth.out;
  EXPECT_TRUE(has(synth.out, "--users at most 1000000")) << synth.out;
  EXPECT_TRUE(has(synth.out, "--days at most 36525")) << synth.out;
  EXPECT_TRUE(has(run_all("evaluate --help").out, "K >= 2"));
  EXPECT_TRUE(has(run_all("report --help").out, "--encoder"));
}

TEST_F(CliBasics, OptionErrorsNameTheOption) {
  const std::string out = (dir_ / "s.jsonl").string();
  const CmdResult jobs = run_all("synth --jobs 20000000 -o " + out);
  EXPECT_EQ(jobs.exit_code, 2) << jobs.out;
  EXPECT_TRUE(has(jobs.out, "error: --jobs: must be at most 10000000")) << jobs.out;
  const CmdResult users = run_all("synth --users 2000000 -o " + out);
  EXPECT_TRUE(has(users.out, "error: --users: must be at most")) << users.out;
  // --folds 1 is refused before the trace is read: here a file that does not exist.
  const CmdResult folds = run_all("evaluate " + (dir_ / "absent.jsonl").string() + " --folds 1");
  EXPECT_EQ(folds.exit_code, 2) << folds.out;
  EXPECT_TRUE(has(folds.out, "--folds: needs at least 2 folds")) << folds.out;
  EXPECT_FALSE(has(folds.out, "absent.jsonl")) << folds.out;
}

TEST_F(CliBasics, InspectRefusesATraceWithoutJobs) {
  for (const std::string& path :
       {write("empty.jsonl", ""), write("header.tsv", "task_id\tprocess\tname\tstatus\tsubmit\tpeak_rss\n")}) {
    const CmdResult r = run_all("inspect " + path);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_TRUE(has(r.out, path + ": the trace holds no jobs")) << r.out;
  }
}

TEST_F(CliBasics, InspectCountsNoUserAsNone) {
  // sacct without a User column, as ../shared/data/sacct/yale-grace-array-test.txt.
  const std::string path = write("array.txt",
                                 "JobID|JobName|MaxRSS|Elapsed|ReqMem|ReqCPUS|Timelimit|\n"
                                 "100_1|a.sh||00:00:01|1Gn|1|02:30:00|\n"
                                 "100_1.batch|batch|948K|00:00:01|1Gn|1||\n"
                                 "100_2|a.sh||00:00:02|1Gn|1|02:30:00|\n"
                                 "100_2.batch|batch|1000K|00:00:02|1Gn|1||\n");
  const CmdResult r = run_all("inspect " + path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "jobs       2")) << r.out;
  EXPECT_TRUE(has(r.out, "users      0 (no job names its user)")) << r.out;
}

TEST_F(CliBasics, SizeyProtocolOnAnotherTraceSaysItReadsNextflow) {
  std::string text;
  for (int i = 0; i < 40; ++i) {
    text += "{\"job_id\":\"" + std::to_string(i) + "\",\"user\":\"u\",\"submit_time\":" +
            std::to_string(1000 + i * 100) + ",\"end_time\":" + std::to_string(1050 + i * 100) +
            ",\"req_mem_bytes\":1000000000,\"peak_mem_bytes\":500000000,\"workload\":\"w\"}\n";
  }
  const std::string path = write("t.jsonl", text);
  const CmdResult r = run_all("simulate " + path);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "Sizey's protocol (the default) reads Nextflow traces")) << r.out;
  EXPECT_TRUE(has(r.out, "--protocol chrono")) << r.out;
  EXPECT_EQ(run_all("simulate " + path + " --protocol chrono").exit_code, 0);
}

}  // namespace
