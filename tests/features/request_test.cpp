#include "peakcast/features/request.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace pf = peakcast::features;
using peakcast::Job;

namespace {
Job make_job(double cpus, uint64_t mem_gib, int gpus, int64_t hours) {
  Job j;
  j.req_cpus = cpus;
  j.req_mem_bytes = mem_gib << 30;
  j.req_gpus = gpus;
  j.req_time_s = hours * 3600;
  if (gpus > 0) j.gpu_mem_bytes = 40ULL << 30;
  return j;
}
}  // namespace

TEST(RequestFeatures, Log1pOfRequestAndMissingIsZero) {
  auto f = pf::raw_request_features(make_job(4, 16, 2, 3));
  EXPECT_FLOAT_EQ(f[0], std::log1p(4.0f));
  EXPECT_FLOAT_EQ(f[1], std::log1p(16.0f));
  EXPECT_FLOAT_EQ(f[2], std::log1p(2.0f));
  EXPECT_FLOAT_EQ(f[3], std::log1p(3.0f));
  EXPECT_FLOAT_EQ(f[4], std::log1p(4.0f));  // 16 GiB over 4 cores
  EXPECT_FLOAT_EQ(f[5], std::log1p(40.0f));
  EXPECT_EQ(f[6], 1.0f);
  EXPECT_EQ(f[7], 1.0f);
  Job empty;
  for (float x : pf::raw_request_features(empty)) EXPECT_EQ(x, 0.0f);
}

TEST(RequestFeatures, StandardizerFitsOnTrainOnly) {
  std::vector<Job> train = {make_job(1, 1, 0, 1), make_job(4, 8, 1, 2), make_job(16, 64, 4, 24)};
  std::vector<const Job*> ptrs;
  for (auto& j : train) ptrs.push_back(&j);
  pf::RequestStandardizer s;
  EXPECT_FALSE(s.fitted());
  s.fit(ptrs);
  EXPECT_TRUE(s.fitted());
  // Train features have mean 0 and population s.d. 1 for every non-constant column.
  std::array<double, pf::kNumRequestFeatures> sum{}, sq{};
  for (const auto& j : train) {
    auto z = s.transform(j);
    for (int k = 0; k < pf::kNumRequestFeatures; ++k) {
      sum[k] += z[k];
      sq[k] += z[k] * z[k];
    }
  }
  for (int k = 0; k < pf::kNumRequestFeatures; ++k) {
    EXPECT_NEAR(sum[k] / 3, 0.0, 1e-5) << k;
    if (k != 7) {  // has_mem_request is constant here
      EXPECT_NEAR(sq[k] / 3, 1.0, 1e-4) << k;
    }
  }
  // A job outside the training block does not move the statistics.
  Job huge = make_job(1024, 4096, 8, 100);
  auto before = s.to_json();
  (void)s.transform(huge);
  EXPECT_EQ(s.to_json(), before);
}

TEST(RequestFeatures, JsonRoundTripIsExact) {
  std::vector<Job> train = {make_job(3, 7, 0, 5), make_job(6, 11, 2, 9), make_job(2, 300, 1, 48)};
  std::vector<const Job*> ptrs;
  for (auto& j : train) ptrs.push_back(&j);
  pf::RequestStandardizer s;
  s.fit(ptrs);
  auto text = s.to_json().dump();
  auto back = pf::RequestStandardizer::from_json(nlohmann::json::parse(text));
  ASSERT_TRUE(back.ok()) << back.status().message();
  Job probe = make_job(5, 13, 1, 7);
  auto a = s.transform(probe);
  auto b = back->transform(probe);
  for (int k = 0; k < pf::kNumRequestFeatures; ++k) EXPECT_EQ(a[k], b[k]);  // bit-identical
  EXPECT_EQ(back->to_json(), s.to_json());
}

TEST(RequestFeatures, FromJsonRejectsBadInput) {
  pf::RequestStandardizer s;
  auto good = s.to_json();
  auto newer = good;
  newer["format_version"] = 99;
  EXPECT_EQ(pf::RequestStandardizer::from_json(newer).status().kind(), peakcast::ErrorKind::kUnsupported);
  newer["format_version"] = 4294967297;  // 2^32 + 1: not format 1
  EXPECT_EQ(pf::RequestStandardizer::from_json(newer).status().kind(), peakcast::ErrorKind::kUnsupported);
  auto short_mean = good;
  short_mean["mean"] = nlohmann::json::array({1.0, 2.0});
  auto r = pf::RequestStandardizer::from_json(short_mean);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("mean"), std::string::npos);
  auto zero_std = good;
  zero_std["std"][3] = 0.0;
  EXPECT_FALSE(pf::RequestStandardizer::from_json(zero_std).ok());
  EXPECT_FALSE(pf::RequestStandardizer::from_json(nlohmann::json::array()).ok());
  // fit() leaves every std above 1e-8 (a constant feature gets 1): a smaller one is no file it
  // wrote, and would send a feature past float's range (its conversion: undefined).
  auto tiny_std = good;
  tiny_std["std"][2] = 1e-300;
  auto t = pf::RequestStandardizer::from_json(tiny_std);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("std[2]"), std::string::npos) << t.status().message();
}

// A standardized feature stays within float's range whatever the file's mean and the request:
// beyond a million standard deviations it is held there.
TEST(RequestFeatures, AStandardizedFeatureIsHeldWithinAMillionDeviations) {
  auto j = pf::RequestStandardizer().to_json();
  j["mean"][0] = -1e300;
  j["mean"][1] = 1e300;
  auto s = pf::RequestStandardizer::from_json(j);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const auto f = s->transform(make_job(5, 13, 1, 7));
  EXPECT_EQ(f[0], 1e6f);
  EXPECT_EQ(f[1], -1e6f);
}
