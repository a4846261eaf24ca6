// The online conformal bound: coverage at the nominal level on stationary and drifting streams,
// the pooled fallback, the OOM (censored) rule, determinism.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "peakcast/sizing/online_bound.h"

namespace peakcast::sizing {
namespace {

using history::Level;

constexpr double kTolerance = 0.03;  // |empirical coverage - nominal| allowed
constexpr int kJobs = 6000;

struct Stream {
  std::vector<double> point, label;
};

// label = point + noise; drifting: the noise scale triples and its mean moves up over the stream.
Stream make_stream(bool drift, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> n01(0.0, 1.0);
  Stream s;
  for (int i = 0; i < kJobs; ++i) {
    const double t = static_cast<double>(i) / kJobs;
    const double scale = drift ? 0.02 + 0.06 * t : 0.04;
    const double shift = drift ? 0.10 * t : 0.0;
    const double point = 0.3 + 0.4 * std::abs(std::sin(i * 0.37));
    s.point.push_back(point);
    s.label.push_back(point + shift + scale * n01(g));
  }
  return s;
}

double coverage_of(const Stream& s, OnlineBoundOptions o) {
  OnlineBound b(o);
  int covered = 0;
  for (size_t i = 0; i < s.point.size(); ++i) {
    const double u = b.upper(Level::kExactScript, s.point[i]);
    covered += s.label[i] <= u;
    b.observe(Level::kExactScript, s.point[i], s.label[i], false);
  }
  return static_cast<double>(covered) / static_cast<double>(s.point.size());
}

class Coverage : public ::testing::TestWithParam<double> {};

TEST_P(Coverage, StationaryStreamWithinToleranceOfNominal) {
  OnlineBoundOptions o;
  o.coverage = GetParam();
  for (unsigned seed : {1u, 2u, 3u}) {
    EXPECT_NEAR(coverage_of(make_stream(false, seed), o), GetParam(), kTolerance) << "seed " << seed;
  }
}

TEST_P(Coverage, DriftingStreamWithinToleranceOfNominal) {
  OnlineBoundOptions o;
  o.coverage = GetParam();
  for (unsigned seed : {1u, 2u, 3u}) {
    EXPECT_NEAR(coverage_of(make_stream(true, seed), o), GetParam(), kTolerance) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Nominal, Coverage, ::testing::Values(0.8, 0.9, 0.95));

TEST(OnlineBound, StaticSplitConformalUnderCoversTheDriftingStream) {
  // The same stream with gamma = 0 and a long window (plain split conformal on the past) falls
  // short: what the adaptive step buys.
  OnlineBoundOptions o;
  o.coverage = 0.9;
  o.gamma = 0.0;
  o.window = 100000;
  EXPECT_LT(coverage_of(make_stream(true, 1), o), 0.9 - kTolerance);
}

TEST(OnlineBound, RatioScaleCoversBytesOfDifferentSizes) {
  std::mt19937 g(7);
  std::lognormal_distribution<double> noise(0.0, 0.2);
  OnlineBoundOptions o;
  o.coverage = 0.9;
  o.scale = Scale::kRatio;
  OnlineBound b(o);
  int covered = 0;
  for (int i = 0; i < kJobs; ++i) {
    const double point = (i % 2 ? 1e9 : 64e9);  // two workloads 64x apart
    const double label = point * noise(g);
    covered += label <= b.upper(Level::kUser, point);
    b.observe(Level::kUser, point, label, false);
  }
  EXPECT_NEAR(covered / static_cast<double>(kJobs), 0.9, kTolerance);
}

TEST(OnlineBound, ColdStartIsThePointAndFewScoresUseThePool) {
  OnlineBound b;
  EXPECT_FALSE(b.has_scores(Level::kUser));
  EXPECT_DOUBLE_EQ(b.upper(Level::kUser, 0.5), 0.5);
  // Scores at the exact level only: the user level (no scores of its own) uses the pool.
  for (int i = 0; i < 50; ++i) b.observe(Level::kExactScript, 0.5, 0.5 + 0.001 * i, false);
  EXPECT_TRUE(b.has_scores(Level::kUser));
  EXPECT_EQ(b.scores(Level::kUser), 0u);
  EXPECT_GT(b.upper(Level::kUser, 0.5), 0.5);
  EXPECT_NEAR(b.upper(Level::kUser, 0.5), b.upper(Level::kExactScript, 0.5), 0.01);
}

// cluster_user_level: the user level keeps one score per script (its largest), never borrows
// the pool, and has evidence from 9 scripts on at coverage 0.9 (ceil(10 * 0.9) = 9); the other
// levels are as before.
TEST(OnlineBound, ClusteredUserLevelCountsScriptsNotJobs) {
  OnlineBoundOptions o;
  o.cluster_user_level = true;
  OnlineBound b(o);
  for (int i = 0; i < 50; ++i) b.observe(Level::kExactScript, 0.5, 0.5 + 0.001 * i, false);
  EXPECT_FALSE(b.has_scores(Level::kUser));  // no pooled fallback for a new script
  EXPECT_TRUE(b.has_scores(Level::kExactScript));
  // One script's burst of 39 jobs is one unit of evidence, scored by its largest residual (0.04;
  // its last one is 0.03).
  for (int i = 0; i < 39; ++i) b.observe(Level::kUser, 0.2, 0.2 + 0.01 * (i % 5), false, "s0");
  EXPECT_EQ(b.scores(Level::kUser), 1u);
  for (int k = 1; k < 8; ++k) b.observe(Level::kUser, 0.2, 0.23, false, "s" + std::to_string(k));
  EXPECT_EQ(b.scores(Level::kUser), 8u);
  EXPECT_FALSE(b.has_scores(Level::kUser));
  b.observe(Level::kUser, 0.2, 0.21, false);  // no key: a script of its own
  EXPECT_EQ(b.scores(Level::kUser), 9u);
  ASSERT_TRUE(b.has_scores(Level::kUser));
  // 9 scripts, alpha 0.1: rank ceil(10 * 0.9) = 9, the largest script score: s0's 0.04.
  EXPECT_NEAR(b.upper(Level::kUser, 0.3), 0.34, 1e-9);
  // The exact level is untouched by the option.
  OnlineBound plain;
  for (int i = 0; i < 50; ++i) plain.observe(Level::kExactScript, 0.5, 0.5 + 0.001 * i, false);
  EXPECT_DOUBLE_EQ(plain.upper(Level::kExactScript, 0.5), OnlineBound([&] {
                     OnlineBound c(o);
                     for (int i = 0; i < 50; ++i) c.observe(Level::kExactScript, 0.5, 0.5 + 0.001 * i, false);
                     return c;
                   }()).upper(Level::kExactScript, 0.5));
}

// split_missed_scripts: at the exact level a script the bound has missed is calibrated on the
// scores of missed scripts (the pooled window until that part has min_level_scores); the others
// keep the level's window. Off (the default) the script key changes nothing.
TEST(OnlineBound, SplitMissedScriptsCalibratesMissedScriptsApart) {
  OnlineBoundOptions o;
  o.split_missed_scripts = true;
  OnlineBound split(o), plain;
  for (int i = 0; i < 40; ++i) {  // a deterministic script: residual 0
    split.observe(Level::kExactScript, 0.3, 0.3, false, "det");
    plain.observe(Level::kExactScript, 0.3, 0.3, false, "det");
  }
  EXPECT_EQ(split.missed_scripts(), 0u);
  EXPECT_NEAR(split.upper(Level::kExactScript, 0.5, "mov"), 0.5, 1e-12);
  for (int i = 0; i < 40; ++i) {  // a moving script: residuals 0.1-0.3, missed from its first run
    const double label = 0.5 + 0.1 + 0.2 * (i % 5) / 4.0;
    split.observe(Level::kExactScript, 0.5, label, false, "mov");
    plain.observe(Level::kExactScript, 0.5, label, false, "mov");
  }
  EXPECT_EQ(split.missed_scripts(), 1u);
  // The moving script's part: its own 39 scores (the first went to the other part), 0.1-0.3.
  EXPECT_GE(split.upper(Level::kExactScript, 0.5, "mov"), 0.5 + 0.2 - 1e-12);
  // The deterministic script keeps the level's window (0 and one 0.1): not widened.
  EXPECT_LE(split.upper(Level::kExactScript, 0.3, "det"), 0.3 + 0.1 + 1e-12);
  // Default: one window, the key is ignored.
  EXPECT_DOUBLE_EQ(plain.upper(Level::kExactScript, 0.3, "det"), plain.upper(Level::kExactScript, 0.3));
  EXPECT_DOUBLE_EQ(plain.upper(Level::kExactScript, 0.3, "mov"), plain.upper(Level::kExactScript, 0.3));
  EXPECT_EQ(plain.missed_scripts(), 0u);
}

// script_windows: at the exact level a script with ceil(c/(1-c)) scores of its own (9 at 0.9) is
// bounded by its own scores at the level's alpha_t; with fewer, or without a key, by the level's
// window. Every score still enters the level's window. The most recent max_scripts are kept.
TEST(OnlineBound, ScriptWindowsBoundAScriptByItsOwnScoresOnceItHasEnough) {
  OnlineBoundOptions o;
  o.script_windows = true;
  o.max_scripts = 2;
  OnlineBound b(o);
  EXPECT_EQ(b.min_script_scores(), 9u);
  for (int i = 0; i < 40; ++i) b.observe(Level::kExactScript, 0.5, 0.5, false, "det");  // residual 0
  for (int i = 0; i < 8; ++i) b.observe(Level::kExactScript, 0.5, 0.8, false, "mov");   // residual 0.3
  EXPECT_EQ(b.script_scores("mov"), 8u);
  EXPECT_EQ(b.own_windows(), 1u);  // "det" only
  // 8 scores: the level's window (40 zeros and 8 x 0.3, alpha_t moved by the misses).
  const double level_bound = b.upper(Level::kExactScript, 0.5);
  EXPECT_DOUBLE_EQ(b.upper(Level::kExactScript, 0.5, "mov"), level_bound);
  b.observe(Level::kExactScript, 0.5, 0.8, false, "mov");
  ASSERT_EQ(b.script_scores("mov"), 9u);
  // 9 scores of 0.3: its own quantile is 0.3; the deterministic script's own is 0.
  EXPECT_NEAR(b.upper(Level::kExactScript, 0.5, "mov"), 0.8, 1e-12);
  EXPECT_NEAR(b.upper(Level::kExactScript, 0.2, "det"), 0.2, 1e-12);
  EXPECT_EQ(b.scores(Level::kExactScript), 49u);  // the level keeps every score
  // A job without a key, or at another level, is bounded as before.
  EXPECT_DOUBLE_EQ(b.upper(Level::kExactScript, 0.5, ""), b.upper(Level::kExactScript, 0.5));
  EXPECT_DOUBLE_EQ(b.upper(Level::kNone, 0.5, "mov"), b.upper(Level::kNone, 0.5));
  // A third script evicts the least recently completed ("det"): its jobs fall back to the level.
  b.observe(Level::kExactScript, 0.5, 0.5, false, "new");
  EXPECT_EQ(b.script_scores("det"), 0u);
  EXPECT_EQ(b.script_scores("mov"), 9u);
  EXPECT_DOUBLE_EQ(b.upper(Level::kExactScript, 0.2, "det"), b.upper(Level::kExactScript, 0.2));
  // Off (the default): the key changes nothing.
  OnlineBound plain;
  for (int i = 0; i < 40; ++i) plain.observe(Level::kExactScript, 0.5, 0.5, false, "det");
  for (int i = 0; i < 9; ++i) plain.observe(Level::kExactScript, 0.5, 0.8, false, "mov");
  EXPECT_EQ(plain.script_scores("mov"), 0u);
  EXPECT_DOUBLE_EQ(plain.upper(Level::kExactScript, 0.5, "mov"), plain.upper(Level::kExactScript, 0.5));
}

// A censored completion the bound covered teaches nothing to the script's window either.
TEST(OnlineBound, ScriptWindowsLearnNothingFromACoveredOom) {
  OnlineBoundOptions o;
  o.script_windows = true;
  OnlineBound b(o);
  for (int i = 0; i < 12; ++i) b.observe(Level::kExactScript, 0.5, 0.6, false, "s");
  const double before = b.upper(Level::kExactScript, 0.5, "s");
  b.observe(Level::kExactScript, 0.5, 0.55, true, "s");
  EXPECT_EQ(b.script_scores("s"), 12u);
  EXPECT_DOUBLE_EQ(b.upper(Level::kExactScript, 0.5, "s"), before);
}

// A bound that has seen 40 exact-level completions of point 0.5 with residuals 0 to 0.09.
OnlineBound warmed_bound() {
  OnlineBound b;
  for (int i = 0; i < 40; ++i) b.observe(Level::kExactScript, 0.5, 0.5 + 0.01 * (i % 10), false);
  return b;
}

TEST(OnlineBound, CensoredAboveTheBoundLearnsNothing) {
  OnlineBound b = warmed_bound();
  const double before = b.upper(Level::kExactScript, 0.5);
  const double alpha_before = b.alpha_t(Level::kExactScript);
  const size_t n_before = b.scores(Level::kExactScript);
  // An OOM whose lower bound the bound covered: not a hit, not a score.
  b.observe(Level::kExactScript, 0.5, 0.3, true);
  EXPECT_DOUBLE_EQ(b.upper(Level::kExactScript, 0.5), before);
  EXPECT_DOUBLE_EQ(b.alpha_t(Level::kExactScript), alpha_before);
  EXPECT_EQ(b.scores(Level::kExactScript), n_before);
}

// A job killed at X needed more than X: a censored label equal to the bound issued for it is a
// miss (alpha_t falls, its score enters the window), as is one above it; only a bound above the
// label learns nothing.
TEST(OnlineBound, CensoredAtTheBoundIsAMiss) {
  OnlineBound b = warmed_bound();
  const double issued = b.upper(Level::kExactScript, 0.5);
  const double alpha_before = b.alpha_t(Level::kExactScript);
  const size_t n_before = b.scores(Level::kExactScript);
  b.observe_issued(Level::kExactScript, 0.5, issued, true, issued);
  EXPECT_LT(b.alpha_t(Level::kExactScript), alpha_before);
  EXPECT_EQ(b.scores(Level::kExactScript), std::min<size_t>(n_before + 1, 500));
  // The same label, completed (not killed): covered, alpha_t rises.
  OnlineBound c = warmed_bound();
  c.observe_issued(Level::kExactScript, 0.5, issued, false, issued);
  EXPECT_GT(c.alpha_t(Level::kExactScript), alpha_before);
}

// One rule for ACI and for the coverage figures (sizing::bound_covers): a label that rounding put
// a hair above the bound built for it is covered, as evaluate counts it; beyond that, a miss.
TEST(OnlineBound, ALabelWithinRoundingOfTheBoundIsCovered) {
  EXPECT_TRUE(bound_covers(0.7 + 1e-13, 0.7, false));
  EXPECT_FALSE(bound_covers(0.7 + 1e-9, 0.7, false));
  EXPECT_FALSE(bound_covers(0.7, 0.7 + 1e-13, true)) << "killed at the bound: a miss";
  EXPECT_TRUE(bound_covers(0.7, 0.7 + 1e-9, true));
  const double alpha_before = warmed_bound().alpha_t(Level::kExactScript);
  for (auto [above, covered] : {std::pair{1e-13, true}, std::pair{1e-9, false}}) {
    OnlineBound b = warmed_bound();
    const double issued = b.upper(Level::kExactScript, 0.5);
    b.observe_issued(Level::kExactScript, 0.5, issued + above, false, issued);
    if (covered) {
      EXPECT_GT(b.alpha_t(Level::kExactScript), alpha_before) << above;
    } else {
      EXPECT_LT(b.alpha_t(Level::kExactScript), alpha_before) << above;
    }
  }
}

TEST(OnlineBound, CensoredBeyondTheBoundIsAMissAndNeverLowersTheBound) {
  OnlineBound b = warmed_bound();
  double prev = b.upper(Level::kExactScript, 0.5);
  const double alpha_before = b.alpha_t(Level::kExactScript);
  for (int k = 0; k < 20; ++k) {
    b.observe(Level::kExactScript, 0.5, prev + 0.05, true);
    const double now = b.upper(Level::kExactScript, 0.5);
    EXPECT_GE(now, prev);
    prev = now;
  }
  EXPECT_LT(b.alpha_t(Level::kExactScript), alpha_before);
  EXPECT_GT(prev, 0.6);
}

TEST(OnlineBound, DeterministicForTheSameCalls) {
  const Stream s = make_stream(true, 11);
  OnlineBound a, b;
  for (size_t i = 0; i < 2000; ++i) {
    ASSERT_EQ(a.upper(Level::kNone, s.point[i]), b.upper(Level::kNone, s.point[i]));
    a.observe(Level::kNone, s.point[i], s.label[i], i % 17 == 0);
    b.observe(Level::kNone, s.point[i], s.label[i], i % 17 == 0);
  }
}

TEST(ConformalQuantile, RankIsCeilOfNPlusOneTimesCoverage) {
  std::deque<double> s{5, 1, 4, 2, 3, 9, 8, 7, 6, 10};  // n = 10
  EXPECT_DOUBLE_EQ(*conformal_quantile(s, 0.2), 9);   // ceil(11 * 0.8) = 9th smallest
  EXPECT_DOUBLE_EQ(*conformal_quantile(s, 0.5), 6);   // ceil(5.5) = 6
  EXPECT_DOUBLE_EQ(*conformal_quantile(s, 0.05), 10); // rank 11 > n: the largest
  EXPECT_FALSE(conformal_quantile(std::deque<double>{}, 0.1).has_value());
}

TEST(ConformalQuantile, TheSortedFormAgreesWithTheUnsortedOne) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.0, 3.0);
  for (size_t n = 1; n <= 40; ++n) {
    std::vector<double> s(n);
    for (double& v : s) v = std::round(u(rng) * 4.0) / 4.0;  // ties too
    std::vector<double> sorted = s;
    std::sort(sorted.begin(), sorted.end());
    for (double alpha : {0.01, 0.05, 0.1, 0.2, 0.5, 0.9, 0.99}) {
      ASSERT_EQ(*sorted_conformal_quantile(sorted, alpha), *conformal_quantile(s, alpha)) << n << " " << alpha;
    }
  }
  EXPECT_DOUBLE_EQ(*sorted_conformal_quantile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.2), 9);
  EXPECT_FALSE(sorted_conformal_quantile({}, 0.1).has_value());
}

}  // namespace
}  // namespace peakcast::sizing
