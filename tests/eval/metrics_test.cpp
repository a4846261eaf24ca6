#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "peakcast/eval/metrics.h"

namespace peakcast::eval {
namespace {

TEST(Metrics, KnownValues) {
  MetricsAccumulator acc;
  acc.add(0.1, 0.2);  // error -0.1: within 10% (boundary counts)
  acc.add(0.5, 0.5);  // 0
  acc.add(0.9, 0.5);  // +0.4
  const Metrics m = acc.finish();
  EXPECT_EQ(m.n, 3u);
  EXPECT_NEAR(m.mae, 0.5 / 3, 1e-12);
  EXPECT_NEAR(m.mse, 0.17 / 3, 1e-12);
  EXPECT_NEAR(m.rmse, std::sqrt(0.17 / 3), 1e-12);
  EXPECT_NEAR(m.acc10, 2.0 / 3, 1e-12);
}

TEST(Metrics, EmptyIsZeroWithNZero) {
  const Metrics m = MetricsAccumulator{}.finish();
  EXPECT_EQ(m.n, 0u);
  EXPECT_EQ(m.mae, 0.0);
}

TEST(Metrics, UtcDayFloors) {
  EXPECT_EQ(utc_day(0), 0);
  EXPECT_EQ(utc_day(86399999), 0);  // epoch ms
  EXPECT_EQ(utc_day(86400000), 1);
  EXPECT_EQ(utc_day(-1), -1);
}

struct Paired {
  std::vector<int64_t> day;
  std::vector<double> a, b;
};

// 40 days, 5 jobs a day; method a is better than b by ~0.05 with day-level noise.
Paired sample() {
  Paired p;
  for (int d = 0; d < 40; ++d) {
    for (int k = 0; k < 5; ++k) {
      p.day.push_back(d);
      const double noise = ((d * 7 + k * 3) % 11) / 100.0;
      p.b.push_back(0.20 + noise);
      p.a.push_back(0.15 + noise * ((d % 3) + 0.5) / 1.5);
    }
  }
  return p;
}

TEST(Bootstrap, DeterministicForASeed) {
  const Paired p = sample();
  auto x = paired_day_bootstrap(p.day, p.a, p.b, 2000, 7);
  auto y = paired_day_bootstrap(p.day, p.a, p.b, 2000, 7);
  auto z = paired_day_bootstrap(p.day, p.a, p.b, 2000, 8);
  ASSERT_TRUE(x && y && z);
  EXPECT_EQ(x->lo, y->lo);
  EXPECT_EQ(x->hi, y->hi);
  EXPECT_EQ(x->mean, y->mean);
  EXPECT_NE(x->mean, z->mean);  // another seed draws other days
  EXPECT_EQ(x->days, 40u);
  EXPECT_EQ(x->resamples, 2000u);
}

TEST(Bootstrap, IntervalContainsPointDifference) {
  const Paired p = sample();
  double ma = 0, mb = 0;
  for (size_t i = 0; i < p.a.size(); ++i) {
    ma += p.a[i];
    mb += p.b[i];
  }
  const double point = (ma - mb) / static_cast<double>(p.a.size());
  auto x = paired_day_bootstrap(p.day, p.a, p.b, 2000, 1);
  ASSERT_TRUE(x);
  EXPECT_NEAR(x->point, point, 1e-12);
  EXPECT_LE(x->lo, x->point);
  EXPECT_GE(x->hi, x->point);
  EXPECT_LT(x->lo, x->hi);
  EXPECT_LT(x->hi, 0.0);  // a is better on every day: the whole interval is below zero
}

TEST(Bootstrap, ResamplesWholeDays) {
  // One day only: every resample is the full set, so the interval collapses onto the point.
  std::vector<int64_t> day(6, 3);
  std::vector<double> a = {0.1, 0.4, 0.2, 0.0, 0.3, 0.5}, b = {0.2, 0.1, 0.2, 0.3, 0.3, 0.1};
  auto x = paired_day_bootstrap(day, a, b, 500, 3);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->days, 1u);
  EXPECT_NEAR(x->lo, x->point, 1e-12);
  EXPECT_NEAR(x->hi, x->point, 1e-12);
}

TEST(Bootstrap, DisabledOrEmpty) {
  const Paired p = sample();
  EXPECT_FALSE(paired_day_bootstrap(p.day, p.a, p.b, 0, 1));
  EXPECT_FALSE(paired_day_bootstrap({}, {}, {}, 100, 1));
}

// A test block within one submit day (the Nextflow traces') is one block for the day bootstrap:
// its "interval" is the point. Its scripts are blocks still: the method wins on script a and loses
// as much on script b, so the interval over the scripts spans 0 around the day one's point.
TEST(ScriptBootstrap, AWinOnOneScriptAndALossOnAnotherSpanZero) {
  std::vector<int64_t> day(10, 3);
  std::vector<std::string> script;
  std::vector<double> method, baseline;
  for (int k = 0; k < 10; ++k) {
    script.push_back(k < 5 ? "a" : "b");
    method.push_back(k < 5 ? 0.1 : 0.3 + 0.01 * k);
    baseline.push_back(k < 5 ? 0.3 : 0.1);
  }
  const auto by_day = paired_day_bootstrap(day, method, baseline, 1000, 11);
  const auto by_script = paired_script_bootstrap(script, method, baseline, 1000, 11);
  ASSERT_TRUE(by_day && by_script);
  EXPECT_EQ(by_day->days, 1u);
  EXPECT_EQ(by_day->lo, by_day->hi);
  EXPECT_EQ(by_script->point, by_day->point);  // the same jobs' difference
  EXPECT_EQ(by_script->scripts, 2u);
  EXPECT_EQ(by_script->days, 0u);
  EXPECT_EQ(by_script->resamples, 1000u);
  EXPECT_LT(by_script->lo, 0.0);
  EXPECT_GT(by_script->hi, 0.0);
  // A resample of a twice: -0.2; of b twice: +0.27 (each a quarter of the draws, so the ends).
  EXPECT_NEAR(by_script->lo, -0.2, 1e-9);
  EXPECT_NEAR(by_script->hi, 0.27, 1e-9);
}

// Many scripts, the method better on each: the whole interval lies below 0. A job without a script
// key is a script of its own (as for the bound's coverage interval).
TEST(ScriptBootstrap, ManyScriptsAllWonLieBelowZero) {
  std::vector<std::string> script;
  std::vector<double> method, baseline;
  for (int s = 0; s < 20; ++s) {
    for (int k = 0; k < 4; ++k) {
      script.push_back("script" + std::to_string(s));
      baseline.push_back(0.2 + 0.01 * ((s * 7 + k) % 9));
      method.push_back(baseline.back() - 0.02 - 0.005 * (s % 4));
    }
  }
  for (int k = 0; k < 3; ++k) {
    script.emplace_back();
    baseline.push_back(0.5);
    method.push_back(0.45);
  }
  const auto x = paired_script_bootstrap(script, method, baseline, 2000, 4);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->scripts, 23u);
  EXPECT_LE(x->lo, x->point);
  EXPECT_GE(x->hi, x->point);
  EXPECT_LT(x->lo, x->hi);
  EXPECT_LT(x->hi, 0.0);
}

