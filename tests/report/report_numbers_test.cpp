// The page's numbers as an administrator reads them: 1,000 and more with thousands separators
// ("12,120", "20,191.6") in its tables, sentences and plot titles, each separated number's cell
// carrying the plain number in data-sort (the page's sort reads a cell through parseFloat, and
// "12,120" parses as 12). The machine-read JSON inside the page keeps plain numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "peakcast/report/report.h"
#include "peakcast/synth/synth.h"
#include "report/report_internal.h"

namespace peakcast::report {
namespace {

using nlohmann::json;

// The data-sort of the cell that shows `shown`, or nullopt when there is no such cell or it has
// none.
std::optional<double> sort_key_of(const std::string& table, const std::string& shown) {
  const std::string end = "\">" + shown + "</td>";
  const size_t at = table.find(end);
  if (at == std::string::npos) return std::nullopt;
  const size_t open = table.rfind("<td data-sort=\"", at);
  if (open == std::string::npos) return std::nullopt;
  const std::string key = table.substr(open + 15, at - open - 15);
  if (key.find('<') != std::string::npos) return std::nullopt;  // another cell's
  return std::stod(key);
}

// The cells without a data-sort that lead with a separated number: the page would sort them as
// the digits before the first comma.
std::vector<std::string> unsortable_cells(const std::string& table) {
  std::vector<std::string> out;
  static const std::regex cell("<td>([-+]?\\d{1,3}(,\\d{3})+[^<]*)</td>");
  for (auto it = std::sregex_iterator(table.begin(), table.end(), cell); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

TEST(ReportNumbers, GroupedSeparatesTheWholePartOnly) {
  EXPECT_EQ(grouped(999), "999");
  EXPECT_EQ(grouped(size_t{12120}), "12,120");
  EXPECT_EQ(grouped(int64_t{-1234567}), "-1,234,567");
  EXPECT_EQ(grouped(20191.6, 1), "20,191.6");
  EXPECT_EQ(grouped(999.96, 1), "1,000.0") << "grouped after rounding";
  EXPECT_EQ(grouped(1234.5678, 4), "1,234.5678") << "no separator after the point";
  EXPECT_EQ(number_cell(grouped(999), 999), "<td>999</td>");
  EXPECT_EQ(number_cell(grouped(1000), 1000), "<td data-sort=\"1000\">1,000</td>");
}

TEST(ReportNumbers, SimulatorTableAndSentenceSeparateThousands) {
  // Two seeds of each policy: means 157,793.1 and 20,191.6 GB·h.
  auto sim = parse_sim(json::parse(R"({"results": [
    {"policy": "presets", "seed": 1, "waste_gbh": 150000.0, "failures": 0, "retries": 0, "jobs": 12120, "failed_jobs": 0},
    {"policy": "peakcast", "seed": 1, "waste_gbh": 20000.0, "failures": 1200, "retries": 1200, "jobs": 12120, "failed_jobs": 1000},
    {"policy": "presets", "seed": 2, "waste_gbh": 165586.2, "failures": 0, "retries": 0, "jobs": 12120, "failed_jobs": 0},
    {"policy": "peakcast", "seed": 2, "waste_gbh": 20383.2, "failures": 1300, "retries": 1300, "jobs": 12120, "failed_jobs": 1001}]})"),
                       "SIM.json");
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  const std::string t = sim_table(*sim);
  EXPECT_NEAR(sort_key_of(t, "157,793.1").value_or(-1), 157793.1, 1e-6) << t;
  EXPECT_NEAR(sort_key_of(t, "20,191.6").value_or(-1), 20191.6, 1e-6) << t;
  EXPECT_NEAR(sort_key_of(t, "137,601.5").value_or(-1), 137601.5, 1e-6) << "saved vs presets: " << t;
  EXPECT_NEAR(sort_key_of(t, "1,250.0").value_or(-1), 1250.0, 1e-9) << "mean failures: " << t;
  EXPECT_NEAR(sort_key_of(t, "1,000.5").value_or(-1), 1000.5, 1e-9) << "mean failed jobs: " << t;
  EXPECT_EQ(sort_key_of(t, "12,120").value_or(-1), 12120) << t;
  // A range sorts by its low end.
  EXPECT_EQ(sort_key_of(t, "150,000.0 – 165,586.2").value_or(-1), 150000.0) << t;
  EXPECT_NE(t.find("<td>0.0</td>"), std::string::npos) << "below 1,000 a cell stays as it was: " << t;
  EXPECT_EQ(unsortable_cells(t), std::vector<std::string>{}) << t;
  EXPECT_NE(t.find("(20,191.6 against 157,793.1 GB·h), 1,250.0 failed attempts against 0.0."), std::string::npos)
      << t;
}

TEST(ReportNumbers, MethodAndSubgroupTablesSeparateJobCounts) {
  const json eval = json::parse(R"({"config": {"baseline": "hier_last1", "bootstrap": 10000}, "results": [
    {"method": "hier_last1", "resource": "mem", "n": 12120, "mae": 0.12, "acc10": 0.6,
     "subgroups": {"exact_script": {"n": 1000, "mae": 0.05, "acc10": 0.8},
                   "none": {"n": 999, "mae": 0.2, "acc10": 0.3}}}]})");
  const std::string m = methods_table(eval);
  EXPECT_EQ(sort_key_of(m, "12,120").value_or(-1), 12120) << m;
  EXPECT_NE(m.find("10,000 day-block resamples"), std::string::npos) << m;
  EXPECT_EQ(unsortable_cells(m), std::vector<std::string>{}) << m;
  const std::string s = subgroups_table(eval);
  EXPECT_EQ(sort_key_of(s, "1,000").value_or(-1), 1000) << s;
  EXPECT_NE(s.find("<td>999</td>"), std::string::npos) << s;
}

