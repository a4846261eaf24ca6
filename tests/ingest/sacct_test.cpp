// The Slurm `sacct -P` reader: golden files for 22.05 and pre-21.08 output, field helpers, rows,
// column-order independence; scripts and the real Yale dumps are in sacct_sources_test.cpp.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "golden_util.h"  // gtest first: rapidcheck/gtest.h needs it
#include <rapidcheck/gtest.h>
#include "peakcast/core/io.h"
#include "peakcast/core/time_zone.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/sacct.h"
#include "sacct_test_util.h"

namespace peakcast::ingest {
namespace {

using namespace sacct_testing;
using test_util::expect_jobs_match;
using test_util::golden;

// ---------------------------------------------------------------- golden files

TEST(Sacct, Golden2205) {
  auto trace = read_trace(golden("sacct_2205.txt"), sacct_options());
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  expect_jobs_match(*trace, golden("sacct_2205.txt.expected.jsonl"));
  EXPECT_EQ(trace->stats.lines, 24u);
  EXPECT_EQ(trace->stats.skipped, 0u) << (trace->stats.reasons.empty() ? "" : trace->stats.reasons[0]);
  EXPECT_TRUE(trace->has_submit_times);
  EXPECT_TRUE(has_note(*trace, "1 job(s) still running")) << "job 9 is RUNNING";
  EXPECT_EQ(find_job(*trace, "9"), nullptr);
  EXPECT_EQ(trace->stats.ignored, 1u);
}

// What slurm-sync reads (serve::kSacctColumns, the unit separator), recorded on slurmctld 22.05
// (tests/integration/slurm_cluster.sh): a comment holding the hook's answer (its id read back), a
// job named with '|', and one named with a newline whose comment holds one too (its row spans
// three lines).
TEST(Sacct, GoldenUnitSeparator) {
  auto trace = read_trace(golden("sacct_unitsep.txt"), sacct_options());
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  expect_jobs_match(*trace, golden("sacct_unitsep.txt.expected.jsonl"));
  EXPECT_EQ(trace->stats.lines, 8u);  // rows, not lines: four jobs and their batch steps
  EXPECT_EQ(trace->stats.skipped, 0u) << (trace->stats.reasons.empty() ? "" : trace->stats.reasons[0]);
}

TEST(Sacct, Golden2205Labels) {
  auto trace = read_trace(golden("sacct_2205.txt"), sacct_options());
  ASSERT_TRUE(trace.ok());
  const Job* oom = find_job(*trace, "7");  // job row FAILED, batch step OUT_OF_MEMORY
  ASSERT_NE(oom, nullptr);
  EXPECT_TRUE(oom->censored);
  EXPECT_DOUBLE_EQ(oom->label(Resource::kMem), 1.0);
  EXPECT_EQ(trace->stats.censored, 1u);

  const Job* two = find_job(*trace, "5");  // the max over steps of TRESUsageInTot
  ASSERT_NE(two, nullptr);
  EXPECT_DOUBLE_EQ(two->label(Resource::kMem), (269348.0 * kK) / (800.0 * kM));

  const Job* gpu = find_job(*trace, "14");
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->is_valid(Resource::kVram));
  EXPECT_DOUBLE_EQ(gpu->label(Resource::kVram), (72532.0 * kM) / (2.0 * 80 * kG));
  const Job* untyped = find_job(*trace, "6");  // gres/gpu=1, no type, no gpumem
  ASSERT_NE(untyped, nullptr);
  EXPECT_FALSE(untyped->is_valid(Resource::kVram));
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kVram)], 1u);
  EXPECT_FALSE(find_job(*trace, "8")->is_valid(Resource::kMem));  // never ran: no peak
}

// JobAcctGatherParams=OverMemoryKill without cgroup enforcement (Slurm 22.05; docs/formats.md):
// the job row ends FAILED 0:9 and its batch step "CANCELLED by 0". That is the memory
// limit, so the label is censored like OUT_OF_MEMORY. Another exit code, a cancelled (not
// failed) job, or a FAILED job without a root-cancelled step stays a plain failure.
TEST(Sacct, OverMemoryKillIsCensored) {
  const std::string head =
      "JobID|User|State|ExitCode|Submit|End|ReqMem|MaxRSS\n";
  const std::string rows =
      "21|al|FAILED|0:9|1700000000|1700000100|100M|\n"
      "21.batch||CANCELLED by 0|0:9|1700000001|1700000100||226136K\n"
      "22|al|FAILED|1:0|1700000000|1700000100|100M|\n"
      "22.batch||CANCELLED by 0|1:0|1700000001|1700000100||20000K\n"
      "23|al|CANCELLED by 0|0:9|1700000000|1700000100|100M|\n"
      "23.batch||CANCELLED by 0|0:9|1700000001|1700000100||20000K\n"
      "24|al|FAILED|0:9|1700000000|1700000100|100M|\n"
      "24.batch||FAILED|0:9|1700000001|1700000100||20000K\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(head + rows, "omk", sacct_options(), t));
  finalize_trace(t, 1.0);
  ASSERT_EQ(t.jobs.size(), 4u);
  const Job* killed = find_job(t, "21");
  ASSERT_NE(killed, nullptr);
  EXPECT_EQ(killed->state, "OUT_OF_MEMORY");
  EXPECT_TRUE(killed->censored);
  EXPECT_DOUBLE_EQ(killed->label(Resource::kMem), 1.0);  // 226136K > 100M: a lower bound at the cap
  for (const char* id : {"22", "23", "24"}) {
    EXPECT_FALSE(find_job(t, id)->censored) << id;
  }
  EXPECT_EQ(find_job(t, "22")->state, "FAILED");
  EXPECT_TRUE(has_note(t, "1 job(s) FAILED 0:9 with a step CANCELLED by 0"));

  // Without an ExitCode column the state pair alone decides.
  Trace u;
  ASSERT_TRUE(parse_sacct("JobID|User|State|Submit|End|ReqMem|MaxRSS\n"
                          "31|al|FAILED|1700000000|1700000100|100M|\n"
                          "31.batch||CANCELLED by 0|1700000001|1700000100||226136K\n",
                          "omk2", sacct_options(), u));
  finalize_trace(u, 1.0);
  ASSERT_EQ(u.jobs.size(), 1u);
  EXPECT_TRUE(u.jobs[0].censored);
}

