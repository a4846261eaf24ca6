// `peakcast train`'s command line: a model directory it cannot write is refused before the trace
// is read and the cascade trained. Skipped when the binary was not built.
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


class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built (cmake --build ... --target peakcast)";
    dir_ = peakcast::test_support::fresh_test_dir("train_cli");
    trace_ = (dir_ / "t.jsonl").string();
    ASSERT_EQ(run_peakcast("synth --jobs 300 --seed 5 --users 6 --days 10 -o " + trace_).exit_code, 0);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  std::string train(const std::string& out) const {
    return "train " + trace_ + " -o " + out + " --threads 1 --code-option max_epochs=1";
  }
  fs::path dir_;
  std::string trace_;
};

// Saving happens after training (up to the 10-minute budget on the real traces): an -o that
// names a file, or sits under one, used to cost the whole training and then end in exit 1
// ("cannot create directory: Not a directory"). Now it is a usage error before anything is read.
TEST_F(TrainCli, AModelDirectoryThatCannotBeWrittenIsRefusedBeforeTraining) {
  const fs::path file = dir_ / "a-file";
  std::ofstream(file) << "x";
  for (const fs::path& out : {file, file / "model"}) {
    const CmdResult r = run_peakcast(train(out.string()));
    EXPECT_EQ(r.exit_code, 2) << out << ": " << r.out;
    EXPECT_NE(r.out.find("--output"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("read " + trace_), std::string::npos) << "the trace was read first: " << r.out;
  }
  // A new directory (and its missing parents) is fine.
  const fs::path fresh = dir_ / "new" / "model";
  const CmdResult r = run_peakcast(train(fresh.string()));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(fresh / "manifest.json"));
}

// A negative --seed used to wrap to 2^64 - 1 and train without a word; it is a usage error
// naming the option, found before the trace is read.
TEST_F(TrainCli, ANegativeSeedIsAUsageError) {
  const fs::path out = dir_ / "model";
  const CmdResult r = run_peakcast(train(out.string()) + " --seed -1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--seed: must be 0 or more, got -1"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out / "manifest.json"));
}

