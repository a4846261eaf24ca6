#include <algorithm>
#include <string>
#include <tuple>

#include "golden_util.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

using test_util::expect_jobs_match;
using test_util::golden;
using test_util::shared_data;

bool has_note(const Trace& t, std::string_view needle) {
  return std::any_of(t.notes.begin(), t.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

TEST(Nextflow, GoldenRawCsv) {
  auto trace = read_trace(golden("trace_demo.csv"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->format, Format::kNextflow);
  expect_jobs_match(*trace, golden("trace_demo.csv.expected.jsonl"));
  EXPECT_EQ(trace->stats.lines, 6u);
  EXPECT_EQ(trace->stats.skipped, 2u);
  EXPECT_EQ(trace->stats.ignored, 1u);  // the CACHED task
  EXPECT_TRUE(has_note(*trace, "CACHED"));
  EXPECT_TRUE(has_note(*trace, "user 'demo'"));
  ASSERT_EQ(trace->stats.reasons.size(), 2u);
  EXPECT_NE(trace->stats.reasons[0].find("trace_demo.csv:6: complete: missing"), std::string::npos)
      << trace->stats.reasons[0];
  EXPECT_NE(trace->stats.reasons[1].find("trace_demo.csv:7: cpus:"), std::string::npos)
      << trace->stats.reasons[1];
}

TEST(Nextflow, LabelsArePeakRssOverMemory) {
  auto trace = read_trace(golden("trace_demo.csv"));
  ASSERT_TRUE(trace.ok());
  ASSERT_EQ(trace->jobs.size(), 3u);
  EXPECT_DOUBLE_EQ(trace->jobs[0].label(Resource::kMem), 0.25);
  EXPECT_DOUBLE_EQ(trace->jobs[1].label(Resource::kMem), 1.0);
  EXPECT_FALSE(trace->jobs[1].clipped[idx(Resource::kMem)]);  // exactly at the request
  EXPECT_FALSE(trace->jobs[2].is_valid(Resource::kMem));
  EXPECT_EQ(trace->jobs[0].script_key, trace->jobs[1].script_key);  // same process
  EXPECT_NE(trace->jobs[0].script_key, trace->jobs[2].script_key);
}

TEST(Nextflow, GoldenHumanReadableTsvWithUserOption) {
  ReadOptions o;
  o.user = "alice";
  auto trace = read_trace(golden("trace_human.tsv"), o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->format, Format::kNextflow);
  expect_jobs_match(*trace, golden("trace_human.tsv.expected.jsonl"));
  EXPECT_FALSE(has_note(*trace, "no user column"));
  EXPECT_TRUE(trace->jobs[1].clipped[idx(Resource::kMem)]);  // 3 GB used of 2 GB
}

TEST(Nextflow, QuotedScriptColumnSpansLines) {
  auto trace = read_trace(golden("trace_script.csv"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  expect_jobs_match(*trace, golden("trace_script.csv.expected.jsonl"));
  EXPECT_TRUE(trace->has_scripts);
  ASSERT_EQ(trace->stats.reasons.size(), 1u);
  // Line numbers count the physical lines inside the quoted script.
  EXPECT_NE(trace->stats.reasons[0].find("trace_script.csv:7: submit: not a timestamp"),
            std::string::npos)
      << trace->stats.reasons[0];
  EXPECT_EQ(trace->jobs[0].script_key.size(), 64u);
}

// `--format nextflow` on another format: refused at its first line, not read as invented tasks.
TEST(Nextflow, AFileThatIsNotATraceIsRefusedAtItsHeader) {
  for (const char* text : {"JobID|JobName|MaxRSS|Elapsed|ReqMem\n35256075_1|a.sh||00:00:01|1Gn\n",
                           "; Version: 2.2\n1 0 10 100 32 -1 -1 32 200 -1 1 1 1 -1 1 -1 -1 -1\n",
                           "{\"job_id\": \"a\", \"user\": \"u\", \"submit_time\": 1}\n"}) {
    Trace t;
    const Status s = parse_nextflow(text, "t.csv", {}, t);
    ASSERT_FALSE(s.is_ok()) << text;
    EXPECT_EQ(s.message().rfind("t.csv:1: header: not a Nextflow trace", 0), 0u) << s.message();
    EXPECT_TRUE(t.jobs.empty());
  }
}

// Blank lines before the header (a trace assembled by hand, or cat'ed after an empty file): the
// delimiter is the header's, not that of the first physical line, which has none.
TEST(Nextflow, BlankLinesBeforeTheHeaderAreSkipped) {
  for (const char* lead : {"", "\n", "\n\n", "  \r\n \n"}) {
    Trace t;
    const std::string text = std::string(lead) + "task_id\tprocess\tsubmit\tcomplete\n1\tA\t1000\t2000\n";
    ASSERT_TRUE(parse_nextflow(text, "t.tsv", {}, t)) << "lead " << ::testing::PrintToString(lead);
    ASSERT_EQ(t.jobs.size(), 1u);
    EXPECT_EQ(t.jobs[0].workload, "A");
  }
}

TEST(Nextflow, RowWithWrongColumnCountIsSkipped) {
  Trace t;
  ReadOptions o;
  ASSERT_TRUE(parse_nextflow("task_id,process,submit,complete\n1,A,1000,2000\n2,B,1000\n", "t.csv", o, t));
  EXPECT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.stats.skipped, 1u);
}

// A narrower trace.fields may leave the times out. Sizey's protocol needs none of them, so the
// tasks are read (their sizes and run times) without times, and every event-time use sees
// has_submit_times == false and refuses the trace.
TEST(Nextflow, WithoutTimeColumnsTasksAreReadWithoutTimes) {
  for (const char* header : {"process,rss,rchar,realtime,memory,peak_rss",
                             "task_id,process,submit,rss,rchar,realtime,memory,peak_rss"}) {
    Trace t;
    const std::string text = std::string(header) + "\n" +
                             (std::string(header).starts_with("task_id") ? "7,ALIGN,1000," : "ALIGN,") +
                             "2000000000,5000000000,61000,8589934592,2100000000\n";
    ASSERT_TRUE(parse_nextflow(text, "t.csv", {}, t)) << header;
    ASSERT_EQ(t.jobs.size(), 1u) << header;
    EXPECT_FALSE(t.has_submit_times) << header;
    EXPECT_TRUE(has_note(t, "not placed in time")) << header;
    const Job& j = t.jobs[0];
    EXPECT_EQ(j.workload, "ALIGN");
    EXPECT_EQ(j.rss_bytes, 2000000000u);
    EXPECT_EQ(j.read_bytes, 5000000000u);
    EXPECT_EQ(j.realtime_ms, 61000);
    EXPECT_EQ(j.req_mem_bytes, 8589934592u);
    EXPECT_EQ(j.peak_mem_bytes, 2100000000u);
    EXPECT_EQ(j.submit_ms, 0);
    EXPECT_EQ(j.end_ms, 0);
  }
  // With the times the trace is placed in time, as before.
  Trace timed;
  ASSERT_TRUE(parse_nextflow("task_id,process,submit,complete\n1,A,1000,2000\n", "t.csv", {}, timed));
  EXPECT_TRUE(timed.has_submit_times);
  EXPECT_FALSE(has_note(timed, "not placed in time"));
}

TEST(Nextflow, UnterminatedQuoteIsSkippedWithAReason) {
  Trace t;
  ASSERT_TRUE(parse_nextflow("task_id,process,submit,complete\n1,A,1000,2000\n2,\"B,1000,2000\n3,C,1,2\n",
                             "t.csv", {}, t));
  EXPECT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.stats.skipped, 1u);
  ASSERT_EQ(t.stats.reasons.size(), 1u);
  EXPECT_NE(t.stats.reasons[0].find("t.csv:3: row: unterminated"), std::string::npos) << t.stats.reasons[0];
}

// Sub-second times are kept: a task that ended at .400 is history for one submitted at .900 of
// the same second (whole seconds made them simultaneous, and "ended before" false). A complete
// recorded to the second just before a millisecond submit ends in that second, after it.
TEST(Nextflow, MillisecondTimesAreKept) {
  Trace t;
  ASSERT_TRUE(parse_nextflow("task_id,process,submit,complete\n"
                             "1,A,1678701065100,1678701065400\n"
                             "2,A,1678701065900,1678701070000\n"
                             "3,B,1678701066485,1678701066000\n",
                             "t.csv", {}, t));
  ASSERT_EQ(t.jobs.size(), 3u);
  EXPECT_EQ(t.jobs[0].end_ms, 1678701065400);
  EXPECT_EQ(t.jobs[1].submit_ms, 1678701065900);
  EXPECT_LT(t.jobs[0].end_ms, t.jobs[1].submit_ms);
  // Whole seconds: the end is the second's last millisecond (below).
  EXPECT_EQ(t.jobs[1].end_ms, 1678701070999);
  EXPECT_EQ(t.jobs[2].end_ms, 1678701066999);
}

// Executors that time a task to the second (".000"; every start and complete of the nf-core
// traces in ../shared/data, whose submits are to the millisecond) say only that it ended within
// that second. A task submitted later in the same second must not count it as ended before its
// submission (it may still have been running): its end is the second's last millisecond, and
// one submitted in the next second sees it. The raw and the human form alike.
TEST(Nextflow, AnEndRecordedToTheSecondIsKnownOnlyFromTheNextSecond) {
  Trace raw;
  ASSERT_TRUE(parse_nextflow("task_id,process,submit,complete\n"
                             "1,A,1678701000100,1678701065000\n"
                             "2,A,1678701065300,1678701090000\n"
                             "3,A,1678701066000,1678701091000\n",
                             "t.csv", {}, raw));
  ASSERT_EQ(raw.jobs.size(), 3u);
  EXPECT_EQ(raw.jobs[0].end_ms, 1678701065999);
  EXPECT_FALSE(raw.jobs[0].end_ms < raw.jobs[1].submit_ms);  // same second: not yet known
  EXPECT_LT(raw.jobs[0].end_ms, raw.jobs[2].submit_ms);      // the next second: known
  Trace human;
  ASSERT_TRUE(parse_nextflow("task_id\tprocess\tsubmit\tcomplete\n"
                             "1\tA\t2023-03-13 10:00:00.100\t2023-03-13 10:01:05.000\n"
                             "2\tA\t2023-03-13 10:01:05.300\t2023-03-13 10:01:30.250\n",
                             "t.tsv", {}, human));
  ASSERT_EQ(human.jobs.size(), 2u);
  EXPECT_EQ(human.jobs[0].end_ms % 1000, 999);
  EXPECT_FALSE(human.jobs[0].end_ms < human.jobs[1].submit_ms);
  EXPECT_EQ(human.jobs[1].end_ms % 1000, 250);  // a millisecond end is kept
}

TEST(Nextflow, RepeatedTaskIdsStayUnique) {
  Trace t;
  ASSERT_TRUE(parse_nextflow("task_id,process,submit,complete\n1,A,1000,2000\n1,A,3000,4000\n",
                             "trace_x.csv", {}, t));
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_NE(t.jobs[0].job_id, t.jobs[1].job_id);
}

// Exit 137 (killed) of a FAILED task is the memory limit on a memory-limited executor: the attempt
// is censored (its label a lower bound); nf-core's retry with more memory is a task of its own.
// Another failure keeps its state and is a measurement.
TEST(Nextflow, KilledTaskIsCensoredAndItsRetryIsAnotherTask) {
  Trace t;
  ASSERT_TRUE(parse_nextflow("task_id,process,status,exit,attempt,memory,peak_rss,submit,complete\n"
                             "1,ALIGN,FAILED,137,1,2147483648,2100000000,1000,5000\n"
                             "2,ALIGN,COMPLETED,0,2,4294967296,3000000000,6000,9000\n"
                             "3,CALL,FAILED,1,1,2147483648,1000000000,1000,2000\n"
                             "4,CALL,COMPLETED,137,1,2147483648,1000000000,1000,2000\n",
                             "trace_retry.csv", {}, t));
  finalize_trace(t, 1.0);
  ASSERT_EQ(t.jobs.size(), 4u);
  const Job& killed = t.jobs[0];
  EXPECT_EQ(killed.state, "OUT_OF_MEMORY");
  EXPECT_TRUE(killed.censored);
  EXPECT_TRUE(censored_for(killed, Resource::kMem));
  EXPECT_DOUBLE_EQ(killed.label(Resource::kMem), 1.0);  // a lower bound: at the cap
  const Job& retry = t.jobs[1];
  EXPECT_NE(retry.job_id, killed.job_id);
  EXPECT_EQ(retry.workload, killed.workload);
  EXPECT_FALSE(retry.censored);
  EXPECT_NEAR(retry.label(Resource::kMem), 3000000000.0 / 4294967296.0, 1e-12);
  EXPECT_EQ(t.jobs[2].state, "FAILED");
  EXPECT_FALSE(t.jobs[2].censored);
  EXPECT_FALSE(t.jobs[3].censored);  // exit 137 on a COMPLETED row is not a kill
  EXPECT_TRUE(has_note(t, "1 FAILED task(s) with exit 137"));
  EXPECT_EQ(t.stats.censored, 1u);
}

// Sizey's protocol reads process, rss, rchar, realtime and memory and no status: with
// sizey_rows the CACHED task is kept as a completed one, times are not read (the RUNNING and
// ABORTED rows, whose times are missing, are kept: the simulator drops them for their missing
// rss, as Sizey does), and the row whose cpus is 'one' is kept with cpus unset. The same file
// read plainly keeps 3 of its 6 rows (GoldenRawCsv).
TEST(Nextflow, SizeyRowsAreReadAsSizeysProtocolReadsThem) {
  ReadOptions o;
  o.sizey_rows = true;
  auto trace = read_trace(golden("trace_demo.csv"), o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->stats.skipped, 0u);
  EXPECT_EQ(trace->stats.ignored, 0u);
  ASSERT_EQ(trace->jobs.size(), 6u);
  EXPECT_FALSE(trace->has_submit_times);
  EXPECT_FALSE(has_note(*trace, "not placed in time"));  // not read by choice, not missing
  EXPECT_TRUE(has_note(*trace, "1 CACHED tasks kept"));
  EXPECT_TRUE(has_note(*trace, "1 malformed value(s) in cpus, time, memory or peak_rss left unset"));
  const Job& cached = trace->jobs[2];
  EXPECT_EQ(cached.state, "COMPLETED");
  EXPECT_EQ(cached.workload, "CALL");
  EXPECT_EQ(cached.peak_mem_bytes, 1000u);
  EXPECT_EQ(cached.submit_ms, 0);
  EXPECT_EQ(trace->jobs[0].state, "COMPLETED");
  EXPECT_EQ(trace->jobs[1].state, "OUT_OF_MEMORY");  // FAILED, exit 137
  EXPECT_FALSE(trace->jobs[5].req_cpus.has_value());   // 'one'
  EXPECT_EQ(trace->jobs[5].req_mem_bytes, 1073741824u);
  // A malformed rss still skips the row (Sizey drops it too); a malformed memory, which Sizey
  // reads as NaN and keeps, is left unset.
  Trace t;
  ASSERT_TRUE(parse_nextflow("process,status,rss,realtime,memory\nA,COMPLETED,lots,1000,2000000000\n"
                             "A,COMPLETED,1000,1000,2000000000\nA,COMPLETED,1000,1000,two\n",
                             "t.csv", o, t));
  ASSERT_EQ(t.jobs.size(), 2u);
  EXPECT_EQ(t.stats.skipped, 1u);
  EXPECT_FALSE(t.jobs[1].req_mem_bytes.has_value());
  EXPECT_EQ(t.jobs[1].rss_bytes, 1000u);
  Trace plain;  // read plainly, the memory row is skipped as well
  ASSERT_TRUE(parse_nextflow("process,status,rss,realtime,memory\nA,COMPLETED,1000,1000,two\n", "t.csv", {}, plain));
  EXPECT_TRUE(plain.jobs.empty());
}

// nf-core runs published with the Sizey study: raw values, comma separated, no user column.
// Every task is labelled but those whose peak_rss is 0 (not measured: chipseq 1, mag 5).
TEST(NextflowRealData, NfCoreTracesReadCompletely) {
  const std::tuple<const char*, size_t, size_t> files[] = {{"nextflow/trace_chipseq.csv", 2938, 1},
                                                           {"nextflow/trace_mag.csv", 6242, 5},
                                                           {"nextflow/trace_eager.csv", 1576, 0}};
  for (auto [rel, want, unmeasured] : files) {
    const std::string path = shared_data(rel);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "real trace absent: " << path;
    auto trace = read_trace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    EXPECT_EQ(trace->format, Format::kNextflow) << rel;
    EXPECT_EQ(trace->stats.jobs, want) << rel;
    EXPECT_EQ(trace->stats.skipped, 0u) << rel;
    EXPECT_EQ(trace->stats.labelled[idx(Resource::kMem)], want - unmeasured) << rel;
    EXPECT_EQ(has_note(*trace, "memory of 0 read as not measured (peak_rss in " +
                                   std::to_string(unmeasured) + " job(s), rss in " +
                                   std::to_string(unmeasured) + ")"),
              unmeasured > 0)
        << rel;
    EXPECT_TRUE(has_note(*trace, "no user column")) << rel;
    for (const Job& j : trace->jobs) {
      ASSERT_LE(j.submit_ms, j.end_ms) << j.job_id;
      ASSERT_TRUE(j.workload.has_value()) << j.job_id;
    }
  }
}

}  // namespace
}  // namespace peakcast::ingest