// sacct prints Submit/Start/End as the wall clock of the host it ran on, without an offset,
// unless run with TZ=UTC. A file written in Europe/Berlin across the 2023-03-26 change to summer
// time (02:00 CET -> 03:00 CEST): this job ran one hour, from 00:30 to 01:30 UTC. Read as UTC it
// ran two and started an hour late; read in the zone it was written in, as it ran. A time with
// an offset is read as it says, whatever the zone; one the clocks skipped is a malformed row.
TEST(Sacct, LocalTimesAreReadInTheZoneTheFileWasWrittenIn) {
  if (!TimeZone::load("Europe/Berlin")) GTEST_SKIP() << "no Europe/Berlin in the system's tz database";
  const std::string text =
      "JobID|User|State|Submit|Start|End|ReqMem|MaxRSS\n"
      "41|al|COMPLETED|2023-03-26T01:20:00|2023-03-26T01:30:00|2023-03-26T03:30:00|100M|\n"
      "41.batch||COMPLETED|2023-03-26T01:30:00|2023-03-26T01:30:00|2023-03-26T03:30:00||20M\n"
      "42|al|COMPLETED|2023-10-28T12:00:00+02:00|2023-10-28T12:00:00Z|1698494400|100M|\n";
  const int64_t k0030z = 1679790600000;  // 2023-03-26T00:30:00Z
  ReadOptions o = sacct_options();
  o.sacct_timezone = "Europe/Berlin";
  Trace berlin;
  ASSERT_TRUE(parse_sacct(text, "berlin", o, berlin));
  ASSERT_EQ(berlin.jobs.size(), 2u) << (berlin.stats.reasons.empty() ? "" : berlin.stats.reasons[0]);
  const Job* j = find_job(berlin, "41");
  EXPECT_EQ(j->submit_ms, k0030z - 600000);
  EXPECT_EQ(j->start_ms, k0030z);
  EXPECT_EQ(j->end_ms, k0030z + 3600000);
  const Job* k = find_job(berlin, "42");  // offsets and epochs: as they say
  EXPECT_EQ(k->submit_ms, 1698487200000);
  EXPECT_EQ(k->start_ms, 1698494400000);
  EXPECT_EQ(k->end_ms, 1698494400000);

  Trace utc;  // the default: UTC, as before
  ASSERT_TRUE(parse_sacct(text, "utc", sacct_options(), utc));
  EXPECT_EQ(find_job(utc, "41")->start_ms, k0030z + 3600000);
  EXPECT_EQ(find_job(utc, "41")->end_ms, k0030z + 3 * 3600000);
  EXPECT_EQ(find_job(utc, "42")->submit_ms, 1698487200000);

  Trace skipped;  // 02:30 never showed on Berlin's clocks that night
  ASSERT_TRUE(parse_sacct("JobID|User|State|Submit|End|ReqMem|MaxRSS\n"
                          "43|al|COMPLETED|2023-03-26T02:30:00|2023-03-26T04:00:00|100M|\n",
                          "gap", o, skipped));
  EXPECT_TRUE(skipped.jobs.empty());
  ASSERT_EQ(skipped.stats.skipped, 1u);
  EXPECT_NE(skipped.stats.reasons[0].find("Submit"), std::string::npos) << skipped.stats.reasons[0];
  EXPECT_NE(skipped.stats.reasons[0].find("skipped"), std::string::npos) << skipped.stats.reasons[0];

  ReadOptions unknown = sacct_options();  // a name that is no zone fails the read, not each row
  unknown.sacct_timezone = "Europe/Atlantis";
  Trace none;
  const Status s = parse_sacct(text, "unknown", unknown, none);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("Europe/Atlantis"), std::string::npos) << s.message();
  // Named as the user typed it, as --nextflow-timezone is.
  EXPECT_TRUE(s.message().starts_with("--sacct-timezone: ")) << s.message();
}

// Berlin's clocks showed 02:00-03:00 twice on 2023-10-29 (03:00 CEST -> 02:00 CET: 00:00-01:00Z,
// then 01:00-02:00Z). An End in that hour is the later instant, Submit and Start the earlier: a
// job is never taken to have ended before it did, so it cannot be history for a job submitted
// before its real end. Job 61 ran from 02:50 CEST (00:50Z) to 02:20 CET (01:20Z); read with the
// earlier instant for both, it "ended before it started" and was skipped.
TEST(Sacct, ATimeTheClocksShowedTwiceEndsLateAndStartsEarly) {
  if (!TimeZone::load("Europe/Berlin")) GTEST_SKIP() << "no Europe/Berlin in the system's tz database";
  ReadOptions o = sacct_options();
  o.sacct_timezone = "Europe/Berlin";
  Trace t;
  ASSERT_TRUE(parse_sacct("JobID|User|State|Submit|Start|End|ReqMem|MaxRSS\n"
                          "61|al|COMPLETED|2023-10-29T02:45:00|2023-10-29T02:50:00|2023-10-29T02:20:00|100M|20M\n"
                          "62|al|COMPLETED|2023-10-29T01:00:00Z|2023-10-29T01:00:00Z|2023-10-29T01:30:00Z|100M|20M\n",
                          "autumn", o, t));
  ASSERT_EQ(t.jobs.size(), 2u) << (t.stats.reasons.empty() ? "" : t.stats.reasons[0]);
  const int64_t k0000z = 1698537600000;  // 2023-10-29T00:00:00Z
  const Job* j = find_job(t, "61");
  EXPECT_EQ(j->submit_ms, k0000z + 45 * 60000);
  EXPECT_EQ(j->start_ms, k0000z + 50 * 60000);
  EXPECT_EQ(j->end_ms, k0000z + 80 * 60000);
  // 62 was submitted at 01:00Z, before 61's end: 61 must not be history for it.
  EXPECT_GT(j->end_ms, find_job(t, "62")->submit_ms);
}

