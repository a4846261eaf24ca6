#pragma once
// Small statistics shared by the pipeline's stages: the sample mean and s.d. (the evaluation's
// seed summaries, the sizing policy's jackknife ratios), the normal and Student's t quantiles,
// and the normal-theory prediction bound that peakcast's sizing policy offers beside its
// conformal ones.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace peakcast {

// The p-quantile of the standard normal distribution, 0 < p < 1: its CDF (std::erfc) inverted
// by bisection, to about 1e-12. NaN outside (0, 1).
double normal_quantile(double p);

// The p-quantile of Student's t with df degrees of freedom, 0 < p < 1, df >= 1. Up to 30 degrees
// of freedom it inverts the closed form of t's CDF for a whole df (Abramowitz & Stegun 26.7.3-4;
// a fractional df is rounded down, which errs wide); beyond, the Cornish-Fisher expansion in 1/df
// to its third term (A&S 26.7.5), within 1e-3 there for p <= 0.999. NaN for df < 1 or p outside
// (0, 1).
double student_t_quantile(double p, double df);

// The sample mean and s.d. (n - 1 in the denominator) of xs; sd 0 for fewer than 2 values.
struct MeanSd {
  double mean = 0.0, sd = 0.0;
  size_t n = 0;
};
MeanSd mean_sd(std::span<const double> xs);

// mean + t x sd x sqrt(1 + 1/n): normal_prediction_bound from its parts, for a caller that keeps
// its own table of t quantiles (peakcast's sizing policy reads t at nine coverages per answer).
double prediction_bound(const MeanSd& m, double t);

// The normal-theory upper prediction bound at `coverage` for one more draw from the distribution
// `xs` were drawn from: mean + t(coverage, n - 1) x s.d. x sqrt(1 + 1/n). Exact for normal draws
// (a new draw is at or under it with probability `coverage`); nullopt for fewer than 2 values.
std::optional<double> normal_prediction_bound(const std::vector<double>& xs, double coverage);

// Where the items after the first `share` of `total` (of n items in order) begin:
// floor(n * share / total), plus 1e-9 so that 0.6 x 10 or (1 - 0.9) x 10 does not land on
// 5.999... or 0.999... . The evaluation's split blocks and folds' tail, and the simulator's
// chrono scored block, are cut with it, so a share cuts the same everywhere.
size_t share_position(size_t n, double share, double total = 1.0);

}  // namespace peakcast
