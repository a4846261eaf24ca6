// The online conformal coverage of `evaluate` (eval/coverage.h): nominal coverage on a stationary
// stream, no leakage from jobs that had not ended at a submission, censored jobs left out, the
// JSON keys.
#include "peakcast/eval/coverage.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <vector>

namespace peakcast::eval {
namespace {

constexpr int64_t kMin = 60 * 1000;

Job labelled(int i, int64_t submit, int64_t end, double label) {
  Job j;
  j.job_id = "j" + std::to_string(i);
  j.user = "u";
  j.submit_ms = submit;
  j.end_ms = end;
  j.util[0] = label;
  j.valid[0] = true;
  return j;
}

// Labels = point + noise, each job ending before the next submission: at every level the
// bound's test coverage is the nominal one within 0.02 (about 3 binomial s.e. at n = 3000).
TEST(OnlineCoverage, NominalOnAStationaryStream) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 0.08);
  std::vector<Job> jobs;
  std::vector<double> points;
  for (int i = 0; i < 4000; ++i) {
    const double point = 0.3 + 0.2 * std::sin(i * 0.01);
    jobs.push_back(labelled(i, i * kMin, i * kMin + kMin / 2, std::clamp(point + noise(rng), 0.0, 1.0)));
    points.push_back(point);
  }
  std::vector<WalkedJob> walk;
  for (size_t i = 0; i < jobs.size(); ++i) {
    walk.push_back({&jobs[i], history::Level::kExactScript, points[i], i >= 1000});
  }
  const BoundCoverage c = online_coverage(walk, Resource::kMem, 1.0);
  ASSERT_EQ(c.n, 3000u);
  for (size_t b = 0; b < kNumCoverageLevels; ++b) {
    EXPECT_NEAR(c.coverage[b], kCoverageLevels[b], 0.02) << kCoverageLevels[b];
  }
  EXPECT_LT(c.width[0], c.width[1]);
  EXPECT_LT(c.width[1], c.width[2]);
  EXPECT_NEAR(c.width[1], 1.2816 * 0.08, 0.02);  // the normal 0.9 quantile of the noise
}

// A job that ends after a submission never shapes that submission's bound: changing its label
// leaves every figure of a stream whose scored jobs were all submitted before it ended unchanged.
TEST(OnlineCoverage, NoLeakageFromJobsStillRunning) {
  auto run = [](double late_label) {
    std::vector<Job> jobs;
    for (int i = 0; i < 200; ++i) jobs.push_back(labelled(i, i * kMin, i * kMin + kMin / 2, 0.4 + 0.001 * (i % 7)));
    // Submitted first, ends after every other submission.
    jobs.insert(jobs.begin(), labelled(999, 0, 1000 * kMin, late_label));
    std::vector<WalkedJob> walk;
    for (size_t i = 0; i < jobs.size(); ++i) walk.push_back({&jobs[i], history::Level::kUser, 0.4, i > 50});
    return online_coverage(walk, Resource::kMem, 1.0);
  };
  const BoundCoverage a = run(0.1), b = run(1.0);
  for (size_t k = 0; k < kNumCoverageLevels; ++k) {
    EXPECT_EQ(a.coverage[k], b.coverage[k]);
    EXPECT_EQ(a.width[k], b.width[k]);
  }
}

// A Nextflow-style burst: every job of the burst is submitted before any of them completes (the
// fold test blocks of nf eager and chipseq look like this: docs/bounds.md). No label of the
// burst may shape a bound issued inside it, so the burst's widths are the same whatever its
// labels are -- while its coverage, which is judged on those labels, is not.
TEST(OnlineCoverage, NoBoundInsideABurstUsesTheBurstsOwnLabels) {
  auto run = [](double burst_label) {
    std::vector<Job> jobs;
    std::mt19937_64 rng(3);
    std::normal_distribution<double> noise(0.0, 0.05);
    // A calm history: each job ends before the next submission.
    for (int i = 0; i < 300; ++i) {
      jobs.push_back(labelled(i, i * kMin, i * kMin + kMin / 2, std::clamp(0.4 + noise(rng), 0.0, 1.0)));
    }
    // The burst: 80 submissions one second apart, all ending an hour after the last of them.
    const int64_t t0 = 300 * kMin;
    for (int i = 0; i < 80; ++i) {
      jobs.push_back(labelled(1000 + i, t0 + i * 1000, t0 + 140 * kMin + i, burst_label));
    }
    std::vector<WalkedJob> walk;
    for (size_t i = 0; i < jobs.size(); ++i) {
      walk.push_back({&jobs[i], history::Level::kExactScript, 0.4, i >= 300});
    }
    return online_coverage(walk, Resource::kMem, 1.0);
  };
  const BoundCoverage low = run(0.41), high = run(0.95);
  ASSERT_EQ(low.n, 80u);
  for (size_t k = 0; k < kNumCoverageLevels; ++k) {
    EXPECT_EQ(low.width[k], high.width[k]) << kCoverageLevels[k];
    EXPECT_GT(low.width[k], 0.0);
    EXPECT_LT(low.width[k], 0.5);  // issued from the calm residuals, not the cap
    EXPECT_DOUBLE_EQ(high.coverage[k], 0.0);  // a shifted burst is missed whole: no feedback
  }
  EXPECT_GT(low.coverage[2], low.coverage[0] - 1e-12);
}

// Before any completion the bound is the cap (no evidence: the whole request); censored test
// jobs are counted apart; the JSON carries the three levels under fixed keys.
TEST(OnlineCoverage, ColdStartCensoredAndJson) {
  std::vector<Job> jobs = {labelled(0, 0, 10 * kMin, 0.5), labelled(1, kMin, 10 * kMin, 1.0)};
  jobs[1].censored = true;
  jobs[1].state = "OUT_OF_MEMORY";
  std::vector<WalkedJob> walk = {{&jobs[0], history::Level::kNone, 0.2, true},
                                 {&jobs[1], history::Level::kNone, 0.2, true}};
  const BoundCoverage c = online_coverage(walk, Resource::kMem, 1.0);
  EXPECT_EQ(c.n, 1u);
  EXPECT_EQ(c.censored, 1u);
  EXPECT_DOUBLE_EQ(c.coverage[1], 1.0);
  EXPECT_DOUBLE_EQ(c.width[1], 0.8);  // the cap minus the point
  nlohmann::json row;
  add_coverage_json(c, row);
  for (const char* k : {"0.8", "0.9", "0.95"}) {
    EXPECT_TRUE(row["coverage"].contains(k)) << row.dump();
    EXPECT_TRUE(row["bound_width"].contains(k)) << row.dump();
  }
  EXPECT_EQ(row["bound_censored"], 1);
  nlohmann::json empty;
  add_coverage_json(BoundCoverage{}, empty);
  EXPECT_TRUE(empty["coverage"].is_null());
}

}  // namespace
}  // namespace peakcast::eval
