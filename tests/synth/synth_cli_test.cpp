// `peakcast synth` end to end: what a mistyped command line gets. Skipped when the binary was not
// built.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/command.h"

namespace {

namespace fs = std::filesystem;

using peakcast::test_support::CmdResult;
using peakcast::test_support::run_peakcast;
const std::string& kBinary = peakcast::test_support::kPeakcastBinary;


class SynthCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built (cmake --build ... --target peakcast)";
    dir_ = peakcast::test_support::fresh_test_dir("synth_cli");
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

// An output the command cannot write is a usage error (exit 2, as every other command's
// check_outputs gives), found before the trace is generated: it used to generate all of it (up
// to minutes for millions of jobs) and then fail writing, with exit 1, "the system failed".
TEST_F(SynthCli, AnUnwritableOutputIsAUsageErrorNamingTheOption) {
  const std::string missing = (dir_ / "no-such-folder" / "t.jsonl").string();
  CmdResult r = run_peakcast("synth --jobs 5 -o " + missing);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--output"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("wrote"), std::string::npos) << r.out;

  r = run_peakcast("synth --jobs 5 -o " + dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("is a directory"), std::string::npos) << r.out;

  const std::string ok = (dir_ / "t.jsonl").string();
  r = run_peakcast("synth --jobs 5 -o " + ok);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(ok));
}

// Out-of-range options name the option and exit 2 (the library's bounds, not the kernel's
// OOM killer or a trace the readers refuse).
TEST_F(SynthCli, OutOfRangeOptionsAreUsageErrors) {
  const std::string out = (dir_ / "t.jsonl").string();
  for (const std::string bad : {"--days 1e7", "--jobs 20000000", "--users 2000000000", "--jobs 0", "--days inf"}) {
    const CmdResult r = run_peakcast("synth " + bad + " -o " + out);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    const std::string name = bad.substr(2, bad.find(' ') - 2);
    EXPECT_NE(r.out.find(name), std::string::npos) << bad << ": " << r.out;
    EXPECT_FALSE(fs::exists(out)) << bad;
  }
}

// A negative --seed used to wrap to 2^64 - 1 without a word (the same trace as --seed
// 18446744073709551615); it is a usage error naming the option, as the other bad values are.
TEST_F(SynthCli, ANegativeSeedIsAUsageError) {
  const std::string out = (dir_ / "t.jsonl").string();
  const CmdResult r = run_peakcast("synth --jobs 5 --seed -1 -o " + out);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--seed: must be 0 or more, got -1"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(run_peakcast("synth --jobs 5 --seed 0 -o " + out).exit_code, 0);
}

}  // namespace
