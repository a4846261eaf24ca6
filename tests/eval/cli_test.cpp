// The peakcast binary end to end: synth -> evaluate --methods hier_last1,xgboost --json, and
// synth -> train -> predict --json. Skipped when the binary was not built.
#include <gtest/gtest.h>

#include <array>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "peakcast/sizing/online_bound.h"
#include "support/command.h"
#include "support/fake_sacct.h"

namespace {

namespace fs = std::filesystem;

using peakcast::test_support::CmdResult;
using peakcast::test_support::run_peakcast;
using peakcast::test_support::slurp;
const std::string& kBinary = peakcast::test_support::kPeakcastBinary;

// stdout alone: the JSON a test parses.
CmdResult run(const std::string& args) { return run_peakcast(args, "2>/dev/null"); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built (cmake --build ... --target peakcast)";
    dir_ = peakcast::test_support::fresh_test_dir("cli_test");
    trace_ = (dir_ / "trace.jsonl").string();
    ASSERT_EQ(run("synth --jobs 1200 --seed 3 --users 12 --days 25 -o " + trace_).exit_code, 0);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  fs::path dir_;
  std::string trace_;
};

TEST_F(Cli, EvaluateHistoryAndXgboostAsJson) {
  const std::string json = (dir_ / "eval.json").string();
  const CmdResult r = run("evaluate " + trace_ + " --methods hier_last1,xgboost --bootstrap 100 --threads 1 "
                    "--latency-jobs 20 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("xgboost"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  std::set<std::string> methods;
  for (const auto& e : j.at("results")) {
    methods.insert(e.at("method").get<std::string>());
    EXPECT_TRUE(e.at("mae").is_number());
    EXPECT_EQ(e.at("seeds"), 1);
    EXPECT_TRUE(e.at("latency_us").is_object());
    EXPECT_FALSE(e.at("latency_us").empty());
    // The bound's coverage with its script-bootstrap interval (--bootstrap 100).
    const auto& ci = e.at("coverage_interval").at("0.9");
    ASSERT_EQ(ci.size(), 2u);
    EXPECT_LE(ci[0].get<double>(), ci[1].get<double>());
    EXPECT_GE(ci[0].get<double>(), 0.0);
    EXPECT_LE(ci[1].get<double>(), 1.0);
    EXPECT_LT(ci[0].get<double>(), e.at("coverage").at("0.9").get<double>() + 1e-9);
    EXPECT_GT(ci[1].get<double>(), e.at("coverage").at("0.9").get<double>() - 1e-9);
    EXPECT_GT(e.at("bound_scripts").get<double>(), 1.0);
  }
  EXPECT_NE(r.out.find("cov@0.9 [95% CI] (width)"), std::string::npos) << r.out;
  EXPECT_EQ(methods, (std::set<std::string>{"hier_last1", "xgboost"}));
  EXPECT_EQ(j.at("config").at("latency_jobs"), 20);
  // Unknown methods and malformed options are usage errors.
  EXPECT_EQ(run("evaluate " + trace_ + " --methods nope").exit_code, 2);
  EXPECT_EQ(run("evaluate " + trace_ + " --methods code_only --code-option max_epochs").exit_code, 2);
}

// An option no method of the run reads is named on stderr, with the methods that read it; the
// run goes on. With a method that reads it, no such note.
TEST_F(Cli, OptionsNoMethodReadsAreSaidToChangeNothing) {
  const std::string common = "evaluate " + trace_ + " --bootstrap 0 --latency-jobs 0 --threads 1 ";
  const CmdResult unread = run_peakcast(common + "--methods hier_last1 --code-option max_epochs=1 --encoder textcnn");
  ASSERT_EQ(unread.exit_code, 0) << unread.out;
  EXPECT_NE(unread.out.find("note: --code-option sets the code model of code_only, textcnn, bilstm, "
                            "cascade; --methods has none of them"),
            std::string::npos) << unread.out;
  EXPECT_NE(unread.out.find("note: --encoder sets the code model of code_only, cascade;"), std::string::npos)
      << unread.out;
  const CmdResult read = run_peakcast(common + "--methods hier_last1,textcnn --code-option max_epochs=1 "
                                      "--code-option token_dim=8 --code-option fused_dim=16");
  ASSERT_EQ(read.exit_code, 0) << read.out;
  EXPECT_EQ(read.out.find("changes nothing"), std::string::npos) << read.out;
}

// `--encoder qwen2` without base=DIR used to be found only once the trace was read and the
// cascade's training blocks built, and then the cascade was left out (exit 0) as if the trace had
// been too young for it. The encoder's options are checked before the trace is read: exit 2, the
// encoder's message, nothing read (with a trace that does not exist, the encoder's error first).
TEST_F(Cli, EvaluateChecksTheEncodersOptionsBeforeReading) {
  const std::string quick = " --bootstrap 0 --latency-jobs 0 --threads 1 --code-option max_epochs=1";
  const std::string missing_trace = (dir_ / "no_such_trace.jsonl").string();
  for (const std::string& args : {trace_ + " --methods hier_last1,cascade --encoder qwen2",
                                  trace_ + " --methods code_only --code-option encoder=qwen2",
                                  missing_trace + " --methods cascade --encoder qwen2"}) {
    const CmdResult r = run_peakcast("evaluate " + args + quick);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find("encoder qwen2: needs base=DIR"), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("read " + trace_), std::string::npos) << args << ": the trace was read first: " << r.out;
    EXPECT_EQ(r.out.find("no_such_trace"), std::string::npos) << args << ": the trace came first: " << r.out;
  }
}

// --bound-walk writes the walk behind the coverage column: re-walking it gives the JSON's
// figures; an unwritable path is a usage error before anything runs.
TEST_F(Cli, BoundWalkReproducesTheCoverageFigures) {
  const std::string json = (dir_ / "eval.json").string(), walk = (dir_ / "walk.jsonl").string();
  const CmdResult r = run("evaluate " + trace_ + " --methods hier_last1 --bootstrap 0 --latency-jobs 0 --json " +
                          json + " --bound-walk " + walk);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  std::map<std::string, std::array<double, 3>> sums;  // resource -> scored, covered, width at 0.9
  std::map<std::string, std::set<std::string>> scripts;  // resource -> scripts of the scored jobs
  std::istringstream lines(slurp(walk));
  size_t walked = 0;
  for (std::string line; std::getline(lines, line); ++walked) {
    const nlohmann::json w = nlohmann::json::parse(line);
    EXPECT_EQ(w.at("method"), "hier_last1");
    if (w.at("block") != "test") continue;
    const double bound = w.at("bounds").at("0.9").at("bound").get<double>();
    const double label = w.at("label").get<double>();
    auto& s = sums[w.at("resource").get<std::string>()];
    s[0] += 1;
    // A killed job's peak was above its label (the limit): only a bound above it covers it.
    s[1] += peakcast::sizing::bound_covers(label, bound, w.at("censored").get<bool>()) ? 1 : 0;
    s[2] += bound - w.at("point").get<double>();
    const std::string key = w.at("script_sha256").get<std::string>();
    scripts[w.at("resource").get<std::string>()].insert(key.empty() ? "job " + w.at("job_id").get<std::string>() : key);
  }
  EXPECT_GT(walked, 0u);
  size_t rows = 0;
  for (const auto& row : j.at("results")) {
    const auto& s = sums[row.at("resource").get<std::string>()];
    ASSERT_EQ(s[0], row.at("bound_n").get<double>());
    EXPECT_NEAR(s[1] / s[0], row.at("coverage").at("0.9").get<double>(), 1e-9);
    EXPECT_NEAR(s[2] / s[0], row.at("bound_width").at("0.9").get<double>(), 1e-9);
    EXPECT_EQ(scripts[row.at("resource").get<std::string>()].size(), row.at("bound_scripts").get<size_t>());
    EXPECT_TRUE(row.at("coverage_interval").is_null());  // --bootstrap 0
    ++rows;
  }
  EXPECT_EQ(rows, 2u);  // mem and vram
  EXPECT_EQ(run("evaluate " + trace_ + " --methods hier_last1 --bound-walk " + (dir_ / "no" / "walk.jsonl").string())
                .exit_code,
            2);
}

// Outputs are checked before the run, so a typo costs no hours: a folder that does not exist, a
// folder given as a file, two outputs naming one file, two on standard output. A run that fails
// leaves an earlier --bound-walk file as it was (it was emptied at the start), also when it is
// --folds that fails after the split has scored, and the trace is never read when an output is
// wrong.
TEST_F(Cli, OutputsAreCheckedBeforeTheRunAndAFailedRunKeepsEarlierFiles) {
  const std::string missing_trace = (dir_ / "no_such_trace.jsonl").string();
  const std::string ok = (dir_ / "a.json").string();
  const auto err = [&](const std::string& args) {
    return run_peakcast("evaluate " + args);
  };
  CmdResult r = err(missing_trace + " --json " + (dir_ / "no" / "x.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--json: cannot write"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no_such_trace"), std::string::npos) << r.out;  // checked before reading
  r = err(missing_trace + " --csv " + dir_.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("is a directory"), std::string::npos) << r.out;
  r = err(missing_trace + " --json " + ok + " --markdown " + ok);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--json and --markdown name the same file"), std::string::npos) << r.out;
  r = err(missing_trace + " --json - --csv -");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("both write to standard output"), std::string::npos) << r.out;
  r = run_peakcast("simulate " + missing_trace + " --json " + (dir_ / "no" / "s.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--json: cannot write"), std::string::npos) << r.out;

  // Six jobs: the cascade cannot train on them (too few jobs). Asked for alone, no method is
  // scored: exit 2, and the earlier walk is kept. (Beside hier_last1 the cascade is left out and
  // the run succeeds, since 2026-12-07: the walk is then hier_last1's.)
  const std::string six = (dir_ / "six.jsonl").string();
  ASSERT_EQ(peakcast::test_support::run_shell("head -n 6 " + trace_ + " > " + six).exit_code, 0);
  const std::string walk = (dir_ / "walk.jsonl").string();
  { std::ofstream(walk) << "kept\n"; }
  r = err(six + " --methods cascade --bootstrap 0 --latency-jobs 0 --bound-walk " + walk);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("cascade"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(walk), "kept\n");
  r = err(six + " --methods hier_last1,cascade --bootstrap 0 --latency-jobs 0 --bound-walk " + walk);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cascade: left out"), std::string::npos) << r.out;
  EXPECT_NE(slurp(walk).find("\"method\":\"hier_last1\""), std::string::npos);

  // The split scores, then --folds fails: the first 24 of 40 jobs end just before the split's
  // validation block begins (kept by its purge) but after every fold's, whose train blocks the
  // purge empties. Exit 2, and no output replaced: the walk used to be written before the folds
  // ran, so a failed run left a new walk (and an earlier --json) behind.
  const std::string purged = (dir_ / "purged.jsonl").string();
  {
    std::ofstream t(purged);
    for (int i = 0; i < 40; ++i) {
      const int submit = 1700000000 + 100 * i;
      const int end = i < 24 ? 1700000000 + 100 * 24 - 1 : submit + 10;
      t << "{\"job_id\":\"j" << i << "\",\"user\":\"u" << i % 3 << "\",\"submit_time\":" << submit
        << ",\"end_time\":" << end << ",\"req_mem_bytes\":1000000000,\"peak_mem_bytes\":" << 300000000 + 10000000 * (i % 7)
        << "}\n";
    }
  }
  const std::string json = (dir_ / "eval.json").string();
  const std::string purged_run = purged + " --methods hier_last1 --bootstrap 0 --latency-jobs 0 --bound-walk " + walk +
                                 " --json " + json;
  r = err(purged_run);
  ASSERT_EQ(r.exit_code, 0) << "the split alone scores: " << r.out;
  { std::ofstream(walk) << "kept\n"; }
  { std::ofstream(json) << "kept\n"; }
  r = err(purged_run + " --folds 2");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("every one of the 2 folds was skipped"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(walk), "kept\n");
  EXPECT_EQ(slurp(json), "kept\n");
}

// A trace with no label for either resource trains nothing: an error, not a model that answers
// from untrained heads. With labels for one resource only (a GPU trace of VRAM peaks), the model
// is written and the other resource is named in a warning.
TEST_F(Cli, TrainRefusesATraceWithoutLabelsAndWarnsOfAResourceWithout) {
  const std::string no_labels = (dir_ / "no_labels.jsonl").string();
  const std::string vram_only = (dir_ / "vram_only.jsonl").string();
  {
    std::ifstream in(trace_);
    std::ofstream none(no_labels), vram(vram_only);
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line);
      j.erase("peak_mem_bytes");
      vram << j.dump() << "\n";
      j.erase("peak_vram_bytes");
      none << j.dump() << "\n";
    }
  }
  const std::string small = " --threads 1 --code-option max_epochs=1 --code-option token_dim=8 "
                            "--code-option user_dim=8 --code-option fused_dim=32";
  CmdResult r = run_peakcast("train " + no_labels + " -o " + (dir_ / "m0").string() + small);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("has a label"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "m0" / "manifest.json"));
  r = run_peakcast("train " + vram_only + " -o " + (dir_ / "m1").string() + small);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: no train job has a mem label"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("has a vram label"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "m1" / "manifest.json"));
}

