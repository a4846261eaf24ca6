// Prometheus counters and latency histograms for the service. Thread-safe; observing costs a few
// atomic adds (plus a short lock for the (route, status) counter).
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "peakcast/cascade/prediction.h"
#include "peakcast/sizing/simulate.h"

namespace peakcast::serve {

enum class Endpoint : int { kPredict, kComplete, kHistory, kHealthz, kMetrics, kOther };
inline constexpr int kNumEndpoints = 6;
std::string_view endpoint_name(Endpoint e);  // "predict", "complete", "history", ...

// Upper bounds in seconds; the last bucket is +Inf.
inline constexpr std::array<double, 14> kLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5};

struct Gauges {  // read by the service when /metrics is asked
  size_t history_jobs = 0;
  size_t history_keys = 0;
  size_t history_memory_bytes = 0;
  size_t history_retained_entries = 0;
  bool storage_ok = true;
  uint64_t wal_bytes = 0;
  uint64_t checkpoint_failures = 0;
  uint64_t answers_not_kept = 0;
  // The online bound's completions, judged by the answer given at submission / by the bound as
  // it stood (no answer on record), and the answers waiting for their completion.
  uint64_t bound_judged_by_answer = 0;
  uint64_t bound_judged_as_it_stands = 0;
  uint64_t bound_not_judged = 0;
  uint64_t bound_answers_pending = 0;
  // Memory recommendations by a script's own sizing policy / by the bound; scripts with a policy.
  uint64_t recommended_by_workload = 0;
  uint64_t recommended_by_bound = 0;
  uint64_t sizing_workloads = 0;
  uint64_t sizing_memory_bytes = 0;
  uint64_t sizing_aged_out = 0, sizing_handed_over = 0;  // --sizing-days / --history-days
  // Completed jobs with a recommendation on record, at their request and at the recommendation
  // (SizingState::Learned), and those left out for running out of memory.
  sizing::Tally advice_at_request, advice_at_recommendation;
  uint64_t advice_oom_jobs = 0;
  // Jobs that ran below the request they were submitted with (the hook lowered --mem), learned
  // at that request; of the OOM ones, those killed at such a limit and their limit x run time.
  uint64_t lowered_jobs = 0;
  uint64_t advice_lowered_oom_jobs = 0;
  double advice_lowered_oom_gbh = 0.0;
};

class Metrics {
 public:
  void observe(Endpoint e, int status, double seconds);
  void count_route(Resource r, cascade::Route route);
  // One answer for resource r: its route, and under no_history (served by a code-model run or
  // by the exact cache alike) which of the two, for the encoder-call and cache-hit counters.
  void count_answer(Resource r, const cascade::ResourcePrediction& p);
  void count_storage_error() { storage_errors_.fetch_add(1, std::memory_order_relaxed); }
  void count_conflict() { conflicts_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t requests(Endpoint e, int status) const;
  uint64_t route_count(Resource r, cascade::Route route) const;
  std::string render(const Gauges& g) const;  // Prometheus text format 0.0.4

 private:
  struct Histogram {
    std::array<std::atomic<uint64_t>, kLatencyBuckets.size() + 1> buckets{};
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_ns{0};
  };
  // The parts of render(), each appending its metric families.
  void render_requests(std::string& out) const;
  void render_latency(std::string& out) const;
  void render_routes(std::string& out) const;
  void render_advice(std::string& out, const Gauges& g) const;

  std::array<Histogram, kNumEndpoints> latency_;
  std::array<std::array<std::atomic<uint64_t>, cascade::kRoutes.size()>, kNumResources> routes_{};
  // no_history answers whose Q came from a code-model run / from the exact cache (the other
  // routes say which by themselves).
  std::atomic<uint64_t> no_history_encoder_{0};
  std::atomic<uint64_t> no_history_cache_{0};
  std::atomic<uint64_t> storage_errors_{0};
  std::atomic<uint64_t> conflicts_{0};
  mutable std::mutex mu_;
  std::map<std::pair<int, int>, uint64_t> requests_;  // (endpoint, status) -> count
};

}  // namespace peakcast::serve
