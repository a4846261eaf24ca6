// The sacct reader's labels: the memory request a job ran under (AllocTRES), the GPU count its request
// states (ReqTRES) and peaks of 0 (host memory and gres/gpumem); the rest of the reader is in
// sacct_test.cpp and sacct_sources_test.cpp.
#include <string>

#include "golden_util.h"
#include "peakcast/core/job.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/sacct.h"
#include "sacct_test_util.h"

namespace peakcast::ingest {
namespace {

using namespace sacct_testing;

// The request is the memory the job ran under: AllocTRES mem= (slurmctld's allocation, what
// slurmd enforces), where present; else ReqMem, else ReqTRES mem=. Slurm 22.05.8 (observed): a
// GPU job that asks for no memory under DefMemPerCPU=300 DefMemPerGPU=250, -n 2 --gpus=2, runs
// with 500M while ReqMem/ReqTRES keep the 600M per-CPU default of its submission.
TEST(SacctLabels, TheRequestIsTheMemoryTheJobRanUnder) {
  const std::string text =
      "JobID|State|NCPUS|ReqMem|ReqTRES|AllocTRES|MaxRSS\n"
      "1|COMPLETED|2|600M|billing=2,cpu=2,gres/gpu=2,mem=600M,node=1|billing=2,cpu=2,gres/gpu=2,mem=500M,node=1|\n"
      "1.batch|COMPLETED|2||||100M\n"
      "2|COMPLETED|1|300M|cpu=1,mem=300M|cpu=1,gres/gpu=2,mem=500M|\n"  // below the allocation
      "2.batch|COMPLETED|1||||100M\n"
      "3|CANCELLED by 0|1|1G|cpu=1,mem=1G||\n"  // never started: no AllocTRES, ReqMem
      "4|COMPLETED|4|2Gc||billing=4,cpu=4,mem=8G,node=1|\n"  // pre-21.08: the same either way
      "4.batch|COMPLETED|4||||1G\n"
      "5|COMPLETED|1|0n||billing=1,cpu=1,node=1|\n"  // --mem=0 before 21.08: no mem= in it
      "6|COMPLETED|1||cpu=1,mem=700M|cpu=1,mem=750M|\n"
      "7|COMPLETED|1|1G|cpu=1,mem=1G|cpu=1,mem=1024|\n"  // a bare number is MB, as sacct prints it
      "8|COMPLETED|1|1G|cpu=1,mem=1G|cpu=1,mem=lots|\n"
      "9|COMPLETED|1|1G|cpu=1,mem=1G|cpu=1,mem=|\n";  // empty: none, as in TRESUsageIn*
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "alloc", sacct_options(), t));
  finalize_trace(t, 1.0);  // labels, as read_trace gives them
  ASSERT_NE(find_job(t, "1"), nullptr);
  EXPECT_EQ(find_job(t, "1")->req_mem_bytes, 500 * kM);
  EXPECT_DOUBLE_EQ(find_job(t, "1")->label(Resource::kMem), 100.0 / 500.0);
  ASSERT_NE(find_job(t, "2"), nullptr);
  EXPECT_EQ(find_job(t, "2")->req_mem_bytes, 500 * kM);
  ASSERT_NE(find_job(t, "3"), nullptr);
  EXPECT_EQ(find_job(t, "3")->req_mem_bytes, 1 * kG);
  ASSERT_NE(find_job(t, "4"), nullptr);
  EXPECT_EQ(find_job(t, "4")->req_mem_bytes, 8 * kG);
  ASSERT_NE(find_job(t, "5"), nullptr);
  EXPECT_FALSE(find_job(t, "5")->req_mem_bytes);  // ReqMem 0: no limit to learn a share of
  EXPECT_TRUE(has_note(t, "1 job(s) with ReqMem 0"));
  ASSERT_NE(find_job(t, "6"), nullptr);
  EXPECT_EQ(find_job(t, "6")->req_mem_bytes, 750 * kM);
  ASSERT_NE(find_job(t, "7"), nullptr);
  EXPECT_EQ(find_job(t, "7")->req_mem_bytes, 1 * kG);
  // A malformed AllocTRES mem= is a damaged row, named with its field (not read as "no
  // allocation" and replaced by ReqMem).
  EXPECT_EQ(find_job(t, "8"), nullptr);
  ASSERT_EQ(t.stats.reasons.size(), 1u);
  EXPECT_EQ(t.stats.reasons[0], "alloc:12: AllocTRES: mem=\"lots\" is not a size");
  ASSERT_NE(find_job(t, "9"), nullptr);
  EXPECT_EQ(find_job(t, "9")->req_mem_bytes, 1 * kG);
}

