// Routing and latency figures of the study's efficiency section (docs/method.md §7): which route each
// test job took and what a batch-1 prediction costs per route.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace peakcast::eval {

struct Prediction;

// Route vocabulary of the cascade (cascade::route_name) and of the code-only methods.
inline constexpr std::array<const char*, 5> kCascadeRoutes = {"bypass", "encoder", "cache",
                                                              "no_history", "tree"};

// Shares over the scored jobs of one method and resource:
//   encoder_share = jobs that needed the code model's output (encoder + cache + no_history) / n
//   tree_share    = tree / n: Q from the tree route (XGBoost), the code model not run
//   bypass_share  = bypass / n
//   cache_share   = cache / (encoder + cache + no_history): routed jobs served from the exact cache
// so encoder_share + tree_share + bypass_share = 1 over the vocabulary. Route counts outside the
// vocabulary count in n only.
struct Routing {
  size_t n = 0;
  size_t routed = 0;  // encoder + cache + no_history: the jobs that needed the code model
  double encoder_share = 0.0;
  double tree_share = 0.0;
  double bypass_share = 0.0;
  double cache_share = 0.0;
};

// nullopt when no count belongs to the cascade vocabulary (history methods) or n == 0.
std::optional<Routing> routing_shares(const std::map<std::string, size_t>& routes);

// Mean of each share over seeds (n and routed from the first); nullopt when the input is empty
// or any element is nullopt.
std::optional<Routing> mean_routing(const std::vector<std::optional<Routing>>& per_seed);

struct LatencyStats {
  size_t n = 0;
  double p50_us = 0.0;
  double p99_us = 0.0;
};

// Nearest-rank percentiles (p-th: the ceil(p/100 * n)-th smallest) of the microsecond timings.
LatencyStats latency_stats(std::vector<double> micros);

// One route per job for latency: the costliest route among the job's non-empty per-resource
// routes (encoder > no_history > tree > cache > bypass); other vocabularies (history methods): the
// first non-empty route. Only resources with use[r] count (the job's valid ones), unless none
// of those has a route. "unknown" when every route is empty.
std::string job_route(const Prediction& p, std::array<bool, 2> use = {true, true});

}  // namespace peakcast::eval
