// The report library without a browser: SIM.json and EVAL.json checks, which plots appear for
// which data, coverage sums and the page's inline safety. The usage grouping is
// report_usage_test.cpp; the page drawn in Chromium is report_page_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "peakcast/report/report.h"
#include "report/report_internal.h"
#include "report/report_test_util.h"

namespace peakcast::report {
namespace {

using nlohmann::json;
using report_test::plot_ids;

json sample_sim() {
  return json::parse(R"({"results": [
    {"policy": "requested", "waste_gbh": 900.5, "failures": 0, "retries": 0, "jobs": 100, "failed_jobs": 0},
    {"policy": "recommended", "waste_gbh": 300.25, "failures": 3, "retries": 3, "jobs": 100, "failed_jobs": 2}],
    "notes": ["hand-built for the test"], "extra": {"ignored": true}})");
}

json sample_eval() {
  return json::parse(R"({"config": {"baseline": "hier_last1"}, "results": [
    {"method": "hier_last1", "resource": "mem", "n": 50, "mae": 0.12, "acc10": 0.6,
     "mae_diff_vs_hier_last1": null,
     "subgroups": {"exact_script": {"n": 30, "mae": 0.05, "acc10": 0.8},
                   "user_only": {"n": 20, "mae": 0.2, "acc10": 0.3}, "none": {"n": 0, "mae": 0, "acc10": 0}},
     "routes": {"exact_script": 30, "user": 20}, "routing": null,
     "latency_us": {"exact_script": {"n": 10, "p50": 1.5, "p99": 4.0}}},
    {"method": "cascade", "resource": "mem", "n": 50, "mae": 0.09, "acc10": 0.7,
     "sd": {"mae": 0.004},
     "mae_diff_vs_hier_last1": {"point": -0.03, "lo": -0.05, "hi": -0.01},
     "subgroups": {"exact_script": {"n": 30, "mae": 0.04, "acc10": 0.85}},
     "routes": {"bypass": 30, "encoder": 20},
     "routing": {"encoder_share": 0.4, "bypass_share": 0.6, "cache_share": 0.1},
     "latency_us": {"bypass": {"n": 10, "p50": 3, "p99": 9}, "encoder": {"n": 10, "p50": 300, "p99": 900}}}]})");
}

TEST(ReportSim, ParsesTheDocumentedSchema) {
  auto sim = parse_sim(sample_sim(), "SIM.json");
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  ASSERT_EQ(sim->results.size(), 2u);
  EXPECT_EQ(sim->results[1].policy, "recommended");
  EXPECT_DOUBLE_EQ(sim->results[1].waste_gbh.mean, 300.25);
  EXPECT_EQ(sim->results[1].failures.mean, 3);
  EXPECT_EQ(sim->results[1].failed_jobs.mean, 2);
  EXPECT_EQ(sim->notes, std::vector<std::string>{"hand-built for the test"});
  // The table says what the first policy (the baseline) would have saved against the others.
  const std::string table = sim_table(*sim);
  EXPECT_NE(table.find("saved vs requested"), std::string::npos);
  EXPECT_NE(table.find("<td>600.2</td>"), std::string::npos) << table;  // 900.5 - 300.25
  EXPECT_FALSE(sim->comparison.has_value());  // neither policy is peakcast or a known baseline
  EXPECT_EQ(table.find("best baseline"), std::string::npos);
}

TEST(ReportSim, RowsOfOnePolicyOverSeedsBecomeTheirMeans) {
  // `peakcast simulate --seeds 2 --json` writes one row per policy and seed.
  auto sim = parse_sim(json::parse(R"({"results": [
    {"policy": "presets", "seed": 1, "waste_gbh": 100, "failures": 0, "retries": 0, "jobs": 10, "failed_jobs": 0},
    {"policy": "peakcast", "seed": 1, "waste_gbh": 30, "failures": 3, "retries": 3, "jobs": 10, "failed_jobs": 2},
    {"policy": "presets", "seed": 2, "waste_gbh": 120, "failures": 0, "retries": 0, "jobs": 10, "failed_jobs": 0},
    {"policy": "peakcast", "seed": 2, "waste_gbh": 50, "failures": 2, "retries": 2, "jobs": 10, "failed_jobs": 1}]})"),
                       "SIM.json");
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  ASSERT_EQ(sim->results.size(), 2u);
  EXPECT_EQ(sim->results[0].policy, "presets");
  EXPECT_EQ(sim->results[1].policy, "peakcast");
  EXPECT_EQ(sim->results[1].seeds, 2u);
  EXPECT_DOUBLE_EQ(sim->results[1].waste_gbh.mean, 40.0);
  EXPECT_DOUBLE_EQ(sim->results[1].waste_gbh.min, 30.0);
  EXPECT_DOUBLE_EQ(sim->results[1].waste_gbh.max, 50.0);
  EXPECT_DOUBLE_EQ(sim->results[1].failures.mean, 2.5);
  const std::string table = sim_table(*sim);
  EXPECT_NE(table.find("mean waste"), std::string::npos) << table;
  EXPECT_NE(table.find("<td>40.0</td><td>30.0 – 50.0</td><td>70.0</td><td>2.5</td>"), std::string::npos) << table;
  // The bottom line above the table: peakcast against the baseline of least mean waste.
  ASSERT_TRUE(sim->comparison.has_value());
  EXPECT_EQ(sim->comparison->best_baseline, "presets");
  EXPECT_NE(table.find("peakcast against the best baseline</b> (presets, the least waste, means over 2 seeds): "
                       "0.36× its waste (40.0 against 110.0 GB·h), 2.5 failed attempts against 0.0."),
            std::string::npos)
      << table;
  // One row per policy in the plots too.
  ReportInput in;
  in.sim = *sim;
  for (const Plot& p : make_plots(in)) {
    if (p.id == "sizing-waste") {
      EXPECT_EQ(p.spec["data"]["values"].size(), 2u);
    }
  }
}

