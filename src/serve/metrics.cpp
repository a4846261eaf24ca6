#include "peakcast/serve/metrics.h"

#include <cinttypes>
#include <cstdio>

namespace peakcast::serve {

std::string_view endpoint_name(Endpoint e) {
  switch (e) {
    case Endpoint::kPredict: return "predict";
    case Endpoint::kComplete: return "complete";
    case Endpoint::kHistory: return "history";
    case Endpoint::kHealthz: return "healthz";
    case Endpoint::kMetrics: return "metrics";
    case Endpoint::kOther: return "other";
  }
  return "other";
}

void Metrics::observe(Endpoint e, int status, double seconds) {
  Histogram& h = latency_[static_cast<int>(e)];
  size_t b = 0;
  while (b < kLatencyBuckets.size() && seconds > kLatencyBuckets[b]) ++b;
  h.buckets[b].fetch_add(1, std::memory_order_relaxed);
  h.count.fetch_add(1, std::memory_order_relaxed);
  h.sum_ns.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  ++requests_[{static_cast<int>(e), status}];
}

void Metrics::count_route(Resource r, cascade::Route route) {
  routes_[idx(r)][static_cast<int>(route)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t Metrics::requests(Endpoint e, int status) const {
  std::lock_guard lock(mu_);
  auto it = requests_.find({static_cast<int>(e), status});
  return it == requests_.end() ? 0 : it->second;
}

uint64_t Metrics::route_count(Resource r, cascade::Route route) const {
  return routes_[idx(r)][static_cast<int>(route)].load(std::memory_order_relaxed);
}

std::string Metrics::render(const Gauges& g) const {
  std::string out;
  char line[256];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
  };
  out += "# HELP peakcast_requests_total HTTP requests by endpoint and status.\n"
         "# TYPE peakcast_requests_total counter\n";
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, n] : requests_) {
      add("peakcast_requests_total{endpoint=\"%s\",status=\"%d\"} %" PRIu64 "\n",
          std::string(endpoint_name(static_cast<Endpoint>(key.first))).c_str(), key.second, n);
    }
  }
  out += "# HELP peakcast_request_duration_seconds Time to answer a request (handler only).\n"
         "# TYPE peakcast_request_duration_seconds histogram\n";
  for (int e = 0; e < kNumEndpoints; ++e) {
    const Histogram& h = latency_[e];
    const std::string name(endpoint_name(static_cast<Endpoint>(e)));
    uint64_t cum = 0;
    for (size_t b = 0; b <= kLatencyBuckets.size(); ++b) {
      cum += h.buckets[b].load(std::memory_order_relaxed);
      if (b < kLatencyBuckets.size()) {
        add("peakcast_request_duration_seconds_bucket{endpoint=\"%s\",le=\"%g\"} %" PRIu64 "\n",
            name.c_str(), kLatencyBuckets[b], cum);
      } else {
        add("peakcast_request_duration_seconds_bucket{endpoint=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
            name.c_str(), cum);
      }
    }
    add("peakcast_request_duration_seconds_sum{endpoint=\"%s\"} %.9f\n", name.c_str(),
        static_cast<double>(h.sum_ns.load(std::memory_order_relaxed)) / 1e9);
    add("peakcast_request_duration_seconds_count{endpoint=\"%s\"} %" PRIu64 "\n", name.c_str(),
        h.count.load(std::memory_order_relaxed));
  }
  out += "# HELP peakcast_predictions_total Resource predictions by route (bypass, encoder, cache, no_history).\n"
         "# TYPE peakcast_predictions_total counter\n";
  for (Resource r : kResources) {
    for (auto route : {cascade::Route::kBypass, cascade::Route::kEncoder, cascade::Route::kCache,
                       cascade::Route::kNoHistory}) {
      add("peakcast_predictions_total{resource=\"%s\",route=\"%s\"} %" PRIu64 "\n",
          std::string(resource_name(r)).c_str(), std::string(cascade::route_name(route)).c_str(),
          route_count(r, route));
    }
  }
  uint64_t encoder = 0, cache = 0;
  for (Resource r : kResources) {
    encoder += route_count(r, cascade::Route::kEncoder);
    cache += route_count(r, cascade::Route::kCache);
  }
  out += "# HELP peakcast_encoder_calls_total Resource predictions that ran the code model.\n"
         "# TYPE peakcast_encoder_calls_total counter\n";
  add("peakcast_encoder_calls_total %" PRIu64 "\n", encoder);
  out += "# HELP peakcast_cache_hits_total Resource predictions served from the exact cache.\n"
         "# TYPE peakcast_cache_hits_total counter\n";
  add("peakcast_cache_hits_total %" PRIu64 "\n", cache);
  out += "# HELP peakcast_history_jobs Completions held in the in-memory history.\n"
         "# TYPE peakcast_history_jobs gauge\n";
  add("peakcast_history_jobs %zu\n", g.history_jobs);
  out += "# HELP peakcast_history_keys Distinct script and user keys in the history.\n"
         "# TYPE peakcast_history_keys gauge\n";
  add("peakcast_history_keys %zu\n", g.history_keys);
  out += "# HELP peakcast_history_retained_entries Labels held individually (the rest are folded).\n"
         "# TYPE peakcast_history_retained_entries gauge\n";
  add("peakcast_history_retained_entries %zu\n", g.history_retained_entries);
  out += "# HELP peakcast_history_memory_bytes Approximate heap use of the in-memory history.\n"
         "# TYPE peakcast_history_memory_bytes gauge\n";
  add("peakcast_history_memory_bytes %zu\n", g.history_memory_bytes);
  out += "# HELP peakcast_storage_ok 1 when the last database write succeeded.\n"
         "# TYPE peakcast_storage_ok gauge\n";
  add("peakcast_storage_ok %d\n", g.storage_ok ? 1 : 0);
  out += "# HELP peakcast_storage_errors_total Completions refused because the database failed.\n"
         "# TYPE peakcast_storage_errors_total counter\n";
  add("peakcast_storage_errors_total %" PRIu64 "\n", storage_errors_.load(std::memory_order_relaxed));
  out += "# HELP peakcast_storage_wal_bytes Size of the database's write-ahead log.\n"
         "# TYPE peakcast_storage_wal_bytes gauge\n";
  add("peakcast_storage_wal_bytes %" PRIu64 "\n", g.wal_bytes);
  out += "# HELP peakcast_storage_checkpoint_failures_total WAL checkpoints that failed.\n"
         "# TYPE peakcast_storage_checkpoint_failures_total counter\n";
  add("peakcast_storage_checkpoint_failures_total %" PRIu64 "\n", g.checkpoint_failures);
  out += "# HELP peakcast_completion_conflicts_total Completions refused (409): a stored job_id with other content.\n"
         "# TYPE peakcast_completion_conflicts_total counter\n";
  add("peakcast_completion_conflicts_total %" PRIu64 "\n", conflicts_.load(std::memory_order_relaxed));
  return out;
}

}  // namespace peakcast::serve
