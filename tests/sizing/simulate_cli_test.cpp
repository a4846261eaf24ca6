// `peakcast simulate` end to end on a small Nextflow trace written here: the table, the JSON
// that `peakcast report --sim` reads, seeds, and clear errors. Skips when the binary is not built.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/command.h"

namespace {

namespace fs = std::filesystem;
using peakcast::test_support::CmdResult;
using peakcast::test_support::run_peakcast;
using peakcast::test_support::slurp;
const std::string& kBinary = peakcast::test_support::kPeakcastBinary;


class SimulateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kBinary)) GTEST_SKIP() << kBinary << " not built";
    dir_ = peakcast::test_support::fresh_test_dir("sim_cli");
    trace_ = (dir_ / "trace_toy.csv").string();
    std::ofstream out(trace_);
    out << "task_id,process,status,memory,submit,complete,realtime,rss,peak_rss,rchar\n";
    // Two processes of 40 tasks; peaks grow with the input.
    for (int i = 0; i < 80; ++i) {
      const bool align = i % 2 == 0;
      const long long input = 1000000000LL + 50000000LL * (i % 13);
      const long long rss = (align ? 2000000000LL : 300000000LL) + input / 4;
      const long long t0 = 1674490103000LL + 1000LL * i;
      out << i + 1 << "," << (align ? "WF:ALIGN" : "WF:SORT") << ",COMPLETED,8589934592," << t0 << ","
          << t0 + 60000 << "," << 60000 + 1000 * (i % 5) << "," << rss << "," << rss << "," << input << "\n";
    }
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // The toy trace copied to `name` with `edit` applied to each line (row 0 is the header).
  std::string write_edited(const std::string& name, const std::function<void(std::string&, int)>& edit) const {
    const std::string path = (dir_ / name).string();
    std::ifstream in(trace_);
    std::ofstream out(path);
    std::string line;
    for (int row = 0; std::getline(in, line); ++row) {
      edit(line, row);
      out << line << "\n";
    }
    return path;
  }
  // The toy trace with the SORT process's memory directive removed (Nextflow writes '-').
  std::string write_unrequested() const {
    return write_edited("trace_unrequested.csv", [](std::string& line, int) {
      if (const auto at = line.find(",8589934592,"); at != std::string::npos && line.find("WF:SORT") != std::string::npos) {
        line.replace(at, 12, ",-,");
      }
    });
  }
  // Two `simulate --json` files hold the same figures, result by result.
  static void expect_same_results(const std::string& path_a, const std::string& path_b) {
    std::ifstream a(path_a), b(path_b);
    const auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
    ASSERT_EQ(ja["results"].size(), jb["results"].size());
    for (size_t i = 0; i < ja["results"].size(); ++i) {
      const auto &ra = ja["results"][i], &rb = jb["results"][i];
      EXPECT_EQ(ra["policy"], rb["policy"]);
      EXPECT_EQ(ra.value("seed", -1), rb.value("seed", -1));
      EXPECT_EQ(ra["jobs"], rb["jobs"]);
      EXPECT_DOUBLE_EQ(ra["waste_gbh"].get<double>(), rb["waste_gbh"].get<double>()) << ra["policy"];
      EXPECT_EQ(ra["failures"], rb["failures"]) << ra["policy"];
    }
  }
  // Replays `variant` of the toy trace and the toy trace itself with Sizey's protocol
  // (max_so_far and peakcast, two seeds), expects the same figures from both, and returns the
  // variant's run (its reader notes are on its output).
  CmdResult expect_sizey_figures_of_the_toy(const std::string& variant) const {
    const std::string toy_json = (dir_ / "toy.json").string(), variant_json = (dir_ / "variant.json").string();
    const std::string args = " --policies max_so_far,peakcast --seeds 2 --json ";
    auto toy = run_peakcast("simulate " + trace_ + args + toy_json);
    auto r = run_peakcast("simulate " + variant + args + variant_json);
    EXPECT_EQ(toy.exit_code, 0) << toy.out;
    EXPECT_EQ(r.exit_code, 0) << r.out;
    if (toy.exit_code == 0 && r.exit_code == 0) expect_same_results(toy_json, variant_json);
    return r;
  }
  // `peakcast simulate ARGS --json FILE` exits 0: its output and the JSON it wrote.
  std::pair<CmdResult, nlohmann::json> run_with_json(const std::string& args) const {
    const std::string json = (dir_ / "run.json").string();
    auto r = run_peakcast("simulate " + args + " --json " + json);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::ifstream in(json);
    return {r, r.exit_code == 0 ? nlohmann::json::parse(in) : nlohmann::json()};
  }
  // `peakcast simulate ARGS` exits 2 (a usage or input error) and says `why`.
  void expect_usage_error(const std::string& args, const std::string& why) const {
    const auto r = run_peakcast("simulate " + args);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(why), std::string::npos) << r.out;
  }
  fs::path dir_;
  std::string trace_;
};