// The GPU count, the VRAM capacity's multiplier, is the one the request states (ReqTRES
// gres/gpu), the count the Slurm hook sends for the same submission. Slurm 22.05.8 (observed,
// node Gres=gpu:2): --exclusive gives a job every GPU of its node, so `--exclusive --gpus=1 -n 1`
// has ReqTRES gres/gpu=1 and AllocTRES gres/gpu=2, and `--exclusive -n 1` (no GPUs asked for)
// AllocTRES gres/gpu=2 and none in ReqTRES; OverSubscribe=EXCLUSIVE partitions do the same.
// Until 2026-12-06 AllocTRES came first: such a job was learned over 2 GPUs' memory and served
// over the 1 the hook sent, its VRAM answer half its peak. AllocTRES only where the row has no
// ReqTRES (older dumps, an empty field).
TEST(SacctLabels, TheGpuCountIsTheOneTheRequestStates) {
  const std::string text =
      "JobID|State|NCPUS|ReqTRES|AllocTRES|TRESUsageInTot\n"
      "1|COMPLETED|2|billing=1,cpu=1,gres/gpu=1,mem=500M,node=1|billing=2,cpu=2,gres/gpu=2,mem=1000M,node=1|\n"
      "1.batch|COMPLETED|2||cpu=2,gres/gpu=2,mem=1000M,node=1|gres/gpumem=6G,mem=100M\n"
      "2|COMPLETED|2|billing=1,cpu=1,mem=500M,node=1|billing=2,cpu=2,gres/gpu=2,mem=1000M,node=1|\n"
      "2.batch|COMPLETED|2||cpu=2,gres/gpu=2,mem=1000M,node=1|mem=100M\n"
      "3|COMPLETED|1|billing=1,cpu=1,gres/gpu=1,mem=500M,node=1|billing=1,cpu=1,gres/gpu=1,mem=500M,node=1|\n"
      "3.batch|COMPLETED|1||cpu=1,gres/gpu=1,mem=500M,node=1|gres/gpumem=6G,mem=100M\n"
      "4|COMPLETED|1||cpu=1,gres/gpu=2,mem=1G|\n"                // no ReqTRES: AllocTRES
      "5|CANCELLED by 0|1|cpu=1,gres/gpu=1,mem=1G||\n"           // never started
      "6|COMPLETED|1|cpu=1,gres/gpu=1,mem=1G|cpu=1,gres/gpu=x|\n";  // still a damaged row
  SacctOptions so;
  so.default_gpu_mem_bytes = 16 * kG;
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "gpus", sacct_options(), so, t));
  finalize_trace(t, 1.0);
  const Job* excl = find_job(t, "1");  // --exclusive --gpus=1 -n 1
  ASSERT_NE(excl, nullptr);
  EXPECT_EQ(excl->req_gpus, 1);
  EXPECT_DOUBLE_EQ(excl->label(Resource::kVram), 6.0 / 16.0);
  const Job* none = find_job(t, "2");  // --exclusive -n 1
  ASSERT_NE(none, nullptr);
  EXPECT_FALSE(none->req_gpus);
  EXPECT_FALSE(none->gpu_mem_bytes);
  ASSERT_NE(find_job(t, "3"), nullptr);  // --gpus=1: the same either way
  EXPECT_EQ(find_job(t, "3")->req_gpus, 1);
  EXPECT_DOUBLE_EQ(find_job(t, "3")->label(Resource::kVram), 6.0 / 16.0);
  ASSERT_NE(find_job(t, "4"), nullptr);
  EXPECT_EQ(find_job(t, "4")->req_gpus, 2);
  ASSERT_NE(find_job(t, "5"), nullptr);
  EXPECT_EQ(find_job(t, "5")->req_gpus, 1);
  EXPECT_EQ(find_job(t, "6"), nullptr);
  ASSERT_EQ(t.stats.reasons.size(), 1u);
  EXPECT_EQ(t.stats.reasons[0], "gpus:10: AllocTRES: bad GPU count in \"cpu=1,gres/gpu=x\"");
  EXPECT_TRUE(has_note(t, "sacct: 2 job(s) allocated more GPUs than their ReqTRES states"));
}