TEST(ReportSim, ErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* why;
  } cases[] = {
      {R"([])", "expected a JSON object"},
      {R"({"results": {}})", "results: missing or not a list"},
      {R"({"results": []})", "results: empty"},
      {R"({"results": [{"waste_gbh": 1, "failures": 0, "retries": 0, "jobs": 1, "failed_jobs": 0}]})", "results[0].policy"},
      {R"({"results": [{"policy": "p", "waste_gbh": -1, "failures": 0, "retries": 0, "jobs": 1, "failed_jobs": 0}]})", "results[0].waste_gbh"},
      {R"({"results": [{"policy": "p", "waste_gbh": 1, "failures": 1.5, "retries": 0, "jobs": 1, "failed_jobs": 0}]})", "results[0].failures"},
      {R"({"results": [{"policy": "p", "waste_gbh": 1, "failures": 0, "retries": 0, "jobs": 1}]})", "results[0].failed_jobs: missing"},
      {R"({"results": [{"policy": "p", "waste_gbh": 1, "failures": 0, "retries": 0, "jobs": 1, "failed_jobs": 2}]})", "more than jobs"},
  };
  for (const Case& c : cases) {
    auto sim = parse_sim(json::parse(c.json), "S.json");
    ASSERT_FALSE(sim.ok()) << c.json;
    EXPECT_NE(sim.status().message().find(c.why), std::string::npos) << sim.status().message();
    EXPECT_EQ(sim.status().message().rfind("S.json", 0), 0u) << sim.status().message();
  }
}

TEST(ReportEval, ChecksTheEvaluateJsonShape) {
  EXPECT_TRUE(check_eval_json(sample_eval(), "E.json").is_ok());
  auto bad = check_eval_json(json::parse(R"({"results": [{"method": "x", "resource": "mem"}]})"), "E.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("E.json: results[0].mae"), std::string::npos) << bad.message();
  EXPECT_FALSE(check_eval_json(json::parse(R"({"trace": {}})"), "E.json").is_ok());
}

// left_out (the methods evaluate could not train, said on the page): a list of {method, reason}.
TEST(ReportEval, LeftOutIsAListOfMethodsAndReasons) {
  json eval = sample_eval();
  eval["left_out"] = json::parse(R"([{"method": "cascade", "reason": "too young"}])");
  EXPECT_TRUE(check_eval_json(eval, "E.json").is_ok()) << check_eval_json(eval, "E.json").message();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"3", "E.json: left_out: not a list"},
      {R"([{"method": "cascade"}])", "E.json: left_out[0].reason: missing or not text"},
      {R"([{"method": 1, "reason": "x"}])", "E.json: left_out[0].method: missing or not text"},
      {R"(["cascade"])", "E.json: left_out[0].method: missing or not text"},
  };
  for (const auto& [value, why] : cases) {
    eval["left_out"] = json::parse(value);
    const Status s = check_eval_json(eval, "E.json");
    EXPECT_FALSE(s.is_ok()) << value;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  }
}

