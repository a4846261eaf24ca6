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

void Metrics::count_answer(Resource r, const cascade::ResourcePrediction& p) {
  count_route(r, p.route);
  if (p.route != cascade::Route::kNoHistory) return;
  if (p.q_origin == cascade::QOrigin::kCodeModel) no_history_encoder_.fetch_add(1, std::memory_order_relaxed);
  if (p.q_origin == cascade::QOrigin::kCache) no_history_cache_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t Metrics::requests(Endpoint e, int status) const {
  std::lock_guard lock(mu_);
  auto it = requests_.find({static_cast<int>(e), status});
  return it == requests_.end() ? 0 : it->second;
}

uint64_t Metrics::route_count(Resource r, cascade::Route route) const {
  return routes_[idx(r)][static_cast<int>(route)].load(std::memory_order_relaxed);
}

namespace {

// Appends one printf-formatted sample line.
template <typename... Args>
void add(std::string& out, const char* fmt, Args... args) {
  char line[256];
  std::snprintf(line, sizeof line, fmt, args...);
  out += line;
}

// The HELP and TYPE lines that open a metric family.
void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

}  // namespace

void Metrics::render_requests(std::string& out) const {
  family(out, "peakcast_requests_total", "counter", "HTTP requests by endpoint and status.");
  std::lock_guard lock(mu_);
  for (const auto& [key, n] : requests_) {
    add(out, "peakcast_requests_total{endpoint=\"%s\",status=\"%d\"} %" PRIu64 "\n",
        std::string(endpoint_name(static_cast<Endpoint>(key.first))).c_str(), key.second, n);
  }
}

void Metrics::render_latency(std::string& out) const {
  family(out, "peakcast_request_duration_seconds", "histogram",
         "Time to answer a request (handler only).");
  for (int e = 0; e < kNumEndpoints; ++e) {
    const Histogram& h = latency_[e];
    const std::string name(endpoint_name(static_cast<Endpoint>(e)));
    uint64_t cum = 0;
    for (size_t b = 0; b <= kLatencyBuckets.size(); ++b) {
      cum += h.buckets[b].load(std::memory_order_relaxed);
      if (b < kLatencyBuckets.size()) {
        add(out,
            "peakcast_request_duration_seconds_bucket{endpoint=\"%s\",le=\"%g\"} %" PRIu64 "\n",
            name.c_str(), kLatencyBuckets[b], cum);
      } else {
        add(out,
            "peakcast_request_duration_seconds_bucket{endpoint=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
            name.c_str(), cum);
      }
    }
    add(out, "peakcast_request_duration_seconds_sum{endpoint=\"%s\"} %.9f\n", name.c_str(),
        static_cast<double>(h.sum_ns.load(std::memory_order_relaxed)) / 1e9);
    add(out, "peakcast_request_duration_seconds_count{endpoint=\"%s\"} %" PRIu64 "\n", name.c_str(),
        h.count.load(std::memory_order_relaxed));
  }
}

void Metrics::render_routes(std::string& out) const {
  family(out, "peakcast_predictions_total", "counter",
         "Resource predictions by route (bypass, encoder, cache, no_history, tree).");
  for (Resource r : kResources) {
    for (cascade::Route route : cascade::kRoutes) {
      add(out, "peakcast_predictions_total{resource=\"%s\",route=\"%s\"} %" PRIu64 "\n",
          std::string(resource_name(r)).c_str(), std::string(cascade::route_name(route)).c_str(),
          route_count(r, route));
    }
  }
}

// What lowering --mem to the recommendations saves: each completed job with a recommendation
// on record run at the request it was submitted with and at the recommendation (sizing::run_at).
void Metrics::render_advice(std::string& out, const Gauges& g) const {
  family(out, "peakcast_advice_jobs_total", "counter",
         "Completed jobs with a memory recommendation on record and a peak, accounted below.");
  add(out, "peakcast_advice_jobs_total %" PRIu64 "\n", static_cast<uint64_t>(g.advice_at_request.jobs));
  family(out, "peakcast_advice_oom_jobs_total", "counter",
         "Completed jobs with a recommendation on record that ran out of memory (no peak: not accounted).");
  add(out, "peakcast_advice_oom_jobs_total %" PRIu64 "\n", g.advice_oom_jobs);
  family(out, "peakcast_lowered_jobs_total", "counter",
         "Completed jobs that ran below the memory request they were submitted with (the hook "
         "lowered --mem), learned at that request.");
  add(out, "peakcast_lowered_jobs_total %" PRIu64 "\n", g.lowered_jobs);
  family(out, "peakcast_lowered_oom_jobs_total", "counter",
         "Jobs killed for memory at a limit below the request they were submitted with: what "
         "lowering --mem cost in failed runs.");
  add(out, "peakcast_lowered_oom_jobs_total %" PRIu64 "\n", g.advice_lowered_oom_jobs);
  family(out, "peakcast_lowered_oom_byte_seconds_total", "counter",
         "Those jobs' memory limit x run time until killed (byte x s; / 3.6e12 = GB x h).");
  add(out, "peakcast_lowered_oom_byte_seconds_total %.17g\n", g.advice_lowered_oom_gbh * 3.6e12);
  const std::pair<const char*, const sizing::Tally*> at[] = {{"request", &g.advice_at_request},
                                                             {"recommendation", &g.advice_at_recommendation}};
  family(out, "peakcast_advice_waste_byte_seconds_total", "counter",
         "Memory reserved but unused by the attempt that held, plus the whole allocation of each "
         "out-of-memory attempt (byte x s; / 3.6e12 = GB x h), at the jobs' requests and at the "
         "recommendations (an OOM attempt at the recommendation is followed by the request).");
  for (const auto& [name, t] : at) {
    add(out, "peakcast_advice_waste_byte_seconds_total{at=\"%s\"} %.17g\n", name, t->waste_gbh * 3.6e12);
  }
  family(out, "peakcast_advice_failed_attempts_total", "counter",
         "Out-of-memory attempts those jobs would have had, at their requests and at the recommendations.");
  for (const auto& [name, t] : at) {
    add(out, "peakcast_advice_failed_attempts_total{at=\"%s\"} %" PRIu64 "\n", name,
        static_cast<uint64_t>(t->failures));
  }
}

std::string Metrics::render(const Gauges& g) const {
  std::string out;
  render_requests(out);
  render_latency(out);
  render_routes(out);
  uint64_t encoder = no_history_encoder_.load(std::memory_order_relaxed);
  uint64_t cache = no_history_cache_.load(std::memory_order_relaxed);
  for (Resource r : kResources) {
    encoder += route_count(r, cascade::Route::kEncoder);
    cache += route_count(r, cascade::Route::kCache);
  }
  // One value each, without labels.
  struct Scalar {
    const char* name;
    const char* type;
    const char* help;
    uint64_t value;
  };
  const Scalar scalars[] = {
      {"peakcast_encoder_calls_total", "counter",
       "Resource predictions that ran the code model.", encoder},
      {"peakcast_cache_hits_total", "counter",
       "Resource predictions served from the exact cache.", cache},
      {"peakcast_history_jobs", "gauge",
       "Completions learned into the in-memory history since start, those loaded at start "
       "included (runs forgotten under --history-days are not subtracted).",
       g.history_jobs},
      {"peakcast_history_keys", "gauge", "Distinct script and user keys in the history.",
       g.history_keys},
      {"peakcast_history_retained_entries", "gauge",
       "Labels held individually (the rest are folded).", g.history_retained_entries},
      {"peakcast_history_memory_bytes", "gauge",
       "Approximate heap use of the in-memory history.", g.history_memory_bytes},
      {"peakcast_storage_ok", "gauge", "1 when the last database write succeeded.",
       g.storage_ok ? 1u : 0u},
      {"peakcast_storage_errors_total", "counter",
       "Completions refused because the database failed.",
       storage_errors_.load(std::memory_order_relaxed)},
      {"peakcast_answers_not_kept_total", "counter",
       "Answers given but not kept on record because the database failed (a job lowered by the hook "
       "is learned at its lowered request if the daemon restarts before it completes).",
       g.answers_not_kept},
      {"peakcast_storage_wal_bytes", "gauge", "Size of the database's write-ahead log.",
       g.wal_bytes},
      {"peakcast_storage_checkpoint_failures_total", "counter", "WAL checkpoints that failed.",
       g.checkpoint_failures},
      {"peakcast_completion_conflicts_total", "counter",
       "Completions refused (409): a stored job_id with other content.",
       conflicts_.load(std::memory_order_relaxed)},
      {"peakcast_bound_judged_by_answer_total", "counter",
       "Completions the online bound judged by the bound answered at their submission.",
       g.bound_judged_by_answer},
      {"peakcast_bound_judged_as_it_stands_total", "counter",
       "Completions the online bound judged by the bound as it stood (no answer on record).",
       g.bound_judged_as_it_stands},
      {"peakcast_bound_not_judged_total", "counter",
       "Completions submitted before the history's watermark (a run or wait longer than "
       "--late-tolerance): the bound did not learn them, their script's sizing policy did.",
       g.bound_not_judged},
      {"peakcast_bound_answers_pending", "gauge",
       "Answers kept to judge their job's completion by (bounded; the oldest go first).",
       g.bound_answers_pending},
      {"peakcast_recommendations_by_workload_total", "counter",
       "Memory recommendations answered by the script's own sizing policy (10 or more runs).",
       g.recommended_by_workload},
      {"peakcast_recommendations_by_bound_total", "counter",
       "Memory recommendations answered by the online bound times the request.",
       g.recommended_by_bound},
      {"peakcast_sizing_workloads", "gauge",
       "Scripts kept with a sizing policy of their own (at most --sizing-workloads).",
       g.sizing_workloads},
      {"peakcast_sizing_memory_bytes", "gauge",
       "Approximate memory the scripts' sizing policies hold (at most --sizing-memory).",
       g.sizing_memory_bytes},
      {"peakcast_sizing_policies_aged_out_total", "counter",
       "Scripts' sizing policies dropped because the script's last run ended more than "
       "--sizing-days (or --history-days) ago.",
       g.sizing_aged_out},
      {"peakcast_sizing_policies_handed_over_total", "counter",
       "Scripts' sizing policies replaced by the one that learned only the runs of the last "
       "--sizing-days (or --history-days).",
       g.sizing_handed_over},
  };
  for (const Scalar& s : scalars) {
    family(out, s.name, s.type, s.help);
    add(out, "%s %" PRIu64 "\n", s.name, s.value);
  }
  render_advice(out, g);
  return out;
}

}  // namespace peakcast::serve