// A bad --code-option (a value that is no number, a key no code model has) used to be found only
// once the trace was read (minutes for a large one), and was then said as the trace's fault
// ("t.jsonl: --code-option ..."). It is a usage error naming the option, before the trace is read.
TEST_F(TrainCli, ABadCodeOptionIsAUsageErrorBeforeReading) {
  const fs::path out = dir_ / "model";
  for (const std::string bad : {"--code-option max_epochs=abc", "--code-option nonsense=1"}) {
    const CmdResult r = run_peakcast(train(out.string()) + " " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    EXPECT_EQ(r.out.find("read " + trace_), std::string::npos) << bad << ": the trace was read first: " << r.out;
    EXPECT_EQ(r.out.find(trace_ + ": "), std::string::npos) << bad << ": blamed on the trace: " << r.out;
  }
  EXPECT_NE(run_peakcast(train(out.string()) + " --code-option max_epochs=abc").out.find("max_epochs: 'abc' is not a number"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(out / "manifest.json"));
}

// --db names peakcastd's SQLite database. Another file used to end in exit 1 (the system failed)
// with "PRAGMA journal_mode=WAL: file is not a database", and an empty one had the daemon's
// schema written into it by a command its --help calls read-only. Both are input errors that
// leave the file as it was.
TEST_F(TrainCli, ADbThatIsNoDatabaseIsAnInputErrorAndLeftAsItWas) {
  const fs::path out = dir_ / "model";
  const fs::path empty = dir_ / "empty.db";
  std::ofstream(empty).flush();
  for (const fs::path& db : {fs::path(trace_), empty}) {
    const auto size = fs::file_size(db);
    const CmdResult r = run_peakcast("train --db " + db.string() + " -o " + out.string() + " --threads 1");
    EXPECT_EQ(r.exit_code, 2) << db << ": " << r.out;
    EXPECT_NE(r.out.find(db.string() + ": not a peakcastd database"), std::string::npos) << r.out;
    EXPECT_EQ(fs::file_size(db), size) << db << " was written";
  }
  EXPECT_FALSE(fs::exists(out / "manifest.json"));
}

// `--encoder qwen2` without base=DIR, or with a folder that lacks what the encoder loads, used to
// be refused only once the whole trace was read (minutes for 300,000 jobs), when the code model
// was built. The encoder checks its options before the trace is read: a usage error, the trace
// not read, and with a trace that does not exist the encoder's error still comes first.
TEST_F(TrainCli, AQwen2EncoderWithoutItsBaseIsAUsageErrorBeforeReading) {
  const fs::path out = dir_ / "model";
  const fs::path empty_base = dir_ / "empty-base";
  fs::create_directories(empty_base);
  struct Case {
    std::string args, says;
  };
  const Case cases[] = {
      {"--encoder qwen2", "encoder qwen2: needs base=DIR (a Hugging Face Qwen2 folder)"},
      {"--code-option encoder=qwen2", "encoder qwen2: needs base=DIR"},
      {"--encoder qwen2 --code-option base=" + (dir_ / "no-such-base").string(), "no-such-base: no such folder"},
      {"--encoder qwen2 --code-option base=" + empty_base.string(),
       "has no model.safetensors (or model.safetensors.index.json), config.json, tokenizer.json"},
  };
  for (const Case& c : cases) {
    const CmdResult r = run_peakcast(train(out.string()) + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << ": " << r.out;
    EXPECT_EQ(r.out.find("read " + trace_), std::string::npos) << c.args << ": the trace was read first: " << r.out;
    EXPECT_EQ(r.out.find("read lines"), std::string::npos) << c.args << ": " << r.out;
    EXPECT_EQ(r.out.find("read jobs"), std::string::npos) << c.args << ": " << r.out;
  }
  const std::string missing_trace = (dir_ / "no-such-trace.jsonl").string();
  const CmdResult r = run_peakcast("train " + missing_trace + " -o " + out.string() + " --encoder qwen2");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("encoder qwen2: needs base=DIR"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no-such-trace"), std::string::npos) << "the trace came first: " << r.out;
  EXPECT_FALSE(fs::exists(out / "manifest.json"));
}

// A base that holds what the encoder loads passes the check: the error is then the trace's. The
// shared tiny fixture has no tokenizer.json of its own; without tokenizer=FILE that is said.
TEST_F(TrainCli, AQwen2BaseThatHoldsItsFilesPassesTheCheck) {
  const std::string fixtures = PEAKCAST_SOURCE_DIR "/../shared/data/qwen2/";
  if (!fs::exists(fixtures + "tiny-f32")) GTEST_SKIP() << "../shared/data/qwen2 absent";
  const std::string missing_trace = (dir_ / "no-such-trace.jsonl").string();
  const std::string train_missing =
      "train " + missing_trace + " -o " + (dir_ / "model").string() + " --encoder qwen2 --code-option base=" +
      fixtures + "tiny-f32";
  CmdResult r = run_peakcast(train_missing);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("has no tokenizer.json (or give tokenizer=FILE)"), std::string::npos) << r.out;
  r = run_peakcast(train_missing + " --code-option tokenizer=" + fixtures + "no-such-tokenizer.json");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("no-such-tokenizer.json: no such file"), std::string::npos) << r.out;
  r = run_peakcast(train_missing + " --code-option tokenizer=" + fixtures + "tokenizer.json.gz");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out.find("encoder qwen2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no-such-trace"), std::string::npos) << r.out;
}

// A short history: the policy of a 300-job trace is chosen on about 30 jobs, and train says so,
// naming the check to run, and notes that gate and fusion saw too few jobs to be boosters; a
// history five times as long trains mem without either (its VRAM, on the few GPU jobs, may still
// get the warning: it is per resource).
TEST_F(TrainCli, APolicyChosenOnFewJobsIsWarnedAbout) {
  const CmdResult few = run_peakcast(train((dir_ / "few").string()));
  ASSERT_EQ(few.exit_code, 0) << few.out;
  const size_t w = few.out.find("warning: mem's policy was chosen on ");
  ASSERT_NE(w, std::string::npos) << few.out;
  EXPECT_NE(few.out.find("(fewer than 100)", w), std::string::npos) << few.out;
  EXPECT_NE(few.out.find("peakcast evaluate " + trace_ + " --methods hier_last1,cascade", w), std::string::npos)
      << few.out;
  // And what the choices rested on: a gate/fusion set under min_component_examples (30).
  EXPECT_NE(few.out.find("note: gate and fusion were fit on "), std::string::npos) << few.out;
  EXPECT_NE(few.out.find("with fewer than 30 each is a constant"), std::string::npos) << few.out;
  const std::string longer = (dir_ / "long.jsonl").string();
  ASSERT_EQ(run_peakcast("synth --jobs 1500 --seed 5 --users 6 --days 10 -o " + longer).exit_code, 0);
  const CmdResult many = run_peakcast("train " + longer + " -o " + (dir_ / "many").string() +
                                      " --threads 1 --code-option max_epochs=1");
  ASSERT_EQ(many.exit_code, 0) << many.out;
  EXPECT_NE(many.out.find("mem: expert "), std::string::npos) << many.out;
  EXPECT_EQ(many.out.find("mem's policy was chosen on"), std::string::npos) << many.out;
  EXPECT_EQ(many.out.find("note: gate and fusion were fit on "), std::string::npos) << many.out;
}

}  // namespace