TEST(Sacct, StrictModeDoesNotTreatRunningJobsAsErrors) {
  ReadOptions o = sacct_options();
  o.strict = true;
  auto trace = read_trace(golden("sacct_2205.txt"), o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->jobs.size(), 9u);
}

TEST(Sacct, GoldenPre2108) {
  auto trace = read_trace(golden("sacct_2011.txt"), sacct_options());
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  expect_jobs_match(*trace, golden("sacct_2011.txt.expected.jsonl"));
  EXPECT_EQ(trace->stats.lines, 16u);
  const auto& r = trace->stats.reasons;
  ASSERT_EQ(trace->stats.skipped, 3u);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_NE(r[0].find("sacct_2011.txt:11: MaxRSS: \"12Q\""), std::string::npos) << r[0];
  EXPECT_NE(r[1].find("sacct_2011.txt:13: Submit: \"yesterday\""), std::string::npos) << r[1];
  EXPECT_NE(r[2].find("sacct_2011.txt:15: JobID: step of job 105"), std::string::npos) << r[2];
  EXPECT_TRUE(has_note(*trace, "1 row(s) had '|' inside a free-text field"));
  EXPECT_TRUE(has_note(*trace, "ReqMem 0"));
  const Job* oom = find_job(*trace, "102");
  ASSERT_NE(oom, nullptr);
  EXPECT_TRUE(oom->censored);
}

TEST(Sacct, StrictModeStopsAtTheFirstBadRow) {
  ReadOptions o = sacct_options();
  o.strict = true;
  auto trace = read_trace(golden("sacct_2011.txt"), o);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("sacct_2011.txt:11: MaxRSS"), std::string::npos)
      << trace.status().message();
}

TEST(Sacct, NoHeaderNeedsColumns) {
  auto bare = read_trace(golden("sacct_noheader.txt"), sacct_options());
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("--columns"), std::string::npos) << bare.status().message();

  ReadOptions o = sacct_options();
  o.columns = {"JobID", "JobName", "MaxRSS", "Elapsed", "ReqMem", "ReqCPUS", "Timelimit",
               "State", "User"};
  auto trace = read_trace(golden("sacct_noheader.txt"), o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  expect_jobs_match(*trace, golden("sacct_noheader.txt.expected.jsonl"));
  EXPECT_FALSE(trace->has_submit_times);
  EXPECT_TRUE(has_note(*trace, "evaluate"));
  EXPECT_TRUE(has_note(*trace, "taken as one node"));
}

// The --columns hint is the CLI's: a caller that chose the columns itself (slurm-sync) turns it
// off, and the refusal still says where and what is missing.
TEST(Sacct, TheColumnsHintIsTheCallersToGive) {
  for (bool hint : {true, false}) {
    SacctOptions so;
    so.columns_hint = hint;
    Trace headerless, unnamed;
    const Status first = parse_sacct("hello world\n", "listing", sacct_options(), so, headerless);
    ASSERT_FALSE(first.is_ok());
    EXPECT_EQ(first.message().rfind(
                  "listing:1: header: the first line is not a sacct header (no JobID column)", 0),
              0u)
        << first.message();
    ReadOptions columns = sacct_options();
    columns.columns = {"User", "State", "MaxRSS"};
    const Status named = parse_sacct("alice|COMPLETED|1K\n", "listing", columns, so, unnamed);
    ASSERT_FALSE(named.is_ok());
    EXPECT_EQ(named.message().rfind("listing: --columns: header: no JobID or JobIDRaw column", 0),
              0u)
        << named.message();
    for (const Status* s : {&first, &named}) {
      const bool hinted =
          s->message().find("give the --format column names (--columns)") != std::string::npos;
      EXPECT_EQ(hinted, hint) << s->message();
    }
  }
}

// --columns is for output without a header: given with a file that names other columns, it is
// refused (the user expects a layout the file does not have); naming the same ones is harmless.
TEST(Sacct, ColumnsThatDisagreeWithTheFilesHeaderAreRefused) {
  ReadOptions o = sacct_options();
  o.columns = {"JobID", "JobName", "MaxRSS", "Elapsed", "ReqMem", "ReqCPUS", "Timelimit",
               "State", "User"};
  auto other = read_trace(golden("sacct_2205.txt"), o);
  ASSERT_FALSE(other.ok());
  const std::string& why = other.status().message();
  EXPECT_NE(why.find("sacct_2205.txt:1: header"), std::string::npos) << why;
  EXPECT_NE(why.find("JobID|JobIDRaw|JobName"), std::string::npos) << why;
  EXPECT_NE(why.find("drop --columns"), std::string::npos) << why;

  // The header's own names (any case, with sacct's %width) are accepted, as without --columns.
  auto text = read_file(golden("sacct_2205.txt"));
  ASSERT_TRUE(text.ok());
  const std::string header = text->substr(0, text->find('\n'));
  o.columns.clear();
  for (std::string_view c : split(header, '|')) o.columns.emplace_back(lower(c) + "%20");
  auto same = read_trace(golden("sacct_2205.txt"), o);
  ASSERT_TRUE(same.ok()) << same.status().message();
  expect_jobs_match(*same, golden("sacct_2205.txt.expected.jsonl"));
}

