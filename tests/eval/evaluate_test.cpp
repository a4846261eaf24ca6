#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "eval/eval_fixtures.h"
#include "peakcast/eval/evaluate.h"
#include "peakcast/eval/report.h"

namespace peakcast::eval {
namespace {

using testing::make_job;
using testing::random_trace;
using testing::with_vram;

MethodRegistry builtins() {
  MethodRegistry r;
  register_builtins(r);
  return r;
}

const ResultRow* find_row(const EvalReport& rep, std::string_view method, Resource r) {
  for (const ResultRow& row : rep.results) {
    if (row.method == method && row.resource == r) return &row;
  }
  return nullptr;
}

TEST(Registry, BuiltinsAndUnknownNamesListValidOnes) {
  MethodRegistry reg = builtins();
  const std::vector<std::string> want = {"hier_last1",    "hier_median3",  "hier_median5",
                                         "hier_ewma",     "global_median", "hier_combined",
                                         "history_policy"};
  EXPECT_EQ(reg.names(), want);
  Result<std::unique_ptr<Method>> bad = reg.create("hier_last2", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hier_median5"), std::string::npos);
  Result<std::vector<std::string>> list = reg.resolve("hier_ewma, hier_last1,hier_ewma");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<std::string>{"hier_ewma", "hier_last1"}));
  EXPECT_EQ(reg.resolve("all")->size(), want.size());
  EXPECT_FALSE(reg.resolve("nope").ok());
  EXPECT_THROW(reg.add("hier_last1", "", nullptr), std::logic_error);
}

std::vector<Job> cycling(size_t n) {
  std::vector<Job> jobs;
  const double cycle[3] = {0.5, 0.5, 0.9};
  for (size_t i = 0; i < n; ++i) {
    const auto t = static_cast<int64_t>(i) * 100;
    jobs.push_back(make_job("j" + std::to_string(i), "alice", "s1", t, t + 50, cycle[i % 3]));
  }
  return jobs;
}

// history::choose_estimate keeps the combined estimate unless another is better by more than
// z standard errors of the paired difference.
TEST(ChooseEstimate, NeedsAClearGainToLeaveTheCombinedEstimate) {
  using history::Expert;
  std::vector<std::array<double, history::kNumEstimates>> clear, noisy;
  for (int i = 0; i < 200; ++i) {
    // median3 better by 0.05 +- 0.01 on every job: a clear gain.
    clear.push_back({0.2, i % 2 ? 0.11 : 0.09, 0.2, 0.2, 0.15});
    // median3 better on average by 0.01 but with spread 0.2: not clear on 200 jobs.
    noisy.push_back({0.3, i % 2 ? 0.44 : 0.04, 0.3, 0.3, 0.25});
  }
  EXPECT_EQ(history::choose_estimate(clear), Expert::kMedian3);
  EXPECT_EQ(history::choose_estimate(noisy), Expert::kCombined);
  EXPECT_EQ(history::choose_estimate({}), Expert::kCombined);
  EXPECT_EQ(history::choose_estimate(clear, 1e9), Expert::kCombined);  // no gain is clear enough
}

// One script whose labels cycle 0.5, 0.5, 0.9: Last-1 is wrong twice a cycle, the medians once.
TEST(HistoryPolicy, ChoosesOnValidationAndFreezes) {
  std::vector<Job> jobs = cycling(600);
  Result<Split> split = make_split(jobs, SplitConfig{});
  ASSERT_TRUE(split.ok());
  EvalData data = build_eval_data(*split, 1.0);
  // The choice, recomputed here: priors from the train block, errors on validation.
  history::ExpertPriorAccumulator prior;
  for (const JobContext& c : data.jobs) {
    if (c.block == Block::kTrain) prior.add(c.view[0], c.job->label(Resource::kMem));
  }
  std::vector<std::array<double, history::kNumEstimates>> errs;
  for (const JobContext& c : data.jobs) {
    if (c.block != Block::kValidation) continue;
    std::array<double, history::kNumEstimates> row{};
    for (history::Expert e : history::kEstimates) {
      row[static_cast<size_t>(e)] =
          std::fabs(c.view[0].estimate(e, data.fallback[0], prior.priors()) - c.job->label(Resource::kMem));
    }
    errs.push_back(row);
  }
  const history::Expert want = history::choose_estimate(errs);
  ASSERT_NE(want, history::Expert::kLast1) << "fixture should not favour Last-1";

  MethodRegistry reg = builtins();
  auto policy = reg.create("history_policy", {});
  ASSERT_TRUE(policy.ok());
  ASSERT_TRUE((*policy)->fit(data, {}).is_ok());
  std::string chosen;
  for (const auto& [k, v] : (*policy)->choices()) {
    if (k == "mem.expert") chosen = v;
  }
  EXPECT_EQ(chosen, history::expert_name(want));

  // And the frozen choice is what the test block gets: same MAE as its hierarchical twin.
  EvalConfig cfg;
  cfg.bootstrap = 0;
  Result<EvalReport> rep = evaluate_jobs(jobs, reg, cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  const std::string twin = want == history::Expert::kMedian3   ? "hier_median3"
                           : want == history::Expert::kMedian5 ? "hier_median5"
                           : want == history::Expert::kEwma   ? "hier_ewma"
                                                               : "hier_combined";
  const ResultRow* p = find_row(*rep, "history_policy", Resource::kMem);
  const ResultRow* h = find_row(*rep, twin, Resource::kMem);
  const ResultRow* l = find_row(*rep, "hier_last1", Resource::kMem);
  ASSERT_TRUE(p && h && l);
  EXPECT_DOUBLE_EQ(p->metrics.mae, h->metrics.mae);
  EXPECT_LT(p->metrics.mae, l->metrics.mae);
}

// 12 runs of alice's script s1, then a test block of three: s1 again (exact history), a new
// script of alice (user history only), a new user (none).
std::vector<Job> subgroup_trace() {
  std::vector<Job> jobs;
  for (int i = 0; i < 12; ++i) {
    jobs.push_back(with_vram(make_job("t" + std::to_string(i), "alice", "s1", i * 100, i * 100 + 50,
                                      0.2 + 0.05 * i),
                             0.3));
  }
  jobs.push_back(make_job("x", "alice", "s1", 1200, 1250, 0.6));
  jobs.push_back(make_job("y", "alice", "s2", 1300, 1350, 0.5));
  jobs.push_back(make_job("z", "carol", "s3", 1400, 1450, 0.5));
  return jobs;
}

TEST(Evaluate, SubgroupsFollowHistoryLevelAtSubmission) {
  std::vector<Job> jobs = subgroup_trace();
  MethodRegistry reg = builtins();
  EvalConfig cfg;
  cfg.methods = {"hier_last1", "global_median"};
  cfg.bootstrap = 100;
  Result<EvalReport> rep = evaluate_jobs(jobs, reg, cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_EQ(rep->split.test, 3u);
  EXPECT_EQ(rep->scored[idx(Resource::kVram)], 0u);  // no test job has a VRAM label
  EXPECT_EQ(find_row(*rep, "hier_last1", Resource::kVram), nullptr);
  const ResultRow* row = find_row(*rep, "hier_last1", Resource::kMem);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->metrics.n, 3u);
  for (int g = 0; g < 3; ++g) EXPECT_EQ(row->subgroups[g].n, 1u) << kSubgroupNames[g];
  // x: s1's last label 0.75 vs 0.6; y: alice's last (x, ended before y's submit) 0.6 vs 0.5;
  // z: nobody's history, the fallback.
  EXPECT_NEAR(row->subgroups[0].mae, 0.15, 1e-6);
  EXPECT_NEAR(row->subgroups[1].mae, 0.10, 1e-6);
  EXPECT_NEAR(row->subgroups[2].mae, std::abs(rep->fallback[0] - 0.5), 1e-6);
  EXPECT_EQ(row->routes.at("exact_script"), 1u);
  EXPECT_EQ(row->routes.at("user"), 1u);
  EXPECT_EQ(row->routes.at("fallback"), 1u);
  // The baseline against itself: a zero interval.
  ASSERT_TRUE(row->mae_diff_vs_baseline);
  EXPECT_EQ(row->mae_diff_vs_baseline->lo, 0.0);
  EXPECT_EQ(row->mae_diff_vs_baseline->hi, 0.0);
}

// A job killed under a lowered limit (Job::ran_mem_bytes) needed at least its label: a prediction
// at or above it has no known error, one below it misses by the difference (scored_error, as the
// cascade's policy scores it). The row, its subgroups and the bootstrap's per-job errors agree.
TEST(Evaluate, ALowerBoundIsScoredOneSided) {
  std::vector<Job> jobs = subgroup_trace();
  auto lower_limit = [](Job& j, uint64_t killed_at_bytes) {
    j.state = "OUT_OF_MEMORY";
    j.peak_mem_bytes.reset();
    j.ran_mem_bytes = killed_at_bytes;
    const std::string key = j.script_key;
    compute_labels(j);
    j.script_key = key;
  };
  Job& x = jobs[12];  // s1's next run (Last-1 0.75), killed at 0.3 of its request
  lower_limit(x, 300'000);
  Job& z = jobs[14];  // a new user (the training median 0.4), killed at 0.5
  lower_limit(z, 500'000);
  for (const Job* j : {&x, &z}) {
    ASSERT_TRUE(j->is_valid(Resource::kMem));
    ASSERT_FALSE(label_exact(*j, Resource::kMem, 1.0));
  }
  MethodRegistry reg = builtins();
  EvalConfig cfg;
  cfg.methods = {"hier_last1", "global_median"};
  cfg.bootstrap = 100;
  Result<EvalReport> rep = evaluate_jobs(jobs, reg, cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  const ResultRow* row = find_row(*rep, "hier_last1", Resource::kMem);
  ASSERT_NE(row, nullptr);
  ASSERT_EQ(row->metrics.n, 3u);
  // x: 0.75 is above its lower bound 0.3, no known error (two-sided it was 0.45).
  EXPECT_EQ(row->subgroups[0].n, 1u);
  EXPECT_EQ(row->subgroups[0].mae, 0.0);
  EXPECT_EQ(row->subgroups[0].mse, 0.0);
  EXPECT_EQ(row->subgroups[0].acc10, 1.0);
  // y (exact): alice's last label, x's 0.3, against 0.5.
  EXPECT_NEAR(row->subgroups[1].mae, 0.2, 1e-6);
  // z: the fallback below its lower bound misses by the difference.
  ASSERT_LT(rep->fallback[0], 0.5 - 0.01);
  EXPECT_NEAR(row->subgroups[2].mae, 0.5 - rep->fallback[0], 1e-6);
  EXPECT_NEAR(row->metrics.mae, (0.2 + 0.5 - rep->fallback[0]) / 3.0, 1e-6);
  // The paired bootstrap resamples the same per-job errors as the rows.
  const ResultRow* gm = find_row(*rep, "global_median", Resource::kMem);
  ASSERT_TRUE(gm && gm->mae_diff_vs_baseline);
  EXPECT_NEAR(gm->mae_diff_vs_baseline->point, gm->metrics.mae - row->metrics.mae, 1e-12);
  EXPECT_EQ(gm->subgroups[0].mae, 0.0);  // the training median 0.4 is above x's 0.3 too
}

TEST(Evaluate, HierLast1MatchesIndependentReference) {
  std::vector<Job> jobs = random_trace(600, 11);
  MethodRegistry reg = builtins();
  EvalConfig cfg;
  cfg.methods = {"hier_last1"};
  cfg.bootstrap = 0;
  Result<EvalReport> rep = evaluate_jobs(jobs, reg, cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  for (Resource r : kResources) {
    const ResultRow* row = find_row(*rep, "hier_last1", r);
    ASSERT_NE(row, nullptr);
    auto [mae, n] = testing::plain_last1_mae(jobs, r, 0.8, rep->fallback[idx(r)]);
    EXPECT_EQ(row->metrics.n, n);
    EXPECT_NEAR(row->metrics.mae, mae, 1e-9) << resource_name(r);
  }
  EXPECT_GT(rep->split.purged_train + rep->split.purged_validation, 0u);
}

TEST(Evaluate, BootstrapIsSeededAndPaired) {
  std::vector<Job> jobs = random_trace(800, 5);
  MethodRegistry reg = builtins();
  EvalConfig cfg;
  cfg.bootstrap = 300;
  cfg.seed = 9;
  Result<EvalReport> a = evaluate_jobs(jobs, reg, cfg);
  Result<EvalReport> b = evaluate_jobs(jobs, reg, cfg);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->results.size(), b->results.size());
  for (size_t i = 0; i < a->results.size(); ++i) {
    const auto& x = a->results[i].mae_diff_vs_baseline;
    const auto& y = b->results[i].mae_diff_vs_baseline;
    ASSERT_TRUE(x && y);
    EXPECT_EQ(x->lo, y->lo);
    EXPECT_EQ(x->hi, y->hi);
    const ResultRow* base = find_row(*a, "hier_last1", a->results[i].resource);
    EXPECT_NEAR(x->point, a->results[i].metrics.mae - base->metrics.mae, 1e-12);
  }
}

TEST(Evaluate, JsonFieldNames) {
  std::vector<Job> jobs = random_trace(300, 3);
  MethodRegistry reg = builtins();
  EvalConfig cfg;
  cfg.bootstrap = 50;
  ingest::Trace trace;
  trace.path = "mem://random";
  trace.format = ingest::Format::kJsonl;
  trace.jobs = jobs;
  trace.stats.jobs = jobs.size();
  Result<EvalReport> rep = evaluate(trace, reg, cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  const nlohmann::json j = to_json(*rep);
  EXPECT_EQ(j.at("trace").at("path"), "mem://random");
  EXPECT_EQ(j.at("trace").at("format"), "jsonl");
  for (const char* k : {"total", "train", "validation", "test", "purged_train", "purged_validation"}) {
    EXPECT_TRUE(j.at("split").contains(k)) << k;
  }
  for (const char* k : {"jobs", "skipped", "labelled", "clipped", "censored", "reasons"}) {
    EXPECT_TRUE(j.at("reader").contains(k)) << k;
  }
  const auto& results = j.at("results");
  ASSERT_EQ(results.size(), 14u);  // seven methods x two resources
  std::set<std::string> methods;
  for (const auto& e : results) {
    for (const char* k : {"method", "resource", "n", "mae", "mse", "rmse", "acc10"}) {
      EXPECT_TRUE(e.contains(k)) << k;
    }
    for (const char* k : {"0.8", "0.9", "0.95"}) {
      EXPECT_EQ(e.at("coverage_interval").at(k).size(), 2u) << k;  // --bootstrap 50
    }
    EXPECT_GE(e.at("bound_scripts").get<size_t>(), 1u);
    methods.insert(e.at("method").get<std::string>());
    const std::string res = e.at("resource");
    EXPECT_TRUE(res == "mem" || res == "vram");
    for (const char* k : {"mean", "lo", "hi"}) {
      EXPECT_TRUE(e.at("mae_diff_vs_hier_last1").at(k).is_number()) << k;
    }
    for (const char* g : {"exact_script", "user_only", "none"}) {
      for (const char* k : {"n", "mae", "mse", "rmse", "acc10"}) {
        EXPECT_TRUE(e.at("subgroups").at(g).contains(k)) << g << "." << k;
      }
    }
  }
  EXPECT_EQ(methods.size(), 7u);
  // The text printers carry the same rows.
  EXPECT_NE(render_table(*rep).find("history_policy"), std::string::npos);
  EXPECT_NE(render_markdown(*rep).find("| hier_ewma | mem |"), std::string::npos);
  const std::string csv = render_csv(*rep);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 15);
  // Every line has the header's columns; the bound's coverage, then what the interval resampled,
  // close each row.
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  EXPECT_NE(header.find(",coverage_0.9,coverage_0.9_lo,coverage_0.9_hi,bound_width_0.9,bound_scripts"),
            std::string::npos);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), std::count(header.begin(), header.end(), ','))
        << line;
  }
  const ResultRow& first = rep->results.front();
  ASSERT_GT(first.bounds.n, 0u);
  std::istringstream again(csv);
  std::getline(again, header);
  std::string row;
  std::getline(again, row);
  EXPECT_NE(row.find(fmt::format(",{:.6g},", first.bounds.coverage[1])), std::string::npos) << row;
}

std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream in(line);
  for (std::string c; std::getline(in, c, ',');) cells.push_back(c);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

TEST(Evaluate, AnEmptySubgroupHasNoScoreInJsonAndCsv) {
  // Every user is seen early, so no test job is without history: `none` is empty.
  std::vector<Job> jobs = random_trace(300, 3);
  MethodRegistry reg = builtins();
  EvalConfig cfg;
  cfg.methods = {"hier_last1", "global_median"};
  cfg.bootstrap = 0;
  Result<EvalReport> rep = evaluate_jobs(jobs, reg, cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  const nlohmann::json j = to_json(*rep);
  const std::string csv = render_csv(*rep);
  std::istringstream lines(csv);
  std::string header_line;
  std::getline(lines, header_line);
  const std::vector<std::string> header = csv_cells(header_line);
  size_t empty = 0, full = 0;
  for (size_t i = 0; i < rep->results.size(); ++i) {
    const ResultRow& row = rep->results[i];
    std::string line;
    std::getline(lines, line);
    const std::vector<std::string> cells = csv_cells(line);
    ASSERT_EQ(cells.size(), header.size()) << line;
    for (size_t g = 0; g < kSubgroupNames.size(); ++g) {
      const std::string name(kSubgroupNames[g]);
      const nlohmann::json& sub = j.at("results").at(i).at("subgroups").at(name);
      const auto col = std::find(header.begin(), header.end(), name + "_mae") - header.begin();
      ASSERT_LT(static_cast<size_t>(col), header.size()) << name;
      EXPECT_EQ(sub.at("n"), row.subgroups[g].n);
      EXPECT_EQ(cells[static_cast<size_t>(col) - 1], std::to_string(row.subgroups[g].n)) << line;
      if (row.subgroups[g].n == 0) {
        ++empty;
        for (const char* k : {"mae", "mse", "rmse", "acc10"}) {
          EXPECT_TRUE(sub.at(k).is_null()) << name << "." << k << ": an empty subgroup is no perfect score";
        }
        EXPECT_EQ(cells[static_cast<size_t>(col)], "") << name << ": " << line;
      } else {
        ++full;
        for (const char* k : {"mae", "mse", "rmse", "acc10"}) EXPECT_TRUE(sub.at(k).is_number()) << name << "." << k;
        EXPECT_EQ(cells[static_cast<size_t>(col)], fmt::format("{:.6g}", row.subgroups[g].mae)) << line;
      }
    }
  }
  EXPECT_GT(empty, 0u) << "the trace has an empty subgroup";
  EXPECT_GT(full, 0u);
}

TEST(Evaluate, RefusesTraceWithoutSubmitTimes) {
  ingest::Trace trace;
  trace.path = "dump.txt";
  trace.format = ingest::Format::kSacct;
  trace.jobs = random_trace(50, 1);
  trace.has_submit_times = false;
  MethodRegistry reg = builtins();
  Result<EvalReport> rep = evaluate(trace, reg, EvalConfig{});
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.status().kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(rep.status().message().find("no submit times"), std::string::npos);
}

TEST(Evaluate, UnknownMethodListsValidNames) {
  MethodRegistry reg = builtins();
  EvalConfig cfg;
  cfg.methods = {"xgboost"};
  Result<EvalReport> rep = evaluate_jobs(random_trace(50, 2), reg, cfg);
  ASSERT_FALSE(rep.ok());
  EXPECT_NE(rep.status().message().find("hier_last1"), std::string::npos);
}

// Two rows of the same MAE difference: "one_day" (its day interval the point) and "four_days"
// ([-0.02, -0.001]).
EvalReport one_and_four_days() {
  EvalReport rep;
  for (size_t days : {1, 4}) {
    ResultRow row;
    row.method = days == 1 ? "one_day" : "four_days";
    row.metrics.n = 10;
    row.mae_diff_vs_baseline = BootstrapInterval{-0.0105, -0.0105, days == 1 ? -0.0105 : -0.02,
                                                 days == 1 ? -0.0105 : -0.001, days, 100};
    rep.results.push_back(row);
  }
  return rep;
}

// A day-block bootstrap over one submit day resamples that day alone: its interval is the point,
// and the table and markdown say there is none rather than print "[-0.0105, -0.0105]".
TEST(Evaluate, AOneDayIntervalIsSaidToBeNone) {
  const EvalReport rep = one_and_four_days();
  for (const std::string& text : {render_table(rep), render_markdown(rep)}) {
    EXPECT_NE(text.find("-0.0105 (no interval: 1 submit day)"), std::string::npos) << text;
    EXPECT_EQ(text.find("[-0.0105, -0.0105]"), std::string::npos) << text;
    EXPECT_NE(text.find("-0.0105 [-0.0200, -0.0010]"), std::string::npos) << text;
  }
}

// A test block within one submit day (the Nextflow traces') is one block for the day bootstrap,
// whose "interval" is its point, so the tables said there was none. The bootstrap over the block's
// scripts has one: in the JSON beside the day one (null in the baseline's row), and in the tables
// where the day one has a single day, marked "(by script)".
TEST(Evaluate, AOneDayBlockGetsTheIntervalOverItsScripts) {
  std::vector<Job> jobs = random_trace(400, 3);
  for (size_t i = 0; i < jobs.size(); i += 7) jobs[i].script_key.clear();  // a script of its own
  MethodRegistry reg = builtins();
  EvalConfig cfg;
  cfg.methods = {"hier_last1", "global_median", "hier_median3"};
  cfg.bootstrap = 200;
  Result<EvalReport> rep = evaluate_jobs(jobs, reg, cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  // The scripts of each resource's scored test jobs, counted from the split.
  Result<Split> split = make_split(jobs, cfg.split);
  ASSERT_TRUE(split.ok());
  std::array<std::set<std::string>, kNumResources> keys;
  std::array<size_t, kNumResources> keyless{};
  for (size_t i = 0; i < split->order.size(); ++i) {
    const Job& job = *split->order[i];
    if (split->block[i] != Block::kTest) continue;
    for (Resource r : kResources) {
      if (!job.is_valid(r)) continue;
      if (job.script_key.empty()) {
        ++keyless[idx(r)];
      } else {
        keys[idx(r)].insert(job.script_key);
      }
    }
  }
  const nlohmann::json j = to_json(*rep);
  ASSERT_EQ(j.at("results").size(), 6u);
  for (const nlohmann::json& e : j.at("results")) {
    const nlohmann::json& day = e.at("mae_diff_vs_hier_last1");
    const nlohmann::json& by_script = e.at("mae_diff_vs_hier_last1_by_script");
    EXPECT_EQ(day.at("days"), 1);
    if (e.at("method") == "hier_last1") {
      EXPECT_TRUE(by_script.is_null());
      continue;
    }
    const size_t r = e.at("resource") == "mem" ? 0 : 1;
    ASSERT_TRUE(by_script.is_object()) << e.at("method");
    EXPECT_EQ(by_script.at("scripts").get<size_t>(), keys[r].size() + keyless[r]);
    EXPECT_GT(keyless[r], 0u);
    EXPECT_EQ(by_script.at("resamples"), 200);
    EXPECT_EQ(by_script.at("point").get<double>(), day.at("point").get<double>());
    EXPECT_LT(by_script.at("lo").get<double>(), by_script.at("hi").get<double>());
  }
  const ResultRow* gm = find_row(*rep, "global_median", Resource::kMem);
  ASSERT_TRUE(gm && gm->mae_diff_by_script);
  const BootstrapInterval& s = *gm->mae_diff_by_script;
  const std::string cell = fmt::format("{:+.4f} [{:+.4f}, {:+.4f}] (by script)", s.point, s.lo, s.hi);
  const std::string table = render_table(*rep);
  for (const std::string& text : {table, render_markdown(*rep)}) {
    EXPECT_NE(text.find(cell), std::string::npos) << text;
    EXPECT_EQ(text.find("no interval"), std::string::npos) << text;
  }
  EXPECT_NE(table.find(fmt::format("; where a test block is one submit day, over its scripts (mem {}, vram {})",
                                   keys[0].size() + keyless[0], keys[1].size() + keyless[1])),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(fmt::format("note: mem: the test block spans only 1 submit day, so the day-block "
                                   "bootstrap has one block and its interval is the point; the tables give "
                                   "the bootstrap's over the block's {} scripts instead",
                                   keys[0].size() + keyless[0])),
            std::string::npos)
      << table;
  const std::string csv = render_csv(*rep);
  EXPECT_NE(csv.find(fmt::format("global_median,mem,{},", gm->metrics.n)), std::string::npos);
  EXPECT_NE(csv.find(fmt::format(",{:.6g},{:.6g},{:.6g},", s.point, s.lo, s.hi)), std::string::npos) << csv;
  EXPECT_NE(csv.find(fmt::format(",scripts,{}\n", s.scripts)), std::string::npos) << csv;
  // The bootstrap off: the key is there, null.
  cfg.bootstrap = 0;
  Result<EvalReport> off = evaluate_jobs(jobs, reg, cfg);
  ASSERT_TRUE(off.ok());
  for (const nlohmann::json& e : to_json(*off).at("results")) {
    ASSERT_TRUE(e.contains("mae_diff_vs_hier_last1_by_script"));
    EXPECT_TRUE(e.at("mae_diff_vs_hier_last1_by_script").is_null());
  }
}

// Over two or more submit days the tables keep the day interval (the script one stays in the
// JSON); over one day with a single script neither has an interval to give.
TEST(Evaluate, TheTablesShowTheScriptIntervalOnlyForOneDay) {
  EvalReport rep = one_and_four_days();
  rep.bootstrap = 100;
  for (ResultRow& row : rep.results) {
    row.mae_diff_by_script = BootstrapInterval{-0.0105, -0.011, -0.03, 0.002, 0, 100, 7};
  }
  ResultRow single = rep.results[0];
  single.method = "one_script";
  single.mae_diff_by_script->scripts = 1;
  rep.results.push_back(single);
  const std::string table = render_table(rep);
  for (const std::string& text : {table, render_markdown(rep)}) {
    EXPECT_NE(text.find("-0.0105 [-0.0300, +0.0020] (by script)"), std::string::npos) << text;
    EXPECT_NE(text.find("-0.0105 [-0.0200, -0.0010]"), std::string::npos) << text;
    EXPECT_EQ(text.find("-0.0105 [-0.0200, -0.0010] (by script)"), std::string::npos) << text;
    EXPECT_NE(text.find("-0.0105 (no interval: 1 submit day, 1 script)"), std::string::npos) << text;
  }
  EXPECT_NE(table.find("over its scripts (mem 7)"), std::string::npos) << table;
  const std::string csv = render_csv(rep);
  EXPECT_NE(csv.find("one_day,mem,10,0,0,0,0,-0.0105,-0.03,0.002,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("four_days,mem,10,0,0,0,0,-0.0105,-0.02,-0.001,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",days,4\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",scripts,7\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",days,1\n"), std::string::npos) << csv;  // one script: the day's point
}

}  // namespace
}  // namespace peakcast::eval
