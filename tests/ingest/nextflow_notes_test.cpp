// What a Nextflow trace's shape costs, said in the reader's notes (missing columns, rounded
// values), and the shapes trace.sep gives it (a semicolon; a comma in an unquoted tag).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

bool has_note(const Trace& t, std::string_view needle) {
  return std::any_of(t.notes.begin(), t.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

std::string all_notes(const Trace& t) {
  std::string out;
  for (const std::string& n : t.notes) out += n + "\n";
  return out;
}

// Nextflow's default trace.fields (a stock nf-core run): no memory, rss or process. evaluate
// then found no label and simulate no task with an rss, and neither said why; the reader's note
// (printed before either error) names the missing columns and the trace.fields to add.
TEST(NextflowNotes, AStockTraceSaysWhichTraceFieldsToAdd) {
  Trace stock;
  ASSERT_TRUE(parse_nextflow(
      "task_id\thash\tnative_id\tname\tstatus\texit\tsubmit\tduration\trealtime\t%cpu\tpeak_rss\t"
      "peak_vmem\trchar\twchar\n"
      "1\tab/123456\tnf-1\tFASTQC (s1)\tCOMPLETED\t0\t1678701000100\t5000\t4000\t99.0\t1000000\t"
      "2000000\t3000\t400\n",
      "execution_trace.txt", {}, stock));
  ASSERT_EQ(stock.jobs.size(), 1u);
  EXPECT_TRUE(has_note(stock, "no 'memory' (the task's memory request")) << all_notes(stock);
  EXPECT_TRUE(has_note(stock, "no 'rss' (Sizey's protocol")) << all_notes(stock);
  EXPECT_FALSE(has_note(stock, "'rchar' (")) << all_notes(stock);
  EXPECT_TRUE(has_note(stock, "add memory,rss to Nextflow's trace.fields")) << all_notes(stock);

  Trace no_rchar;
  ASSERT_TRUE(parse_nextflow("task_id,process,submit,complete,memory,peak_rss,rss\n"
                             "1,A,1000,2000,4294967296,1073741824,1073741824\n",
                             "t.csv", {}, no_rchar));
  EXPECT_TRUE(has_note(no_rchar, "no 'rchar' (Sizey's protocol takes it as each task's input size"))
      << all_notes(no_rchar);
  EXPECT_TRUE(has_note(no_rchar, "add rchar to")) << all_notes(no_rchar);
  EXPECT_FALSE(has_note(no_rchar, "'memory' (")) << all_notes(no_rchar);

  Trace full;
  ASSERT_TRUE(parse_nextflow("task_id,process,submit,complete,memory,peak_rss,rss,rchar\n"
                             "1,A,1000,2000,4294967296,1073741824,1073741824,5000\n",
                             "t.csv", {}, full));
  EXPECT_FALSE(has_note(full, "Nextflow trace has no '")) << all_notes(full);
}

// Nextflow's human-readable sizes are rounded to 0.1 of their unit (up to 5% off) and its
// durations to 0.1 s or 1 s; on mag they move simulate's waste ratio from 0.70x to 0.89x. The
// note counts them per column and names trace.raw; an exact form ("512 B", "163ms", raw
// numbers) is not counted, and a raw trace gets no note.
TEST(NextflowNotes, RoundedHumanValuesAreCountedPerColumn) {
  Trace human;
  ASSERT_TRUE(parse_nextflow(
      "task_id\tprocess\tsubmit\tcomplete\tmemory\tpeak_rss\trss\trchar\trealtime\n"
      "1\tA\t1000\t2000\t4 GB\t1.5 GB\t1.4 GB\t512 B\t1m 3s\n"
      "2\tA\t1000\t2000\t4 GB\t1610612736\t1.4 GB\t512\t163ms\n",
      "t.tsv", {}, human));
  ASSERT_EQ(human.jobs.size(), 2u);
  EXPECT_TRUE(has_note(human, "realtime 1, memory 2, peak_rss 1, rss 2.")) << all_notes(human);
  EXPECT_TRUE(has_note(human, "trace.raw = true")) << all_notes(human);
  EXPECT_FALSE(has_note(human, "rchar ")) << all_notes(human);

  Trace raw;
  ASSERT_TRUE(parse_nextflow("task_id,process,submit,complete,memory,peak_rss,rss,rchar,realtime\n"
                             "1,A,1000,2000,4294967296,1610612736,1503238553,512,63000\n",
                             "t.csv", {}, raw));
  EXPECT_FALSE(has_note(raw, "human-readable")) << all_notes(raw);
}

// A rejected row's values were still counted: its malformed memory as "left unset" (Sizey's
// protocol, rejected for its rss) and its exit 137 as a task taken as OUT_OF_MEMORY (rejected
// for its memory). Only kept rows count.
TEST(NextflowNotes, ARejectedRowCountsNothingInTheNotes) {
  ReadOptions sizey;
  sizey.sizey_rows = true;
  Trace t;
  ASSERT_TRUE(parse_nextflow("process,status,rss,realtime,memory\nA,COMPLETED,lots,1000,two\n"
                             "A,COMPLETED,1000,1000,2000000000\n",
                             "t.csv", sizey, t));
  EXPECT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.stats.skipped, 1u);
  EXPECT_FALSE(has_note(t, "malformed value(s)")) << all_notes(t);

  Trace killed;
  ASSERT_TRUE(parse_nextflow("task_id,process,status,exit,submit,complete,memory\n"
                             "1,A,FAILED,137,1000,2000,lots\n2,A,COMPLETED,0,1000,2000,1024\n",
                             "t.csv", {}, killed));
  EXPECT_EQ(killed.jobs.size(), 1u);
  EXPECT_FALSE(has_note(killed, "exit 137")) << all_notes(killed);

  // Nor does it take its task id: a resumed run's row of the same id is that id's first job.
  Trace resumed;
  ASSERT_TRUE(parse_nextflow("task_id,process,status,rss,realtime,memory\n7,A,COMPLETED,lots,1000,2000000000\n"
                             "7,A,COMPLETED,1000,1000,2000000000\n",
                             "t.csv", sizey, resumed));
  ASSERT_EQ(resumed.jobs.size(), 1u);
  EXPECT_EQ(resumed.jobs[0].job_id.find('#'), std::string::npos) << resumed.jobs[0].job_id;
}

// trace.sep=';' was refused as "not a Nextflow trace ... names none of the columns"; it is read
// (and detected), and a header split by a separator the reader does not take says which it
// takes.
TEST(NextflowNotes, ASemicolonSeparatedTraceIsRead) {
  const std::string text =
      "task_id;process;status;submit;complete;memory;peak_rss\n"
      "1;A;COMPLETED;1000;2500;4294967296;1073741824\n";
  EXPECT_EQ(detect_format(text), Format::kNextflow);
  Trace t;
  const Status s = parse_nextflow(text, "t.txt", {}, t);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].workload, "A");
  EXPECT_EQ(t.jobs[0].req_mem_bytes, 4294967296u);
  EXPECT_EQ(t.jobs[0].end_ms, 2500);

  Trace other;
  const Status refused = parse_nextflow("task_id:process:submit\n1:A:1000\n", "t.txt", {}, other);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("split on tabs, commas or semicolons"), std::string::npos)
      << refused.message();
}