// `--code-option encoder=NAME` (as docs/qwen2.md writes it) chooses the encoder, as --encoder
// does; before, train, evaluate and report set it back to bag without a word.
TEST_F(Cli, CodeOptionEncoderChoosesTheEncoder) {
  const std::string small = " --threads 1 --code-option token_dim=8 --code-option user_dim=8 "
                            "--code-option fused_dim=32 --code-option max_epochs=1";
  const std::string model = (dir_ / "model").string();
  const CmdResult t = run("train " + trace_ + " -o " + model + small + " --code-option encoder=textcnn");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  const nlohmann::json m = nlohmann::json::parse(slurp((fs::path(model) / "manifest.json").string()));
  EXPECT_EQ(m.at("config").at("code").at("encoder"), "textcnn");
  const CmdResult e = run("evaluate " + trace_ + " --methods code_only --bootstrap 0 --latency-jobs 0" + small +
                          " --code-option encoder=textcnn");
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_NE(e.out.find("code_only: encoder=textcnn"), std::string::npos) << e.out;
  // Saying it twice, differently, is a usage error, not a silent choice.
  EXPECT_EQ(run("evaluate " + trace_ + " --methods code_only --encoder bag --code-option encoder=textcnn").exit_code, 2);
  EXPECT_EQ(run("train " + trace_ + " -o " + model + "2 --encoder bilstm --code-option encoder=textcnn").exit_code, 2);
  EXPECT_FALSE(fs::exists(model + "2"));
}

