// The script bootstrap of the bound's coverage (peakcast/eval/coverage.h).
#include <algorithm>
#include <random>
#include <stdexcept>

#include "peakcast/eval/coverage.h"
#include "peakcast/eval/metrics.h"

namespace peakcast::eval {

size_t ScriptTallies::index(const std::string& key) {
  const size_t t = index_.index(key);
  if (t == tallies.size()) tallies.emplace_back();
  return t;
}

std::vector<ScriptTally> mean_script_tallies(std::span<const BoundCoverage> seeds) {
  std::vector<ScriptTally> out;
  size_t runs = 0;
  for (const BoundCoverage& c : seeds) {
    if (c.n == 0) continue;
    if (runs == 0) {
      out = c.tallies;
    } else {
      const auto same_jobs = [](const ScriptTally& a, const ScriptTally& b) { return a.n == b.n; };
      if (!std::equal(c.tallies.begin(), c.tallies.end(), out.begin(), out.end(), same_jobs)) {
        throw std::invalid_argument("mean_script_tallies: the runs hold different scripts");
      }
      for (size_t t = 0; t < out.size(); ++t) {
        for (size_t b = 0; b < kNumCoverageLevels; ++b) out[t].covered[b] += c.tallies[t].covered[b];
      }
    }
    ++runs;
  }
  for (ScriptTally& t : out) {
    for (double& v : t.covered) v /= static_cast<double>(runs);
  }
  return out;
}

std::optional<CoverageInterval> coverage_interval(std::span<const std::vector<ScriptTally>> blocks,
                                                  size_t resamples, uint64_t seed, double level) {
  if (resamples == 0 || blocks.empty()) return std::nullopt;
  for (const std::vector<ScriptTally>& b : blocks) {
    if (b.empty()) return std::nullopt;
  }
  CoverageInterval out;
  out.level = level;
  out.resamples = resamples;
  std::mt19937_64 rng(seed);
  std::array<std::vector<double>, kNumCoverageLevels> figures;
  for (auto& f : figures) f.reserve(resamples);
  for (size_t s = 0; s < resamples; ++s) {
    std::array<double, kNumCoverageLevels> mean{};
    for (const std::vector<ScriptTally>& block : blocks) {
      double n = 0.0;
      std::array<double, kNumCoverageLevels> covered{};
      for (size_t k = 0; k < block.size(); ++k) {
        const ScriptTally& t = block[draw_below(rng, block.size())];
        n += t.n;
        for (size_t b = 0; b < kNumCoverageLevels; ++b) covered[b] += t.covered[b];
      }
      for (size_t b = 0; b < kNumCoverageLevels; ++b) mean[b] += covered[b] / n;  // n > 0: a tally has a job
    }
    for (size_t b = 0; b < kNumCoverageLevels; ++b) {
      figures[b].push_back(mean[b] / static_cast<double>(blocks.size()));
    }
  }
  const double alpha = (1.0 - level) / 2.0;
  for (size_t b = 0; b < kNumCoverageLevels; ++b) {
    std::sort(figures[b].begin(), figures[b].end());
    out.lo[b] = quantile_sorted(figures[b], alpha);
    out.hi[b] = quantile_sorted(figures[b], 1.0 - alpha);
  }
  return out;
}

}  // namespace peakcast::eval