// ---------------------------------------------------------------- field helpers

TEST(SacctFields, ReqMemBeforeAndAfter2108) {
  using sacct::ReqMem;
  auto n = sacct::parse_req_mem("4000Mn");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->per, ReqMem::Per::kNode);
  EXPECT_EQ(n->bytes, 4000 * kM);
  auto c = sacct::parse_req_mem("2Gc");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->per, ReqMem::Per::kCpu);
  EXPECT_EQ(c->bytes, 2 * kG);
  auto total = sacct::parse_req_mem("2.50G");
  ASSERT_TRUE(total);
  EXPECT_EQ(total->per, ReqMem::Per::kJob);
  EXPECT_EQ(total->bytes, 2560 * kM);
  EXPECT_EQ(sacct::parse_req_mem("500")->bytes, 500 * kM);  // bare numbers are MB
  EXPECT_FALSE(sacct::parse_req_mem(""));
  EXPECT_FALSE(sacct::parse_req_mem("lots"));
  EXPECT_FALSE(sacct::parse_req_mem("n"));
  EXPECT_FALSE(sacct::parse_req_mem("4XYn"));

  EXPECT_EQ(sacct::req_mem_total(*n, 3, std::nullopt), 3 * 4000 * kM);
  EXPECT_EQ(sacct::req_mem_total(*n, std::nullopt, std::nullopt), 4000 * kM);  // one node
  EXPECT_EQ(sacct::req_mem_total(*c, std::nullopt, 4.0), 8 * kG);
  EXPECT_FALSE(sacct::req_mem_total(*c, 1, std::nullopt));  // per CPU, no CPU count
  EXPECT_EQ(sacct::req_mem_total(*total, 4, 64.0), 2560 * kM);
}

TEST(SacctFields, TresValuesAndGpus) {
  const std::string usage = "cpu=00:00:00,energy=0,fs/disk=1694124,mem=221128K,pages=4,vmem=225732K";
  EXPECT_EQ(sacct::tres_value(usage, "mem"), "221128K");
  EXPECT_EQ(sacct::tres_value(usage, "vmem"), "225732K");
  EXPECT_FALSE(sacct::tres_value(usage, "gres/gpumem"));
  EXPECT_EQ(sacct::tres_gpus("billing=1,cpu=1,gres/gpu=2,mem=1G,node=1"), 2);
  EXPECT_EQ(sacct::tres_gpus("cpu=4,gres/gpu:a100=1,gres/gpu:v100=2"), 3);
  EXPECT_EQ(sacct::tres_gpus("cpu=8,gres/gpu:a100=2,gres/gpu=2"), 2);  // no double count
  EXPECT_FALSE(sacct::tres_gpus("cpu=1,gres/gpumem=36266M,gres/gpuutil=100"));
  EXPECT_FALSE(sacct::tres_gpus("cpu=1,gres/gpu=two"));
  EXPECT_EQ(sacct::tres_gpu_type("cpu=1,gres/gpu:A100=1"), "a100");
  EXPECT_FALSE(sacct::tres_gpu_type("gres/gpu=1"));
}

TEST(SacctFields, GpuMemoryFromType) {
  EXPECT_EQ(sacct::gpu_mem_from_type("a100_80g"), 80 * kG);
  EXPECT_EQ(sacct::gpu_mem_from_type("a100-40gb"), 40 * kG);
  EXPECT_EQ(sacct::gpu_mem_from_type("h100.80GB"), 80 * kG);
  EXPECT_EQ(sacct::gpu_mem_from_type("a100_1g.10gb"), 10 * kG);  // MIG slice, not 1 GB
  EXPECT_EQ(sacct::gpu_mem_from_type("tesla_t4"), 16 * kG);
  EXPECT_EQ(sacct::gpu_mem_from_type("l40s"), 48 * kG);
  EXPECT_FALSE(sacct::gpu_mem_from_type("a100"));  // 40 or 80
  EXPECT_FALSE(sacct::gpu_mem_from_type("v100"));
  EXPECT_FALSE(sacct::gpu_mem_from_type(""));
}

TEST(SacctFields, GpuCapacityOptionsWin) {
  SacctOptions so;
  so.gpu_mem_by_type["a100"] = 40 * kG;
  so.default_gpu_mem_bytes = 16 * kG;
  const std::string text =
      "JobID|State|AllocTRES|ReqMem|TRESUsageInTot\n"
      "1|COMPLETED|cpu=1,gres/gpu:a100=1,mem=1G|1G|\n"
      "1.0|COMPLETED|||gres/gpumem=20G,mem=100M\n"
      "2|COMPLETED|cpu=1,gres/gpu=1,mem=1G|1G|\n"
      "2.0|COMPLETED|||gres/gpumem=4G,mem=100M\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "x", sacct_options(), so, t));
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(t.jobs[0].gpu_mem_bytes, 40 * kG);
  EXPECT_EQ(t.jobs[0].peak_vram_bytes, 20 * kG);
  EXPECT_EQ(t.jobs[1].gpu_mem_bytes, 16 * kG);

  Trace plain;  // without the options: no capacity, and a note says why there is no label
  ASSERT_TRUE(parse_sacct(text, "x", sacct_options(), plain));
  EXPECT_FALSE(plain.jobs[0].gpu_mem_bytes);
  EXPECT_TRUE(has_note(plain, "no known per-GPU memory"));
}

