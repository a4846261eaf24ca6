// The usage plots and table of the report library, without a browser: the largest groups by name
// and the rest as one, the cap on days, the jobs with a recommendation, the kinds of group a trace
// records, the UTC day axis (report_test.cpp has the rest of the library's tests).
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

TEST(ReportUsage, EightLargestGroupsByNameTheRestAsOther) {
  std::vector<UsagePoint> usage;
  for (int u = 0; u < 10; ++u) {
    // user u requests (u + 1) GB once; the two smallest (u0, u1) fall into "other (2 users)".
    usage.push_back({"u" + std::to_string(u), "acct", "part", 86400 * 10, u + 1.0, 0.5, std::nullopt});
  }
  ReportInput in;
  in.usage = usage;
  for (const Plot& p : make_plots(in)) {
    if (p.id != "usage-user") continue;
    std::set<std::string> groups;
    for (const json& row : p.spec.at("data").at("values")) groups.insert(row.at("group"));
    EXPECT_EQ(groups.size(), 9u);
    EXPECT_TRUE(groups.count("other (2 users)"));
    EXPECT_FALSE(groups.count("u0"));
    EXPECT_TRUE(groups.count("u9"));
    for (const json& row : p.spec.at("data").at("values")) {
      if (row.at("group") == "other (2 users)" && row.at("kind") == "requested") {
        EXPECT_DOUBLE_EQ(row.at("gb").get<double>(), 3.0);  // 1 + 2 GB
        EXPECT_DOUBLE_EQ(row.at("t").get<double>(), 86400.0 * 10 * 1000);  // the day, in ms
      }
    }
  }
}

// A user (account, partition) called "other" keeps its own line: the rest's sums are not added to it.
TEST(ReportUsage, AGroupCalledOtherIsNotTheRest) {
  std::vector<UsagePoint> usage;
  for (int u = 0; u < 10; ++u) {
    usage.push_back({u == 9 ? "other" : "u" + std::to_string(u), "acct", "part", 86400 * 10, u + 1.0,
                     0.5, std::nullopt});
  }
  ReportInput in;
  in.usage = usage;
  bool seen = false;
  for (const Plot& p : make_plots(in)) {
    if (p.id != "usage-user") continue;
    for (const json& row : p.spec.at("data").at("values")) {
      if (row.at("group") == "other" && row.at("kind") == "requested") {
        seen = true;
        EXPECT_DOUBLE_EQ(row.at("gb").get<double>(), 10.0);  // its own request, not + u0's and u1's
        EXPECT_EQ(row.at("jobs").get<size_t>(), 1u);
      }
    }
  }
  EXPECT_TRUE(seen);
}

// The usage cap keeps whole days: the plots sum each day, so a day cut in half would draw a false
// low first day. Four days of 30, 40, 50 and 60 jobs (ending on them, submitted interleaved) under
// a cap of 120: the last two days whole (110 jobs), none of the third from last.
TEST(ReportUsage, TheCapKeepsTheMostRecentWholeDays) {
  const int64_t day = 86400, first = 20'000 * day;  // 2024-10-04
  std::vector<UsagePoint> usage;
  const size_t per_day[] = {30, 40, 50, 60};
  for (size_t i = 0; i < 60; ++i) {
    for (int64_t d = 0; d < 4; ++d) {
      if (i < per_day[d]) usage.push_back({"u" + std::to_string(i), "a", "p", first + d * day + 3600, 1.0 + static_cast<double>(i), 0.5, std::nullopt});
    }
  }
  std::vector<UsagePoint> kept = usage;
  const auto note = keep_whole_usage_days(kept, 120);
  ASSERT_TRUE(note);
  ASSERT_EQ(kept.size(), 110u);
  std::map<int64_t, size_t> days;
  for (const UsagePoint& p : kept) ++days[p.end_time_s / day * day];
  EXPECT_EQ(days, (std::map<int64_t, size_t>{{first + 2 * day, 50}, {first + 3 * day, 60}}));
  // In their order (the input's, filtered).
  std::vector<UsagePoint> want;
  for (const UsagePoint& p : usage) {
    if (p.end_time_s >= first + 2 * day) want.push_back(p);
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].end_time_s, want[i].end_time_s);
    EXPECT_EQ(kept[i].requested_gb, want[i].requested_gb);
  }
  EXPECT_NE(note->find("the 110 jobs that ended on the last 2 days (2024-10-06 to 2024-10-07 UTC) of the 180"),
            std::string::npos) << *note;
  EXPECT_NE(note->find("table"), std::string::npos) << *note;
  // Under the cap, or exactly at it: all kept, no note.
  std::vector<UsagePoint> all = usage;
  EXPECT_FALSE(keep_whole_usage_days(all, 180));
  EXPECT_EQ(all.size(), 180u);
}