// `--cascade-option KEY=VALUE` reaches the cascade that train fits (its manifest keeps the
// setting) and is checked before the trace is read; evaluate says when no method reads it.
TEST_F(Cli, CascadeOptionReachesTheTrainedCascade) {
  const std::string small = " --threads 1 --code-option token_dim=8 --code-option user_dim=8 "
                            "--code-option fused_dim=32 --code-option max_epochs=1";
  const std::string model = (dir_ / "model").string();
  const CmdResult t = run("train " + trace_ + " -o " + model + small +
                          " --cascade-option q_source=tree_route --cascade-option tree_bag=2 "
                          "--cascade-option tree.max_depth=3");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  const nlohmann::json m = nlohmann::json::parse(slurp((fs::path(model) / "manifest.json").string()));
  const nlohmann::json& cfg = m.at("config");
  EXPECT_EQ(cfg.at("tree_bag"), 2);
  EXPECT_EQ(cfg.at("q_source"), "tree_route");
  EXPECT_EQ(cfg.at("tree").at("max_depth"), 3);
  EXPECT_EQ(cfg.at("tree").at("eta"), 0.1);  // the rest of the member kept
  // Q from the tree route: its bag of two, the second booster of each learned resource saved.
  const nlohmann::json& bag = m.at("tree_route").at("bag_files");
  ASSERT_FALSE(bag.empty()) << m.at("tree_route").dump();
  for (const auto& [resource, files] : bag.items()) EXPECT_EQ(files.size(), 1u) << resource;

  // A mistyped key is a usage error naming the valid ones, before anything is read or written.
  const CmdResult bad = run_peakcast("train /nonexistent.jsonl -o " + model + "2 --cascade-option tree_bags=1");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--cascade-option tree_bags: unknown cascade option (valid: "), std::string::npos)
      << bad.out;
  EXPECT_FALSE(fs::exists(model + "2"));
  EXPECT_EQ(run("evaluate " + trace_ + " --methods hier_last1 --cascade-option tree_bag").exit_code, 2);
  EXPECT_EQ(run("report " + trace_ + " -o " + (dir_ / "r.html").string() + " --cascade-option coverage=2").exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "r.html"));
  const CmdResult note = run_peakcast("evaluate " + trace_ + " --methods hier_last1 --bootstrap 0 --latency-jobs 0 "
                                         "--cascade-option tree_bag=1");
  EXPECT_EQ(note.exit_code, 0) << note.out;
  EXPECT_NE(note.out.find("note: --cascade-option sets the cascade's own settings; --methods has no cascade"),
            std::string::npos) << note.out;
  // The cascade's row says it is not the default cascade.
  const CmdResult e = run("evaluate " + trace_ + " --methods cascade --bootstrap 0 --latency-jobs 0" + small +
                          " --cascade-option tree_bag=1 --cascade-option tau_grid=0.5,1.01");
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_NE(e.out.find("cascade: encoder=bag cascade_options=tree_bag=1 tau_grid=0.5,1.01 "), std::string::npos)
      << e.out;
}