TEST(SacctFields, JobIdsAndScriptKeys) {
  auto p = sacct::split_job_id("123_4.batch");
  EXPECT_EQ(p.job, "123_4");
  EXPECT_EQ(p.step, "batch");
  EXPECT_EQ(sacct::split_job_id("123+0").job, "123+0");
  EXPECT_EQ(sacct::split_job_id("123+0").step, "");
  EXPECT_EQ(sacct::split_job_id("5.0").step, "0");
  EXPECT_EQ(sacct::script_keys("123_4", "130"), (std::vector<std::string>{"123_4", "130", "123"}));
  EXPECT_EQ(sacct::script_keys("77", "77"), (std::vector<std::string>{"77"}));
  EXPECT_EQ(sacct::script_keys("9+1", ""), (std::vector<std::string>{"9+1", "9"}));
}

// ---------------------------------------------------------------- rows and columns

TEST(SacctRows, ExtraPipeOnlyWhereAFreeTextColumnCanTakeIt) {
  // Two free-text columns, neither last: a row with an extra '|' cannot be attributed.
  const std::string text =
      "JobID|JobName|Comment|ReqMem|MaxRSS\n"
      "1|a|b|c|1G|5M\n"
      "2|ok|fine|1G|\n"
      "2.batch||||100M\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "two_free", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].job_id, "2");
  ASSERT_EQ(t.stats.skipped, 1u);
  EXPECT_NE(t.stats.reasons[0].find("two_free:2: row: expected 5 fields, found 6"), std::string::npos)
      << t.stats.reasons[0];

  // A single free-text column in the middle does take it.
  Trace one;
  ASSERT_TRUE(parse_sacct("JobID|JobName|ReqMem\n7|x|y|2G\n", "one_free", sacct_options(), one));
  ASSERT_EQ(one.jobs.size(), 1u);
  EXPECT_EQ(one.jobs[0].job_name, "x|y");
  EXPECT_EQ(one.jobs[0].req_mem_bytes, 2 * kG);
}

// slurm-sync asks sacct for the unit separator as delimiter: '|' in a job's name or comment is
// then text, in any column, and a header of either kind sets its rows' delimiter.
TEST(SacctRows, AUnitSeparatorHeaderDelimitsItsRows) {
  const auto us = [](std::string line) {
    for (char& c : line) {
      if (c == '^') c = sacct::kUnitSeparator;
    }
    return line;
  };
  const std::string text = us("JobID^JobName^Comment^ReqMem^MaxRSS^AdminComment\n"
                              "1^sweep|lr=0.1^a|b^1G^^x|y\n"
                              "1.batch^batch^^^5M^\n") +
                           "JobID|JobName|ReqMem|MaxRSS\n"
                           "2|plain|2G|\n"
                           "2.batch|batch||7M\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "us", sacct_options(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << (t.stats.reasons.empty() ? "" : t.stats.reasons[0]);
  ASSERT_EQ(t.jobs.size(), 2u);
  const Job* one = find_job(t, "1");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->job_name, "sweep|lr=0.1");
  EXPECT_EQ(one->req_mem_bytes, kG);
  EXPECT_EQ(one->peak_mem_bytes, 5 * kM);
  const Job* two = find_job(t, "2");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->job_name, "plain");
  EXPECT_EQ(two->peak_mem_bytes, 7 * kM);
  EXPECT_FALSE(has_note(t, "inside a free-text field"));  // nothing needed repair

  // The same row under a '|' header: two free-text columns hold '|', and it cannot be read.
  Trace pipes;
  ASSERT_TRUE(parse_sacct("JobID|JobName|Comment|ReqMem|MaxRSS|AdminComment\n1|sweep|lr=0.1|a|b|1G||x|y\n",
                          "pipes", sacct_options(), pipes));
  EXPECT_EQ(pipes.jobs.size(), 0u);
  EXPECT_EQ(pipes.stats.skipped, 1u);
}

// peakcast's Slurm hook writes the daemon's answer into the job's comment (Comment, or
// AdminComment where the site chose it): its id becomes Job::answer_id. Other comments, and ids
// that are not text of the expected form, give none.
TEST(SacctRows, TheHooksAnswerInTheCommentGivesItsId) {
  EXPECT_EQ(sacct::answer_id_in_comment(R"( {"answer_id":"0a1b2c3d4e5f6071","job_id":"pending"} )"),
            "0a1b2c3d4e5f6071");
  for (const char* other : {"", "my note", R"({"answer_id":5})", R"({"answer_id":"bad id!"})",
                            R"({"answer_id":"abc")", R"(["answer_id"])", R"({"job_id":"1"})",
                            R"({"answer_id":""})"}) {
    EXPECT_EQ(sacct::answer_id_in_comment(other), "") << other;
  }
  EXPECT_EQ(sacct::answer_id_in_comment(R"({"answer_id":")" + std::string(65, 'a') + "\"}"), "");
  const auto us = [](std::string line) {
    for (char& c : line) {
      if (c == '^') c = sacct::kUnitSeparator;
    }
    return line;
  };
  const std::string text =
      us("JobID^JobName^Comment^ReqMem^MaxRSS^AdminComment\n"
         R"(1^a^{"answer_id":"00000000000000a1","predictions":{"mem":{"rationale":"x|y"}}}^1G^5M^)" "\n"
         R"(2^b^mine^1G^5M^{"answer_id":"00000000000000b2"})" "\n"
         R"(3^c^{"answer_id":"bad id!"}^1G^5M^JS1:None)" "\n");
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "ids", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 3u) << (t.stats.reasons.empty() ? "" : t.stats.reasons[0]);
  EXPECT_EQ(find_job(t, "1")->answer_id, "00000000000000a1");
  EXPECT_EQ(find_job(t, "2")->answer_id, "00000000000000b2");
  EXPECT_EQ(find_job(t, "3")->answer_id, "");
}

