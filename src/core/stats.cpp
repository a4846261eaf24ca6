#include "peakcast/core/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace peakcast {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kBisections = 200;  // halves a bracket of width < 2^60 to below 1e-30 of it
constexpr double kExactUpTo = 30.0;

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

// P(T <= t) for Student's t with a whole df >= 1 (A&S 26.7.3 odd df, 26.7.4 even df: finite sums
// in theta = atan(t / sqrt(df))).
double t_cdf(double t, int df) {
  const double theta = std::atan(std::abs(t) / std::sqrt(static_cast<double>(df)));
  const double s = std::sin(theta), c = std::cos(theta), c2 = c * c;
  double a;  // P(|T| <= |t|)
  if (df % 2) {
    double sum = 0.0;
    if (df > 1) {
      double term = 1.0;
      sum = 1.0;
      for (int k = 2; k <= df - 3; k += 2) {
        term *= c2 * k / (k + 1.0);
        sum += term;
      }
    }
    a = 2.0 / std::numbers::pi * (theta + s * c * sum);
  } else {
    double term = 1.0, sum = 1.0;
    for (int k = 1; k <= df - 3; k += 2) {
      term *= c2 * k / (k + 1.0);
      sum += term;
    }
    a = s * sum;
  }
  return t >= 0 ? 0.5 * (1.0 + a) : 0.5 * (1.0 - a);
}

// The x with cdf(x) = p, cdf increasing: a bracket grown from [-1, 1], then bisection.
template <class Cdf>
double invert(const Cdf& cdf, double p) {
  double lo = -1.0, hi = 1.0;
  while (cdf(lo) > p && lo > -1e18) lo *= 2.0;
  while (cdf(hi) < p && hi < 1e18) hi *= 2.0;
  for (int i = 0; i < kBisections && hi - lo > 1e-13 * std::max(1.0, std::abs(lo)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double normal_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) return kNaN;
  return invert(normal_cdf, p);
}

double student_t_quantile(double p, double df) {
  if (!(p > 0.0 && p < 1.0) || !(df >= 1.0)) return kNaN;
  if (df <= kExactUpTo) {
    const int whole = static_cast<int>(std::floor(df));
    return invert([whole](double t) { return t_cdf(t, whole); }, p);
  }
  const double z = normal_quantile(p), z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2;
  return z + (z3 + z) / (4.0 * df) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * df * df) +
         (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * df * df * df);
}

MeanSd mean_sd(std::span<const double> xs) {
  MeanSd m;
  m.n = xs.size();
  if (xs.empty()) return m;
  const auto n = static_cast<double>(xs.size());
  for (double x : xs) m.mean += x;
  m.mean /= n;
  if (xs.size() < 2) return m;
  double ss = 0.0;
  for (double x : xs) ss += (x - m.mean) * (x - m.mean);
  m.sd = std::sqrt(ss / (n - 1.0));
  return m;
}

double prediction_bound(const MeanSd& m, double t) {
  return m.mean + t * m.sd * std::sqrt(1.0 + 1.0 / static_cast<double>(m.n));
}

std::optional<double> normal_prediction_bound(const std::vector<double>& xs, double coverage) {
  if (xs.size() < 2) return std::nullopt;
  return prediction_bound(mean_sd(xs), student_t_quantile(coverage, static_cast<double>(xs.size()) - 1.0));
}

size_t share_position(size_t n, double share, double total) {
  return static_cast<size_t>(std::floor(static_cast<double>(n) * share / total + 1e-9));
}

}  // namespace peakcast
