// The sacct reader on what other Slurm versions (20.11 to 24.05) and other sites' `--format`
// choices print, each form as Slurm's source prints it (src/sacct/print.c, src/common/
// print_fields.c, slurm_protocol_defs.c job_state_string, slurmdb_defs.c
// slurmdb_make_tres_string_from_simple, slurm_protocol_api.c convert_num_unit2): read as meant,
// or refused with "file:line: field: why" and counted as skipped, never read as something else.
#include <string>

#include "golden_util.h"  // gtest first
#include "peakcast/core/job.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/sacct.h"
#include "sacct_test_util.h"

namespace peakcast::ingest {
namespace {

using namespace sacct_testing;

std::string reasons(const Trace& t) {
  std::string all;
  for (const std::string& r : t.stats.reasons) all += r + "\n";
  return all;
}

// Up to 20.11 ReqMem is the per-node (`n`) or per-CPU (`c`) request, in any unit `--units` asks
// for (print.c: convert_num_unit of the MB value, then the letter); `--noconvert` keeps MB ("4000Mc"),
// and 0 prints as "0" before the letter. Without AllocTRES the whole-job request is made from it.
TEST(SacctVersions, ReqMemUpTo2011PerNodeAndPerCpuInEveryUnit) {
  const std::string text =
      "JobID|NNodes|NCPUS|ReqMem|MaxRSS\n"
      "1|2|4|4000Mn|\n"
      "1.batch|1|1|4000Mn|100M\n"
      "2|1|4|2Gc|\n"
      "2.batch|1|4|2Gc|100M\n"
      "3|1|2|3.91Gn|\n"  // --units=G
      "3.batch|1|2|3.91Gn|100M\n"
      "4|1|2|4000Mc|\n"  // --noconvert
      "4.batch|1|2|4000Mc|100M\n"
      "5|1|1|0n|\n"      // --mem=0: the whole node, no request to learn from
      "5.batch|1|1|0n|100M\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "old", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 5u);
  EXPECT_EQ(find_job(t, "1")->req_mem_bytes, 8000 * kM);
  EXPECT_EQ(find_job(t, "2")->req_mem_bytes, 8 * kG);
  EXPECT_EQ(find_job(t, "3")->req_mem_bytes, static_cast<uint64_t>(3.91 * kG + 0.5));
  EXPECT_EQ(find_job(t, "4")->req_mem_bytes, 8000 * kM);
  EXPECT_FALSE(find_job(t, "5")->req_mem_bytes);
  EXPECT_TRUE(has_note(t, "1 job(s) with ReqMem 0"));
}

// ReqNodes is ReqTRES `node=` (print.c PRINT_REQ_NODES, printed through convert_num_unit: `1K`
// for 1024 nodes), the count NNodes falls back to for a job never allocated. In a listing without
// NNodes (or AllocNodes) it gives a per-node ReqMem its nodes; NNodes, the nodes allocated, comes
// first where the row has it. Until 2026-12-07 the column was ignored and such a job was taken as
// one node (jobs 1 and 2: 4000M and 1G).
TEST(SacctVersions, ReqNodesCountsAPerNodeRequestsNodesWithoutNNodes) {
  const std::string text =
      "JobID|ReqNodes|ReqMem|MaxRSS\n"
      "1|2|4000Mn|\n"
      "1.batch|1|4000Mn|100M\n"
      "2|1K|1Gn|\n"
      "3|0|1Gn|\n"
      "4|two|1Gn|\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "reqnodes", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 3u) << reasons(t);
  EXPECT_EQ(find_job(t, "1")->req_mem_bytes, 8000 * kM);
  EXPECT_EQ(find_job(t, "2")->req_mem_bytes, 1024 * kG);
  EXPECT_EQ(find_job(t, "3")->req_mem_bytes, 1 * kG);
  // The note names the counts looked for: this listing has a node column, with 0 in it.
  EXPECT_TRUE(has_note(t, "1 job(s) with a per-node ReqMem (`n` suffix) and no node count (no NNodes, "
                          "AllocNodes or ReqNodes column, or an empty or 0 one)"))
      << "job 3: one node assumed";
  ASSERT_EQ(t.stats.skipped, 1u);
  EXPECT_NE(reasons(t).find("reqnodes:6: ReqNodes: \"two\" is not a count"), std::string::npos)
      << reasons(t);

  Trace both;
  ASSERT_TRUE(parse_sacct("JobID|NNodes|ReqNodes|ReqMem\n5|3|2|1Gn\n", "both", sacct_options(),
                          both));
  ASSERT_EQ(both.jobs.size(), 1u) << reasons(both);
  EXPECT_EQ(find_job(both, "5")->req_mem_bytes, 3 * kG) << "NNodes, the nodes allocated";
}

// TRES strings name typed GPUs beside the untyped count (`gres/gpu:a100=2,gres/gpu=2`, Slurm's
// AccountingStorageTRES=gres/gpu,gres/gpu:a100), and other TRES: billing, energy, fs/disk,
// gres/gpumem and gres/gpuutil (23.02+). Each is read by its exact name; the GPU count is the
// untyped one, else the typed ones summed, never both.
TEST(SacctVersions, TresStringsWithTypedGpusAndOtherTres) {
  const std::string text =
      "JobID|ReqTRES|AllocTRES|TRESUsageInTot\n"
      "1|billing=8,cpu=4,gres/gpu:a100_80g=2,gres/gpu=2,mem=16G,node=1|"
      "billing=8,cpu=4,energy=1234,gres/gpu:a100_80g=2,gres/gpu=2,mem=16G,node=1|\n"
      "1.batch||cpu=4,gres/gpu:a100_80g=2,gres/gpu=2,mem=16G,node=1|"
      "cpu=00:01:00,energy=120,fs/disk=1694124,gres/gpumem=40G,gres/gpuutil=80,mem=2G,pages=0,vmem=3G\n"
      "2|billing=2,cpu=2,gres/gpu:v100=1,gres/gpu:a100=1,mem=4G,node=1|"
      "billing=2,cpu=2,gres/gpu:v100=1,gres/gpu:a100=1,mem=4G,node=1|\n"
      "2.batch||cpu=2,mem=4G|mem=1G\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "tres", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  const Job* typed = find_job(t, "1");
  ASSERT_NE(typed, nullptr);
  EXPECT_EQ(typed->req_gpus, 2);
  EXPECT_EQ(typed->gpu_mem_bytes, 80 * kG);
  EXPECT_EQ(typed->req_mem_bytes, 16 * kG);
  EXPECT_EQ(typed->peak_mem_bytes, 2 * kG);
  EXPECT_EQ(typed->peak_vram_bytes, 40 * kG);
  const Job* mixed = find_job(t, "2");
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(mixed->req_gpus, 2);
  EXPECT_FALSE(mixed->gpu_mem_bytes) << "a100 comes in two sizes";
}

// job_state_string of 20.11 to 24.05: the base states, and the flags printed in their place. A
// job still pending, running or between runs is left out (and counted) even where the listing
// has no End column to say so; every finished state is kept, "CANCELLED by <uid>" as CANCELLED.
TEST(SacctVersions, StatesOfEveryVersion) {
  const std::string finished[] = {"COMPLETED", "FAILED", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
                                  "BOOT_FAIL", "DEADLINE", "TIMEOUT", "CANCELLED by 1234",
                                  "REVOKED", "SPECIAL_EXIT"};
  const std::string going[] = {"PENDING", "RUNNING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
                               "REQUEUE_FED", "RESIZING", "COMPLETING", "CONFIGURING",
                               "STAGE_OUT", "STOPPED", "SIGNALING", "RESV_DEL_HOLD"};
  std::string text = "JobID|State|ReqMem|MaxRSS\n";
  int id = 1;
  for (const auto& s : finished) text += std::to_string(id++) + "|" + s + "|1G|100M\n";
  const int first_going = id;
  for (const auto& s : going) text += std::to_string(id++) + "|" + s + "|1G|100M\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "states", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), std::size(finished));
  EXPECT_EQ(find_job(t, "9")->state, "CANCELLED");
  EXPECT_EQ(find_job(t, "3")->state, "OUT_OF_MEMORY");
  for (int i = first_going; i < id; ++i) {
    EXPECT_EQ(find_job(t, std::to_string(i)), nullptr) << going[i - first_going] << " is not finished";
  }
  EXPECT_TRUE(has_note(t, std::to_string(std::size(going)) + " job(s) still running or pending"));
}

// A state no Slurm version prints ("?" is job_state_string's answer for an unknown base state; a
// site's own tool may write anything) is read as finished, as before, but said in a note naming
// the first, so a label from a job that may still be running or was cut short is not silent.
TEST(SacctVersions, AStateNoSlurmPrintsIsNamedInANote) {
  const std::string text =
      "JobID|State|ReqMem|MaxRSS\n"
      "1|COMPLETED|1G|100M\n"
      "2|?|1G|100M\n"
      "3|LAUNCH_FAILED|1G|100M\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "odd", sacct_options(), t));
  EXPECT_EQ(t.jobs.size(), 3u);
  EXPECT_TRUE(has_note(t, "sacct: 2 job(s) with a State that is no Slurm job state"));
  EXPECT_TRUE(has_note(t, "first odd:3 2 (\"?\")"));
}

// Durations as sacct prints them (secs2time_str, mins2time_str): days ("1-02:03:04"), and the
// Timelimit words: UNLIMITED (INFINITE), Partition_Limit (NO_VAL); TimelimitRaw the same words or
// minutes. Elapsed with days gives the end where End is absent.
TEST(SacctVersions, DurationsWithDaysAndTheTimelimitWords) {
  const std::string text =
      "JobID|Start|Elapsed|Timelimit|MaxRSS|ReqMem\n"
      "1|1700000000|1-02:03:04|2-00:00:00|100M|1G\n"
      "2|1700000000|00:10:00|UNLIMITED|100M|1G\n"
      "3|1700000000|00:10:00|Partition_Limit|100M|1G\n"
      "4|1700000000|00:10:00||100M|1G\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "durations", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 4u);
  EXPECT_EQ(find_job(t, "1")->end_ms, (1700000000LL + 86400 + 2 * 3600 + 3 * 60 + 4) * 1000);
  EXPECT_EQ(find_job(t, "1")->req_time_s, 2 * 86400);
  EXPECT_FALSE(find_job(t, "2")->req_time_s);
  EXPECT_FALSE(find_job(t, "3")->req_time_s);
  EXPECT_FALSE(find_job(t, "4")->req_time_s);

  const std::string raw =
      "JobID|TimelimitRaw|MaxRSS|ReqMem\n"
      "1|90|100M|1G\n"
      "2|UNLIMITED|100M|1G\n"
      "3|Partition_Limit|100M|1G\n";
  Trace r;
  ASSERT_TRUE(parse_sacct(raw, "raw", sacct_options(), r));
  EXPECT_EQ(r.stats.skipped, 0u) << reasons(r);
  EXPECT_EQ(find_job(r, "1")->req_time_s, 90 * 60);
  EXPECT_FALSE(find_job(r, "2")->req_time_s);
  EXPECT_FALSE(find_job(r, "3")->req_time_s);
}

// A job cancelled before it started: Start prints "Unknown" (slurm_make_time_str of 0) or "None",
// End the cancellation; no step, no peak. It is kept with no label, not refused, and a job whose
// End is "Unknown" (still running) is left out. Windows line ends (a dump copied through
// another system) are read as '\n'.
TEST(SacctVersions, AJobCancelledBeforeItStartedAndWindowsLineEnds) {
  const std::string text =
      "JobID|State|Submit|Start|End|Elapsed|ReqMem|AllocTRES|MaxRSS\r\n"
      "1|CANCELLED by 1000|2024-05-01T10:00:00|Unknown|2024-05-01T10:05:00|00:00:00|1G||\r\n"
      "2|CANCELLED by 0|2024-05-01T10:00:00|None|2024-05-01T10:06:00|00:00:00|1G||\r\n"
      "3|RUNNING|2024-05-01T10:00:00|2024-05-01T10:01:00|Unknown|00:10:00|1G|mem=1G|\r\n"
      "4|COMPLETED|2024-05-01T10:00:00|2024-05-01T10:01:00|2024-05-01T10:11:00|00:10:00|1G|mem=1G|\r\n"
      "4.batch|COMPLETED|2024-05-01T10:01:00|2024-05-01T10:01:00|2024-05-01T10:11:00|00:10:00|||512M\r\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "never", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 3u);
  const Job* never = find_job(t, "1");
  ASSERT_NE(never, nullptr);
  EXPECT_EQ(never->state, "CANCELLED");
  EXPECT_FALSE(never->start_ms);
  EXPECT_FALSE(never->peak_mem_bytes);
  EXPECT_EQ(never->end_ms, 1714557900000);
  EXPECT_FALSE(find_job(t, "2")->start_ms);
  EXPECT_EQ(find_job(t, "3"), nullptr);
  EXPECT_EQ(find_job(t, "4")->peak_mem_bytes, 512 * kM);
  EXPECT_EQ(find_job(t, "4")->req_mem_bytes, 1 * kG);
}

// Job ids of every version: an array task (123_4) and its steps, a pending array's record
// (123_[5-9%2], left out as pending), a hetjob's components (124+0, 124+1) each its own job, a
// 23.02+ interactive step (125.interactive), a heterogeneous step (125.0+1: step 0, component 1)
// and the extern step: all steps join their job, whose peak is the largest.
TEST(SacctVersions, JobIdsOfArraysHetjobsAndEveryStepKind) {
  const std::string text =
      "JobID|JobIDRaw|State|ReqMem|MaxRSS|NodeList\n"
      "123_4|130|COMPLETED|1G||node[01-02,07]\n"
      "123_4.batch|130.batch|COMPLETED||100M|node01\n"
      "123_4.extern|130.extern|COMPLETED||1M|node[01-02,07]\n"
      "123_[5-9%2]|123|PENDING|1G||None assigned\n"
      "124+0|124|COMPLETED|1G||node03\n"
      "124+0.batch|124.batch|COMPLETED||200M|node03\n"
      "124+1|125|COMPLETED|2G||node04\n"
      "124+1.0|125.0|COMPLETED||300M|node04\n"
      "126|126|COMPLETED|4G||node05\n"
      "126.interactive|126.interactive|COMPLETED||400M|node05\n"
      "126.0+0|126.0+0|COMPLETED||500M|node05\n"
      "126.0+1|126.0+1|COMPLETED||600M|node05\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "ids", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 4u);
  EXPECT_EQ(find_job(t, "123_4")->peak_mem_bytes, 100 * kM);
  EXPECT_EQ(find_job(t, "124+0")->peak_mem_bytes, 200 * kM);
  EXPECT_EQ(find_job(t, "124+1")->peak_mem_bytes, 300 * kM);
  EXPECT_EQ(find_job(t, "126")->peak_mem_bytes, 600 * kM);
  EXPECT_EQ(find_job(t, "123_[5-9%2]"), nullptr);
  EXPECT_TRUE(has_note(t, "1 job(s) still running or pending"));
}

// MaxRSS and TRES usage sizes as convert_num_unit prints them: K/M/G/T with two decimals where
// inexact, any unit --units asks for, and bytes with no suffix under --noconvert (its AllocTRES
// mem= then keeps MB with its "M", as print.c's NO flag leaves the unit).
TEST(SacctVersions, UsageInEveryUnitAndUnderNoconvert) {
  const std::string text =
      "JobID|AllocTRES|MaxRSS|TRESUsageInTot\n"
      "1|mem=4G|||\n"
      "1.batch||221128K|\n"
      "2|mem=4G||\n"
      "2.batch||215.95M|\n"
      "3|mem=4G||\n"
      "3.batch||1.50G|\n"
      "4|mem=4T||\n"
      "4.batch||1T|\n"
      "5|mem=4000M||\n"  // --noconvert
      "5.batch||275812352|cpu=00:00:01,mem=275812352,vmem=1000000000\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "units", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 5u);
  EXPECT_EQ(find_job(t, "1")->peak_mem_bytes, 221128 * kK);
  EXPECT_EQ(find_job(t, "2")->peak_mem_bytes, static_cast<uint64_t>(215.95 * kM + 0.5));
  EXPECT_EQ(find_job(t, "3")->peak_mem_bytes, 1536 * kM);
  EXPECT_EQ(find_job(t, "4")->peak_mem_bytes, 1024 * kG);
  EXPECT_EQ(find_job(t, "5")->peak_mem_bytes, 275812352u);
  EXPECT_EQ(find_job(t, "5")->req_mem_bytes, 4000 * kM);
}

// `sacct -P --delimiter=X` puts X between fields and names (print_fields.c). A tab or a ';' holds
// no field sacct fills but free text (names, comments), as '|' does: read. A ',' is in every TRES
// string (cpu=1,mem=1G) and a NodeList, so such rows cannot be split: refused at the header,
// saying why, not read as columns shifted. Output without -P (fixed-width columns, cut at their
// width with a '+') cannot be read back either: refused so.
TEST(SacctVersions, ADelimiterOtherThanThePipe) {
  for (char d : {'\t', ';'}) {
    std::string text = "JobID|State|ReqMem|ReqTRES|MaxRSS|JobName\n"
                       "1|COMPLETED|1G|cpu=1,mem=1G||a|b\n"
                       "1.batch|COMPLETED|||300M|batch\n";
    for (char& c : text) {
      if (c == '|') c = d;
    }
    Trace t;
    ASSERT_TRUE(parse_sacct(text, "delim", sacct_options(), t)) << int(d);
    EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
    ASSERT_EQ(t.jobs.size(), 1u) << int(d);
    EXPECT_EQ(t.jobs[0].peak_mem_bytes, 300 * kM);
    EXPECT_EQ(t.jobs[0].req_mem_bytes, 1 * kG);
    EXPECT_EQ(t.jobs[0].job_name, std::string("a") + d + "b");  // the extra one, joined back
    EXPECT_TRUE(has_note(t, d == ';' ? "1 row(s) had ';' inside a free-text field"
                                     : "1 row(s) had a tab inside a free-text field"));
  }
  const std::string comma = "JobID,State,ReqTRES,MaxRSS\n1,COMPLETED,cpu=1,mem=1G,\n";
  Trace c;
  const Status s = parse_sacct(comma, "comma.txt", sacct_options(), c);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("comma.txt:1: header: fields delimited by ','"), std::string::npos)
      << s.message();
  const std::string fixed =
      "       JobID    JobName      State     MaxRSS \n"
      "------------ ---------- ---------- ---------- \n"
      "4242         long-name+  COMPLETED            \n";
  Trace f;
  const Status fs = parse_sacct(fixed, "fixed.txt", sacct_options(), f);
  ASSERT_FALSE(fs);
  EXPECT_NE(fs.message().find("fixed.txt:1: header: columns padded with spaces"), std::string::npos)
      << fs.message();
}

// `sacct -L` (or -M a,b) lists several clusters, whose job ids overlap; with a Cluster column
// each cluster's job 7 is its own job, not a requeued record of the other's.
TEST(SacctVersions, TheSameJobIdOnTwoClustersIsTwoJobs) {
  const std::string text =
      "JobID|Cluster|State|ReqMem|MaxRSS\n"
      "7|alpha|COMPLETED|1G|\n"
      "7.batch|alpha|COMPLETED||100M\n"
      "7|beta|COMPLETED|2G|\n"
      "7.batch|beta|COMPLETED||300M\n"
      "8.batch|alpha|COMPLETED||50M\n"
      "8|alpha|COMPLETED|1G|\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "clusters", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 3u);
  EXPECT_EQ(t.jobs[0].peak_mem_bytes, 100 * kM);
  EXPECT_EQ(t.jobs[0].req_mem_bytes, 1 * kG);
  EXPECT_EQ(t.jobs[1].peak_mem_bytes, 300 * kM);
  EXPECT_EQ(t.jobs[1].req_mem_bytes, 2 * kG);
  EXPECT_EQ(t.jobs[2].peak_mem_bytes, 50 * kM);
  EXPECT_FALSE(has_note(t, "requeued"));
}

// Columns in any order, optional ones missing, and a header repeated where two sacct runs were
// concatenated (with other columns): each part is read by its own header.
TEST(SacctVersions, ColumnsInAnyOrderAndConcatenatedRuns) {
  const std::string text =
      "MaxRSS|ReqMem|State|JobID\n"
      "|1G|COMPLETED|1\n"
      "100M||COMPLETED|1.batch\n"
      "JobID|MaxRSS|AllocTRES\n"
      "2||cpu=1,mem=2G\n"
      "2.batch|200M|\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "order", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(find_job(t, "1")->peak_mem_bytes, 100 * kM);
  EXPECT_EQ(find_job(t, "1")->req_mem_bytes, 1 * kG);
  EXPECT_EQ(find_job(t, "2")->peak_mem_bytes, 200 * kM);
  EXPECT_EQ(find_job(t, "2")->req_mem_bytes, 2 * kG);
}

}  // namespace
}  // namespace peakcast::ingest