// Every field the page reads from an EVAL.json is checked up front: a wrongly typed one was an
// uncaught type_error ("peakcast: internal error", exit 1) while drawing, not an input error naming
// the field. The nulls `peakcast evaluate --json` itself writes still pass.
TEST(ReportEval, EveryFieldThePageReadsIsChecked) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(/config/baseline)", "5"},
      {R"(/results/0/n)", "null"},
      {R"(/results/0/acc10)", "\"high\""},
      {R"(/results/1/mae_diff_vs_hier_last1/point)", "null"},
      {R"(/results/1/mae_diff_vs_hier_last1/lo)", "\"x\""},
      {R"(/results/1/routing/encoder_share)", "null"},
      {R"(/results/0/subgroups/exact_script)", "3"},
      {R"(/results/0/subgroups/exact_script/n)", "null"},
      {R"(/results/0/subgroups/exact_script/mae)", "null"},
      {R"(/results/0/subgroups/user_only/acc10)", "[]"},
      {R"(/results/0/routes/user)", "\"many\""},
      {R"(/results/0/latency_us/exact_script)", "1"},
      {R"(/results/1/latency_us/bypass/p99)", "null"},
      {R"(/results/1/latency_us/bypass/n)", "\"ten\""},
      // counts the page reads as integers (nlohmann's cast of 1e300 to one: undefined)
      {R"(/results/0/n)", "1e300"},
      {R"(/results/0/subgroups/exact_script/n)", "-1"},
      {R"(/results/1/latency_us/bypass/n)", "2.5"},
  };
  for (const auto& [pointer, value] : cases) {
    json eval = sample_eval();
    eval[json::json_pointer(pointer)] = json::parse(value);
    const Status s = check_eval_json(eval, "E.json");
    // "/results/1/routing/x" -> "results[1].routing.x"
    std::string field = pointer.substr(1);
    field.replace(field.find('/'), 3, "[" + field.substr(field.find('/') + 1, 1) + "].");
    for (size_t p = field.find('/'); p != std::string::npos; p = field.find('/')) field[p] = '.';
    if (pointer.starts_with("/config")) field = "config.baseline";
    EXPECT_FALSE(s.is_ok()) << pointer << " = " << value;
    EXPECT_NE(s.message().find("E.json: " + field), std::string::npos) << s.message();
  }
  // What evaluate writes: an empty subgroup's nulls, no interval, no routing, sd null.
  json eval = sample_eval();
  eval["results"][0]["subgroups"]["none"] = {{"n", 0}, {"mae", nullptr}, {"acc10", nullptr}};
  eval["results"][0]["mae_diff_vs_hier_last1"] = nullptr;
  eval["results"][0]["routing"] = nullptr;
  eval["results"][0]["sd"] = {{"mae", nullptr}};
  EXPECT_TRUE(check_eval_json(eval, "E.json").is_ok()) << check_eval_json(eval, "E.json").message();
  ReportInput in;
  in.eval = eval;
  EXPECT_NO_THROW(make_plots(in));
  EXPECT_NO_THROW(methods_table(eval));
  EXPECT_NO_THROW(subgroups_table(eval));
}

// A row run on one seed has no spread: its s.d. of 0 is shown as "–", not as "0.0000".
TEST(ReportEval, TheSdOverSeedsOnlyWhereThereWereSeveral) {
  json eval = sample_eval();
  json& one = eval["results"][0];
  one["seeds"] = 1;
  one["sd"] = {{"mae", 0.0}};
  json& five = eval["results"][1];
  five["seeds"] = 5;
  five["sd"] = {{"mae", 0.0042}};
  const std::string t = methods_table(eval);
  EXPECT_EQ(t.find("0.0000"), std::string::npos) << t;
  EXPECT_NE(t.find("<td>0.0042</td>"), std::string::npos) << t;
  EXPECT_TRUE(seed_sd_mae(one).is_null());
  EXPECT_DOUBLE_EQ(seed_sd_mae(five).get<double>(), 0.0042);
  ReportInput in;
  in.eval = eval;
  for (const Plot& p : make_plots(in)) {
    if (p.id != "methods") continue;
    const json& values = p.spec.at("data").at("values");
    ASSERT_EQ(values.size(), 2u);
    EXPECT_FALSE(values[0].contains("mae_sd")) << values[0];
    EXPECT_DOUBLE_EQ(values[1].at("mae_sd").get<double>(), 0.0042);
  }
}

// The tree route's share has its own place beside the code model's (an older JSON without it: 0).
TEST(ReportEval, RoutingSharesShowTheTreeRoute) {
  json eval = sample_eval();
  eval["results"][1]["routing"] = {{"encoder_share", 0.1}, {"tree_share", 0.3}, {"bypass_share", 0.6},
                                   {"cache_share", 0.0}};
  const std::string t = methods_table(eval);
  EXPECT_NE(t.find("<th>encoder / tree / bypass / cache</th>"), std::string::npos) << t;
  EXPECT_NE(t.find("<td>10.0 / 30.0 / 60.0 / 0.0%</td>"), std::string::npos) << t;
  EXPECT_NE(methods_table(sample_eval()).find("<td>40.0 / 0.0 / 60.0 / 10.0%</td>"), std::string::npos);
}

