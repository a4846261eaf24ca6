// Synthetic jobs for the code-model tests: memory utilization is a function of the
// `--batch-size N` argument in the script, so only a model that reads the script can learn it.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "peakcast/core/job.h"

namespace peakcast::models::code::testing {

inline constexpr uint64_t kGiB = 1ULL << 30;

// util = 0.1 + 0.12 * (log2(N) - 3) for N in {8, ..., 256}: 0.10 .. 0.70, plus small noise.
inline double batch_util(int batch) { return 0.1 + 0.12 * (std::log2(batch) - 3.0); }

inline std::vector<Job> make_batch_size_jobs(size_t n, uint64_t seed, int users = 6) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick_exp(3, 8), pick_user(0, users - 1), pick_gpu(0, 3);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<Job> jobs;
  for (size_t i = 0; i < n; ++i) {
    const int batch = 1 << pick_exp(rng);
    Job j;
    j.job_id = std::to_string(seed) + "-" + std::to_string(i);
    j.user = "user" + std::to_string(pick_user(rng));
    j.submit_ms = static_cast<int64_t>(i) * 60;
    j.end_ms = j.submit_ms + 600;
    j.req_cpus = 4;
    j.req_mem_bytes = 16 * kGiB;
    j.req_time_s = 3600;
    const bool gpu = pick_gpu(rng) == 0;
    if (gpu) {
      j.req_gpus = 1;
      j.gpu_mem_bytes = 40 * kGiB;
    }
    j.script = "#!/bin/bash\n#SBATCH --mem=16G\n#SBATCH -c 4\nmodule load cuda\n"
               "python train.py --epochs 10 --batch-size " + std::to_string(batch) + "\n";
    const double util = std::clamp(batch_util(batch) + noise(rng), 0.0, 1.0);
    j.peak_mem_bytes = static_cast<uint64_t>(util * 16.0 * static_cast<double>(kGiB));
    if (gpu) j.peak_vram_bytes = static_cast<uint64_t>(std::min(1.0, util * 1.2) * 40.0 * kGiB);
    compute_labels(j);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

inline std::vector<const Job*> ptrs(const std::vector<Job>& jobs) {
  std::vector<const Job*> out;
  for (const auto& j : jobs) out.push_back(&j);
  return out;
}

}  // namespace peakcast::models::code::testing