// gres/gpumem (Slurm 23.02+) sums the job's processes over every GPU it had, and --exclusive
// gives `--exclusive --gpus=1` the node's every GPU (AllocTRES gres/gpu=2), which it may use: its
// peak over the 1 GPU its request states (the count the hook sends) can pass 1. The label is that
// share clipped at --util-cap, as any label, and the reader says how many such jobs it read. A
// jobstats summary never gives one: its label is the busiest GPU's used / total (Jobstats tests).
TEST(SacctLabels, AGpuMemoryPeakBeyondTheRequestedGpusIsClippedAndCounted) {
  const std::string text =
      "JobID|State|NCPUS|ReqTRES|AllocTRES|TRESUsageInTot\n"
      "1|COMPLETED|2|cpu=1,gres/gpu=1,mem=500M,node=1|cpu=2,gres/gpu=2,mem=1000M,node=1|\n"
      "1.batch|COMPLETED|2||cpu=2,gres/gpu=2,mem=1000M,node=1|gres/gpumem=24G,mem=100M\n"
      "2|COMPLETED|2|cpu=1,gres/gpu=1,mem=500M,node=1|cpu=2,gres/gpu=2,mem=1000M,node=1|\n"
      "2.batch|COMPLETED|2||cpu=2,gres/gpu=2,mem=1000M,node=1|gres/gpumem=6G,mem=100M\n"
      "3|COMPLETED|1|cpu=1,gres/gpu=1,mem=500M,node=1|cpu=1,gres/gpu=1,mem=500M,node=1|\n"
      "3.batch|COMPLETED|1||cpu=1,gres/gpu=1,mem=500M,node=1|gres/gpumem=20G,mem=100M\n";
  SacctOptions so;
  so.default_gpu_mem_bytes = 16 * kG;
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "beyond", sacct_options(), so, t));
  finalize_trace(t, 1.0);
  const Job* used_both = find_job(t, "1");
  ASSERT_NE(used_both, nullptr);
  EXPECT_EQ(used_both->req_gpus, 1);
  EXPECT_DOUBLE_EQ(used_both->label(Resource::kVram), 1.0);
  EXPECT_TRUE(used_both->clipped[idx(Resource::kVram)]);
  ASSERT_NE(find_job(t, "2"), nullptr);  // given 2, within the 1 it asked for
  EXPECT_DOUBLE_EQ(find_job(t, "2")->label(Resource::kVram), 6.0 / 16.0);
  ASSERT_NE(find_job(t, "3"), nullptr);  // over its capacity, but allocated no more than it asked
  EXPECT_TRUE(find_job(t, "3")->clipped[idx(Resource::kVram)]);
  EXPECT_TRUE(has_note(t, "sacct: 1 job(s) used more GPU memory (gres/gpumem) than the GPUs their "
                          "ReqTRES states hold"));
}

// A job whose every step reads a peak of 0 was never caught by jobacct_gather's sampling
// (JobAcctGatherFrequency): no label, with a note, as a Nextflow peak_rss of 0. Until 2026-12-06
// evaluate scored it as a 0% label while simulate dropped it. One step at 0 beside a sampled one
// is the max over steps as before; a job killed for memory keeps its censored label.
TEST(SacctLabels, AMemoryPeakOfZeroIsNotMeasured) {
  const std::string text =
      "JobID|State|ReqMem|MaxRSS|TRESUsageInTot\n"
      "1|COMPLETED|1G||\n"
      "1.batch|COMPLETED||0|\n"
      "1.extern|COMPLETED||0|\n"
      "2|COMPLETED|1G||\n"
      "2.batch|COMPLETED||0|\n"
      "2.extern|COMPLETED||768K|\n"
      "3|OUT_OF_MEMORY|1G||\n"
      "3.batch|OUT_OF_MEMORY||0|\n"
      "4|COMPLETED|1G||\n"
      "4.0|COMPLETED||100M|mem=0\n";  // TRESUsageInTot wins within the row
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "zero", sacct_options(), t));
  finalize_trace(t, 1.0);
  ASSERT_EQ(t.jobs.size(), 4u);
  const Job* none = find_job(t, "1");
  ASSERT_NE(none, nullptr);
  EXPECT_FALSE(none->peak_mem_bytes);
  EXPECT_FALSE(none->is_valid(Resource::kMem));
  EXPECT_EQ(none->req_mem_bytes, 1 * kG);
  EXPECT_EQ(find_job(t, "2")->peak_mem_bytes, 768 * kK);
  const Job* oom = find_job(t, "3");
  EXPECT_TRUE(oom->censored);
  EXPECT_DOUBLE_EQ(oom->label(Resource::kMem), 1.0);
  EXPECT_FALSE(find_job(t, "4")->is_valid(Resource::kMem));
  EXPECT_EQ(t.stats.labelled[idx(Resource::kMem)], 2u);
  EXPECT_TRUE(has_note(t, "sacct: memory of 0 read as not measured (MaxRSS/TRESUsageIn mem= of "
                          "every step in 2 job(s))"));
}

