#include "peakcast/eval/routing.h"

#include <algorithm>
#include <cmath>

#include "peakcast/eval/method.h"

namespace peakcast::eval {

std::optional<Routing> routing_shares(const std::map<std::string, size_t>& routes) {
  Routing r;
  bool any = false;
  auto count = [&](const char* name) -> size_t {
    auto it = routes.find(name);
    if (it == routes.end()) return 0;
    any = true;
    return it->second;
  };
  const size_t bypass = count("bypass"), encoder = count("encoder"), cache = count("cache"),
               none = count("no_history"), tree = count("tree");
  for (const auto& [name, c] : routes) r.n += c;
  if (!any || r.n == 0) return std::nullopt;
  r.routed = encoder + cache + none;
  const auto n = static_cast<double>(r.n);
  r.encoder_share = static_cast<double>(r.routed) / n;
  r.tree_share = static_cast<double>(tree) / n;
  r.bypass_share = static_cast<double>(bypass) / n;
  r.cache_share = r.routed > 0 ? static_cast<double>(cache) / static_cast<double>(r.routed) : 0.0;
  return r;
}

std::optional<Routing> mean_routing(const std::vector<std::optional<Routing>>& per_seed) {
  if (per_seed.empty()) return std::nullopt;
  for (const auto& r : per_seed) {
    if (!r) return std::nullopt;
  }
  Routing out = *per_seed.front();
  out.encoder_share = out.tree_share = out.bypass_share = out.cache_share = 0.0;
  for (const auto& r : per_seed) {
    out.encoder_share += r->encoder_share;
    out.tree_share += r->tree_share;
    out.bypass_share += r->bypass_share;
    out.cache_share += r->cache_share;
  }
  const auto k = static_cast<double>(per_seed.size());
  out.encoder_share /= k;
  out.tree_share /= k;
  out.bypass_share /= k;
  out.cache_share /= k;
  return out;
}

LatencyStats latency_stats(std::vector<double> micros) {
  LatencyStats s;
  s.n = micros.size();
  if (micros.empty()) return s;
  std::sort(micros.begin(), micros.end());
  auto rank = [&](double p) {
    auto k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(micros.size())));
    k = std::clamp<size_t>(k, 1, micros.size());
    return micros[k - 1];
  };
  s.p50_us = rank(50.0);
  s.p99_us = rank(99.0);
  return s;
}

std::string job_route(const Prediction& p, std::array<bool, 2> use) {
  static constexpr std::array<const char*, 5> kCost = {"encoder", "no_history", "tree", "cache", "bypass"};
  bool any = false;
  for (size_t i = 0; i < p.route.size(); ++i) any = any || (use[i] && !p.route[i].empty());
  if (!any) use = {true, true};
  for (const char* route : kCost) {
    for (size_t i = 0; i < p.route.size(); ++i) {
      if (use[i] && p.route[i] == route) return p.route[i];
    }
  }
  for (size_t i = 0; i < p.route.size(); ++i) {
    if (use[i] && !p.route[i].empty()) return p.route[i];
  }
  return "unknown";
}

}  // namespace peakcast::eval
