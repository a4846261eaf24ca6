// Batch-1 prediction latency of the XGBoost wrapper (the gate and fusion run once per job and
// resource): the native tree walker and XGBoost's in-place prediction from a float row vs the
// naive baseline that builds a DMatrix per call. Model: 20 dense features, 100 trees of depth 6, one thread. Reports mean (Google
// Benchmark's time) and p50/p99 per call in microseconds as counters.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "peakcast/models/gbdt.h"

namespace pm = peakcast::models;

namespace {

constexpr size_t kFeatures = 20;

struct Fixture {
  pm::Booster booster;
  std::vector<float> probe;  // [kProbeRows, kFeatures]
  static constexpr size_t kProbeRows = 1024;
};

Fixture& fixture() {
  static Fixture* f = [] {
    std::mt19937 rng(42);
    std::normal_distribution<float> n01(0, 1);
    const size_t rows = 20000;
    std::vector<float> x(rows * kFeatures), y(rows);
    for (size_t r = 0; r < rows; ++r) {
      float* row = &x[r * kFeatures];
      for (size_t c = 0; c < kFeatures; ++c) row[c] = r % 7 == 0 && c % 5 == 0 ? pm::kMissing : n01(rng);
      y[r] = std::sin(row[1]) + row[2] * row[3] + 0.3f * row[4] + 0.1f * n01(rng);
    }
    auto d = pm::DMatrix::from_dense(x, rows, kFeatures);
    d.set_labels(y);
    pm::GbdtParams p;
    p.n_rounds = 100;
    p.max_depth = 6;
    p.eta = 0.1;
    p.nthread = 1;
    std::vector<float> probe(Fixture::kProbeRows * kFeatures);
    for (auto& v : probe) v = n01(rng);
    return new Fixture{pm::Booster::train(p, d), std::move(probe)};
  }();
  return *f;
}

void report_percentiles(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  auto q = [&](double p) { return us[static_cast<size_t>(p * (us.size() - 1))]; };
  state.counters["p50_us"] = q(0.50);
  state.counters["p99_us"] = q(0.99);
}

template <typename Fn>
void timed_loop(benchmark::State& state, Fn&& fn) {
  std::vector<double> us;
  us.reserve(1 << 20);
  size_t i = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(fn(i++ % Fixture::kProbeRows));
    auto t1 = std::chrono::steady_clock::now();
    if (us.size() < us.capacity()) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  report_percentiles(state, us);
}

// Ours: the native tree walker (Booster::predict_row), no C-API call.
void BM_PredictRow_Native(benchmark::State& state) {
  auto& f = fixture();
  if (!f.booster.native_predictor()) state.SkipWithError("model not supported natively");
  timed_loop(state, [&](size_t r) {
    return f.booster.predict_row(std::span<const float>(&f.probe[r * kFeatures], kFeatures));
  });
}
BENCHMARK(BM_PredictRow_Native);

// XGBoost's in-place prediction (XGBoosterPredictFromDense on the caller's floats, no DMatrix).
void BM_PredictRow_XgbInplace(benchmark::State& state) {
  auto& f = fixture();
  timed_loop(state, [&](size_t r) {
    float out = 0;
    f.booster.predict_dense_xgboost(std::span<const float>(&f.probe[r * kFeatures], kFeatures), 1,
                                    std::span<float>(&out, 1));
    return out;
  });
}
BENCHMARK(BM_PredictRow_XgbInplace);

// Baseline: build a 1-row DMatrix per call, predict through it, free it.
void BM_PredictRow_DMatrixPerCall(benchmark::State& state) {
  auto& f = fixture();
  timed_loop(state, [&](size_t r) {
    auto m = pm::DMatrix::from_dense(std::span<const float>(&f.probe[r * kFeatures], kFeatures), 1,
                                     kFeatures);
    return f.booster.predict(m)[0];
  });
}
BENCHMARK(BM_PredictRow_DMatrixPerCall);

// Throughput for batch scoring (evaluation): 1024 rows per call, both ways.
void BM_PredictBatch1024_Native(benchmark::State& state) {
  auto& f = fixture();
  std::vector<float> out(Fixture::kProbeRows);
  for (auto _ : state) {
    f.booster.predict_dense(f.probe, Fixture::kProbeRows, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * Fixture::kProbeRows);
}
BENCHMARK(BM_PredictBatch1024_Native);

void BM_PredictBatch1024_DMatrix(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) {
    auto m = pm::DMatrix::from_dense(f.probe, Fixture::kProbeRows, kFeatures);
    benchmark::DoNotOptimize(f.booster.predict(m));
  }
  state.SetItemsProcessed(state.iterations() * Fixture::kProbeRows);
}
BENCHMARK(BM_PredictBatch1024_DMatrix);

}  // namespace

BENCHMARK_MAIN();
