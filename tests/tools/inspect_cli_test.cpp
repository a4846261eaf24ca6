// `peakcast inspect`'s command line: its --json output is checked before the trace is read.
// Skipped when the binary was not built.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/command.h"

namespace {

namespace fs = std::filesystem;

using peakcast::test_support::CmdResult;
using peakcast::test_support::run_peakcast;
const std::string& kBinary = peakcast::test_support::kPeakcastBinary;


// A --json path that cannot be written used to be found only after reading the trace and
// replaying its history (minutes on a large sacct dump), the table already printed, and it
// ended in exit 1 ("the system failed"); evaluate, report, simulate and synth answer it at once
// with a usage error naming the option.
TEST(InspectCli, AnUnwritableJsonOutputIsAUsageErrorBeforeReading) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built (cmake --build ... --target peakcast)";
  const fs::path dir = peakcast::test_support::fresh_test_dir("inspect_cli");
  const std::string trace = (dir / "t.jsonl").string();
  ASSERT_EQ(run_peakcast("synth --jobs 200 --seed 2 --users 5 --days 5 -o " + trace).exit_code, 0);
  for (const fs::path& out : {dir / "missing" / "s.json", dir}) {
    const CmdResult r = run_peakcast("inspect " + trace + " --json " + out.string());
    EXPECT_EQ(r.exit_code, 2) << out << ": " << r.out;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("read " + trace), std::string::npos) << "the trace was read first: " << r.out;
  }
  const CmdResult ok = run_peakcast("inspect " + trace + " --json " + (dir / "s.json").string());
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_TRUE(fs::exists(dir / "s.json"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