// A last day with more jobs than the cap: an even sample of that day, and the note says its sums
// are of the sample.
TEST(ReportUsage, ALastDayBiggerThanTheCapIsSampledEvenlyAndSaysSo) {
  const int64_t day = 86400, first = 20'000 * day;
  std::vector<UsagePoint> usage;
  for (int i = 0; i < 10; ++i) usage.push_back({"u", "a", "p", first + 100, 1.0, 0.5, std::nullopt});
  for (int i = 0; i < 300; ++i) {
    usage.push_back({"u", "a", "p", first + day + i, static_cast<double>(i), 0.5, std::nullopt});
  }
  const auto note = keep_whole_usage_days(usage, 100);
  ASSERT_TRUE(note);
  ASSERT_EQ(usage.size(), 100u);
  for (size_t i = 0; i < usage.size(); ++i) {
    EXPECT_EQ(usage[i].requested_gb, 3.0 * static_cast<double>(i)) << "every third job of the last day";
  }
  EXPECT_NE(note->find("last day (2024-10-05 UTC) alone"), std::string::npos) << *note;
  EXPECT_NE(note->find("of its 300 jobs"), std::string::npos) << *note;
  EXPECT_NE(note->find("an even sample of 100"), std::string::npos) << *note;
  EXPECT_NE(note->find("sums are of the sample only"), std::string::npos) << *note;
}

// The usage-by-user plot's "requested" rows: group -> (GB, jobs).
std::map<std::string, std::pair<double, size_t>> requested_by_user(const ReportInput& in) {
  std::map<std::string, std::pair<double, size_t>> requested;
  for (const Plot& p : make_plots(in)) {
    if (p.id != "usage-user") continue;
    for (const json& row : p.spec.at("data").at("values")) {
      if (row.at("kind") == "requested") {
        requested[row.at("group").get<std::string>()] = {row.at("gb").get<double>(), row.at("jobs").get<size_t>()};
      }
    }
  }
  return requested;
}

// A user called "(none)" is not the jobs without a user (until 2026-12-06 both were "(none)",
// one line and one row with both's sums); the jobs without one never share a name with a user.
TEST(ReportUsage, AUserCalledNoneIsNotTheJobsWithoutAUser) {
  ReportInput in;
  in.usage = {{"", "acct", "part", 86400, 4.0, 1.0, std::nullopt},
              {"", "acct", "part", 86400, 4.0, 1.0, std::nullopt},
              {"(none)", "acct", "part", 86400, 10.0, 1.0, std::nullopt}};
  const auto requested = requested_by_user(in);
  EXPECT_EQ(requested, (std::map<std::string, std::pair<double, size_t>>{{"(none)", {10.0, 1}}, {"(no user)", {8.0, 2}}}));
  const std::string t = usage_table(in.usage);
  EXPECT_NE(t.find("<td>user</td><td>(none)</td><td>1</td><td>10.00</td>"), std::string::npos) << t;
  EXPECT_NE(t.find("<td>user</td><td>(no user)</td><td>2</td><td>4.00</td>"), std::string::npos) << t;
  // A user called "(no user)": the jobs without one take a name no user has.
  in.usage[2].user = "(no user)";
  const std::string starred = usage_table(in.usage);
  EXPECT_NE(starred.find("<td>user</td><td>(no user)</td><td>1</td><td>10.00</td>"), std::string::npos) << starred;
  EXPECT_NE(starred.find("<td>user</td><td>(no user)*</td><td>2</td><td>4.00</td>"), std::string::npos) << starred;
}

