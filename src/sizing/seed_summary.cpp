// Means over seeds per policy and the comparison with the best baseline (seed_summary.h).
#include "peakcast/sizing/seed_summary.h"

#include <algorithm>
#include <limits>

namespace peakcast::sizing {
namespace {

void add(Spread& s, double v, size_t n) {  // n: values seen before this one
  s.min = n == 0 ? v : std::min(s.min, v);
  s.max = n == 0 ? v : std::max(s.max, v);
  s.mean += (v - s.mean) / static_cast<double>(n + 1);
}

}  // namespace

std::vector<SeedSummary> summarize_seeds(const std::vector<std::pair<std::string, Tally>>& rows) {
  std::vector<SeedSummary> out;
  for (const auto& row : rows) {
    const std::string& policy = row.first;
    const Tally& t = row.second;
    // (no structured binding: clang before 16 cannot capture one in the lambda)
    auto it = std::find_if(out.begin(), out.end(), [&](const SeedSummary& s) { return s.policy == policy; });
    if (it == out.end()) {
      out.push_back({});
      it = out.end() - 1;
      it->policy = policy;
    }
    const size_t n = it->seeds++;
    add(it->waste_gbh, t.waste_gbh, n);
    add(it->failures, static_cast<double>(t.failures), n);
    add(it->retries, static_cast<double>(t.retries), n);
    add(it->failed_jobs, static_cast<double>(t.failed_jobs), n);
    add(it->jobs, static_cast<double>(t.jobs), n);
  }
  return out;
}

std::vector<SeedSummary> summarize_seeds(const std::vector<PolicyResult>& results) {
  std::vector<std::pair<std::string, Tally>> rows;
  rows.reserve(results.size());
  for (const auto& r : results) rows.emplace_back(r.policy, r.total);
  return summarize_seeds(rows);
}

std::optional<BaselineComparison> compare_with_best_baseline(const std::vector<SeedSummary>& summary,
                                                             const std::string& policy) {
  const SeedSummary* ours = nullptr;
  const SeedSummary* best = nullptr;
  for (const auto& s : summary) {
    if (s.policy == policy) ours = &s;
    if (is_baseline(s.policy) && (best == nullptr || s.waste_gbh.mean < best->waste_gbh.mean)) best = &s;
  }
  if (ours == nullptr || best == nullptr) return std::nullopt;
  BaselineComparison c;
  c.policy = ours->policy;
  c.best_baseline = best->policy;
  c.waste_gbh = ours->waste_gbh.mean;
  c.baseline_waste_gbh = best->waste_gbh.mean;
  if (c.baseline_waste_gbh > 0) {
    c.waste_ratio = c.waste_gbh / c.baseline_waste_gbh;
  } else {
    c.waste_ratio = c.waste_gbh > 0 ? std::numeric_limits<double>::infinity() : 1.0;
  }
  c.failures = ours->failures.mean;
  c.baseline_failures = best->failures.mean;
  c.seeds = ours->seeds;
  return c;
}

}  // namespace peakcast::sizing