TEST_F(Cli, TrainThenPredictJson) {
  const std::string model = (dir_ / "model").string();
  const CmdResult t = run("train " + trace_ + " -o " + model + " --threads 1 --code-option token_dim=8 "
                    "--code-option hash_buckets=4096 --code-option user_dim=8 --code-option "
                    "fused_dim=32 --code-option max_epochs=2");
  ASSERT_EQ(t.exit_code, 0) << t.out;
  ASSERT_TRUE(fs::exists(fs::path(model) / "manifest.json"));
  // The last three jobs of the trace as requests, with the trace itself as history.
  std::istringstream lines(slurp(trace_));
  std::vector<std::string> all;
  for (std::string l; std::getline(lines, l);) all.push_back(l);
  ASSERT_GE(all.size(), 3u);
  const std::string jobs = (dir_ / "jobs.jsonl").string();
  {
    std::ofstream out(jobs);
    for (size_t i = all.size() - 3; i < all.size(); ++i) out << all[i] << "\n";
  }
  const CmdResult p = run("predict --model " + model + " " + jobs + " --history " + trace_ + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  std::istringstream objs(p.out);
  size_t n = 0;
  for (std::string l; std::getline(objs, l);) {
    if (l.empty()) continue;
    ++n;
    const nlohmann::json o = nlohmann::json::parse(l);
    ASSERT_TRUE(o.at("job_id").is_string());
    const auto& preds = o.at("predictions");
    ASSERT_TRUE(preds.at("mem").is_object());
    ASSERT_TRUE(preds.contains("vram"));
    for (const auto& res : {preds.at("mem"), preds.at("vram")}) {
      if (res.is_null()) continue;
      for (const char* k : {"util", "bytes", "route", "expert", "gamma", "history_n", "rationale"}) {
        EXPECT_TRUE(res.contains(k)) << k;
      }
      const std::string route = res.at("route");
      EXPECT_TRUE(route == "bypass" || route == "encoder" || route == "cache" || route == "no_history" ||
                  route == "tree")
          << route;
      EXPECT_GE(res.at("util").get<double>(), 0.0);
      EXPECT_LE(res.at("util").get<double>(), 1.0);
    }
  }
  EXPECT_EQ(n, 3u);
  // Human-readable form names the route and a rationale for each job.
  const CmdResult h = run("predict --model " + model + " " + jobs);
  ASSERT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("route"), std::string::npos);
  EXPECT_EQ(run("predict --model " + (dir_ / "missing").string() + " " + jobs).exit_code, 2);
}