// A user literally called "other (2 users)" is not the rest of the users when the rest are two:
// its line and its row keep its own sums, and the rest take a label no user has (a "*" added, as
// for the jobs without a user).
TEST(ReportUsage, AUserCalledLikeTheRestIsNotTheRest) {
  const std::string called = "other (2 users)";
  ReportInput in;
  // Ten users: `called` (100 GB) and u0..u8 (10..2 GB); the plot names 8, u7 and u8 (3 + 2 GB) are the rest.
  in.usage.push_back({called, "acct", "part", 86400, 100.0, 1.0, std::nullopt});
  for (int u = 0; u < 9; ++u) in.usage.push_back({"u" + std::to_string(u), "acct", "part", 86400, 10.0 - u, 1.0, std::nullopt});
  auto requested = requested_by_user(in);
  EXPECT_EQ(requested.size(), 9u);
  EXPECT_EQ(requested[called], (std::pair<double, size_t>{100.0, 1}));
  EXPECT_EQ(requested[called + "*"], (std::pair<double, size_t>{5.0, 2}));
  // Twenty-two users: `called` and u0..u20 (50..30 GB); the table names 20, u19 and u20 (31 + 30 GB)
  // are the rest.
  in.usage.resize(1);
  for (int u = 0; u < 21; ++u) in.usage.push_back({"u" + std::to_string(u), "acct", "part", 86400, 50.0 - u, 1.0, std::nullopt});
  const std::string t = usage_table(in.usage);
  EXPECT_NE(t.find("<td>user</td><td>" + called + "</td><td>1</td><td>100.00</td>"), std::string::npos) << t;
  EXPECT_NE(t.find("<td>user</td><td>" + called + "*</td><td>2</td><td>30.50</td>"), std::string::npos) << t;
}

// The recommended requests sit beside what the same jobs requested, not beside every job's mean.
TEST(ReportUsage, TableShowsTheRequestOfTheJobsWithARecommendation) {
  const std::vector<UsagePoint> usage = {
      {"alice", "acct", "part", 86400, 64.0, 10.0, std::nullopt},  // earlier job: no recommendation
      {"alice", "acct", "part", 86400, 16.0, 3.0, 4.0},
      {"alice", "acct", "part", 86400, 8.0, 1.0, 2.0},
  };
  const std::string t = usage_table(usage);
  // user alice: 3 jobs, requested mean 29.33; 2 with a recommendation, their request mean 12.00,
  // recommended mean 3.00.
  EXPECT_NE(t.find("<td>alice</td><td>3</td><td>29.33</td>"), std::string::npos) << t;
  EXPECT_NE(t.find("<td>2</td><td>12.00</td><td>3.00</td></tr>"), std::string::npos) << t;
  const std::string none = usage_table({{"bob", "acct", "part", 86400, 8.0, 1.0, std::nullopt}});
  EXPECT_NE(none.find("<td>0</td><td></td><td></td></tr>"), std::string::npos) << none;
}

// The plot's recommended line sums the same jobs as its requested line: a job without a
// recommendation (a training job, a new script, no memory evidence yet) at its own request, as the
// savings section runs it. Summed over the recommended jobs alone, a day where half the jobs had
// one drew the recommended line at a fraction of the requested one: a saving that was not there.
TEST(ReportUsage, PlotsRecommendedLineSumsTheSameJobsAsRequested) {
  ReportInput in;
  in.usage = {
      {"alice", "acct", "part", 86400, 10.0, 3.0, 4.0},
      {"alice", "acct", "part", 86400, 10.0, 9.0, std::nullopt},  // no recommendation
      {"alice", "acct", "part", 2 * 86400, 10.0, 9.0, std::nullopt},  // a day with none
  };
  size_t checked = 0;
  for (const Plot& p : make_plots(in)) {
    if (!p.id.starts_with("usage-")) continue;
    std::map<std::pair<double, std::string>, json> rows;
    for (const json& r : p.spec.at("data").at("values")) rows[{r.at("t").get<double>(), r.at("kind")}] = r;
    const double day1 = 86400.0 * 1000, day2 = 2 * day1;
    const auto has = [&](double t, const char* kind) { return rows.count(std::pair<double, std::string>(t, kind)) > 0; };
    const auto row = [&](double t, const char* kind) { return rows.at(std::pair<double, std::string>(t, kind)); };
    ASSERT_TRUE(has(day1, "recommended")) << p.id;
    EXPECT_DOUBLE_EQ(row(day1, "requested").at("gb").get<double>(), 20.0);
    EXPECT_DOUBLE_EQ(row(day1, "recommended").at("gb").get<double>(), 14.0) << "4 + the other's own 10";
    EXPECT_EQ(row(day1, "recommended").at("jobs"), 2);
    EXPECT_FALSE(has(day2, "recommended")) << "no line where no job had a recommendation";
    ++checked;
  }
  EXPECT_EQ(checked, 3u);
}

