// The per-level choice between history alone and the fused cascade (history_alone_by_level):
// each level keeps its default (history alone with exact-script history, the fused cascade with
// user history only) unless the other choice is clearly better on enough jobs of that level.
#include <gtest/gtest.h>

#include <random>

#include "cascade/cascade_policy.h"
#include "peakcast/cascade/cascade_model.h"

namespace peakcast::cascade {
namespace {

using history::Level;

// n jobs at `level` whose fused error is history's plus `shift`, with noise of s.d. `noise`,
// each from a history of its own (independent evidence) unless `clusters` > 0 (job i then
// belongs to cluster i % clusters, and the cluster's jobs share one noise draw).
void add(std::vector<LevelErrors>& rows, Level level, size_t n, double shift, double noise,
         unsigned seed, size_t clusters = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0.0, noise);
  std::vector<double> shared(clusters);
  for (double& v : shared) v = z(rng);
  for (size_t i = 0; i < n; ++i) {
    const double h = 0.1 + 0.05 * static_cast<double>(i % 7);
    const uint64_t cluster = clusters > 0 ? i % clusters : 1'000'000ULL * seed + i;
    const double noise_i = clusters > 0 ? shared[i % clusters] : z(rng);
    rows.push_back({level, h + shift + noise_i, h, cluster});
  }
}

constexpr size_t kExact = 0, kUser = 1;

TEST(HistoryAloneByLevel, DefaultsWithoutEvidence) {
  const auto none = history_alone_by_level({}, 2.0);
  EXPECT_TRUE(none[kExact]);
  EXPECT_FALSE(none[kUser]);
  // Fewer than kMinLevelJobs jobs at a level keep its default, however one-sided they are.
  std::vector<LevelErrors> few;
  add(few, Level::kExactScript, kMinLevelJobs - 1, -0.05, 0.0, 1);
  add(few, Level::kUser, kMinLevelJobs - 1, +0.05, 0.0, 2);
  const auto f = history_alone_by_level(few, 2.0);
  EXPECT_TRUE(f[kExact]);
  EXPECT_FALSE(f[kUser]);
}

TEST(HistoryAloneByLevel, ClearEvidenceMovesEachLevelOnItsOwn) {
  std::vector<LevelErrors> rows;
  add(rows, Level::kExactScript, 200, -0.02, 0.01, 3);  // fused clearly better on exact
  add(rows, Level::kUser, 200, +0.02, 0.01, 4);         // history clearly better on user
  const auto c = history_alone_by_level(rows, 2.0);
  EXPECT_FALSE(c[kExact]);
  EXPECT_TRUE(c[kUser]);
  // Jobs with no history take no part.
  add(rows, Level::kNone, 500, +1.0, 0.0, 5);
  EXPECT_EQ(history_alone_by_level(rows, 2.0), c);
}

// Ties carry no evidence: many identical answers and a few tiny gains (a standard error near
// zero) keep the default.
TEST(HistoryAloneByLevel, TiesAreNotEvidence) {
  std::vector<LevelErrors> rows;
  add(rows, Level::kExactScript, 100, 0.0, 0.0, 9);
  add(rows, Level::kExactScript, kMinLevelJobs - 1, -1e-5, 0.0, 10);
  EXPECT_TRUE(history_alone_by_level(rows, 2.0)[kExact]);
  add(rows, Level::kExactScript, 1, -1e-5, 0.0, 11);
  EXPECT_FALSE(history_alone_by_level(rows, 2.0)[kExact]);
}

TEST(HistoryAloneByLevel, SmallGainsWithinTheMarginKeepTheDefaults) {
  std::vector<LevelErrors> rows;
  add(rows, Level::kExactScript, 40, -0.001, 0.05, 6);
  add(rows, Level::kUser, 40, +0.001, 0.05, 7);
  const auto c = history_alone_by_level(rows, 2.0);
  EXPECT_TRUE(c[kExact]);
  EXPECT_FALSE(c[kUser]);
  // With no margin at all, the sign of the mean decides.
  std::vector<LevelErrors> exact_better;
  add(exact_better, Level::kExactScript, 40, -0.01, 0.0, 8);
  EXPECT_FALSE(history_alone_by_level(exact_better, 0.0)[kExact]);
}

// A gain carried by a few histories is a few pieces of evidence: 200 jobs of 2 scripts whose
// errors move together do not clear the margin that 200 independent jobs with the same mean
// gain and noise clear.
TEST(HistoryAloneByLevel, JobsOfOneScriptAreNotIndependentEvidence) {
  std::vector<LevelErrors> independent, clustered;
  add(independent, Level::kExactScript, 200, -0.02, 0.05, 12);
  add(clustered, Level::kExactScript, 200, -0.02, 0.05, 12, 2);
  EXPECT_FALSE(history_alone_by_level(independent, 2.0)[kExact]);
  EXPECT_TRUE(history_alone_by_level(clustered, 2.0)[kExact]);
  // One script alone is no evidence, however many of its jobs agree.
  std::vector<LevelErrors> one;
  add(one, Level::kExactScript, 500, -0.05, 0.0, 13, 1);
  EXPECT_TRUE(history_alone_by_level(one, 2.0)[kExact]);
  // Many scripts with the same clear gain are.
  std::vector<LevelErrors> many;
  add(many, Level::kExactScript, 500, -0.05, 0.01, 14, 50);
  EXPECT_FALSE(history_alone_by_level(many, 2.0)[kExact]);
}

}  // namespace
}  // namespace peakcast::cascade