TEST_F(SimulateCli, TableAndJsonForEveryPolicyAndSeed) {
  const std::string json = (dir_ / "sim.json").string();
  auto r = run_peakcast("simulate " + trace_ + " --seed 5 --seeds 2 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("waste_GBh"), std::string::npos);
  EXPECT_NE(r.out.find("peakcast"), std::string::npos);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_TRUE(j["results"].is_array());
  EXPECT_EQ(j["results"].size(), 2u * 9u);  // every policy, seeds 5 and 6
  EXPECT_EQ(j["results"][0]["policy"], "presets");
  EXPECT_EQ(j["results"][0]["seed"], 5);
  for (const auto& e : j["results"]) {
    for (const char* k : {"policy", "waste_gbh", "failures", "retries", "jobs", "failed_jobs"}) {
      EXPECT_TRUE(e.contains(k)) << k;
    }
    EXPECT_EQ(e["jobs"], 56);  // ceil(0.7 * 40) per process
    EXPECT_LE(e["failed_jobs"].get<int>(), e["jobs"].get<int>());
    EXPECT_GE(e["waste_gbh"].get<double>(), 0.0);
  }
  // The means over the two seeds, per policy, agree with the rows; the comparison takes the
  // baseline of least mean waste.
  ASSERT_TRUE(j["summary"].is_array());
  ASSERT_EQ(j["summary"].size(), 9u);
  std::string best;
  double best_waste = 1e300;
  for (const auto& m : j["summary"]) {
    double sum = 0, lo = 1e300, hi = -1;
    for (const auto& e : j["results"]) {
      if (e["policy"] != m["policy"]) continue;
      const double w = e["waste_gbh"].get<double>();
      sum += w;
      lo = std::min(lo, w);
      hi = std::max(hi, w);
    }
    EXPECT_EQ(m["seeds"], 2);
    EXPECT_NEAR(m["waste_gbh"]["mean"].get<double>(), sum / 2, 1e-9) << m["policy"];
    EXPECT_DOUBLE_EQ(m["waste_gbh"]["min"].get<double>(), lo);
    EXPECT_DOUBLE_EQ(m["waste_gbh"]["max"].get<double>(), hi);
    const std::string name = m["policy"];
    if (name != "peakcast" && name != "peakcast_fixed90" && m["waste_gbh"]["mean"].get<double>() < best_waste) {
      best = name;
      best_waste = m["waste_gbh"]["mean"].get<double>();
    }
  }
  ASSERT_TRUE(j["comparison"].is_object());
  EXPECT_EQ(j["comparison"]["policy"], "peakcast");
  EXPECT_EQ(j["comparison"]["best_baseline"], best);
  EXPECT_NEAR(j["comparison"]["baseline_waste_gbh"].get<double>(), best_waste, 1e-9);
  EXPECT_NE(r.out.find("mean over 2 seeds (5-6)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peakcast against the best baseline (" + best), std::string::npos) << r.out;
}

TEST_F(SimulateCli, ChronoRowsCarryNoSeed) {
  // chrono replays in event time with no random order: a seed in its rows would be the --seed
  // default it never used (it used to write 1996 there).
  const std::string json = (dir_ / "chrono.json").string();
  auto r = run_peakcast("simulate " + trace_ + " --protocol chrono --policies presets,peakcast --seed 7 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find(" 7 "), std::string::npos) << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(r.out.find("mean over"), std::string::npos) << r.out;  // one run: no means
  EXPECT_EQ(j["comparison"]["best_baseline"], "presets");
  for (const auto& e : j["results"]) {
    ASSERT_TRUE(e.contains("seed"));
    EXPECT_TRUE(e["seed"].is_null()) << e["seed"];
    EXPECT_GT(e["jobs"].get<int>(), 0);
  }
}

TEST_F(SimulateCli, SizeyNeedsNoTimeColumnsAndChronoSaysWhatIsMissing) {
  // The same tasks with only the columns Sizey's protocol reads (a narrower trace.fields).
  const std::string narrow = write_edited("trace_narrow.csv", [](std::string& line, int) {
    // task_id,process,status,memory,submit,complete,realtime,rss,peak_rss,rchar -> drop 0, 4, 5
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 10u) << line;
    line = f[1] + "," + f[2] + "," + f[3] + "," + f[6] + "," + f[7] + "," + f[8] + "," + f[9];
  });
  const auto thin = expect_sizey_figures_of_the_toy(narrow);
  // Sizey's protocol reads no times (ingest::ReadOptions::sizey_rows), so their absence is no
  // news here; chrono says what is missing (below).
  EXPECT_EQ(thin.out.find("not placed in time"), std::string::npos) << thin.out;
  auto chrono = run_peakcast("simulate " + narrow + " --protocol chrono");
  EXPECT_NE(chrono.exit_code, 0);
  EXPECT_NE(chrono.out.find("no submit times"), std::string::npos) << chrono.out;
  EXPECT_NE(chrono.out.find("trace.fields"), std::string::npos) << chrono.out;
}

TEST_F(SimulateCli, TasksWithoutARequestAreCountedAndPresetsFallsBackToTheLargestPeak) {
  // The SORT process without a memory directive (Nextflow writes '-'): presets has no request to
  // give, so it gives the largest peak the type has shown, and the run says how many tasks that is.
  const std::string unrequested = write_unrequested();
  auto r = run_peakcast("simulate " + unrequested + " --policies presets,max_so_far --seeds 1 --per-workload");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("note: 40 of 80 tasks have no memory request"), std::string::npos) << r.out;
  auto full = run_peakcast("simulate " + trace_ + " --policies presets --seeds 1");
  ASSERT_EQ(full.exit_code, 0) << full.out;
  EXPECT_EQ(full.out.find("no memory request"), std::string::npos) << full.out;
  // Per workload, presets on SORT equals max_so_far on SORT (the same warm start and order).
  const std::string json = (dir_ / "unrequested.json").string();
  r = run_peakcast("simulate " + unrequested + " --policies presets,max_so_far --seeds 1 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 2u);
  // The same note in the JSON, which `peakcast report --sim` shows at the top of the page.
  ASSERT_EQ(j["notes"].size(), 1u) << j["notes"];
  EXPECT_EQ(j["notes"][0].get<std::string>().rfind("40 of 80 tasks have no memory request.", 0), 0u) << j["notes"];
  auto sort_row = [&](size_t k) {
    for (const auto& w : j["results"][k]["per_workload"]) {
      if (w["workload"] == "WF:SORT") return w;
    }
    ADD_FAILURE() << "no WF:SORT row";
    return nlohmann::json();
  };
  EXPECT_DOUBLE_EQ(sort_row(0)["waste_gbh"].get<double>(), sort_row(1)["waste_gbh"].get<double>());
  EXPECT_EQ(sort_row(0)["failures"], sort_row(1)["failures"]);
}

TEST_F(SimulateCli, TasksWithoutARequestGetTheSlurmDefaultWhenGiven) {
  // SORT's request removed, then given back as --def-mem-per-node: every policy replays exactly
  // as on the trace where SORT asked for it (8 GiB), and the note says what it was given.
  const std::string unrequested = write_unrequested();
  const std::string given = (dir_ / "given.json").string();
  const std::string asked = (dir_ / "asked.json").string();
  auto r = run_peakcast("simulate " + unrequested + " --def-mem-per-node 8G --json " + given);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("note: 40 of 80 tasks have no memory request; each is given 8G (--def-mem-per-node), "
                       "as Slurm gives a job submitted without --mem its DefMemPerNode."),
            std::string::npos)
      << r.out;
  r = run_peakcast("simulate " + trace_ + " --json " + asked);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream gi(given), ai(asked);
  const auto g = nlohmann::json::parse(gi), a = nlohmann::json::parse(ai);
  EXPECT_EQ(g["results"], a["results"]);
  // A bare number is MB, as in slurm.conf: 8192 MB is the same 8 GiB.
  r = run_peakcast("simulate " + unrequested + " --policies presets --def-mem-per-cpu 8192");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto full = run_peakcast("simulate " + trace_ + " --policies presets");
  ASSERT_EQ(full.exit_code, 0) << full.out;
  EXPECT_EQ(r.out.substr(r.out.find("policy ")), full.out.substr(full.out.find("policy "))) << r.out;
  // Slurm takes one or the other; a size must be one.
  expect_usage_error(unrequested + " --def-mem-per-node 8G --def-mem-per-cpu 1G", "excludes");
  expect_usage_error(unrequested + " --def-mem-per-node lots", "--def-mem-per-node: not a memory size above 0: 'lots'");
  expect_usage_error(unrequested + " --def-mem-per-cpu 0", "--def-mem-per-cpu: not a memory size above 0: '0'");
}