// The table ranks groups as the plot does, largest request first, and folds the tail into one
// row: a site with thousands of users gets a table read at a glance.
TEST(ReportUsage, TableListsTheTwentyLargestGroupsFirstAndTheRestAsOneRow) {
  std::vector<UsagePoint> usage;
  for (int u = 0; u < 30; ++u) {
    usage.push_back({"u" + std::to_string(u), "acct", "part", 86400, u + 1.0, 0.5, std::nullopt});
  }
  const std::string t = usage_table(usage);
  const auto at = [&](const std::string& cell) { return t.find("<td>" + cell + "</td>"); };
  ASSERT_NE(at("u29"), std::string::npos) << t;
  EXPECT_LT(at("u29"), at("u28"));
  EXPECT_LT(at("u11"), at("u10"));
  EXPECT_EQ(at("u9"), std::string::npos) << "the 10 smallest are folded";
  // other: u0..u9, 10 jobs, requested 1..10 GB, mean 5.5.
  EXPECT_NE(t.find("<td>other (10 users)</td><td>10</td><td>5.50</td>"), std::string::npos) << t;
  // One account: named, no "other" row for it.
  EXPECT_NE(t.find("<td>account</td><td>acct</td><td>30</td>"), std::string::npos) << t;
  EXPECT_EQ(t.find("other (0"), std::string::npos);
}

// A trace that records no account and no partition (a Nextflow trace): the account and
// partition plots each drew one "(no account)" line repeating the user plot's sums, and the table a
// row each repeating the user's row. A kind of group no job has is neither drawn nor tabulated,
// and the section says which and why.
TEST(ReportUsage, AKindOfGroupNoJobHasIsNeitherDrawnNorTabulated) {
  ReportInput in;
  in.usage = {{"eager", "", "", 86400, 8.0, 2.0, std::nullopt},
              {"eager", "", "", 2 * 86400, 8.0, 3.0, std::nullopt}};
  const std::set<std::string> ids = plot_ids(in);
  EXPECT_TRUE(ids.count("usage-user"));
  EXPECT_FALSE(ids.count("usage-account"));
  EXPECT_FALSE(ids.count("usage-partition"));
  const std::string t = usage_table(in.usage);
  EXPECT_NE(t.find("<td>user</td><td>eager</td>"), std::string::npos) << t;
  EXPECT_EQ(t.find("<td>account</td>"), std::string::npos) << t;
  EXPECT_EQ(t.find("<td>partition</td>"), std::string::npos) << t;
  EXPECT_NE(t.find("No job here records an account or a partition"), std::string::npos) << t;
  // One job with a partition: that kind is drawn, the jobs without one as "(no partition)".
  in.usage[1].partition = "cpu";
  const std::set<std::string> with_one = plot_ids(in);
  EXPECT_TRUE(with_one.count("usage-partition"));
  EXPECT_FALSE(with_one.count("usage-account"));
  const std::string t2 = usage_table(in.usage);
  EXPECT_NE(t2.find("<td>partition</td><td>(no partition)</td>"), std::string::npos) << t2;
  EXPECT_NE(t2.find("No job here records an account:"), std::string::npos) << t2;
  // No kind named at all: the user plot still draws every job's sums, as "(no user)".
  for (UsagePoint& u : in.usage) u = {"", "", "", u.end_time_s, u.requested_gb, u.used_gb, std::nullopt};
  EXPECT_EQ(plot_ids(in), (std::set<std::string>{"usage-user"}));
}