// Nextflow never quotes a field: with trace.sep=',' a tag 'X, lane1' splits its row in `tag` and
// again in `name` ("FASTQC (X, lane1)"), and the row was skipped. The fields are joined back
// when exactly one way leaves a name ending in "(tag)" (with only `name`, a name whose " ("
// comes before its first comma and that ends with ")"); a row split elsewhere is still skipped,
// with the reason.
TEST(NextflowNotes, ACommaInAnUnquotedTagIsRejoined) {
  Trace t;
  ASSERT_TRUE(parse_nextflow("task_id,process,tag,name,status,submit,complete\n"
                             "1,FASTQC,X, lane1,FASTQC (X, lane1),COMPLETED,1000,2000\n"
                             "2,FASTQC,Y, a, b,FASTQC (Y, a, b),COMPLETED,1000,3500\n"
                             "3,FASTQC,Z,FASTQC (Z),COMPLETED,1000,4000\n",
                             "t.csv", {}, t));
  ASSERT_EQ(t.jobs.size(), 3u) << (t.stats.reasons.empty() ? "" : t.stats.reasons[0]);
  EXPECT_EQ(t.jobs[0].job_name, "FASTQC (X, lane1)");
  EXPECT_EQ(t.jobs[0].workload, "FASTQC");
  EXPECT_EQ(t.jobs[1].job_name, "FASTQC (Y, a, b)");
  EXPECT_EQ(t.jobs[1].end_ms, 3500);
  EXPECT_TRUE(has_note(t, "2 row(s) whose tag holds a comma rejoined")) << all_notes(t);

  Trace name_only;
  ASSERT_TRUE(parse_nextflow("task_id,name,status,submit,complete\n"
                             "1,FASTQC (X, lane1),COMPLETED,1000,2000\n"
                             "2,FASTQC (X),COMPLETED,1000,2000,5\n",
                             "t.csv", {}, name_only));
  ASSERT_EQ(name_only.jobs.size(), 1u);
  EXPECT_EQ(name_only.jobs[0].job_name, "FASTQC (X, lane1)");
  EXPECT_EQ(name_only.jobs[0].workload, "FASTQC");
  ASSERT_EQ(name_only.stats.reasons.size(), 1u);
  EXPECT_NE(name_only.stats.reasons[0].find("t.csv:3: row: expected 5 columns, got 6 (Nextflow does "
                                            "not quote fields"),
            std::string::npos)
      << name_only.stats.reasons[0];
}