// sacct prints a job's name and comment as they are: one holding a newline splits its row over
// lines (seen on slurmctld 22.05: `sbatch -J $'nl\nname' --comment $'c1\nc2'`). Under the unit
// separator the row is rejoined; a row cut short is not joined with the next one.
TEST(SacctRows, ARowANewlineSplitIsRejoinedUnderTheUnitSeparator) {
  const auto us = [](std::string line) {
    for (char& c : line) {
      if (c == '^') c = sacct::kUnitSeparator;
    }
    return line;
  };
  const std::string text = us(
      "JobID^JobName^State^Comment^ReqMem^MaxRSS^AdminComment\n"
      "1^nl\nname^COMPLETED^c1\nc2^1G^^\n"  // newlines in two middle columns
      "1.batch^batch^COMPLETED^^^5M^\n"
      "2^x^COMPLETED^^2G^6M^a\nb\n"  // and in the last, free-text column
      "2.batch^batch^COMPLETED^^^6M^\n"
      "3^cut\n"  // line 9, cut short: not joined with the row after it
      "4^z^COMPLETED^^4G^7M^\n");
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "nl", sacct_options(), t));
  ASSERT_NE(find_job(t, "1"), nullptr);
  EXPECT_EQ(find_job(t, "1")->job_name, "nl\nname");
  EXPECT_EQ(find_job(t, "1")->peak_mem_bytes, 5 * kM);  // its step row still joins it
  ASSERT_NE(find_job(t, "2"), nullptr);
  EXPECT_EQ(find_job(t, "2")->req_mem_bytes, 2 * kG);
  EXPECT_EQ(find_job(t, "3"), nullptr);
  ASSERT_NE(find_job(t, "4"), nullptr);
  EXPECT_EQ(find_job(t, "4")->req_mem_bytes, 4 * kG);
  EXPECT_EQ(t.stats.skipped, 1u);  // row 3
  ASSERT_FALSE(t.stats.reasons.empty());
  EXPECT_NE(t.stats.reasons[0].find("nl:9:"), std::string::npos) << t.stats.reasons[0];

  // Under '|' (sacct's default) the same row is not rejoined: its pieces are skipped.
  Trace pipes;
  ASSERT_TRUE(parse_sacct("JobID|JobName|State|ReqMem|MaxRSS\n1|nl\nname|COMPLETED|1G|5M\n", "pipes",
                          sacct_options(), pipes));
  EXPECT_EQ(pipes.jobs.size(), 0u);
  EXPECT_EQ(pipes.stats.skipped, 2u);
}

TEST(SacctRows, ConcatenatedOutputsSwitchHeaders) {
  const std::string text =
      "JobID|ReqMem|MaxRSS\n"
      "1|1G|\n"
      "1.batch||10M\n"
      "MaxRSS|JobID|ReqMem|Submit|End\n"
      "20M|2.batch|||\n"
      "|2|2G|2026-01-01T00:00:00|2026-01-01T01:00:00\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "cat", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(t.jobs[0].peak_mem_bytes, 10 * kM);
  EXPECT_EQ(t.jobs[1].peak_mem_bytes, 20 * kM);  // a step before its job row still joins
  EXPECT_FALSE(t.has_submit_times);              // the first output had no Submit
  EXPECT_EQ(t.stats.skipped, 0u);
}

TEST(SacctRows, RequeuedJobKeepsItsLastRecord) {
  const std::string text =
      "JobID|State|ReqMem|MaxRSS\n"
      "3|REQUEUED|1G|\n"
      "3.batch|CANCELLED||900M\n"
      "3|COMPLETED|1G|\n"
      "3.batch|COMPLETED||300M\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "requeue", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].state, "COMPLETED");
  EXPECT_EQ(t.jobs[0].peak_mem_bytes, 300 * kM);
  EXPECT_TRUE(has_note(t, "requeued"));
}

TEST(SacctRows, PeakPrefersTresTotThenMaxRssThenTresMax) {
  const std::string text =
      "JobID|ReqMem|MaxRSS|TRESUsageInMax|TRESUsageInTot\n"
      "1|4G|||\n"
      "1.0||100M|mem=100M|mem=300M\n"  // Tot wins: 300M
      "2|4G|||\n"
      "2.0||100M|mem=150M|cpu=1\n"     // no Tot mem: MaxRSS 100M
      "3|4G|||\n"
      "3.0|||mem=150M|\n";             // only Max: 150M
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "peaks", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 3u);
  EXPECT_EQ(t.jobs[0].peak_mem_bytes, 300 * kM);
  EXPECT_EQ(t.jobs[1].peak_mem_bytes, 100 * kM);
  EXPECT_EQ(t.jobs[2].peak_mem_bytes, 150 * kM);
}

TEST(SacctRows, EpochTimesNoConvertBytesAndElapsedEnd) {
  const std::string text =
      "JobID|Submit|Start|Elapsed|ReqMem|MaxRSS\n"
      "1|1700000000|1700000010|01:00:00|1024|\n"
      "1.batch||||1048576|524288000\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "epoch", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].submit_ms, 1700000000000LL);
  EXPECT_EQ(t.jobs[0].end_ms, (1700000010 + 3600) * 1000LL);  // no End column: Start + Elapsed
  EXPECT_EQ(t.jobs[0].req_mem_bytes, kG);
  EXPECT_EQ(t.jobs[0].peak_mem_bytes, 524288000u);
}