namespace peakcast::cascade {
namespace {

// describe() and the training log both give the per-level history-only choice in these words.
TEST(ResourcePolicyText, HistoryOnlyInWordsPerLevel) {
  ResourcePolicy p;
  p.history_expert = history::Expert::kMedian5;
  EXPECT_EQ(p.history_only_text(), "");
  p.history_only = {true, false};
  EXPECT_EQ(p.history_only_text(), " history only at exact_script (median5)");
  p.history_only = {false, true};
  EXPECT_EQ(p.history_only_text(), " history only at user (median5)");
  p.history_only = {true, true};
  EXPECT_EQ(p.history_only_text(), " history only (median5)");
}

}  // namespace
}  // namespace peakcast::cascade

namespace peakcast::cascade {
namespace {

// Q's source: without a margin the lower mean error (a tie keeps the code model); with one, a
// source must win by that many standard errors clustered by script, and where neither does the
// `unclear` source answers.
TEST(QSourceByMargin, LowerMeanWithoutAMarginClearWinWithOne) {
  constexpr QSource kCode = QSource::kCodeModel, kTree = QSource::kTreeRoute, kMean = QSource::kMean;
  EXPECT_EQ(q_source_by_margin({}, 0.0, kMean), kCode);
  EXPECT_EQ(q_source_by_margin({}, 2.0, kMean), kCode);
  EXPECT_EQ(q_source_by_margin({{0.1, 0.1, 1}, {0.2, 0.2, 2}}, 0.0, kMean), kCode);  // a tie
  // Eleven jobs of two scripts, the tree route better on one by a lot: the lower mean, but two
  // pieces of evidence.
  std::vector<QErrors> few;
  for (uint64_t i = 0; i < 11; ++i) few.push_back({0.02, i < 6 ? 0.001 : 0.021, i < 6 ? 1u : 2u});
  EXPECT_EQ(q_source_by_margin(few, 0.0, kCode), kTree);
  EXPECT_EQ(q_source_by_margin(few, 0.0, kMean), kTree);  // no margin: never unclear
  EXPECT_EQ(q_source_by_margin(few, 2.0, kCode), kCode);
  EXPECT_EQ(q_source_by_margin(few, 2.0, kMean), kMean);
  // The same gain on 60 scripts of noisy errors is clear.
  std::mt19937 rng(7);
  std::normal_distribution<double> z(0.0, 0.005);
  std::vector<QErrors> many;
  for (uint64_t i = 0; i < 300; ++i) {
    const double c = 0.05 + z(rng);
    many.push_back({c, c - 0.01 + z(rng), i % 60});
  }
  EXPECT_EQ(q_source_by_margin(many, 2.0, kMean), kTree);
  // And a tree route worse by as much is never chosen, nor mixed in where the code model's win
  // is clear.
  for (QErrors& r : many) r.tree = r.code + (r.code - r.tree);
  EXPECT_EQ(q_source_by_margin(many, 0.0, kMean), kCode);
  EXPECT_EQ(q_source_by_margin(many, 2.0, kMean), kCode);
  // The code model better on two scripts by a lot: not clear either way with a margin.
  for (QErrors& r : few) std::swap(r.code, r.tree);
  EXPECT_EQ(q_source_by_margin(few, 0.0, kMean), kCode);
  EXPECT_EQ(q_source_by_margin(few, 2.0, kMean), kMean);
}

// MA-DOS's split chose Q's source on one gate/fusion job (the rest purged), and the seed decided
// which source that one job favoured: fewer than kMinLevelJobs jobs where the two Qs differ keep
// the code model, however many tie and whatever falls back where a margin is not cleared.
TEST(QSourceByMargin, FewerThanTenDifferingJobsChooseNothing) {
  constexpr QSource kCode = QSource::kCodeModel, kTree = QSource::kTreeRoute, kMean = QSource::kMean;
  std::vector<QErrors> rows;
  for (uint64_t i = 0; i + 1 < kMinLevelJobs; ++i) rows.push_back({0.05, 0.001, i});  // tree far better
  EXPECT_EQ(q_source_by_margin(rows, 0.0, kMean), kCode);
  EXPECT_EQ(q_source_by_margin(rows, 2.0, kMean), kCode);
  EXPECT_EQ(q_source_by_margin({{0.05, 0.001, 1}}, 0.0, kCode), kCode);
  for (uint64_t i = 0; i < 100; ++i) rows.push_back({0.01, 0.01, 100 + i});  // ties are no evidence
  EXPECT_EQ(q_source_by_margin(rows, 0.0, kCode), kCode);
  rows.push_back({0.05, 0.001, 999});  // the tenth differing job
  EXPECT_EQ(q_source_by_margin(rows, 0.0, kCode), kTree);
  EXPECT_EQ(q_source_by_margin(rows, 2.0, kMean), kTree);  // ten scripts, all far better: clear
}

}  // namespace
}  // namespace peakcast::cascade
