// The per-level choice between history alone and the fused cascade (history_alone_by_level):
// each level keeps its default (history alone with exact-script history, the fused cascade with
// user history only) unless the other choice is clearly better on enough jobs of that level.
#include <gtest/gtest.h>

#include <random>

#include "cascade/cascade_policy.h"

namespace peakcast::cascade {
namespace {

using history::Level;

// n jobs at `level` whose fused error is history's plus `shift`, with noise of s.d. `noise`.
void add(std::vector<LevelErrors>& rows, Level level, size_t n, double shift, double noise,
         unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0.0, noise);
  for (size_t i = 0; i < n; ++i) {
    const double h = 0.1 + 0.05 * static_cast<double>(i % 7);
    rows.push_back({level, h + shift + z(rng), h});
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

}  // namespace
}  // namespace peakcast::cascade