// `peakcast evaluate --json` writes an empty subgroup's metrics as null: no score, not 0.
TEST(ReportEval, AnEmptySubgroupIsShownWithoutAScore) {
  json eval = sample_eval();
  eval["results"][0]["subgroups"]["none"] = {{"n", 0}, {"mae", nullptr}, {"mse", nullptr}, {"rmse", nullptr},
                                             {"acc10", nullptr}};
  EXPECT_TRUE(check_eval_json(eval, "E.json").is_ok());
  const std::string t = subgroups_table(eval);
  EXPECT_NE(t.find("<td>none</td><td>0</td><td>–</td><td>–</td>"), std::string::npos) << t;
  ReportInput in;
  in.eval = eval;
  EXPECT_NO_THROW(make_plots(in));
}

TEST(ReportPlots, EachSectionOnlyWithItsData) {
  ReportInput in;
  EXPECT_TRUE(plot_ids(in).empty());
  in.eval = sample_eval();
  EXPECT_EQ(plot_ids(in), (std::set<std::string>{"methods", "subgroups-mem", "routing", "latency"}));
  for (const Plot& p : make_plots(in)) {
    if (p.id == "subgroups-mem") {
      EXPECT_EQ(p.title, "Error by subgroup: memory");
    }
  }
  in.sim = *parse_sim(sample_sim(), "SIM.json");
  EXPECT_TRUE(plot_ids(in).count("sizing-waste"));
  EXPECT_TRUE(plot_ids(in).count("sizing-failures"));
  EXPECT_FALSE(plot_ids(in).count("recommendations-waste"));
  in.recommendations = RecommendationOutcome{*parse_sim(sample_sim(), "the test block"), {}};
  EXPECT_TRUE(plot_ids(in).count("recommendations-waste"));
  EXPECT_TRUE(plot_ids(in).count("recommendations-failures"));
  EXPECT_TRUE(plot_ids(in).count("sizing-waste")) << "both sections, each with its own plots";
  in.predictions.push_back({"1", Resource::kVram, 0.5, 0.4, "bypass", "exact_script", 0.7, 0.9, false, ""});
  in.usage.push_back({"ana", "ml", "gpu", 1'700'000'000, 8.0, 2.0, std::nullopt});
  const auto ids = plot_ids(in);
  EXPECT_TRUE(ids.count("accuracy-vram"));
  EXPECT_FALSE(ids.count("accuracy-mem")) << "no mem predictions";
  EXPECT_TRUE(ids.count("coverage"));
  for (const char* u : {"usage-user", "usage-account", "usage-partition"}) EXPECT_TRUE(ids.count(u)) << u;
}

// A trace of a million jobs has 200,000 test jobs: one SVG point each would give a page of tens of
// MB that no browser draws. The plot samples them evenly, says so, and the coverage counts all.
TEST(ReportPlots, AccuracyPointsAreCappedAndTheTitleSaysSo) {
  ReportInput in;
  const size_t n = 3 * kAccuracyPoints + 7;
  for (size_t i = 0; i < n; ++i) {
    in.predictions.push_back({std::to_string(i), Resource::kMem, 0.5, 0.4, "tree", "exact_script",
                              0.6, 0.9, false, ""});
  }
  in.predictions.push_back({"v", Resource::kVram, 0.5, 0.4, "tree", "exact_script", 0.6, 0.9, false, ""});
  bool mem = false, vram = false;
  for (const Plot& p : make_plots(in)) {
    if (p.id == "accuracy-mem") {
      mem = true;
      const json& rows = p.spec.at("data").at("values");
      EXPECT_EQ(rows.size(), kAccuracyPoints);
      EXPECT_EQ(rows.front().at("job"), "0") << "the first test job";
      EXPECT_NE(p.spec.at("title").dump().find("5,000 of 15,007 test jobs"),
                std::string::npos) << p.spec.at("title");
      std::set<std::string> ids;
      for (const json& r : rows) ids.insert(r.at("job").get<std::string>());
      EXPECT_EQ(ids.size(), kAccuracyPoints) << "no job twice";
      EXPECT_GT(std::stoul(rows.back().at("job").get<std::string>()), n - 4) << "spread to the last";
      // Slurm's words for the resource, and what its utilization is a share of.
      EXPECT_NE(p.spec.at("title").dump().find("Predicted vs actual memory utilization"), std::string::npos)
          << p.spec.at("title");
      EXPECT_NE(p.spec.dump().find("peak / requested memory"), std::string::npos);
    }
    if (p.id == "accuracy-vram") {
      vram = true;
      EXPECT_EQ(p.spec.at("data").at("values").size(), 1u);
      EXPECT_EQ(p.spec.at("title").dump().find(" of "), std::string::npos) << "all shown";
      EXPECT_NE(p.spec.at("title").dump().find("Predicted vs actual VRAM utilization"), std::string::npos)
          << p.spec.at("title");
      EXPECT_NE(p.spec.dump().find("peak / the requested GPUs' memory"), std::string::npos);
      EXPECT_EQ(p.title, "Predicted vs actual: VRAM");
    }
    if (p.id == "coverage") {
      EXPECT_EQ(p.spec.at("data").at("values").at(0).at("n"), n) << "coverage counts every job";
    }
  }
  EXPECT_TRUE(mem);
  EXPECT_TRUE(vram);
}

// Vega labels each plot's container with the spec's description (aria-label), else with "Vega
// visualization" for every plot alike: a screen reader could not tell one plot from the next.
TEST(ReportPlots, EveryPlotDescribesItselfToAScreenReader) {
  ReportInput in;
  in.eval = sample_eval();
  in.sim = *parse_sim(sample_sim(), "SIM.json");
  in.predictions.push_back({"1", Resource::kVram, 0.5, 0.4, "bypass", "exact_script", 0.7, 0.9, false, ""});
  in.usage.push_back({"ana", "ml", "gpu", 1'700'000'000, 8.0, 2.0, std::nullopt});
  const std::vector<Plot> plots = make_plots(in);
  ASSERT_GT(plots.size(), 8u);
  std::set<std::string> seen;
  for (const Plot& p : plots) {
    ASSERT_TRUE(p.spec.contains("description")) << p.id;
    const std::string d = p.spec.at("description").get<std::string>();
    EXPECT_TRUE(seen.insert(d).second) << p.id << ": " << d << " describes another plot too";
    if (p.spec.at("title").is_string()) {
      EXPECT_NE(d.find(p.spec.at("title").get<std::string>()), std::string::npos) << p.id;
    }
  }
}

TEST(ReportPlots, LatencyIsTakenOncePerMethod) {
  ReportInput in;
  in.eval = sample_eval();
  json dup = in.eval->at("results")[1];
  dup["resource"] = "vram";
  (*in.eval)["results"].push_back(dup);
  for (const Plot& p : make_plots(in)) {
    if (p.id != "latency") continue;
    EXPECT_EQ(p.spec.at("data").at("values").size(), 3u) << "hier_last1: 1 route, cascade: 2";
  }
}

TEST(ReportCoverage, ObservedAgainstNominalPerRoute) {
  std::vector<PredictedJob> preds = {
      {"1", Resource::kMem, 0.5, 0.4, "bypass", "exact_script", 0.6, 0.9, false, ""},   // covered
      {"2", Resource::kMem, 0.8, 0.4, "bypass", "exact_script", 0.6, 0.9, false, ""},   // not
      {"3", Resource::kMem, 0.3, 0.3, "encoder", "user", 0.5, 0.8, false, ""},          // covered
      {"4", Resource::kMem, 1.0, 0.3, "encoder", "user", 1.0, 0.8, true, ""},           // killed at its bound: missed
      {"5", Resource::kMem, 0.3, 0.3, "encoder", "user", std::nullopt, std::nullopt, false, ""},  // no bound
  };
  std::map<std::string, CoverageRow> by;
  for (const CoverageRow& c : coverage_rows(preds)) by[c.route] = c;
  ASSERT_EQ(by.size(), 3u);
  EXPECT_EQ(by["all"].n, 4u);
  EXPECT_DOUBLE_EQ(by["all"].observed, 2.0 / 4.0);
  EXPECT_NEAR(by["all"].nominal, (0.9 + 0.9 + 0.8 + 0.8) / 4.0, 1e-12);
  EXPECT_DOUBLE_EQ(by["bypass"].observed, 0.5);
  EXPECT_DOUBLE_EQ(by["encoder"].observed, 0.5);
  // No script keys: every job is a script of its own.
  EXPECT_EQ(by["all"].scripts, 4u);
  EXPECT_LE(by["all"].lo, by["all"].observed);
  EXPECT_GE(by["all"].hi, by["all"].observed);
}

// The interval resamples scripts: ten scripts of ten jobs, one of them missed whole, give a wide
// interval; the same misses spread one per script give none (every draw covers 0.9).
TEST(ReportCoverage, TheIntervalResamplesScripts) {
  auto rows = [](bool by_script) {
    std::vector<PredictedJob> preds;
    for (int s = 0; s < 10; ++s) {
      for (int j = 0; j < 10; ++j) {
        const bool missed = by_script ? s == 0 : j == 0;
        PredictedJob p{std::to_string(s * 10 + j), Resource::kMem, missed ? 0.9 : 0.5, 0.4, "bypass",
                       "exact_script", 0.6, 0.9, false, "script" + std::to_string(s)};
        preds.push_back(p);
      }
    }
    std::map<std::string, CoverageRow> by;
    for (const CoverageRow& c : coverage_rows(preds)) by[c.route] = c;
    return by["all"];
  };
  const CoverageRow whole = rows(true), spread = rows(false);
  EXPECT_DOUBLE_EQ(whole.observed, 0.9);
  EXPECT_DOUBLE_EQ(spread.observed, 0.9);
  EXPECT_EQ(whole.scripts, 10u);
  EXPECT_NEAR(spread.lo, 0.9, 1e-12);
  EXPECT_NEAR(spread.hi, 0.9, 1e-12);
  EXPECT_LT(whole.lo, 0.85);
  EXPECT_NEAR(whole.hi, 1.0, 1e-12);
  const std::string table = coverage_table({});
  EXPECT_NE(table.find("95% interval (scripts resampled)"), std::string::npos);
}

TEST(ReportHtml, InlineTextCannotCloseItsElement) {
  EXPECT_EQ(script_safe("a</script>b</SCRIPT x</div>"), "a<\\/script>b<\\/SCRIPT x</div>");
  EXPECT_EQ(html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

// A job id or user name is data for the plots, inlined as JSON in a <script> element. "<!--"
// followed by "<script" there puts HTML's tokenizer into the script's double-escaped state: the
// element's own "</script>" no longer ends it, it swallows the page's script that draws the plots,
// and the page stays blank (checked in Chromium). No '<' may reach that element: the JSON spells
// it \u003c, which parses back to the same string.
TEST(ReportHtml, PlotDataCannotEscapeItsScriptElement) {
  if (!have_plotting_library()) GTEST_SKIP() << "built without the plotting library (npm missing)";
  const std::string hostile = "<!--<script>x</script><script>alert(1)</script>";
  ReportInput in;
  in.predictions = {{hostile, Resource::kMem, 0.5, 0.4, "bypass", "exact_script", 0.6, 0.9, false, ""}};
  in.usage = {{hostile, "acct", "part", 86400, 4.0, 2.0, std::nullopt}};
  auto page = render_html(in);
  ASSERT_TRUE(page.ok()) << page.status().message();
  const std::string open = "id=\"peakcast-plots\">";
  const size_t from = page->find(open);
  ASSERT_NE(from, std::string::npos);
  const size_t to = page->find("</script>", from);
  ASSERT_NE(to, std::string::npos);
  const std::string data = page->substr(from + open.size(), to - from - open.size());
  EXPECT_EQ(data.find('<'), std::string::npos) << data.substr(0, 400);
  const json plots = json::parse(data);
  EXPECT_NE(plots.dump().find(hostile), std::string::npos) << "the names survive, unchanged";
  // The page's own script follows the data, outside it.
  EXPECT_NE(page->find("document.querySelectorAll('table.sortable')", to), std::string::npos);
}

// A plot's id carries EVAL.json's resource name (subgroups-RESOURCE) into the page's markup, as
// its container's id attribute: a name with a quote must not end the attribute.
TEST(ReportHtml, APlotIdFromEvalJsonStaysInsideItsAttribute) {
  if (!have_plotting_library()) GTEST_SKIP() << "built without the plotting library (npm missing)";
  ReportInput in;
  in.eval = sample_eval();
  const std::string hostile = "mem\"><b id=\"pwned\">x</b><i x=\"";
  for (json& e : (*in.eval)["results"]) e["resource"] = hostile;
  auto page = render_html(in);
  ASSERT_TRUE(page.ok()) << page.status().message();
  EXPECT_EQ(page->find("<b id=\"pwned\">"), std::string::npos);
  EXPECT_NE(page->find("id=\"plot-subgroups-mem&quot;&gt;&lt;b id=&quot;pwned&quot;&gt;"), std::string::npos);
  // The page's script finds the container by the id in the JSON: the same text, unescaped.
  EXPECT_NE(page->find("\"id\":\"subgroups-mem\\\">\\u003cb id"), std::string::npos);
}

// The page's GB are 10^9 bytes while Slurm's --mem=24G is 24 GiB: a 24G request reads 25.77 GB in
// the usage table. The page says which GB it means where it first shows one.
TEST(ReportHtml, ThePageSaysWhichGigabyteItMeans) {
  if (!have_plotting_library()) GTEST_SKIP() << "built without the plotting library (npm missing)";
  ReportInput in;
  in.usage = {{"ana", "ml", "gpu", 86400, 25.769803776, 2.0, std::nullopt}};
  auto page = render_html(in);
  ASSERT_TRUE(page.ok()) << page.status().message();
  const size_t usage = page->find("<section id=\"usage\">");
  ASSERT_NE(usage, std::string::npos);
  const std::string section = page->substr(usage, page->find("</section>", usage) - usage);
  EXPECT_NE(section.find("GB are 10⁹ bytes"), std::string::npos) << section.substr(0, 800);
  EXPECT_NE(section.find("24 GiB"), std::string::npos);
}

// The page inlines Vega, Vega-Lite and vega-embed, whose browser builds bundle d3, semver,
// fast-json-patch and tslib and carry no notice of their own: the licences (BSD-3-Clause, ISC,
// MIT, 0BSD) ask that the copyright notice travel with each copy, so the page carries them.
TEST(ReportHtml, ThePageCarriesTheLicencesOfWhatItInlines) {
  if (!have_plotting_library()) GTEST_SKIP() << "built without the plotting library (npm missing)";
  ReportInput in;
  in.eval = sample_eval();
  auto page = render_html(in);
  ASSERT_TRUE(page.ok()) << page.status().message();
  const size_t at = page->find("<details id=\"licences\">");
  ASSERT_NE(at, std::string::npos);
  const std::string notices = page->substr(at, page->find("</details>", at) - at);
  for (const char* pkg : {"== ", "vega ", "vega-lite ", "vega-embed ", "d3-array ", "semver ",
                          "fast-json-patch ", "tslib ", "json-stringify-pretty-compact "}) {
    EXPECT_NE(notices.find(pkg), std::string::npos) << pkg;
  }
  size_t copyrights = 0;
  for (size_t p = notices.find("Copyright"); p != std::string::npos; p = notices.find("Copyright", p + 1)) ++copyrights;
  EXPECT_GE(copyrights, 10u);
  EXPECT_NE(notices.find("University of Washington Interactive Data Lab"), std::string::npos);
  EXPECT_EQ(notices.find("<script"), std::string::npos) << "the texts are escaped";
}

TEST(ReportHtml, PageCarriesEveryPlotAndNoFetch) {
  if (!have_plotting_library()) GTEST_SKIP() << "built without the plotting library (npm missing)";
  ReportInput in;
  in.eval = sample_eval();
  in.sim = *parse_sim(sample_sim(), "SIM.json");
  in.notes.push_back("user </script><script>alert(1)</script> note");
  auto page = render_html(in);
  ASSERT_TRUE(page.ok()) << page.status().message();
  for (const Plot& p : make_plots(in)) {
    EXPECT_NE(page->find("id=\"plot-" + p.id + "\""), std::string::npos) << p.id;
  }
  EXPECT_EQ(page->find("<script>alert(1)"), std::string::npos) << "notes are escaped";
  EXPECT_EQ(page->find("src=\"http"), std::string::npos) << "nothing is loaded from the network";
  EXPECT_EQ(page->find("<link"), std::string::npos);
  EXPECT_NE(page->find("vega-embed"), std::string::npos);
  EXPECT_GT(page->size(), 500'000u) << "the library is inlined";
  EXPECT_NE(page->find("class=\"sortable\""), std::string::npos);
}

// The baseline's own row compared the baseline with itself ("+0.0000 [+0.0000, +0.0000]"), and a
// test block within one submit day gave a day-block bootstrap "interval" that is a point
// ("-0.0105 [-0.0105, -0.0105]" on the eager trace), which read as a certain difference.
TEST(ReportEval, TheBaselineRowAndAOneDayIntervalSayWhatTheyAre) {
  json eval = sample_eval();
  eval["results"][0]["mae_diff_vs_hier_last1"] = {{"point", 0.0}, {"lo", 0.0}, {"hi", 0.0}, {"days", 1}};
  eval["results"][1]["mae_diff_vs_hier_last1"] = {{"point", -0.03}, {"lo", -0.03}, {"hi", -0.03}, {"days", 1}};
  const std::string one_day = methods_table(eval);
  EXPECT_EQ(one_day.find("[+0.0000, +0.0000]"), std::string::npos) << one_day;
  EXPECT_NE(one_day.find("<td>(baseline)</td>"), std::string::npos) << one_day;
  EXPECT_EQ(one_day.find("[-0.0300, -0.0300]"), std::string::npos) << one_day;
  EXPECT_NE(one_day.find("-0.0300 (no interval: 1 submit day)"), std::string::npos) << one_day;
  eval["results"][1]["mae_diff_vs_hier_last1"] = {{"point", -0.03}, {"lo", -0.05}, {"hi", -0.01}, {"days", 9}};
  const std::string days = methods_table(eval);
  EXPECT_NE(days.find("-0.0300 [-0.0500, -0.0100]"), std::string::npos) << days;
}

// Where the day bootstrap had one submit day, the page said there was no interval; EVAL.json now
// carries the bootstrap over the block's scripts, and the page shows it, marked, and says so in the
// header. An EVAL.json from before (no such key) still loads and reads as it did.
TEST(ReportEval, AOneDayBlockShowsTheIntervalOverItsScripts) {
  json eval = sample_eval();
  eval["config"]["bootstrap"] = 1000;
  eval["results"][1]["mae_diff_vs_hier_last1"] = {{"point", -0.03}, {"lo", -0.03}, {"hi", -0.03}, {"days", 1}};
  eval["results"][1]["mae_diff_vs_hier_last1_by_script"] = {
      {"point", -0.03}, {"mean", -0.031}, {"lo", -0.06}, {"hi", 0.004}, {"scripts", 12}, {"resamples", 1000}};
  ASSERT_TRUE(check_eval_json(eval, "E.json").is_ok());
  const std::string one_day = methods_table(eval);
  EXPECT_NE(one_day.find("-0.0300 [-0.0600, +0.0040] (by script)</td>"), std::string::npos) << one_day;
  EXPECT_EQ(one_day.find("no interval"), std::string::npos) << one_day;
  EXPECT_NE(one_day.find("[95% CI, 1,000 resamples of the days, or of the scripts where marked]"), std::string::npos)
      << one_day;
  // Over several days the day interval stays, and so does the header.
  eval["results"][1]["mae_diff_vs_hier_last1"] = {{"point", -0.03}, {"lo", -0.05}, {"hi", -0.01}, {"days", 9}};
  const std::string days = methods_table(eval);
  EXPECT_NE(days.find("-0.0300 [-0.0500, -0.0100]</td>"), std::string::npos) << days;
  EXPECT_EQ(days.find("(by script)"), std::string::npos) << days;
  EXPECT_NE(days.find("[95% CI, 1,000 day-block resamples]"), std::string::npos) << days;
  // A wrongly typed script interval is an input error naming the field.
  eval["results"][1]["mae_diff_vs_hier_last1_by_script"]["lo"] = "x";
  const Status bad = check_eval_json(eval, "E.json");
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("E.json: results[1].mae_diff_vs_hier_last1_by_script.lo"), std::string::npos)
      << bad.message();
  eval["results"][1]["mae_diff_vs_hier_last1_by_script"] = {{"point", -0.03}, {"lo", -0.06}, {"hi", 0.004}, {"scripts", 2.5}};
  EXPECT_FALSE(check_eval_json(eval, "E.json").is_ok());
  // An older EVAL.json, without the key: it loads, and one day reads as before.
  eval["results"][1].erase("mae_diff_vs_hier_last1_by_script");
  eval["results"][1]["mae_diff_vs_hier_last1"] = {{"point", -0.03}, {"lo", -0.03}, {"hi", -0.03}, {"days", 1}};
  ASSERT_TRUE(check_eval_json(eval, "E.json").is_ok());
  ReportInput in;
  in.eval = eval;
  EXPECT_NO_THROW(make_plots(in));
  const std::string old = methods_table(eval);
  EXPECT_NE(old.find("-0.0300 (no interval: 1 submit day)"), std::string::npos) << old;
  EXPECT_NE(old.find("[95% CI, 1,000 day-block resamples]"), std::string::npos) << old;
}

// Evaluate's notes (a test block of one submit day, a Nextflow trace's user taken from its file
// name) are in EVAL.json, but the page showed none of them.
TEST(ReportHtml, TheEvaluationsAndTheReadersNotesAreOnThePage) {
  if (!have_plotting_library()) GTEST_SKIP() << "built without the plotting library (npm missing)";
  ReportInput in;
  in.eval = sample_eval();
  (*in.eval)["notes"] = {"mem: the test block spans only 1 submit day(s)", 7};
  (*in.eval)["reader"] = {{"notes", {"Nextflow trace has no user column"}}};
  auto page = render_html(in);
  ASSERT_TRUE(page.ok()) << page.status().message();
  const std::string header = page->substr(0, page->find("</header>"));
  EXPECT_NE(header.find("<li>evaluation: mem: the test block spans only 1 submit day(s)</li>"), std::string::npos);
  EXPECT_NE(header.find("<li>trace: Nextflow trace has no user column</li>"), std::string::npos);
}


// `peakcast report` resamples 1,000 times by default, `peakcast evaluate` 10,000: the same trace's
// interval ends differ in the last digit (LANL hier_median3: +0.0066 on the page, +0.0069 from
// evaluate), and the page did not say how many it drew.
TEST(ReportEval, TheIntervalSaysHowManyResamplesItDrew) {
  json eval = sample_eval();
  eval["config"]["bootstrap"] = 1000;
  EXPECT_NE(methods_table(eval).find("[95% CI, 1,000 day-block resamples]"), std::string::npos) << methods_table(eval);
  eval["config"].erase("bootstrap");
  EXPECT_NE(methods_table(eval).find("[95% CI]</th>"), std::string::npos) << "unknown: not said";
}

}  // namespace
}  // namespace peakcast::report
