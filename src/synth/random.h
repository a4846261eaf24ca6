// The generator's random source: std::mt19937_64 (output fixed by the standard) and hand-written
// distributions, so a seed gives the same trace with any standard library.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

namespace peakcast::synth {

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}

  uint64_t bits() { return g_(); }
  // [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(g_() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Integer in [lo, hi], unbiased (rejection on the top of the range).
  int64_t uniform_int(int64_t lo, int64_t hi) {
    if (hi < lo) throw std::logic_error("Rng::uniform_int: empty range");
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    if (span == 0) return static_cast<int64_t>(g_());
    const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    uint64_t x;
    do x = g_();
    while (x >= limit);
    return lo + static_cast<int64_t>(x % span);
  }
  bool bernoulli(double p) { return uniform() < p; }
  // Standard normal by Box-Muller (one value per call; simple and reproducible).
  double normal() {
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  double normal(double mean, double sd) { return mean + sd * normal(); }
  // exp(N(log(median), sigma)): multiplicative noise with the given median.
  double lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }
  double exponential(double mean) { return -mean * std::log(1.0 - uniform()); }
  // 1 + number of failures before a success with probability 1/mean: mean `mean` (>= 1).
  int geometric(double mean) {
    const double p = 1.0 / mean;
    int k = 1;
    while (!bernoulli(p) && k < 10000) ++k;
    return k;
  }
  // Index drawn with probability proportional to w[i] (w not all zero).
  size_t weighted(const std::vector<double>& w) {
    double total = 0;
    for (double x : w) total += x;
    double r = uniform() * total;
    for (size_t i = 0; i < w.size(); ++i) {
      if (r < w[i]) return i;
      r -= w[i];
    }
    for (size_t i = w.size(); i-- > 0;) {
      if (w[i] > 0) return i;
    }
    throw std::logic_error("Rng::weighted: all weights are zero");
  }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(uniform_int(0, static_cast<int64_t>(v.size()) - 1))];
  }

 private:
  std::mt19937_64 g_;
};

}  // namespace peakcast::synth