// A negative --seed used to wrap to 2^64 - 1 without a word (evaluate's bootstrap and learned
// methods, report's); it is a usage error naming the option, before the trace is read.
TEST_F(Cli, ANegativeSeedIsAUsageError) {
  for (const std::string cmd : {"evaluate", "report"}) {
    const std::string out = (dir_ / (cmd + ".out")).string();
    const std::string output = cmd == "evaluate" ? " --json " : " -o ";
    const CmdResult r = run_peakcast(cmd + " " + trace_ + output + out + " --seed -1");
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("--seed: must be 0 or more, got -1"), std::string::npos) << cmd << ": " << r.out;
    EXPECT_FALSE(fs::exists(out)) << cmd;
  }
}

// XGBoost reads its seed as a signed 64-bit integer: a seed of 2^63 passed the option and ended,
// after the trace was read, in an internal error (exit 1). It is a usage error naming the option.
TEST_F(Cli, ASeedBeyondWhatTheLearnersTakeIsAUsageError) {
  for (const std::string cmd : {"evaluate", "report"}) {
    const std::string out = (dir_ / (cmd + ".big.out")).string();
    const std::string output = cmd == "evaluate" ? " --json " : " -o ";
    const CmdResult r = run_peakcast(cmd + " " + trace_ + output + out + " --seed 9223372036854775808");
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("--seed: must be a whole number from 0 to 4611686018427387904"), std::string::npos)
        << cmd << ": " << r.out;
    EXPECT_FALSE(fs::exists(out)) << cmd;
  }
}