TEST(ReportNumbers, CoverageAndUsageTablesSeparateThousands) {
  std::vector<PredictedJob> preds;
  for (int i = 0; i < 1200; ++i) {
    preds.push_back({std::to_string(i), Resource::kMem, 0.5, 0.4, "tree", "exact_script",
                     i % 10 == 0 ? 0.3 : 0.6, 0.9, false, "s" + std::to_string(i % 7)});
  }
  const std::string c = coverage_table(preds);
  EXPECT_EQ(sort_key_of(c, "1,200").value_or(-1), 1200) << c;
  EXPECT_EQ(unsortable_cells(c), std::vector<std::string>{}) << c;

  std::vector<UsagePoint> usage;
  for (int i = 0; i < 1500; ++i) {
    usage.push_back({"alice", "", "", 1'700'000'000 + i, 2000.0, 10.0,
                     i < 1200 ? std::optional<double>(1500.0) : std::nullopt});
  }
  const std::string u = usage_table(usage);
  EXPECT_EQ(sort_key_of(u, "1,500").value_or(-1), 1500) << u;
  EXPECT_EQ(sort_key_of(u, "2,000.00").value_or(-1), 2000) << "requested GB (mean): " << u;
  EXPECT_EQ(sort_key_of(u, "1,200").value_or(-1), 1200) << "with a recommendation: " << u;
  EXPECT_EQ(sort_key_of(u, "1,500.00").value_or(-1), 1500) << "recommended GB (mean): " << u;
  EXPECT_EQ(unsortable_cells(u), std::vector<std::string>{}) << u;
}

