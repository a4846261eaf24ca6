#include <gtest/gtest.h>

#include "eval/eval_fixtures.h"
#include "peakcast/eval/split.h"

namespace peakcast::eval {
namespace {

using testing::make_job;

// Ten jobs submitted at 0, 100, ..., 900: train = positions 0-5, validation 6-7, test 8-9.
std::vector<Job> handcrafted() {
  return {
      make_job("a", "u", "k", 0, 50, 0.10),     make_job("b", "u", "k", 100, 150, 0.20),
      make_job("c", "u", "k", 200, 700, 0.90),  // ends after the first validation submit: purged
      make_job("d", "u", "k", 300, 350, 0.40),
      make_job("e", "u", "k", 400, 600, 0.95),  // ends exactly at it: purged (>=)
      make_job("f", "u", "k", 500, 590, 0.60),  make_job("g", "u", "k", 600, 790, 0.70),
      make_job("h", "u", "k", 700, 800, 0.80),  // ends at the first test submit: purged
      make_job("i", "u", "k", 800, 850, 0.30),  make_job("j", "u", "k", 900, 950, 0.50),
  };
}

TEST(Split, CountsAndPurgeOnHandcraftedTrace) {
  std::vector<Job> jobs = handcrafted();
  std::reverse(jobs.begin(), jobs.end());  // input order must not matter
  Result<Split> s = make_split(jobs, SplitConfig{});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->counts.total, 10u);
  EXPECT_EQ(s->counts.train, 4u);
  EXPECT_EQ(s->counts.purged_train, 2u);
  EXPECT_EQ(s->counts.validation, 1u);
  EXPECT_EQ(s->counts.purged_validation, 1u);
  EXPECT_EQ(s->counts.test, 2u);
  EXPECT_EQ(s->counts.first_validation_submit, 600);
  EXPECT_EQ(s->counts.first_test_submit, 800);
  ASSERT_EQ(s->order.size(), 10u);
  EXPECT_EQ(s->order.front()->job_id, "a");
  EXPECT_EQ(s->block[2], Block::kPurgedTrain);
  EXPECT_EQ(s->block[4], Block::kPurgedTrain);
  EXPECT_EQ(s->block[7], Block::kPurgedValidation);
  EXPECT_EQ(s->block[9], Block::kTest);
  // Fallback: median of the kept train labels {0.1, 0.2, 0.4, 0.6} = 0.3; no VRAM labels.
  EXPECT_NEAR(s->fallback[idx(Resource::kMem)], 0.3, 1e-9);
  EXPECT_EQ(s->fallback_n[idx(Resource::kMem)], 4u);
  EXPECT_EQ(s->fallback_n[idx(Resource::kVram)], 0u);
}

TEST(Split, ConfigurableShares) {
  std::vector<Job> jobs = handcrafted();
  Result<SplitConfig> c = parse_split("50/30/20");
  ASSERT_TRUE(c.ok());
  Result<Split> s = make_split(jobs, *c);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->counts.first_validation_submit, 500);
  EXPECT_EQ(s->counts.first_test_submit, 800);
  EXPECT_EQ(s->counts.train + s->counts.purged_train, 5u);
  EXPECT_EQ(s->counts.validation + s->counts.purged_validation, 3u);
  EXPECT_EQ(format_split(*c), "50/30/20");
}

TEST(Split, ParseRejectsBadText) {
  EXPECT_FALSE(parse_split("60/40").ok());
  EXPECT_FALSE(parse_split("60/x/20").ok());
  EXPECT_FALSE(parse_split("60/0/40").ok());
  // Shares adding up to neither 100 nor 1 are refused, not rescaled; rounding is allowed.
  Result<SplitConfig> over = parse_split("50/50/50");
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("add up to 150"), std::string::npos) << over.status().message();
  EXPECT_NE(over.status().message().find("33.3"), std::string::npos) << over.status().message();
  EXPECT_FALSE(parse_split("0.7/0.2/0.2").ok());
  EXPECT_TRUE(parse_split("33.3/33.3/33.3").ok());
  EXPECT_TRUE(parse_split("0.333/0.333/0.333").ok());
  Result<SplitConfig> frac = parse_split("0.7/0.15/0.15");
  ASSERT_TRUE(frac.ok());
  EXPECT_DOUBLE_EQ(frac->train, 0.7);
}

TEST(Split, TooFewJobsIsAnError) {
  std::vector<Job> jobs = {make_job("a", "u", "k", 0, 1, 0.5), make_job("b", "u", "k", 1, 2, 0.5)};
  Result<Split> s = make_split(jobs, SplitConfig{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("too few"), std::string::npos);
}

// One burst: every train job still runs at the first validation submission. No label was known
// before it, so there is nothing to fit and no fallback: an error that says so, not a split with
// an empty train block (and a fallback of 0).
TEST(Split, APurgeThatEmptiesTheTrainBlockIsAnError) {
  std::vector<Job> jobs;
  for (int i = 0; i < 10; ++i) {
    jobs.push_back(make_job(std::string(1, static_cast<char>('a' + i)), "u", "k", i, 1000, 0.5));
  }
  Result<Split> s = make_split(jobs, SplitConfig{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().kind(), ErrorKind::kInvalidInput);  // a fold like it is skipped, not fatal
  EXPECT_NE(s.status().message().find("the purge emptied the train block"), std::string::npos)
      << s.status().message();
}

TEST(Split, MedianEvenAndOdd) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

}  // namespace
}  // namespace peakcast::eval