TEST(SacctRows, FinishedJobsNeedAnEndNotBeforeSubmit) {
  const std::string text =
      "JobID|Submit|End|State\n"
      "1|2026-01-01T10:00:00|2026-01-01T09:00:00|COMPLETED\n"
      "2|2026-01-01T10:00:00||COMPLETED\n"
      "3|2026-01-01T10:00:00|Unknown|RUNNING\n"
      "4|2026-01-01T10:00:00|2026-01-01T10:00:00|FAILED\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "ends", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].job_id, "4");
  ASSERT_EQ(t.stats.skipped, 2u);
  EXPECT_NE(t.stats.reasons[0].find("ends:2: End: before Submit"), std::string::npos) << t.stats.reasons[0];
  EXPECT_NE(t.stats.reasons[1].find("ends:3: End: no end time"), std::string::npos) << t.stats.reasons[1];
  EXPECT_EQ(t.stats.ignored, 1u);  // the running job: not an error
}

// A malformed step row leaves its whole job out, named by the step's line, whether the step
// comes after its job row or before it. Before, the job was kept with a label from its other
// steps (here the .extern's 900K of a 4000M request, uncensored) and the bad step's
// "CANCELLED by 0", which makes the label a censored lower bound, was lost.
TEST(SacctRows, AMalformedStepLeavesItsJobOut) {
  const std::string t = "2023-01-01T00:00:00|2023-01-01T00:00:10|2023-01-01T01:00:00";
  const std::string head = "JobID|JobName|User|State|Submit|Start|End|ReqMem|MaxRSS|ExitCode\n";
  const std::string job = "110|t|alice|FAILED|" + t + "|4000M||0:9\n";
  const std::string bad = "110.batch|batch||CANCELLED by 0|" + t + "||4100MB+|0:9\n";
  const std::string ext = "110.extern|extern||COMPLETED|" + t + "||900K|0:0\n";
  const std::string other = "111|u|bob|COMPLETED|" + t + "|1G||0:0\n111.batch|batch||COMPLETED|" +
                            t + "||512M|0:0\n";
  for (const std::string& rows : {job + bad + ext + other, bad + ext + job + other,
                                  ext + bad + job + other, job + ext + bad + other}) {
    Trace tr;
    ASSERT_TRUE(parse_sacct(head + rows, "steps", sacct_options(), tr)) << rows;
    ASSERT_EQ(tr.jobs.size(), 1u) << rows;
    EXPECT_EQ(tr.jobs[0].job_id, "111");
    ASSERT_EQ(tr.stats.skipped, 1u) << rows;
    const size_t line = 2 + static_cast<size_t>(std::count(rows.begin(), rows.begin() + rows.find(bad), '\n'));
    EXPECT_EQ(tr.stats.reasons[0], "steps:" + std::to_string(line) +
                                       ": MaxRSS: \"4100MB+\" is not a size; job 110 left out")
        << rows;
  }
  // A requeued job's earlier record keeps nothing of it: the later record, with good steps, is read.
  Trace requeued;
  ASSERT_TRUE(parse_sacct(head + job + bad + "110|t|alice|COMPLETED|" + t + "|4000M||0:0\n" + ext,
                          "requeued", sacct_options(), requeued));
  ASSERT_EQ(requeued.jobs.size(), 1u);
  EXPECT_EQ(requeued.jobs[0].state, "COMPLETED");
  EXPECT_EQ(requeued.jobs[0].peak_mem_bytes, 900 * kK);
  // --strict stops at the step.
  ReadOptions strict = sacct_options();
  strict.strict = true;
  Trace stopped;
  const Status s = parse_sacct(head + job + bad + ext, "steps", strict, stopped);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind("steps:3: MaxRSS:", 0), 0u) << s.message();
}

// Elapsed and Timelimit garbage: an exponent, or days whose seconds overflow int64 (wrapping to
// 61,184 s, taken as 17 hours) is refused, and the row skipped naming the field.
TEST(SacctRows, DurationsOutOfRangeSkipTheRowNamingTheField) {
  const std::string text =
      "JobID|Submit|Start|Elapsed|Timelimit|ReqMem\n"
      "1|1700000000|1700000010|1e300|01:00:00|1G\n"
      "2|1700000000|1700000010|00:10:00|213503982334602-00|1G\n"
      "3|1700000000|1700000010|1e5|01:00:00|1G\n"
      "4|1700000000|1700000010|00:10:00|36500-00:00:00|1G\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "durations", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].job_id, "4");
  EXPECT_EQ(t.jobs[0].req_time_s, 36500LL * 86400);
  ASSERT_EQ(t.stats.reasons.size(), 3u);
  EXPECT_EQ(t.stats.reasons[0], "durations:2: Elapsed: \"1e300\" is not a duration");
  EXPECT_EQ(t.stats.reasons[1], "durations:3: Timelimit: \"213503982334602-00\" is not a duration");
  EXPECT_EQ(t.stats.reasons[2], "durations:4: Elapsed: \"1e5\" is not a duration");
}