// LANL's nine partitions: the plot named eight and drew the ninth alone as "other (1
// partitions)", one name hidden behind a count. The rest is one line only when it holds two or
// more groups, as the table folds its rest.
TEST(ReportUsage, OneGroupPastTheEighthIsNamedNotFolded) {
  ReportInput in;
  for (int u = 0; u < 9; ++u) {
    in.usage.push_back({"u" + std::to_string(u), "acct", "part", 86400, u + 1.0, 0.5, std::nullopt});
  }
  size_t checked = 0;
  for (const Plot& p : make_plots(in)) {
    if (p.id != "usage-user") continue;
    std::set<std::string> groups;
    for (const json& row : p.spec.at("data").at("values")) groups.insert(row.at("group"));
    EXPECT_EQ(groups.size(), 9u);
    EXPECT_TRUE(groups.count("u0")) << "the smallest is named";
    EXPECT_FALSE(groups.count("other (1 users)"));
    ++checked;
  }
  EXPECT_EQ(checked, 1u);
}

// The usage plots' x is the UTC day a job ended on: a local-time axis put each day's sum on the
// evening before west of Greenwich, with hour ticks between days. And the memory legend showed
// dashed circles, which tell "used (peak)" from "recommended" apart hardly at all: it draws the
// lines' own dashes.
TEST(ReportUsage, TheDayAxisIsUtcDaysAndTheLegendDrawsTheDashes) {
  ReportInput in;
  for (int day = 0; day < 3; ++day) in.usage.push_back({"u", "a", "p", 86400 * (10 + day), 8.0, 2.0, std::nullopt});
  size_t checked = 0;
  for (const Plot& p : make_plots(in)) {
    if (!p.id.starts_with("usage-")) continue;
    const json& enc = p.spec.at("encoding");
    EXPECT_EQ(enc.at("x").value("timeUnit", ""), "utcyearmonthdate") << p.id;
    EXPECT_EQ(enc.at("x").at("axis").at("tickCount"), 2) << "one tick a day over two days";
    EXPECT_EQ(enc.at("x").value("title", ""), "day (UTC)");
    EXPECT_EQ(enc.at("strokeDash").at("legend").value("symbolType", ""), "stroke");
    bool tooltip_day = false;
    for (const json& t : enc.at("tooltip")) {
      if (t.at("field") == "t") tooltip_day = t.value("timeUnit", "") == "utcyearmonthdate";
    }
    EXPECT_TRUE(tooltip_day) << p.id;
    ++checked;
  }
  EXPECT_EQ(checked, 3u);
  // Over months, at most ten ticks.
  in.usage.push_back({"u", "a", "p", 86400 * 200, 8.0, 2.0, std::nullopt});
  for (const Plot& p : make_plots(in)) {
    if (p.id == "usage-user") {
      EXPECT_EQ(p.spec.at("encoding").at("x").at("axis").at("tickCount"), 10);
    }
  }
}

// The title starts at the plot's left edge: centred, a long title over a plot a wide legend had
// narrowed (LANL's partition names) ran off its left side in Chromium ("equested vs used ...").
TEST(ReportUsage, TheTitleStartsAtThePlotsLeftEdge) {
  ReportInput in;
  in.usage.push_back({"u", "a", "scavenge_development", 86400 * 10, 8.0, 2.0, std::nullopt});
  size_t checked = 0;
  for (const Plot& p : make_plots(in)) {
    if (!p.id.starts_with("usage-")) continue;
    const json& title = p.spec.at("title");
    ASSERT_TRUE(title.is_object()) << p.id << ": " << title;
    EXPECT_EQ(title.value("anchor", ""), "start") << p.id;
    EXPECT_TRUE(title.value("text", "").starts_with("Requested vs used memory per ")) << title;
    ++checked;
  }
  EXPECT_EQ(checked, 3u);
}

}  // namespace
}  // namespace peakcast::report
