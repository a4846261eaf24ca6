// `peakcast evaluate` on a young history (tests/support/young_history.h: 400 jobs within hours,
// each running for hours), which the cascade cannot be trained on: the cascade is left out with
// its reason (stderr, under the table, JSON left_out, markdown) and the other methods are scored,
// exit 0; with no requested method left to score, exit 2 with every reason. Until 2026-12-07 the
// refusal stopped the run (exit 2) and no method's figures were printed.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "peakcast/synth/synth.h"
#include "support/command.h"
#include "support/young_history.h"

namespace {

namespace fs = std::filesystem;
using peakcast::test_support::slurp;

const std::string& kBinary = peakcast::test_support::kPeakcastBinary;
// A small code model, one thread, few resamples: the test is about what is left out, not figures.
const std::string kQuick =
    " --threads 1 --bootstrap 20 --latency-jobs 10 --code-option token_dim=8 --code-option "
    "hash_buckets=4096 --code-option user_dim=8 --code-option fused_dim=32 --code-option max_epochs=2";
const std::string kLeftOut = "cascade: left out: it could not be trained on this trace's training blocks (";

class EvaluateYoung : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built";
    dir_ = peakcast::test_support::fresh_test_dir("evaluate_young");
    trace_ = (dir_ / "young.jsonl").string();
    const peakcast::Status s =
        peakcast::synth::write_trace_jsonl(peakcast::test_support::young_jobs(4.0, 1.0, 1.5), trace_);
    ASSERT_TRUE(s) << s.message();
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  struct Ran {
    int exit_code;
    std::string out, err;
  };
  // `peakcast evaluate TRACE ARGS`: exit code, stdout and stderr apart.
  Ran evaluate(const std::string& args) {
    const std::string err = (dir_ / "stderr").string();
    const auto r = peakcast::test_support::run_peakcast("evaluate " + trace_ + " " + args + kQuick,
                                                        "2>" + err + " </dev/null");
    return {r.exit_code, r.out, slurp(err)};
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
  std::string trace_;
};

// The text after `prefix` up to the end of its line ("" when absent).
std::string line_after(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  const size_t from = at + prefix.size();
  return text.substr(from, text.find('\n', from) - from);
}

TEST_F(EvaluateYoung, TheCascadeIsLeftOutWithItsReasonAndTheOthersAreScored) {
  const Ran r = evaluate("--methods hier_last1,cascade --json " + path("eval.json") + " --markdown " +
                         path("eval.md"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // stderr and the table: the same line, with the cascade's own reason.
  const std::string reason = line_after(r.err, "peakcast evaluate: " + kLeftOut);
  ASSERT_FALSE(reason.empty()) << r.err;
  EXPECT_NE(r.out.find("\n" + kLeftOut + reason + "\n"), std::string::npos) << r.out;
  // hier_last1 has its rows; the cascade none.
  EXPECT_NE(r.out.find("\nhier_last1  mem"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\ncascade  "), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(path("eval.json")));
  ASSERT_TRUE(j.contains("left_out")) << j.dump(2).substr(0, 400);
  ASSERT_EQ(j["left_out"].size(), 1u);
  EXPECT_EQ(j["left_out"][0]["method"], "cascade");
  EXPECT_EQ(kLeftOut + j["left_out"][0]["reason"].get<std::string>() + ")", kLeftOut + reason);
  std::set<std::string> scored;
  for (const auto& e : j["results"]) scored.insert(e["method"].get<std::string>());
  EXPECT_EQ(scored, std::set<std::string>{"hier_last1"});
  EXPECT_NE(slurp(path("eval.md")).find("\n- " + kLeftOut + reason), std::string::npos);
}

// Scripts over many traces read left_out without checking for it.
TEST_F(EvaluateYoung, TheJsonHasLeftOutEvenWhenNothingIs) {
  const Ran r = evaluate("--methods hier_last1 --json " + path("eval.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(path("eval.json")));
  ASSERT_TRUE(j.contains("left_out"));
  EXPECT_EQ(j["left_out"], nlohmann::json::array());
  EXPECT_EQ(r.err.find("left out"), std::string::npos) << r.err;
}

// No requested method can be scored: exit 2, the reason given, nothing written.
TEST_F(EvaluateYoung, WithNoMethodLeftItExits2WithTheReason) {
  const Ran r = evaluate("--methods cascade --json " + path("eval.json"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(": no requested method could be scored: " + kLeftOut), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("eval.json")));
  EXPECT_EQ(r.out.find("MAE"), std::string::npos) << "no table: " << r.out;
}

// --folds: the cascade is left out of the split and of every fold; each part says so, the folds
// are hier_last1's, and no figure is NaN.
TEST_F(EvaluateYoung, WithFoldsEachPartSaysWhatItLeftOut) {
  const Ran r = evaluate("--methods hier_last1,cascade --folds 2 --json " + path("eval.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("peakcast evaluate: " + kLeftOut), std::string::npos) << r.err;
  const std::string folds_line = "cascade: left out of the folds: it could not be trained on any fold's training blocks (fold 1/2: ";
  EXPECT_NE(r.err.find("peakcast evaluate: " + folds_line), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("\n" + folds_line), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(path("eval.json")));
  const nlohmann::json& folds = j.at("rolling_origin");
  ASSERT_TRUE(folds.contains("left_out")) << folds.dump(2);
  ASSERT_EQ(folds["left_out"].size(), 1u);
  EXPECT_EQ(folds["left_out"][0]["method"], "cascade");
  ASSERT_FALSE(folds["summary"].empty());
  for (const auto& s : folds["summary"]) {
    EXPECT_EQ(s["method"], "hier_last1");
    EXPECT_TRUE(s["mae_mean"].is_number());
  }
}

}  // namespace
