// `peakcast inspect`'s summary (tools/inspect.h): the figures it prints for a trace.
#include "peakcast/tools/inspect.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace peakcast::eval {
namespace {

constexpr uint64_t kGiB = 1ULL << 30;

Job gpu_job(std::string id, std::string state, std::optional<uint64_t> peak_mem,
            std::optional<uint64_t> peak_vram, int64_t submit_s) {
  Job j;
  j.job_id = std::move(id);
  j.user = "alice";
  j.state = std::move(state);
  j.submit_ms = submit_s * kMsPerSecond;
  j.start_ms = j.submit_ms;
  j.end_ms = j.submit_ms + 60 * kMsPerSecond;
  j.req_mem_bytes = 16 * kGiB;
  j.req_gpus = 1;
  j.gpu_mem_bytes = 40 * kGiB;
  j.peak_mem_bytes = peak_mem;
  j.peak_vram_bytes = peak_vram;
  j.workload = "train.py";
  j.script_key = "key";
  compute_labels(j, 1.0);
  return j;
}

// A job killed for host memory has a censored memory label, but its VRAM peak is a measurement
// (core/job.h censored_for): inspect counted it as censored for both resources, so a GPU trace's
// "censored" column for vram showed every host OOM of a GPU job. A trace that records only a GPU
// peak for an OOM job (VRAM exhausted) is censored for vram alone.
TEST(Inspect, CensoredIsCountedForTheExhaustedResourceOnly) {
  ingest::Trace t;
  t.path = "mem.jsonl";
  t.format = ingest::Format::kJsonl;
  t.jobs.push_back(gpu_job("1", "OUT_OF_MEMORY", 16 * kGiB, 10 * kGiB, 1000));  // host OOM
  t.jobs.push_back(gpu_job("2", "COMPLETED", 8 * kGiB, 20 * kGiB, 2000));
  t.jobs.push_back(gpu_job("3", "OUT_OF_MEMORY", std::nullopt, 40 * kGiB, 3000));  // VRAM OOM
  ASSERT_TRUE(censored_for(t.jobs[0], Resource::kMem));
  ASSERT_FALSE(censored_for(t.jobs[0], Resource::kVram));
  ASSERT_TRUE(censored_for(t.jobs[2], Resource::kVram));

  const TraceSummary s = summarize_trace(t);
  EXPECT_EQ(s.labelled[idx(Resource::kMem)], 2u);
  EXPECT_EQ(s.labelled[idx(Resource::kVram)], 3u);
  EXPECT_EQ(s.censored[idx(Resource::kMem)], 1u) << "job 1";
  EXPECT_EQ(s.censored[idx(Resource::kVram)], 1u) << "job 3 only: job 1's VRAM peak was measured";
  EXPECT_EQ(s.oom, 2u);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["resources"]["vram"]["censored"], 1u);
  EXPECT_EQ(j["resources"]["mem"]["censored"], 1u);
}

}  // namespace
}  // namespace peakcast::eval