// A time with text after it is not a time; a zone after it is applied (sacct prints none: its
// local time is read as UTC, as before).
TEST(SacctRows, TimesWithTrailingTextAreRefusedAndZonesApplied) {
  const std::string text =
      "JobID|Submit|End|ReqMem\n"
      "1|2023-01-23T10:00:00garbage|2023-01-23T11:00:00|1G\n"
      "2|2023-01-23T10:00:00|2023-01-23T11:00:00|1G\n"
      "3|2023-01-23T10:00:00Z|2023-01-23T13:00:00+02:00|1G\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "times", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 2u);
  ASSERT_EQ(t.stats.reasons.size(), 1u);
  EXPECT_EQ(t.stats.reasons[0], "times:2: Submit: \"2023-01-23T10:00:00garbage\" is not a time");
  EXPECT_EQ(t.jobs[0].submit_ms, 1674468000000LL);
  EXPECT_EQ(t.jobs[1].submit_ms, 1674468000000LL);
  EXPECT_EQ(t.jobs[1].end_ms, 1674468000000LL + 3600 * 1000);
}

// An empty State is a damaged row, not a job that COMPLETED with a valid label.
TEST(SacctRows, AnEmptyStateIsMalformed) {
  const std::string text =
      "JobID|State|Submit|End|ReqMem|MaxRSS\n"
      "1||1700000000|1700000100|1G|\n"
      "1.batch|COMPLETED|1700000000|1700000100||512M\n"
      "2|COMPLETED|1700000000|1700000100|1G|\n"
      "2.batch|COMPLETED|1700000000|1700000100||512M\n";
  Trace t;
  ASSERT_TRUE(parse_sacct(text, "state", sacct_options(), t));
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].job_id, "2");
  ASSERT_EQ(t.stats.reasons.size(), 1u);
  EXPECT_EQ(t.stats.reasons[0], "state:2: State: empty");
}

TEST(SacctRows, EmptyAndHeaderOnlyInputs) {
  Trace empty;
  EXPECT_TRUE(parse_sacct("", "e", sacct_options(), empty));
  EXPECT_TRUE(empty.jobs.empty());
  Trace header;
  EXPECT_TRUE(parse_sacct("JobID|JobName|\n", "h", sacct_options(), header));
  EXPECT_TRUE(header.jobs.empty());
  EXPECT_EQ(header.stats.lines, 0u);
  Trace bom;
  ASSERT_TRUE(parse_sacct("\xEF\xBB\xBFJobID|ReqMem\r\n1|1G\r\n", "bom", sacct_options(), bom));
  ASSERT_EQ(bom.jobs.size(), 1u);
  EXPECT_EQ(bom.jobs[0].req_mem_bytes, kG);
}

// Columns in any order: permuting the 22.05 golden's columns gives the same jobs.
RC_GTEST_PROP(SacctProps, ColumnOrderDoesNotMatter, ()) {
  auto text = read_file(golden("sacct_2205.txt"));
  RC_ASSERT(text.ok());
  std::vector<std::vector<std::string_view>> rows;
  for (std::string_view line : split_lines(*text)) {
    if (!trim(line).empty()) rows.push_back(split(line, '|'));
  }
  const size_t ncols = rows[0].size();
  std::vector<size_t> order(ncols);
  for (size_t i = 0; i < ncols; ++i) order[i] = i;
  const auto perm = *rc::gen::exec([&] {
    std::vector<size_t> p = order;
    for (size_t i = p.size(); i > 1; --i) {
      std::swap(p[i - 1], p[*rc::gen::inRange<size_t>(0, i)]);
    }
    return p;
  });
  std::string shuffled;
  for (const auto& row : rows) {
    for (size_t k = 0; k < ncols; ++k) {
      if (k) shuffled += '|';
      shuffled += row[perm[k]];
    }
    shuffled += '\n';
  }
  Trace a, b;
  RC_ASSERT(parse_sacct(*text, "a", sacct_options(), a).is_ok());
  RC_ASSERT(parse_sacct(shuffled, "b", sacct_options(), b).is_ok());
  RC_ASSERT(a.jobs.size() == b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    RC_ASSERT(job_to_json(a.jobs[i]) == job_to_json(b.jobs[i]));
  }
}

// Whatever rows are made of, the reader never crashes and its counts stay consistent.
RC_GTEST_PROP(SacctProps, ArbitraryRowsNeverBreakTheReader, ()) {
  const std::vector<std::string> tokens = {
      "1", "1.batch", "2_3", "2_3.extern", "4+0", "x", "", "1G", "4000Mn", "2Gc", "0n", "12Q",
      "Unknown", "2026-11-30T07:57:35", "1700000000", "OUT_OF_MEMORY", "CANCELLED by 0",
      "RUNNING", "gres/gpu=2,mem=1G", "gres/gpu:a100_80g=1", "gres/gpumem=1G,mem=2G", "|", "-1",
      "99999999999999999999G", "UNLIMITED", "1-00:00:00"};
  const auto nrows = *rc::gen::inRange(0, 12);
  std::string text = "JobID|State|Submit|End|ReqMem|AllocTRES|MaxRSS|TRESUsageInTot|Timelimit|JobName\n";
  for (int r = 0; r < nrows; ++r) {
    const auto nfields = *rc::gen::inRange(1, 13);
    for (int f = 0; f < nfields; ++f) {
      if (f) text += '|';
      text += tokens[*rc::gen::inRange<size_t>(0, tokens.size())];
    }
    text += '\n';
  }
  Trace t;
  Status s = parse_sacct(text, "rc", sacct_options(), t);
  RC_ASSERT(s.is_ok());
  RC_ASSERT(t.stats.lines <= static_cast<size_t>(nrows));  // blank rows are not data
  RC_ASSERT(t.jobs.size() <= t.stats.lines);
  RC_ASSERT(t.stats.skipped <= t.stats.lines);
}

}  // namespace
}  // namespace peakcast::ingest
