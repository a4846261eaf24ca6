// Replay speed of `peakcast simulate` (tasks per second, Sizey's protocol, one seed), for
// peakcast's policy beside max_so_far (the cheapest baseline) and witt_p95; and the cost of one
// online bound (sizing::OnlineBound::upper, what peakcastd asks under its sizing lock per request)
// with a full window, at the exact level (500 job scores) beside the user level clustered by
// script (500 script scores), the resident memory of full script windows, and peakcastd's
// per-workload sizing policies (one answer, one rebuild, their memory, their warm-up at start). Reads
// ../shared/data/nextflow/trace_mag.csv (5,761 eligible tasks) when present, else a synthetic
// trace of the same size.
#include <chrono>
#include <deque>
#include <malloc.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <list>
#include <random>

#include <benchmark/benchmark.h>

#include "peakcast/ingest/reader.h"
#include "peakcast/serve/sizing_state.h"
#include "peakcast/sizing/online_bound.h"
#include "peakcast/sizing/simulate.h"
#include "peakcast/sizing/warm_runs.h"
#include "peakcast/sizing/workload_sizer.h"

namespace {

using namespace peakcast;

const std::vector<sizing::SimTask>& tasks() {
  static const std::vector<sizing::SimTask> t = [] {
    const std::string path = PEAKCAST_SOURCE_DIR "/../shared/data/nextflow/trace_mag.csv";
    if (std::filesystem::exists(path)) {
      if (auto tr = ingest::read_trace(path)) return sizing::tasks_from_jobs(tr->jobs, true);
    }
    std::mt19937 g(1);
    std::lognormal_distribution<double> noise(0.0, 0.4);
    std::vector<sizing::SimTask> out;
    for (int i = 0; i < 5761; ++i) {
      sizing::SimTask s;
      s.info.workload = "T" + std::to_string(i % 8);
      s.info.input_bytes = 1e9 * noise(g);
      s.info.request_bytes = 32e9;
      s.peak_bytes = 2e9 * noise(g) + 0.5 * s.info.input_bytes;
      s.runtime_ms = 60000 * noise(g);
      out.push_back(s);
    }
    return out;
  }();
  return t;
}

void replay(benchmark::State& state, const std::string& policy) {
  sizing::SimulateOptions o;
  o.policies = {policy};
  size_t jobs = 0;
  for (auto _ : state) {
    auto out = sizing::simulate(tasks(), o);
    if (!out) {
      state.SkipWithError(out.status().message().c_str());
      return;  // no results to count: `out` holds only the error
    }
    jobs += out->results[0].total.jobs;
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(jobs));
  state.SetLabel(policy + " (items = online tasks)");
}

BENCHMARK_CAPTURE(replay, max_so_far, std::string("max_so_far"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(replay, witt_p95, std::string("witt_p95"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(replay, peakcast, std::string("peakcast"))->Unit(benchmark::kMillisecond);

// One bound with a full window: `level` of a bound whose user level is clustered by script.
void bound_upper(benchmark::State& state, history::Level level) {
  sizing::OnlineBoundOptions o;
  o.gamma = 0.02;
  o.cluster_user_level = true;
  sizing::OnlineBound b(o);
  std::mt19937 g(2);
  std::normal_distribution<double> noise(0.0, 0.1);
  for (int i = 0; i < 2000; ++i) {
    const std::string script = "s" + std::to_string(i);
    b.observe(history::Level::kExactScript, 0.5, 0.5 + noise(g), false, script);
    b.observe(history::Level::kUser, 0.5, 0.5 + noise(g), false, script);
  }
  double sum = 0.0;
  for (auto _ : state) {
    sum += b.upper(level, 0.5, "s1999");
    benchmark::DoNotOptimize(sum);
  }
  state.SetLabel(level == history::Level::kUser ? "user level, 500 scripts" : "exact level, 500 scores");
}

// The baseline for the clustered level: what upper() did before it read the scripts' scores in
// place (copy them into a deque, which conformal_quantile copies again into a vector).
void bound_upper_two_copies(benchmark::State& state) {
  std::list<std::pair<std::string, double>> clusters;
  std::mt19937 g(2);
  std::normal_distribution<double> noise(0.0, 0.1);
  for (int i = 0; i < 500; ++i) clusters.emplace_back("s" + std::to_string(i), noise(g));
  double sum = 0.0;
  for (auto _ : state) {
    std::deque<double> scores;
    for (const auto& c : clusters) scores.push_back(c.second);
    sum += 0.5 + *sizing::conformal_quantile(scores, 0.1);
    benchmark::DoNotOptimize(sum);
  }
  state.SetLabel("baseline: user level, 500 scripts, two copies");
}

// Resident memory of one bound with script windows full: 4096 scripts (max_scripts) x 500 scores
// (the daemon keeps one such bound per resource). VmRSS before and after filling it.
long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}
void bound_script_windows_memory(benchmark::State& state) {
  for (auto _ : state) {
    const long before = rss_kib();
    sizing::OnlineBoundOptions o;
    o.script_windows = true;
    auto b = std::make_unique<sizing::OnlineBound>(o);
    for (int i = 0; i < 4096 * 500; ++i) {
      b->observe(history::Level::kExactScript, 0.5, 0.5, false, "script" + std::to_string(i % 4096));
    }
    state.counters["rss_MiB"] = static_cast<double>(rss_kib() - before) / 1024.0;
    state.counters["own_windows"] = static_cast<double>(b->own_windows());
  }
  state.SetLabel("4096 scripts x 500 scores");
}

// Resident memory of the answers peakcastd keeps to judge completions by the bound it answered
// (serve::SizingState::kMaxIssued of them; each keyed by user and a 64-hex script key, with a
// 26-character job name), beside
// one full bound with script windows (above).
void answers_on_record_memory(benchmark::State& state) {
  for (auto _ : state) {
    const long before = rss_kib();
    auto s = std::make_unique<serve::SizingState>();
    Job job;
    job.req_mem_bytes = 8ull << 30;
    for (size_t i = 0; i < serve::SizingState::kMaxIssued; ++i) {
      job.user = "user" + std::to_string(i % 997);
      job.script_key = std::string(56, 'a') + std::to_string(10'000'000 + i);  // 64 characters
      job.submit_ms = static_cast<int64_t>(i) * 1000;
      job.job_name = "nf-NFCORE_CHIPSEQ_MACS2_" + std::to_string(i % 50);  // kept, past short-string size
      cascade::JobPrediction p;
      p.mem.util = 0.4;
      p.mem.history_level = "exact_script";
      p.vram = cascade::ResourcePrediction{};
      s->apply(job, std::nullopt, p);
    }
    state.counters["rss_MiB"] = static_cast<double>(rss_kib() - before) / 1024.0;
    state.counters["answers"] = static_cast<double>(s->learned().answers_pending);
  }
  state.SetLabel("100,000 answers, mem and vram");
}

// peakcastd's per-workload sizing policies (sizing::WorkloadSizer): one workload of mag's
// BUSCO-sized history. `answer`: one first() at max_history completed runs, what the daemon does
// under its sizing lock for a script with its own policy, beside the online bound's upper()
// above. `learn`: one completion, where two policies learn it (past max_history runs) beside
// where one does. `memory`: resident
// memory of `workloads` workloads each at `runs` runs (2 x max_history - 1: the most it holds).
std::vector<sizing::SimTask> workload_runs(const std::string& name, size_t n) {
  std::vector<sizing::SimTask> out;
  for (size_t i = 0; i < n; ++i) {
    sizing::SimTask t = tasks()[i % tasks().size()];
    t.info.workload = name;
    out.push_back(std::move(t));
  }
  return out;
}
void workload_answer(benchmark::State& state) {
  sizing::WorkloadSizer sizer;
  const auto runs = workload_runs("w", sizer.options().max_history);
  for (const auto& t : runs) sizer.observe(t);
  double sum = 0.0;
  for (auto _ : state) {
    sum += static_cast<double>(sizer.first(runs.back().info)->bytes);
    benchmark::DoNotOptimize(sum);
  }
  state.SetLabel("one answer at 1000 runs (baseline: bound_upper above)");
}
void workload_learn(benchmark::State& state) {
  sizing::WorkloadSizer sizer;
  const size_t h = sizer.options().max_history;
  const bool both = state.range(0) != 0;  // past max_history runs two policies learn each run
  const auto runs = workload_runs("w", 2 * h - 1);
  const size_t warm = both ? h : h / 2;
  for (size_t i = 0; i < warm; ++i) sizer.observe(runs[i]);
  size_t i = warm;
  for (auto _ : state) {
    if (i == (both ? 2 * h - 1 : h)) {  // start the span over
      state.PauseTiming();
      sizer = sizing::WorkloadSizer();
      for (i = 0; i < warm; ++i) sizer.observe(runs[i]);
      state.ResumeTiming();
    }
    sizer.observe(runs[i++]);
  }
  state.SetLabel(both ? "a completion at 1000-1998 runs (two policies learn it)"
                      : "baseline: a completion at 500-999 runs (one policy)");
}
void workload_memory(benchmark::State& state) {
  const auto workloads = static_cast<size_t>(state.range(0));
  const auto n = static_cast<size_t>(state.range(1));
  (void)tasks();  // read before the measure
  for (auto _ : state) {
    const long before = rss_kib();
    const size_t heap_before = mallinfo2().uordblks;  // glibc: bytes allocated and not freed
    sizing::WorkloadSizerOptions o;
    o.max_workloads = workloads;  // every workload kept
    auto sizer = std::make_unique<sizing::WorkloadSizer>(o);
    for (size_t w = 0; w < workloads; ++w) {
      for (const auto& t : workload_runs("script" + std::to_string(w), n)) sizer->observe(t);
    }
    state.counters["rss_MiB"] = static_cast<double>(rss_kib() - before) / 1024.0;
    state.counters["MiB_per_workload"] = static_cast<double>(rss_kib() - before) / 1024.0 / static_cast<double>(workloads);
    // The heap the sizer holds, per workload: unlike RSS, not hidden by pages freed earlier.
    state.counters["heap_KiB_per_workload"] =
        static_cast<double>(mallinfo2().uordblks - heap_before) / 1024.0 / static_cast<double>(workloads);
  }
  state.SetLabel(n == 1999 ? "workloads x 1999 runs (the most one holds)" : "workloads x runs");
}

// peakcastd's start: a store of `workloads` scripts x `runs` runs each (interleaved, in end
// order) fed to sizing::WarmRuns with a budget of `budget` runs, then replayed into the policies
// (SizingState::warm). The time is the daemon's added start-up; `kept_runs` what it learned. The
// baseline is the budget of 5,000, the runs the daemon learned at start before (its
// --bound-rebuild-jobs, the most recent completions whatever their script).
void workload_warm(benchmark::State& state) {
  const auto workloads = static_cast<size_t>(state.range(0));
  const auto n = static_cast<size_t>(state.range(1));
  const auto budget = static_cast<size_t>(state.range(2));
  std::vector<sizing::SimTask> store;
  store.reserve(workloads * n);
  for (size_t i = 0; i < workloads * n; ++i) {
    sizing::SimTask t = tasks()[i % tasks().size()];
    t.info.workload = "script" + std::to_string(i % workloads);
    t.end_ms = static_cast<int64_t>(i);
    store.push_back(std::move(t));
  }
  size_t kept = 0, policies = 0;
  double seconds = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    sizing::WorkloadSizerOptions o;
    o.rebuild_runs = budget;
    sizing::WarmRuns warm(o.max_history, o.rebuild_runs);
    for (const sizing::SimTask& t : store) warm.add(t);
    sizing::WorkloadSizer sizer(o);
    warm.replay(sizer);
    kept = warm.runs();
    policies = sizer.workloads();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["kept_runs"] = static_cast<double>(kept);
  state.counters["policies"] = static_cast<double>(policies);
  state.counters["us_per_kept_run"] = kept ? seconds * 1e6 / static_cast<double>(state.iterations()) / static_cast<double>(kept) : 0.0;
  state.SetLabel(budget == 5000 ? "baseline: 5,000 runs (the start's learning before)" : "workloads x runs, budget");
}

BENCHMARK(bound_script_windows_memory)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(workload_answer)->Unit(benchmark::kMicrosecond);
BENCHMARK(workload_learn)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(workload_memory)->Args({4, 1999})->Args({32, 100})->Args({256, 10})->Args({256, 30})->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(workload_warm)->Args({4000, 30, 5000})->Args({4000, 30, 100000})->Args({100, 1000, 100000})->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(answers_on_record_memory)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bound_upper, exact_level, history::Level::kExactScript);
BENCHMARK_CAPTURE(bound_upper, user_level_clustered, history::Level::kUser);
BENCHMARK(bound_upper_two_copies);

}  // namespace

BENCHMARK_MAIN();