TEST(ReportNumbers, TheUsageCapNoteSeparatesThousands) {
  std::vector<UsagePoint> usage;
  for (int i = 0; i < 1500; ++i) {  // 500 a day over three days
    usage.push_back({"alice", "", "", int64_t{1'700'006'400} + (i / 500) * 86400 + i % 500, 2.0, 1.0, std::nullopt});
  }
  const std::optional<std::string> note = keep_whole_usage_days(usage, 1200);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("show the 1,000 jobs that ended on the last 2 days"), std::string::npos) << *note;
  EXPECT_NE(note->find("of the 1,500 jobs"), std::string::npos) << *note;
  EXPECT_NE(note->find("fit in 1,200 jobs"), std::string::npos) << *note;
}

constexpr uint64_t kGB = 1'000'000'000;
constexpr int64_t kHourMs = 3'600'000;

TEST(ReportNumbers, SavingsNotesAndPartitionTableSeparateThousands) {
  // 1,200 test jobs asking 100 GB, peaking at 10 GB for 20 h; peakcastd recommends 20 GB.
  std::vector<Job> test;
  std::vector<DaemonAnswer> answers;
  for (int i = 0; i < 1200; ++i) {
    Job j;
    j.partition = i < 1100 ? "cpu" : "gpu";
    j.job_id = std::to_string(i);
    j.submit_ms = 1'700'000'000'000 + i * kHourMs;
    j.start_ms = j.submit_ms;
    j.end_ms = j.submit_ms + 20 * kHourMs;
    j.req_mem_bytes = 100 * kGB;
    j.peak_mem_bytes = 10 * kGB;
    test.push_back(j);
    DaemonAnswer a;
    a.recommended_bytes = 20 * kGB;
    answers.push_back(a);
  }
  const std::optional<RecommendationOutcome> outcome = recommendation_outcome(test, answers);
  ASSERT_TRUE(outcome.has_value());
  ASSERT_GE(outcome->totals.notes.size(), 2u);
  EXPECT_NE(outcome->totals.notes[0].find("would have wasted 240,000.0 GB·h (240,000.0 reserved unused, 0.0 in 0 "
                                          "out-of-memory attempts of 0 jobs) against 2,160,000.0 GB·h"),
            std::string::npos)
      << outcome->totals.notes[0];
  EXPECT_NE(outcome->totals.notes[1].find("1,200 test jobs with a memory request, a peak and a run time; 1,200 of "
                                          "them had a recommendation (1,200 below the request)"),
            std::string::npos)
      << outcome->totals.notes[1];
  const std::string p = partition_table(outcome->partitions);
  EXPECT_EQ(sort_key_of(p, "1,100").value_or(-1), 1100) << p;
  EXPECT_NEAR(sort_key_of(p, "1,980,000.0").value_or(-1), 1980000, 1e-6) << p;
  EXPECT_NEAR(sort_key_of(p, "1,760,000.0").value_or(-1), 1760000, 1e-6) << "saved: " << p;
  EXPECT_NE(p.find("<td>gpu</td><td>100</td>"), std::string::npos) << p;
  EXPECT_EQ(unsortable_cells(p), std::vector<std::string>{}) << p;
  // A pair of counts sorts by its first.
  std::vector<RecommendationOutcome::Partition> parts(2);
  parts[0].name = "a";
  parts[0].asked.failures = 1500;
  parts[0].answered.failures = 2;
  parts[1].name = "b";
  const std::string pairs = partition_table(parts);
  EXPECT_EQ(sort_key_of(pairs, "1,500 / 2").value_or(-1), 1500) << pairs;
}

TEST(ReportNumbers, PlotTitlesAndCountTooltipsSeparateThousands) {
  ReportInput in;
  const size_t n = 12120;
  for (size_t i = 0; i < n; ++i) {
    in.predictions.push_back({std::to_string(i), Resource::kMem, 0.5, 0.4, "tree", "exact_script",
                              0.6, 0.9, false, ""});
  }
  bool titled = false, coverage = false;
  for (const Plot& p : make_plots(in)) {
    if (p.id == "accuracy-mem") {
      titled = true;
      EXPECT_NE(p.spec.at("title").dump().find("5,000 of 12,120 test jobs"), std::string::npos) << p.spec.at("title");
      // The data stay plain numbers.
      EXPECT_TRUE(p.spec.at("data").at("values").at(0).at("actual").is_number());
    }
    if (p.id == "coverage") {
      coverage = true;
      // Vega's tooltips format a number with d3-format: "d" writes 12120, ",d" 12,120.
      for (const json& f : p.spec.at("layer").at(0).at("encoding").at("tooltip")) {
        if (f.at("field") == "n" || f.at("field") == "scripts") {
          EXPECT_EQ(f.value("format", ""), ",d") << f;
        }
      }
    }
  }
  EXPECT_TRUE(titled);
  EXPECT_TRUE(coverage);
}

// A page built from a trace whose test block holds more than 1,000 jobs says their counts the way
// an administrator reads them, and every separated number in its tables sorts as itself.
TEST(ReportNumbers, APageOfMoreThanAThousandTestJobsSeparatesItsCounts) {
  synth::SynthOptions so;
  so.jobs = 2000;
  so.seed = 11;
  so.users = 10;
  so.days = 20.0;
  auto jobs = synth::generate_trace(so);
  ASSERT_TRUE(jobs) << jobs.status().message();
  DetailOptions o;
  o.threads = 1;
  o.test_share = 0.6;
  o.code_options = {{"token_dim", "8"}, {"user_dim", "8"}, {"fused_dim", "32"}, {"max_epochs", "2"}};
  auto d = build_detail(*jobs, o);
  ASSERT_TRUE(d) << d.status().message();
  std::string notes;
  for (const std::string& n : d->notes) notes += n + "\n";
  EXPECT_TRUE(std::regex_search(notes, std::regex("predicted the 1,\\d{3} after"))) << notes;
  EXPECT_TRUE(std::regex_search(notes, std::regex("mem: [\\d,]+ of 1,\\d{3} test jobs had a bound"))) << notes;
  EXPECT_TRUE(std::regex_search(
      notes, std::regex("(memory recommendations for [\\d,]+|no memory recommendation for any) of the 1,\\d{3} test jobs")))
      << notes;
  if (!have_plotting_library()) GTEST_SKIP() << "built without the plotting library: no page";
  ReportInput in;
  in.predictions = d->predictions;
  in.usage = d->usage;
  in.recommendations = d->recommendations;
  in.notes = d->notes;
  auto page = render_html(in);
  ASSERT_TRUE(page) << page.status().message();
  EXPECT_TRUE(std::regex_search(*page, std::regex("predicted the 1,\\d{3} after")));
  EXPECT_TRUE(std::regex_search(*page, std::regex("<td data-sort=\"1\\d{3}\">1,\\d{3}</td>")))
      << "the coverage table's jobs with a bound";
  EXPECT_EQ(unsortable_cells(*page), std::vector<std::string>{});
}

}  // namespace
}  // namespace peakcast::report