// Slurm 23.02+ gathers gres/gpumem in jobacct_gather's poll (_handle_stats calls
// gpu_g_usage_read per task pid, every JobAcctGatherFrequency): NVML's per-process used memory,
// summed over the task's pids at each sample. A job whose GPU work fell between samples, or whose
// GPU NVML cannot read per process (MIG, some models and drivers: sites document zeros there),
// reads 0 like one that never touched its GPU, and sacct cannot tell them apart: no VRAM label,
// a note counts them, as for host memory. Until 2026-12-06 the 0 was kept as a 0% VRAM label,
// and an OUT_OF_MEMORY job with no host peak beside it was taken for a GPU-memory kill.
TEST(SacctLabels, AGpuMemoryPeakOfZeroIsNotMeasured) {
  const std::string text =
      "JobID|State|AllocTRES|TRESUsageInTot\n"
      "1|COMPLETED|cpu=1,gres/gpu=1,mem=1G|\n"
      "1.batch|COMPLETED||gres/gpumem=0,mem=100M\n"
      "1.extern|COMPLETED||gres/gpumem=0,mem=0\n"
      "2|COMPLETED|cpu=1,gres/gpu=1,mem=1G|\n"
      "2.batch|COMPLETED||gres/gpumem=0,mem=100M\n"
      "2.0|COMPLETED||gres/gpumem=2G,mem=200M\n"  // one sampled step: the max over steps
      "3|OUT_OF_MEMORY|cpu=1,gres/gpu=1,mem=1G|\n"
      "3.batch|OUT_OF_MEMORY||gres/gpumem=0\n";  // no host peak at all
  SacctOptions so;
  so.default_gpu_mem_bytes = 16 * kG;
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "gpuzero", sacct_options(), so, t));
  finalize_trace(t, 1.0);
  ASSERT_EQ(t.jobs.size(), 3u);
  const Job* none = find_job(t, "1");
  ASSERT_NE(none, nullptr);
  EXPECT_FALSE(none->peak_vram_bytes);
  EXPECT_FALSE(none->is_valid(Resource::kVram));
  EXPECT_TRUE(none->is_valid(Resource::kMem));  // its host memory was measured
  const Job* sampled = find_job(t, "2");
  ASSERT_NE(sampled, nullptr);
  EXPECT_EQ(sampled->peak_vram_bytes, 2 * kG);
  EXPECT_DOUBLE_EQ(sampled->label(Resource::kVram), 2.0 / 16.0);
  const Job* oom = find_job(t, "3");
  ASSERT_NE(oom, nullptr);
  EXPECT_TRUE(censored_for(*oom, Resource::kMem));
  EXPECT_FALSE(censored_for(*oom, Resource::kVram));
  EXPECT_EQ(t.stats.labelled[idx(Resource::kVram)], 1u);
  EXPECT_TRUE(has_note(t, "sacct: 2 job(s) with a gres/gpumem peak of 0"));
}

// A usage count Slurm holds as INFINITE64 (unknown: gpu_p_usage_read sets it where a plugin cannot
// read per-process GPU usage) is printed as NONE (slurmdb_make_tres_string_from_simple): not
// measured, not a damaged row. Until 2026-12-06 "gres/gpumem=NONE" was "not a size" and the whole
// job was dropped, its host-memory label with it.
TEST(SacctLabels, AUsageOfNoneIsNotMeasured) {
  const std::string text =
      "JobID|State|AllocTRES|TRESUsageInMax|TRESUsageInTot\n"
      "1|COMPLETED|cpu=1,gres/gpu=1,mem=1G||\n"
      "1.batch|COMPLETED||gres/gpumem=NONE,gres/gpuutil=NONE,mem=100M|gres/gpumem=NONE,mem=100M\n"
      "2|COMPLETED|cpu=1,mem=1G||\n"
      "2.batch|COMPLETED||gres/gpumem=lots,mem=100M|\n";  // anything else is still damaged
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "none", sacct_options(), t));
  const Job* none = find_job(t, "1");
  ASSERT_NE(none, nullptr);
  EXPECT_FALSE(none->peak_vram_bytes);
  EXPECT_EQ(none->peak_mem_bytes, 100 * kM);
  EXPECT_EQ(find_job(t, "2"), nullptr);
  ASSERT_EQ(t.stats.reasons.size(), 1u);
  EXPECT_NE(t.stats.reasons[0].find("gres/gpumem=\"lots\" is not a size"), std::string::npos) << t.stats.reasons[0];
}

}  // namespace
}  // namespace peakcast::ingest
