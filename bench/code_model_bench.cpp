// Code predictor Q: batch-1 forward latency per encoder (p50/p99 µs) and training throughput
// (jobs/s), beside naive baselines (tokenizing alone; predicting the training mean).
// With --swf (default: ../shared/data's LANL log when present) it also trains the default `bag`
// model on the real 73k-job trace (60/20 chronological split) and reports the wall time against
// the 10-minute budget for the whole cascade.
//
//   code_model_bench [--jobs N] [--epochs E] [--calls C] [--threads T] [--swf PATH|none]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "peakcast/core/units.h"
#include "peakcast/features/tokenizer.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/models/code/code_model.h"
#include "peakcast/models/code/code_text.h"

#include "bench_options.h"

using namespace peakcast;
using namespace peakcast::models::code;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kGiB = 1ULL << 30;

// Scripts with a few real-looking lines; memory follows --batch-size, VRAM follows the model.
std::vector<Job> synthetic_jobs(size_t n, uint64_t seed) {
  const char* models[] = {"resnet50", "vit_b_16", "bert-base", "gpt2", "unet"};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> e(3, 8), m(0, 4), u(0, 39);
  std::vector<Job> jobs;
  for (size_t i = 0; i < n; ++i) {
    Job j;
    const int batch = 1 << e(rng), model = m(rng);
    j.job_id = std::to_string(i);
    j.user = "u" + std::to_string(u(rng));
    j.submit_ms = static_cast<int64_t>(i) * 30 * kMsPerSecond;
    j.end_ms = j.submit_ms + 900 * kMsPerSecond;
    j.req_cpus = 8;
    j.req_mem_bytes = 32 * kGiB;
    j.req_gpus = 1;
    j.gpu_mem_bytes = 40 * kGiB;
    j.req_time_s = 4 * 3600;
    j.script = std::string("#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --mem=32G\n#SBATCH --gres=gpu:1\n"
                           "#SBATCH -c 8\n#SBATCH -t 04:00:00\nmodule load cuda/11.8 python/3.10\n"
                           "source ~/venv/bin/activate\nexport OMP_NUM_THREADS=8\ncd $SLURM_SUBMIT_DIR\n"
                           "srun python train.py --model ") + models[model] + " --batch-size " +
               std::to_string(batch) + " --epochs 90 --lr 0.1 --data /scratch/imagenet\n";
    const double util = 0.1 + 0.1 * (std::log2(batch) - 3.0);
    j.peak_mem_bytes = static_cast<uint64_t>(util * 32.0 * kGiB);
    j.peak_vram_bytes = static_cast<uint64_t>(std::min(1.0, util * (1 + 0.2 * model)) * 40.0 * kGiB);
    compute_labels(j);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

std::vector<const Job*> ptrs(const std::vector<Job>& jobs, size_t from = 0, size_t to = SIZE_MAX) {
  std::vector<const Job*> out;
  for (size_t i = from; i < std::min(to, jobs.size()); ++i) out.push_back(&jobs[i]);
  return out;
}

struct Quantiles { double p50, p99; };
template <typename F>
Quantiles time_calls(size_t calls, F&& f) {
  std::vector<double> us;
  us.reserve(calls);
  for (size_t i = 0; i < calls; ++i) {
    auto t0 = Clock::now();
    f(i);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)]};
}

double mae(const std::vector<const Job*>& jobs, Resource r, const std::vector<CodePrediction>& p) {
  double s = 0, n = 0;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (jobs[i]->is_valid(r)) { s += std::abs(p[i].util[idx(r)] - jobs[i]->label(r)); ++n; }
  return n > 0 ? s / n : NAN;
}

double mean_mae(const std::vector<const Job*>& train, const std::vector<const Job*>& test, Resource r) {
  double m = 0, n = 0;
  for (const Job* j : train) if (j->is_valid(r)) { m += j->label(r); ++n; }
  m = n > 0 ? m / n : 0;
  double s = 0, k = 0;
  for (const Job* j : test) if (j->is_valid(r)) { s += std::abs(m - j->label(r)); ++k; }
  return k > 0 ? s / k : NAN;
}

