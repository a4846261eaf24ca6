// The script bootstrap of the bound's coverage (eval/coverage.h): the per-script tallies of a
// walk, the interval's width where misses come by the script and where they are spread, the fold
// mean, the seeds' averaging, the JSON and the table cell.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/eval/coverage.h"

namespace peakcast::eval {
namespace {

constexpr int64_t kMin = 60 * 1000;

// `scripts` scripts of `jobs` jobs each; the first `missed` scripts have `covered_missed` of their
// jobs covered, the others `covered_rest` (the same at every nominal level).
std::vector<ScriptTally> block(int scripts, int jobs, int missed, double covered_missed,
                               double covered_rest) {
  std::vector<ScriptTally> out(static_cast<size_t>(scripts));
  for (int s = 0; s < scripts; ++s) {
    out[s].n = jobs;
    out[s].covered.fill(s < missed ? covered_missed : covered_rest);
  }
  return out;
}

double width(const CoverageInterval& c) { return c.hi[1] - c.lo[1]; }

TEST(CoverageInterval, TalliesCountEachScriptsScoredJobs) {
  std::vector<Job> jobs;
  const std::vector<std::string> keys = {"a", "b", "a", "", "", "b", "a", "c"};
  for (size_t i = 0; i < 40 + keys.size(); ++i) {
    Job j;
    j.job_id = "j" + std::to_string(i);
    j.user = "u";
    j.submit_ms = static_cast<int64_t>(i) * kMin;
    j.end_ms = j.submit_ms + kMin / 2;
    j.util[0] = i < 40 ? 0.3 + 0.01 * static_cast<double>(i % 5) : (i % 2 ? 0.35 : 0.9);
    j.valid[0] = true;
    j.script_key = i < 40 ? "warm" : keys[i - 40];
    jobs.push_back(j);
  }
  jobs[43].censored = true;  // keyless and killed: scored, a miss
  jobs[43].util[0] = 1.0;     // its label is the cap, as compute_labels sets it
  std::vector<WalkedJob> walk;
  for (size_t i = 0; i < jobs.size(); ++i) walk.push_back({&jobs[i], history::Level::kExactScript, 0.35, i >= 40});
  const BoundCoverage c = online_coverage(walk, Resource::kMem, 1.0);
  ASSERT_EQ(c.n, 8u);
  ASSERT_EQ(c.censored, 1u);
  // a, b, the two keyless jobs (each a script of its own), c.
  ASSERT_EQ(c.scripts, 5u);
  ASSERT_EQ(c.tallies.size(), 5u);
  EXPECT_EQ(c.tallies[0].n, 3.0);  // a
  EXPECT_EQ(c.tallies[1].n, 2.0);  // b
  EXPECT_EQ(c.tallies[2].n, 1.0);  // the keyless job at 43
  EXPECT_EQ(c.tallies[3].n, 1.0);  // the keyless job at 44
  EXPECT_EQ(c.tallies[4].n, 1.0);  // c
  for (size_t b = 0; b < kNumCoverageLevels; ++b) {
    EXPECT_EQ(c.tallies[2].covered[b], 0.0) << kCoverageLevels[b];  // killed: never covered
    double covered = 0.0;
    for (const ScriptTally& t : c.tallies) covered += t.covered[b];
    EXPECT_DOUBLE_EQ(covered / 8.0, c.coverage[b]) << kCoverageLevels[b];
  }
}

// The same coverage, 0.9, twice: misses spread over every script (each covers 9 of its 10) give
// a point; misses that come a whole script at a time (2 of 20 scripts missed) give a wide interval.
TEST(CoverageInterval, MissesThatComeByTheScriptWidenIt) {
  const std::vector<std::vector<ScriptTally>> spread = {block(20, 10, 0, 0, 9)};
  const std::vector<std::vector<ScriptTally>> by_script = {block(20, 10, 2, 0, 10)};
  const auto a = coverage_interval(spread, 2000, 1);
  const auto b = coverage_interval(by_script, 2000, 1);
  ASSERT_TRUE(a && b);
  EXPECT_NEAR(a->lo[1], 0.9, 1e-12);
  EXPECT_NEAR(a->hi[1], 0.9, 1e-12);
  // The number of missed scripts drawn is binomial(20, 0.1): 0 to 5 at 95%.
  EXPECT_LT(b->lo[1], 0.85);
  EXPECT_GT(b->lo[1], 0.7);
  EXPECT_NEAR(b->hi[1], 1.0, 1e-12);
  EXPECT_EQ(b->resamples, 2000u);
  EXPECT_DOUBLE_EQ(b->level, 0.95);
}

// Five folds drawn each on its own: the mean's interval is narrower than one fold's, and it
// holds the folds' mean.
TEST(CoverageInterval, TheFoldMeanIsNarrowerThanOneFold) {
  const std::vector<ScriptTally> fold = block(10, 20, 1, 5, 19);  // coverage (5 + 171) / 200 = 0.88
  const std::vector<std::vector<ScriptTally>> one = {fold};
  const std::vector<std::vector<ScriptTally>> five(5, fold);
  const auto a = coverage_interval(one, 4000, 3);
  const auto b = coverage_interval(five, 4000, 3);
  ASSERT_TRUE(a && b);
  EXPECT_LT(width(*b), 0.7 * width(*a));
  EXPECT_LE(b->lo[1], 0.88);
  EXPECT_GE(b->hi[1], 0.88);
}

TEST(CoverageInterval, DeterministicInItsSeed) {
  const std::vector<std::vector<ScriptTally>> blocks = {block(12, 7, 3, 2, 7)};
  const auto a = coverage_interval(blocks, 500, 9), b = coverage_interval(blocks, 500, 9);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->lo, b->lo);
  EXPECT_EQ(a->hi, b->hi);
}

TEST(CoverageInterval, NoneWithoutResamplesOrScripts) {
  const std::vector<std::vector<ScriptTally>> ok = {block(3, 2, 0, 0, 2)};
  const std::vector<std::vector<ScriptTally>> empty_block = {block(3, 2, 0, 0, 2), {}};
  EXPECT_FALSE(coverage_interval(ok, 0, 1).has_value());
  EXPECT_FALSE(coverage_interval({}, 100, 1).has_value());
  EXPECT_FALSE(coverage_interval(empty_block, 100, 1).has_value());
}

// A method's seeds walk the same jobs: their covered counts are averaged script by script; runs
// that scored nothing are left out; runs over other scripts are an error.
TEST(CoverageInterval, SeedsAverageTheirCountsAndMustHoldTheSameScripts) {
  BoundCoverage s1, s2, none, other;
  s1.n = s2.n = 5;
  s1.tallies = block(2, 2, 1, 0, 2);
  s1.tallies.push_back({1.0, {1, 1, 1}});
  s2.tallies = block(2, 2, 1, 2, 1);
  s2.tallies.push_back({1.0, {0, 0, 1}});
  const std::vector<BoundCoverage> runs = {s1, none, s2};
  const std::vector<ScriptTally> m = mean_script_tallies(runs);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_DOUBLE_EQ(m[0].covered[1], 1.0);  // (0 + 2) / 2
  EXPECT_DOUBLE_EQ(m[1].covered[1], 1.5);  // (2 + 1) / 2
  EXPECT_DOUBLE_EQ(m[2].covered[1], 0.5);
  EXPECT_DOUBLE_EQ(m[2].covered[2], 1.0);
  EXPECT_EQ(m[1].n, 2.0);
  other.n = 5;
  other.tallies = block(3, 2, 0, 0, 2);
  const std::vector<BoundCoverage> mixed = {s1, other};
  EXPECT_THROW(mean_script_tallies(mixed), std::invalid_argument);
}

TEST(CoverageInterval, JsonAndTableCell) {
  BoundCoverage c;
  c.n = 200;
  c.scripts = 20;
  c.coverage = {0.8, 0.9, 0.95};
  c.width = {0.1, 0.15, 0.2};
  nlohmann::json without;
  add_coverage_json(c, without);
  EXPECT_TRUE(without.at("coverage_interval").is_null());
  EXPECT_EQ(without.at("bound_scripts"), 20);
  EXPECT_EQ(coverage_cell(c), "0.900 (0.150)");
  CoverageInterval ci;
  ci.lo = {0.7, 0.85, 0.9};
  ci.hi = {0.85, 0.95, 1.0};
  c.interval = ci;
  nlohmann::json with;
  add_coverage_json(c, with);
  EXPECT_EQ(with.at("coverage_interval").at("0.9"), nlohmann::json({0.85, 0.95}));
  EXPECT_EQ(with.at("coverage_interval").at("0.95"), nlohmann::json({0.9, 1.0}));
  EXPECT_EQ(coverage_cell(c), "0.900 [0.850, 0.950] (0.150)");
  EXPECT_EQ(coverage_cell(BoundCoverage{}), "-");
}

}  // namespace
}  // namespace peakcast::eval
