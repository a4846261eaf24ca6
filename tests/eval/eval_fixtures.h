// Jobs built in code for the eval tests (no reader involved), and an independent reference of the
// plain Last-1 protocol to check the harness against.
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/eval/split.h"

namespace peakcast::eval::testing {

// The real traces beside the repository (tests skip when absent).
inline const std::string kSharedData = PEAKCAST_SOURCE_DIR "/../shared/data";

// A gtest parameter name from a trace's file name: "nextflow/trace_mag.csv" -> "trace_mag".
inline std::string trace_test_name(const std::string& file) {
  std::string n = std::filesystem::path(file).stem().stem().string();
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

// A CPU job with a memory label `mem_util` (request 1,000,000 bytes) and an explicit script key.
inline Job make_job(std::string id, std::string user, std::string key, int64_t submit,
                    int64_t end, double mem_util) {
  Job j;
  j.job_id = std::move(id);
  j.user = std::move(user);
  j.submit_ms = submit;
  j.start_ms = submit;
  j.end_ms = end;
  j.req_mem_bytes = 1'000'000;
  j.peak_mem_bytes = static_cast<uint64_t>(mem_util * 1'000'000.0 + 0.5);
  compute_labels(j);
  j.script_key = std::move(key);
  return j;
}

// Adds a VRAM label: one GPU of 1,000,000 bytes.
inline Job with_vram(Job j, double vram_util) {
  j.req_gpus = 1;
  j.gpu_mem_bytes = 1'000'000;
  j.peak_vram_bytes = static_cast<uint64_t>(vram_util * 1'000'000.0 + 0.5);
  std::string key = j.script_key;
  compute_labels(j);
  j.script_key = key;
  return j;
}

// Overlapping jobs from 3 users and 6 scripts, seeded.
inline std::vector<Job> random_trace(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> user(0, 2), script(0, 5), gap(0, 3000), run(10, 40000);
  std::uniform_real_distribution<double> util(0.0, 1.2);
  std::vector<Job> jobs;
  int64_t t = 1'700'000'000;
  for (size_t i = 0; i < n; ++i) {
    t += gap(rng);
    const int u = user(rng);
    Job j = make_job("r" + std::to_string(i), "u" + std::to_string(u),
                     "s" + std::to_string(u) + std::to_string(script(rng)), t, t + run(rng),
                     util(rng));
    if (i % 3 == 0) j = with_vram(std::move(j), util(rng) * 0.8);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// The plain protocol, written independently of the history store: order by submit time, score the
// jobs from position floor(test_from * n) on, history = labelled jobs with end < submit, the latest
// by end time at the exact key, else at the user, else `fallback`. Returns (MAE, n).
inline std::pair<double, size_t> plain_last1_mae(const std::vector<Job>& jobs, Resource r,
                                                 double test_from, double fallback) {
  std::vector<const Job*> by_submit, by_end;
  for (const Job& j : jobs) by_submit.push_back(&j);
  std::stable_sort(by_submit.begin(), by_submit.end(),
                   [](const Job* a, const Job* b) { return a->submit_ms < b->submit_ms; });
  by_end = by_submit;
  std::stable_sort(by_end.begin(), by_end.end(),
                   [](const Job* a, const Job* b) { return a->end_ms < b->end_ms; });
  std::map<std::string, double> last_key, last_user;
  size_t next = 0;
  double sum = 0;
  size_t n = 0;
  const auto first_test = static_cast<size_t>(test_from * static_cast<double>(jobs.size()));
  for (size_t i = 0; i < by_submit.size(); ++i) {
    const Job& j = *by_submit[i];
    while (next < by_end.size() && by_end[next]->end_ms < j.submit_ms) {
      const Job& h = *by_end[next++];
      if (!h.is_valid(r)) continue;
      if (!h.script_key.empty()) last_key[h.script_key] = h.label(r);
      last_user[h.user] = h.label(r);
    }
    if (i < first_test || !j.is_valid(r)) continue;
    double pred = fallback;
    if (auto it = last_key.find(j.script_key); !j.script_key.empty() && it != last_key.end()) {
      pred = it->second;
    } else if (auto u = last_user.find(j.user); u != last_user.end()) {
      pred = u->second;
    }
    sum += std::abs(pred - j.label(r));
    ++n;
  }
  return {n ? sum / static_cast<double>(n) : 0.0, n};
}

// Median label over the first `share` of jobs by submit time (no purge), as the plain protocol.
inline double plain_fallback(const std::vector<Job>& jobs, Resource r, double share) {
  std::vector<const Job*> order;
  for (const Job& j : jobs) order.push_back(&j);
  std::stable_sort(order.begin(), order.end(),
                   [](const Job* a, const Job* b) { return a->submit_ms < b->submit_ms; });
  std::vector<double> v;
  const auto end = static_cast<size_t>(share * static_cast<double>(jobs.size()));
  for (size_t i = 0; i < end; ++i) {
    if (order[i]->is_valid(r)) v.push_back(order[i]->label(r));
  }
  return median(v);
}

}  // namespace peakcast::eval::testing
