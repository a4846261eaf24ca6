// Replay speed of `peakcast simulate` (tasks per second, Sizey's protocol, one seed), for
// peakcast's policy beside max_so_far (the cheapest baseline) and witt_p95. Reads
// ../shared/data/nextflow/trace_mag.csv (5,761 eligible tasks) when present, else a synthetic
// trace of the same size.
#include <filesystem>
#include <random>

#include <benchmark/benchmark.h>

#include "peakcast/ingest/reader.h"
#include "peakcast/sizing/simulate.h"

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
    if (!out) state.SkipWithError(out.status().message().c_str());
    jobs += out->results[0].total.jobs;
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<int64_t>(jobs));
  state.SetLabel(policy + " (items = online tasks)");
}

BENCHMARK_CAPTURE(replay, max_so_far, std::string("max_so_far"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(replay, witt_p95, std::string("witt_p95"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(replay, peakcast, std::string("peakcast"))->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