// Nextflow prints peak_rss and rss as 0 when its sampler caught nothing (a task shorter than its
// sampling interval): not a measured zero. Until 2026-12-06 evaluate scored such a task as a 0%
// label while simulate dropped it; now no path takes it as a label, the task keeps its other
// fields, and a note counts them (chipseq has 1, mag 5).
TEST(NextflowNotes, AZeroPeakIsNotMeasuredAndNoLabel) {
  Trace t;
  ASSERT_TRUE(parse_nextflow(
      "task_id\tprocess\tstatus\texit\tsubmit\tcomplete\trealtime\tmemory\tpeak_rss\trss\trchar\n"
      "1\tA\tCOMPLETED\t0\t1000\t2000\t900\t4294967296\t1073741824\t1073741824\t5000\n"
      "2\tA\tCOMPLETED\t0\t1000\t2000\t900\t4294967296\t0\t0\t5000\n"
      "3\tA\tCOMPLETED\t0\t1000\t2000\t900\t6 GB\t0 B\t1 GB\t5000\n"
      "4\tA\tFAILED\t137\t1000\t2000\t900\t4294967296\t0\t0\t5000\n",
      "trace_run.tsv", {}, t));
  finalize_trace(t, 1.0);
  ASSERT_EQ(t.jobs.size(), 4u);
  EXPECT_EQ(t.stats.skipped, 0u);
  const Job& zero = t.jobs[1];
  EXPECT_FALSE(zero.peak_mem_bytes.has_value());
  EXPECT_FALSE(zero.rss_bytes.has_value());
  EXPECT_FALSE(zero.is_valid(Resource::kMem));
  EXPECT_EQ(zero.req_mem_bytes, 4294967296u);  // the rest of the row is kept
  EXPECT_EQ(zero.read_bytes, 5000u);
  EXPECT_EQ(zero.realtime_ms, 900);
  EXPECT_FALSE(t.jobs[2].peak_mem_bytes.has_value());  // "0 B", the human form
  EXPECT_EQ(t.jobs[2].rss_bytes, 1073741824u);
  EXPECT_FALSE(t.jobs[2].is_valid(Resource::kMem));
  // Killed at its limit (exit 137): still the censored label at the cap, as without a peak.
  EXPECT_TRUE(t.jobs[3].is_valid(Resource::kMem));
  EXPECT_TRUE(t.jobs[3].censored);
  EXPECT_EQ(t.jobs[3].label(Resource::kMem), 1.0);
  EXPECT_EQ(t.stats.labelled[0], 2u);  // job 1 and the censored job 4
  EXPECT_TRUE(has_note(t, "memory of 0 read as not measured (peak_rss in 3 job(s), rss in 2)")) << all_notes(t);
  EXPECT_FALSE(has_note(t, "peak_rss 1")) << all_notes(t);  // a zero is not counted as rounded
}

}  // namespace
}  // namespace peakcast::ingest