// CLI::Range let "nan" through (both its comparisons are false): --folds-share nan went on to the
// fold split, --bound-coverage nan to the bound's constructor. A usage error naming the option.
TEST_F(Cli, ANanShareOrCoverageIsAUsageError) {
  struct Case { std::string cmd, output, option; };
  for (const Case& c : {Case{"evaluate", " --json ", "--folds-share"}, Case{"report", " -o ", "--bound-coverage"}}) {
    const std::string out = (dir_ / (c.cmd + ".nan.out")).string();
    const CmdResult r = run_peakcast(c.cmd + " " + trace_ + c.output + out + " " + c.option + " nan");
    EXPECT_EQ(r.exit_code, 2) << c.cmd << ": " << r.out;
    EXPECT_NE(r.out.find(c.option + ": must be a number from"), std::string::npos) << c.cmd << ": " << r.out;
    EXPECT_FALSE(fs::exists(out)) << c.cmd;
  }
}

// --history is read with the model's util_cap (as peakcastd reads its store), not the reader's
// default of 1: a model that learned labels up to 2 sees a history run at 1.5 as 1.5.
TEST(CliPredict, HistoryIsReadWithTheModelsCap) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built";
  const fs::path dir = peakcast::test_support::fresh_test_dir("cli_cap");
  const std::string model = (dir / "model").string();
  fs::create_directories(model);
  std::ofstream(model + "/manifest.json")
      << R"({"format_version":1,"kind":"history","util_cap":2.0,"experts":{"mem":"last1","vram":"last1"},)"
      << R"("fallback":{"mem":0.5,"vram":0.5}})";
  const std::string history = (dir / "history.jsonl").string();
  std::ofstream(history) << R"({"job_id":"h1","user":"u","submit_time":1000,"end_time":2000,)"
                         << R"("req_mem_bytes":1000000000,"peak_mem_bytes":1500000000,"script":"./sim"})" << "\n";
  const std::string jobs = (dir / "jobs.jsonl").string();
  std::ofstream(jobs) << R"({"job_id":"j1","user":"u","submit_time":3000,"req_mem_bytes":1000000000,"script":"./sim"})"
                      << "\n";
  const CmdResult p = run("predict --model " + model + " " + jobs + " --history " + history + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  const nlohmann::json o = nlohmann::json::parse(p.out);
  EXPECT_DOUBLE_EQ(o.at("predictions").at("mem").at("util").get<double>(), 1.5) << p.out;
  // Another cap for the history is refused, not silently used.
  EXPECT_EQ(run("predict --model " + model + " " + jobs + " --history " + history + " --util-cap 1").exit_code, 2);
  EXPECT_EQ(run("predict --model " + model + " " + jobs + " --history " + history + " --util-cap 2 --json").exit_code, 0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace

namespace {

// slurm-sync against a stand-in sacct (a shell script printing a 22.05 `sacct -P` listing):
// the first run stores both finished jobs, the second finds them known (idempotent by job id).
TEST(CliSlurmSync, StoresFinishedJobsOnceWithAPersistedCursor) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built";
  const fs::path dir = peakcast::test_support::fresh_test_dir("cli_sync");
  // Two jobs that ended five minutes ago (within the next poll's overlap), in a stand-in that
  // lists by -S/-E as sacct does.
  const auto iso = [](std::time_t t) {
    char buf[32];
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return std::string(buf);
  };
  const std::time_t now = std::time(nullptr);
  const std::string t0 = iso(now - 310), t1 = iso(now - 300), t2 = iso(now - 290);
  peakcast::test_support::FakeSacct fake;
  fake.listing = "JobID|JobName|User|Account|Partition|State|Submit|Start|End|NCPUS|NNodes|ReqMem|AllocTRES|MaxRSS\n"
                 "12|alloc|alice|acct|debug|COMPLETED|" + t0 + "|" + t0 + "|" + t1 + "|1|1|600M|cpu=1,mem=600M,node=1|\n"
                 "12.batch|batch||acct||COMPLETED|" + t0 + "|" + t0 + "|" + t1 + "|1|1|||217915392\n"
                 "13|other|bob|acct|debug|OUT_OF_MEMORY|" + t0 + "|" + t0 + "|" + t2 + "|1|1|100M|cpu=1,mem=100M,node=1|\n";
  fake.now_iso = iso(now + 3600);  // `-E now`: whenever the command runs
  const fs::path sacct = peakcast::test_support::write_fake_sacct(dir.string(), fake);
  const std::string args =
      "slurm-sync --db " + (dir / "h.db").string() + " --sacct " + sacct.string();
  // The first poll reads the default week a day at a time, with a line of progress per window.
  CmdResult first = run_peakcast(args);
  EXPECT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("2 finished job(s)"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find(": 2 new"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("(7 sacct windows)"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("slurm-sync: window 1, "), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("slurm-sync: window 7, "), std::string::npos) << first.out;
  CmdResult second = run(args);
  EXPECT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find(": 0 new"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("2 already known"), std::string::npos) << second.out;
  EXPECT_EQ(second.out.find("sacct windows"), std::string::npos) << second.out;  // one window
  // A missing --db is a usage error.
  EXPECT_EQ(run("slurm-sync --sacct " + sacct.string()).exit_code, 2);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