// The same resampling as the day bootstrap's: with one job a day and one job a script, in the same
// order, the two draw the same blocks from the same seed (and another seed draws others).
TEST(ScriptBootstrap, DrawsAsTheDayBootstrapDoesFromItsSeed) {
  const Paired p = sample();
  std::vector<int64_t> day;
  std::vector<std::string> script;
  for (size_t i = 0; i < p.a.size(); ++i) {
    day.push_back(static_cast<int64_t>(i));
    script.push_back("s" + std::to_string(i));
  }
  const auto d = paired_day_bootstrap(day, p.a, p.b, 500, 9);
  const auto s = paired_script_bootstrap(script, p.a, p.b, 500, 9);
  const auto other = paired_script_bootstrap(script, p.a, p.b, 500, 10);
  ASSERT_TRUE(d && s && other);
  EXPECT_EQ(s->scripts, p.a.size());
  EXPECT_EQ(s->point, d->point);
  EXPECT_EQ(s->mean, d->mean);
  EXPECT_EQ(s->lo, d->lo);
  EXPECT_EQ(s->hi, d->hi);
  EXPECT_NE(other->mean, s->mean);
}

TEST(ScriptBootstrap, DisabledEmptyOrMismatched) {
  const std::vector<std::string> script = {"a", "b"};
  const std::vector<double> a = {0.1, 0.2}, b = {0.2, 0.1}, one = {0.1};
  EXPECT_FALSE(paired_script_bootstrap(script, a, b, 0, 1));
  EXPECT_FALSE(paired_script_bootstrap({}, {}, {}, 100, 1));
  EXPECT_THROW(paired_script_bootstrap(script, a, one, 100, 1), std::invalid_argument);
}

RC_GTEST_PROP(Bootstrap, SameErrorsGiveZeroAndMeanInsideInterval, ()) {
  const auto n = *rc::gen::inRange<size_t>(1, 60);
  std::vector<int64_t> day;
  std::vector<double> a, b;
  for (size_t i = 0; i < n; ++i) {
    day.push_back(*rc::gen::inRange<int64_t>(0, 10));
    a.push_back(*rc::gen::inRange(0, 1000) / 1000.0);
    b.push_back(*rc::gen::inRange(0, 1000) / 1000.0);
  }
  auto self = paired_day_bootstrap(day, a, a, 200, 5);
  RC_ASSERT(self.has_value());
  RC_ASSERT(self->lo == 0.0 && self->hi == 0.0 && self->point == 0.0);
  auto x = paired_day_bootstrap(day, a, b, 200, 5);
  RC_ASSERT(x->lo <= x->mean + 1e-12);
  RC_ASSERT(x->mean <= x->hi + 1e-12);
  RC_ASSERT(x->lo >= -1.0 && x->hi <= 1.0);
}

}  // namespace
}  // namespace peakcast::eval
