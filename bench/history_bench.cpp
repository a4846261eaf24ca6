// Event-time replay with the history store vs a naive rescan (target: "a replay of a million
// jobs should take seconds"). Synthetic trace: ~20k users, ~100k scripts (each owned by one
// user; popularity skewed), submissions over a year, log-uniform durations from a minute to
// two days, memory labels on 95% of jobs and VRAM on 30%.
//
// Both sides answer the same queries: at each submission, the exact-script and same-user stats
// for both resources (what the evaluation asks). The naive side rescans every completed job per
// query, so it runs on a prefix of the trace; compare the per-query times (ns_per_query).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <benchmark/benchmark.h>

#include "peakcast/history/history.h"

namespace {

using peakcast::Job;
using peakcast::Resource;
using peakcast::kResources;
using peakcast::history::HistoryStore;
using peakcast::history::HistoryView;
using peakcast::history::KeyStats;

constexpr int kUsers = 20'000;
constexpr int kScripts = 100'000;
constexpr int kTraceJobs = 1'000'000;

std::string script_key(int s) {  // the length of a SHA-256 hex digest
  char buf[65];
  std::snprintf(buf, sizeof buf, "%016x%016x%016x%016x", s, s * 2654435761u, s ^ 0x5bd1e995,
                s + 0x3c6ef372);
  return buf;
}

// The trace in submit order (built once, ~0.5 GB).
const std::vector<Job>& trace() {
  static const std::vector<Job> jobs = [] {
    std::mt19937_64 rng(20240601);
    std::vector<int64_t> submits(kTraceJobs);
    std::uniform_int_distribution<int64_t> when(0, 365LL * 24 * 3600);
    for (int64_t& s : submits) s = when(rng);
    std::sort(submits.begin(), submits.end());
    // Script popularity ~ 1/rank (a few scripts run thousands of times, most a handful).
    std::vector<double> w(kScripts);
    for (int i = 0; i < kScripts; ++i) w[i] = 1.0 / (1.0 + i);
    std::discrete_distribution<int> script_of(w.begin(), w.end());
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    std::vector<Job> out(kTraceJobs);
    for (int i = 0; i < kTraceJobs; ++i) {
      Job& j = out[i];
      const int s = script_of(rng);
      j.job_id = std::to_string(1'000'000 + i);
      j.user = "user" + std::to_string(static_cast<int>((s * 7919LL) % kUsers));
      j.script_key = script_key(s);
      j.submit_ms = submits[i] * peakcast::kMsPerSecond;
      j.end_ms = j.submit_ms + static_cast<int64_t>(60.0 * std::pow(2880.0, u01(rng))) * peakcast::kMsPerSecond;
      j.valid = {u01(rng) < 0.95, u01(rng) < 0.30};
      j.util = {u01(rng), u01(rng)};
      j.censored = u01(rng) < 0.01;
    }
    return out;
  }();
  return jobs;
}

std::vector<const Job*> prefix(size_t n) {
  std::vector<const Job*> order;
  const auto& jobs = trace();
  for (size_t i = 0; i < n && i < jobs.size(); ++i) order.push_back(&jobs[i]);
  return order;
}

void BM_ReplayStore(benchmark::State& state) {
  const auto order = prefix(static_cast<size_t>(state.range(0)));
  size_t bytes = 0, keys = 0, held = 0;
  for (auto _ : state) {
    HistoryStore store;
    double sink = 0;
    peakcast::history::replay(order, store, [&](const Job& job, const HistoryStore& s) {
      for (Resource r : kResources) {
        const HistoryView v = s.query(job, r);
        sink += v.exact.expert[0] + v.user.expert[3];
      }
    });
    benchmark::DoNotOptimize(sink);
    bytes = store.memory_bytes();
    keys = store.key_count();
    held = store.retained_entries();
  }
  const double n = static_cast<double>(order.size());
  state.counters["jobs_per_s"] = benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ns_per_query"] = benchmark::Counter(
      2 * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["store_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["keys"] = static_cast<double>(keys);
  state.counters["labels_held"] = static_cast<double>(held);
}

// The daemon's live history over the year: completions added as they end, the watermark a week
// behind (peakcastd's --late-tolerance default), as Service::add_completion does. Arg 0: nothing
// forgotten, with the id set (peakcastd before 2026-12-05); arg N > 0: no id set, and every day the
// runs that ended more than N days ago forgotten (peakcastd --history-days N; until 2026-12-05
// only the scripts and users with no run since, which left 92 MB at 90 days and 48 MB at 30).
// store_MB and keys at the end of the year: what a daemon running that long holds.
void BM_LiveDaemonHistory(benchmark::State& state) {
  const int64_t days = state.range(0);
  std::vector<const Job*> by_end = prefix(kTraceJobs);
  std::stable_sort(by_end.begin(), by_end.end(), [](const Job* a, const Job* b) { return a->end_ms < b->end_ms; });
  constexpr int64_t kDayMs = 86'400'000;
  size_t bytes = 0, keys = 0, sweeps = 0;
  double sweep_s = 0.0, longest_sweep_s = 0.0;
  for (auto _ : state) {
    HistoryStore store(/*track_ids=*/days == 0);
    int64_t next_sweep = by_end.front()->end_ms + kDayMs;
    for (const Job* j : by_end) {
      store.add_completion(*j);
      store.advance_watermark(j->end_ms - 7 * kDayMs);
      if (days > 0 && j->end_ms >= next_sweep) {
        const auto t0 = std::chrono::steady_clock::now();
        store.forget_before(j->end_ms - days * kDayMs);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        sweep_s += s;
        longest_sweep_s = std::max(longest_sweep_s, s);
        ++sweeps;
        next_sweep = j->end_ms + kDayMs;
      }
    }
    bytes = store.memory_bytes();
    keys = store.key_count();
  }
  // What a sweep holds the daemon's history lock for (one a day here, one an hour in peakcastd).
  if (sweeps > 0) {
    state.counters["sweep_ms_mean"] = 1e3 * sweep_s / static_cast<double>(sweeps);
    state.counters["sweep_ms_max"] = 1e3 * longest_sweep_s;
  }
  state.counters["jobs_per_s"] =
      benchmark::Counter(static_cast<double>(by_end.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["store_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["keys"] = static_cast<double>(keys);
}

// The definition rescanned: every completed job is looked at for every query.
KeyStats naive_stats(const std::vector<const Job*>& done, bool by_script, const std::string& key,
                     int64_t t, Resource r) {
  KeyStats s;
  std::vector<std::pair<int64_t, double>> h;
  for (const Job* j : done) {
    if (j->end_ms < t && j->is_valid(r) && (by_script ? j->script_key : j->user) == key) {
      h.emplace_back(j->end_ms, j->label(r));
    }
  }
  std::sort(h.begin(), h.end());
  const int n = static_cast<int>(h.size());
  s.count = n;
  if (n == 0) return s;
  auto median_last = [&](int k) {
    std::vector<double> v;
    for (int i = std::max(0, n - k); i < n; ++i) v.push_back(h[i].second);
    std::sort(v.begin(), v.end());
    const size_t m = v.size();
    return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
  };
  s.expert[0] = h.back().second;
  s.expert[1] = median_last(3);
  s.expert[2] = median_last(5);
  double num = 0, den = 0;
  for (auto [end, x] : h) {
    const double w = std::exp2(-static_cast<double>(t - end) / peakcast::history::kDecayHalfLifeMs);
    num += w * x;
    den += w;
  }
  s.expert[3] = num / den;
  return s;
}

void BM_ReplayNaive(benchmark::State& state) {
  const auto order = prefix(static_cast<size_t>(state.range(0)));
  std::vector<const Job*> by_end(order);
  std::stable_sort(by_end.begin(), by_end.end(),
                   [](const Job* a, const Job* b) { return a->end_ms < b->end_ms; });
  for (auto _ : state) {
    std::vector<const Job*> done;
    size_t next = 0;
    double sink = 0;
    for (const Job* job : order) {
      while (next < by_end.size() && by_end[next]->end_ms < job->submit_ms) {
        done.push_back(by_end[next++]);
      }
      for (Resource r : kResources) {
        sink += naive_stats(done, true, job->script_key, job->submit_ms, r).expert[0];
        sink += naive_stats(done, false, job->user, job->submit_ms, r).expert[3];
      }
    }
    benchmark::DoNotOptimize(sink);
  }
  const double n = static_cast<double>(order.size());
  state.counters["jobs_per_s"] = benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ns_per_query"] = benchmark::Counter(
      2 * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_ReplayStore)->Arg(20'000)->Arg(kTraceJobs)->Unit(benchmark::kMillisecond)
    ->UseRealTime()->Iterations(1);
BENCHMARK(BM_LiveDaemonHistory)->Arg(0)->Arg(90)->Arg(30)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_ReplayNaive)->Arg(20'000)->Unit(benchmark::kMillisecond)->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