void real_trace(const std::string& path, int threads) {
  auto t0 = Clock::now();
  auto trace = ingest::read_trace(path);
  if (!trace) { std::printf("swf: %s\n", trace.status().message().c_str()); return; }
  auto& jobs = trace->jobs;
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.submit_ms < b.submit_ms; });
  const size_t n = jobs.size(), a = n * 6 / 10, b = n * 8 / 10;
  // Completion-boundary purge (docs/method.md §2), simplified: drop train jobs ending after val starts.
  std::vector<const Job*> train, val = ptrs(jobs, a, b), test = ptrs(jobs, b);
  for (size_t i = 0; i < a; ++i) if (jobs[i].end_ms < jobs[a].submit_ms) train.push_back(&jobs[i]);
  const double read_s = std::chrono::duration<double>(Clock::now() - t0).count();
  CodeModelConfig cfg;  // defaults: bag
  cfg.threads = threads;
  auto model = CodeModel::train(train, val, cfg);
  if (!model) { std::printf("swf train: %s\n", model.status().message().c_str()); return; }
  const auto& r = model->report();
  auto preds = model->predict_batch(test);
  std::printf("\nreal trace %s: %zu jobs (read %.1f s), train %zu / val %zu / test %zu\n",
              std::filesystem::path(path).filename().c_str(), n, read_s, r.train_jobs, r.val_jobs, test.size());
  std::printf("  bag training: %.1f s wall (%lld epochs, best %lld), %.0f jobs/s; budget for the whole "
              "cascade: 600 s\n", r.seconds, static_cast<long long>(r.epochs_run),
              static_cast<long long>(r.best_epoch), r.jobs_per_s);
  std::printf("  test memory MAE: code model %.4f vs training-mean baseline %.4f (scripts absent: %s)\n",
              mae(test, Resource::kMem, preds), mean_mae(train, test, Resource::kMem),
              model->trained_without_scripts() ? "yes, identity text" : "no");
}

}  // namespace

constexpr const char* kUsage =
    "usage: code_model_bench [--jobs N] [--epochs E] [--calls C] [--threads T] [--swf PATH|none]\n"
    "  --jobs N     synthetic training jobs (default 4000)\n"
    "  --epochs E   training epochs per encoder (default 3)\n"
    "  --calls C    batch-1 predictions timed per encoder (default 2000)\n"
    "  --threads T  LibTorch threads for training (default 1)\n"
    "  --swf PATH   also train `bag` on this SWF trace, 60/20 split (default: ../shared/data's\n"
    "               LANL log when present; none: skip)\n";

int main(int argc, char** argv) {
  size_t n_jobs = 4000, calls = 2000;
  int epochs = 3, threads = 1;
  std::string swf = PEAKCAST_SOURCE_DIR "/../shared/data/swf/LANL-CM5-1994-4.1-cln.first60pct.swf.gz";
  const bench::OptionSpec spec{"code_model_bench", kUsage, {"--jobs", "--epochs", "--calls", "--threads", "--swf"}};
  const auto on_value = [&](const std::string& k, const std::string& v) {
    if (k == "--swf") {
      swf = v;
      return 0;
    }
    const std::optional<int64_t> n = parse_int(v);
    if (!n || *n < 1 || *n > 100'000'000) {
      std::fprintf(stderr, "%s: expected a whole number in [1, 100000000], got '%s'\n", k.c_str(), v.c_str());
      return 2;
    }
    if (k == "--jobs") n_jobs = static_cast<size_t>(*n);
    else if (k == "--epochs") epochs = static_cast<int>(*n);
    else if (k == "--calls") calls = static_cast<size_t>(*n);
    else threads = static_cast<int>(*n);
    return 0;
  };
  if (const std::optional<int> done = bench::parse_options(argc, argv, spec, on_value)) return *done;
  auto jobs = synthetic_jobs(n_jobs + 500, 7);
  auto train = ptrs(jobs, 0, n_jobs), probe = ptrs(jobs, n_jobs);

  // Naive baselines: tokenization alone (the floor under any script encoder), and the mean.
  auto tok = time_calls(calls, [&](size_t i) {
    auto t = code_tokens(code_text(*probe[i % probe.size()]), 4096);
    auto ids = features::hashed_ngrams(t, 1 << 18);
    if (ids.empty()) std::abort();
  });
  std::printf("synthetic: %zu training jobs, %d epochs, %d threads, batch-1 latency over %zu calls\n",
              n_jobs, epochs, threads, calls);
  std::printf("%-10s %12s %12s %12s %14s %10s\n", "encoder", "train jobs/s", "p50 us", "p99 us",
              "mem MAE", "(mean)");
  std::printf("%-10s %12s %12.1f %12.1f %14s %10s\n", "tokenize", "-", tok.p50, tok.p99, "-", "-");
  for (const char* enc : {"bag", "textcnn", "bilstm"}) {
    CodeModelConfig cfg;
    cfg.encoder = enc;
    cfg.max_epochs = epochs;
    cfg.threads = threads;
    auto model = CodeModel::train(train, {}, cfg);
    if (!model) { std::printf("%s: %s\n", enc, model.status().message().c_str()); return 1; }
    set_torch_threads(1);  // batch-1 serving: one intra-op thread per request
    volatile float sink = 0;
    for (size_t i = 0; i < 50; ++i) sink = sink + model->predict(*probe[i % probe.size()]).util[0];
    auto q = time_calls(calls, [&](size_t i) { sink = sink + model->predict(*probe[i % probe.size()]).util[0]; });
    auto preds = model->predict_batch(probe);
    std::printf("%-10s %12.0f %12.1f %12.1f %14.4f %10.4f\n", enc, model->report().jobs_per_s, q.p50,
                q.p99, mae(probe, Resource::kMem, preds), mean_mae(train, probe, Resource::kMem));
  }
  if (swf != "none" && std::filesystem::exists(swf)) real_trace(swf, threads);
  else std::printf("\nreal trace: skipped (%s absent)\n", swf.c_str());
  return 0;
}
