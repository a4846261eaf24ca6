// Quantiles of the normal and Student's t distributions against published tables, and the
// normal-theory prediction bound's coverage of a new normal draw (where the normal quantile in
// place of t's under-covers on a short history).
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "peakcast/core/stats.h"

namespace peakcast {
namespace {

TEST(StudentT, NormalQuantilesMatchTheTables) {
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-12);
  EXPECT_NEAR(normal_quantile(0.9), 1.2815516, 1e-6);
  EXPECT_NEAR(normal_quantile(0.975), 1.9599640, 1e-6);
  EXPECT_NEAR(normal_quantile(0.999), 3.0902323, 1e-6);
  EXPECT_NEAR(normal_quantile(0.001), -3.0902323, 1e-6);
  EXPECT_TRUE(std::isnan(normal_quantile(0.0)));
  EXPECT_TRUE(std::isnan(normal_quantile(1.0)));
  EXPECT_TRUE(std::isnan(normal_quantile(std::nan(""))));
}

// Student's t quantiles as printed in the tables (three decimals): the closed form up to 30
// degrees of freedom, odd and even, and the expansion beyond.
TEST(StudentT, QuantilesMatchTheTables) {
  struct Row {
    double p, df, t;
  };
  for (const Row& r : {Row{0.975, 1, 12.706}, Row{0.95, 2, 2.920}, Row{0.99, 3, 4.541}, Row{0.999, 4, 7.173},
                       Row{0.99, 5, 3.365}, Row{0.9, 8, 1.397}, Row{0.999, 9, 4.297}, Row{0.995, 10, 3.169},
                       Row{0.95, 15, 1.753}, Row{0.999, 20, 3.552}, Row{0.9, 30, 1.310}, Row{0.999, 30, 3.385},
                       Row{0.999, 40, 3.307}, Row{0.995, 60, 2.660}, Row{0.999, 60, 3.232}, Row{0.975, 120, 1.980},
                       Row{0.999, 120, 3.160}}) {
    EXPECT_NEAR(student_t_quantile(r.p, r.df), r.t, 6e-4) << "p " << r.p << " df " << r.df;
    EXPECT_NEAR(student_t_quantile(1.0 - r.p, r.df), -r.t, 6e-4) << "p " << 1.0 - r.p << " df " << r.df;
  }
  EXPECT_NEAR(student_t_quantile(0.5, 7), 0.0, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.999, 1e9), normal_quantile(0.999), 1e-6);
  EXPECT_NEAR(student_t_quantile(0.95, 2.7), student_t_quantile(0.95, 2), 1e-12);  // rounded down
  EXPECT_TRUE(std::isnan(student_t_quantile(0.9, 0.5)));
  EXPECT_TRUE(std::isnan(student_t_quantile(1.5, 10)));
}

// Wider with fewer degrees of freedom and with more coverage.
TEST(StudentT, QuantilesGrowWithCoverageAndShrinkWithDegreesOfFreedom) {
  for (double df = 1; df <= 60; ++df) {
    EXPECT_GT(student_t_quantile(0.999, df), student_t_quantile(0.99, df)) << df;
    EXPECT_GT(student_t_quantile(0.99, df), student_t_quantile(0.9, df)) << df;
    EXPECT_GT(student_t_quantile(0.95, df), student_t_quantile(0.95, df + 1)) << df;
  }
}

// For normal draws a new draw is at or under the bound with probability `coverage`, whatever the
// number of draws it was made from: within four standard errors over 40,000 trials. The normal
// quantile in place of t's under-covers from 5 draws (about 0.865 at 0.9).
TEST(NormalPredictionBound, CoversANewNormalDrawAtItsCoverage) {
  std::mt19937_64 g(7);
  std::normal_distribution<double> ratio(1.0, 0.2);
  constexpr int kTrials = 40000;
  for (size_t n : {5u, 10u, 30u}) {
    for (double c : {0.9, 0.98}) {
      int covered = 0, covered_z = 0;
      std::vector<double> xs(n);
      const double t = student_t_quantile(c, static_cast<double>(n) - 1.0), z = normal_quantile(c);
      for (int i = 0; i < kTrials; ++i) {
        for (double& x : xs) x = ratio(g);
        const double next = ratio(g);
        const MeanSd m = mean_sd(xs);
        const double b = prediction_bound(m, t);
        if (i < 10) {
          ASSERT_DOUBLE_EQ(*normal_prediction_bound(xs, c), b);
        }
        covered += next <= b;
        covered_z += next <= prediction_bound(m, z);
      }
      const double cov = static_cast<double>(covered) / kTrials;
      EXPECT_NEAR(cov, c, 4.0 * std::sqrt(c * (1.0 - c) / kTrials)) << "n " << n << " c " << c;
      if (n == 5) {
        EXPECT_LT(static_cast<double>(covered_z) / kTrials, c - 0.01) << "c " << c;
      }
    }
  }
}

TEST(NormalPredictionBound, NeedsTwoValuesAndIsTheMeanWithoutSpread) {
  EXPECT_FALSE(normal_prediction_bound({}, 0.9).has_value());
  EXPECT_FALSE(normal_prediction_bound({1.0}, 0.9).has_value());
  EXPECT_DOUBLE_EQ(*normal_prediction_bound({2.0, 2.0, 2.0}, 0.99), 2.0);
  // mean 2, s.d. 1, n 3: 2 + t(0.9, 2) x sqrt(4/3)
  EXPECT_NEAR(*normal_prediction_bound({1.0, 2.0, 3.0}, 0.9), 2.0 + 1.885618 * std::sqrt(4.0 / 3.0), 1e-5);
  const std::vector<double> xs = {1.0, 2.0, 3.0};
  const MeanSd m = mean_sd(xs);
  EXPECT_DOUBLE_EQ(m.mean, 2.0);
  EXPECT_DOUBLE_EQ(m.sd, 1.0);
  EXPECT_EQ(m.n, 3u);
}

}  // namespace
}  // namespace peakcast