// Sizey's reader takes every row with an rss, whatever its status: a resumed run's CACHED tasks
// count under --protocol sizey (as the same rows marked COMPLETED do) and are left out under
// chrono, whose history is what this run executed.
TEST_F(SimulateCli, SizeyCountsCachedTasksAsSizeyDoesAndChronoLeavesThemOut) {
  const std::string cached = write_edited("trace_cached.csv", [](std::string& line, int row) {
    if (row > 0 && row % 4 == 0) line.replace(line.find(",COMPLETED,"), 11, ",CACHED,");
  });
  const auto with_cached = expect_sizey_figures_of_the_toy(cached);
  EXPECT_NE(with_cached.out.find("20 CACHED tasks kept"), std::string::npos) << with_cached.out;
  const auto [chrono, jc] = run_with_json(cached + " --protocol chrono --policies max_so_far");
  EXPECT_NE(chrono.out.find("20 CACHED tasks ignored"), std::string::npos) << chrono.out;
  const auto [full_chrono, jd] = run_with_json(trace_ + " --protocol chrono --policies max_so_far");
  ASSERT_FALSE(jc.is_null() || jd.is_null());
  EXPECT_LT(jc["results"][0]["jobs"].get<int>(), jd["results"][0]["jobs"].get<int>());
}

TEST_F(SimulateCli, ATaskTypeLeftOutIsSaidInTheJsonAsOnStderr) {
  // A third process with 3 tasks: Sizey's protocol leaves it out (fewer than 34).
  {
    std::ofstream out(trace_, std::ios::app);
    for (int i = 0; i < 3; ++i) {
      out << 100 + i << ",WF:TINY,COMPLETED,1073741824,1674490200000,1674490260000,60000,1000000,1000000,5\n";
    }
  }
  const std::string json = (dir_ / "left_out.json").string();
  auto r = run_peakcast("simulate " + trace_ + " --policies max_so_far --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string line = "left out of Sizey's protocol: WF:TINY (3 tasks < 34)";
  EXPECT_NE(r.out.find("peakcast simulate: " + line), std::string::npos) << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["notes"].size(), 1u) << j["notes"];
  EXPECT_EQ(j["notes"][0], line);
}

// --json -: standard output is the JSON alone (the tables go to standard error), so a pipe to jq
// works.
TEST_F(SimulateCli, JsonToStandardOutputIsJsonAlone) {
  auto r = run_peakcast("simulate " + trace_ + " --policies peakcast,vpa --json -", "2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out.substr(0, 400);
  EXPECT_EQ(j["results"].size(), 2u);
  auto tables = run_peakcast("simulate " + trace_ + " --policies peakcast,vpa --json -", "2>&1 >/dev/null");
  EXPECT_NE(tables.out.find("peakcast"), std::string::npos) << tables.out;  // the table, on stderr
}

TEST_F(SimulateCli, SameSeedSameNumbers) {
  auto a = run_peakcast("simulate " + trace_ + " --policies peakcast,vpa --seed 3");
  auto b = run_peakcast("simulate " + trace_ + " --policies peakcast,vpa --seed 3");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  // The replays of several seeds on one thread or several: the same JSON, byte for byte (stderr's
  // progress lines carry times).
  const std::string one_json = (dir_ / "threads1.json").string(), three_json = (dir_ / "threads3.json").string();
  const std::string args = " --policies peakcast,vpa,max_so_far --seed 3 --seeds 3 --json ";
  auto one = run_peakcast("simulate " + trace_ + args + one_json + " --threads 1");
  auto three = run_peakcast("simulate " + trace_ + args + three_json + " --threads 3");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  ASSERT_EQ(three.exit_code, 0) << three.out;
  EXPECT_NE(one.out.find("mean over 3 seeds"), std::string::npos) << one.out;
  const std::string json = slurp(one_json);
  EXPECT_EQ(nlohmann::json::parse(json)["results"].size(), 9u);
  EXPECT_EQ(json, slurp(three_json));
}

// --type-by script sizes each job script with its own runs, as peakcastd does; by default a trace
// without a workload groups its jobs by name. Two scripts under one job name: one type or two.
TEST_F(SimulateCli, TasksAreTypedByScriptAsTheDaemonSizesThem) {
  const std::string jsonl = (dir_ / "scripts.jsonl").string();
  {
    std::ofstream f(jsonl);
    for (int i = 0; i < 60; ++i) {
      const bool big = i % 2 == 0;
      const long long submit = 1700000000LL + 600LL * i;
      f << nlohmann::json{{"job_id", std::to_string(i)}, {"user", "alice"}, {"job_name", "run.sh"},
                          {"script", big ? "#!/bin/bash\n./sim --size big\n" : "#!/bin/bash\n./sim --size small\n"},
                          {"submit_time", submit}, {"start_time", submit}, {"end_time", submit + 300},
                          {"req_mem_bytes", 16000000000LL},
                          {"peak_mem_bytes", big ? 8000000000LL + 1000000LL * i : 1000000000LL + 1000000LL * i}}
                .dump()
        << "\n";
    }
  }
  const std::string args = jsonl + " --protocol chrono --policies max_so_far,peakcast --per-workload";
  const auto [by_name, j_name] = run_with_json(args);
  const auto [by_script, j_script] = run_with_json(args + " --type-by script");
  ASSERT_FALSE(j_name.is_null());
  ASSERT_FALSE(j_script.is_null());
  EXPECT_EQ(j_name["results"][0]["per_workload"].size(), 1u) << by_name.out;
  EXPECT_EQ(j_script["results"][0]["per_workload"].size(), 2u) << by_script.out;
  // Each script alone is steady: sized by script, peakcast holds the small runs far closer.
  EXPECT_LT(j_script["results"][1]["waste_gbh"].get<double>(), j_name["results"][1]["waste_gbh"].get<double>());
  expect_usage_error(trace_ + " --type-by user", "--type-by");
}

TEST_F(SimulateCli, BadArgumentsAreClearErrors) {
  auto r = run_peakcast("simulate " + trace_ + " --policies oracle");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown sizing policy 'oracle'"), std::string::npos) << r.out;
  expect_usage_error(trace_ + " --protocol random", "--protocol");
  expect_usage_error(trace_ + " --failure-price -1", "--failure-price: must be a number of GBh from 0 to 1e9");
  expect_usage_error(trace_ + " --failure-price inf", "--failure-price: must be a number of GBh from 0 to 1e9");
  r = run_peakcast("simulate " + trace_ + " --policies peakcast --failure-price 0.5");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // sacct without Submit (as the Yale traces): no event order and no run time. The chrono
  // protocol used to replay it with every run time 0 and report 0 GB*h for every policy.
  const std::string sacct = (dir_ / "no_submit.txt").string();
  {
    std::ofstream f(sacct);
    f << "JobID|JobName|MaxRSS|Elapsed|ReqMem|ReqCPUS|Timelimit|\n";
    for (int i = 1; i <= 40; ++i) {
      f << "7" << i << "|job.sh||01:00:00|1Gn|1|02:00:00|\n";
      f << "7" << i << ".batch|batch|" << 300 + i << "M|01:00:00|1Gn|1||\n";
    }
  }
  expect_usage_error(sacct + " --protocol chrono", "no submit times");
  expect_usage_error(trace_ + " --protocol chrono --seeds 3", "--seeds: the chrono protocol");
  expect_usage_error(trace_ + " --seeds 1000000000", "--seeds: at most 10000");
  // A negative --seeds was CLI11's "Could not convert: --seeds = -1".
  expect_usage_error(trace_ + " --seeds -1", "--seeds: must be above 0, got -1");
  expect_usage_error(trace_ + " --seeds 0", "--seeds: must be above 0, got 0");
  expect_usage_error(trace_ + " --seed 4294967295 --seeds 2", "the last seed would pass");
  // A negative --seed used to wrap to 4294967295 without a word.
  expect_usage_error(trace_ + " --seed -1", "--seed: must be 0 or more, got -1");
  expect_usage_error(trace_ + " --threads -2", "--threads: must be 0 (all cores) or more, got -2");
  r = run_peakcast("simulate " + (dir_ / "missing.csv").string());
  EXPECT_NE(r.exit_code, 0);
  r = run_peakcast("simulate --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--protocol"), std::string::npos);
}

}  // namespace
