// A Nextflow trace's human-form times (`2023-10-29 02:10:00.000`) are the wall clock of the JVM
// that wrote them, without a zone: ReadOptions::nextflow_timezone (--nextflow-timezone) places
// them, across the changes of the clocks. Until 2026-12-06 they were read as UTC whatever the
// zone: a run across Berlin's autumn change had tasks skipped as "complete: before submit".
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "peakcast/core/time_zone.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

constexpr int64_t kMin = 60000;
constexpr int64_t kHour = 60 * kMin;
constexpr int64_t kSpring0z = 1679788800000;  // 2023-03-26T00:00:00Z; Berlin: 02:00 CET -> 03:00 CEST at 01:00Z
constexpr int64_t kAutumn0z = 1698537600000;  // 2023-10-29T00:00:00Z; Berlin: 03:00 CEST -> 02:00 CET at 01:00Z

ReadOptions berlin() {
  ReadOptions o;
  o.nextflow_timezone = "Europe/Berlin";
  return o;
}

std::string reasons(const Trace& t) {
  std::string out;
  for (const std::string& r : t.stats.reasons) out += r + "\n";
  return out;
}

const Job& job(const Trace& t, const std::string& id) {
  for (const Job& j : t.jobs) {
    if (j.job_id == id) return j;
  }
  ADD_FAILURE() << "no job " << id << " (skipped: " << reasons(t) << ")";
  return t.jobs.front();
}

// One run in Berlin with tasks across both changes of 2023. `complete` is recorded to the second
// (".000"): the end is that second's last millisecond (docs/formats.md).
const char* kAcrossBothChanges =
    "task_id\tprocess\tsubmit\tstart\tcomplete\tduration\trealtime\tmemory\tpeak_rss\n"
    // Spring: 01:50 CET to 03:10 CEST ran 20 minutes, from 00:50Z to 01:10Z (as UTC: 1h 20m).
    "1\tA\t2023-03-26 01:50:00.250\t2023-03-26 01:51:00.000\t2023-03-26 03:10:00.000\t20m\t19m\t4 GB\t1 GB\n"
    // Autumn, submitted in the first 02:50 (CEST, 00:50Z), done in the second 02:10 (CET,
    // 01:10Z): as UTC it "completed before its submission" and was skipped.
    "2\tA\t2023-10-29 02:50:00.500\t2023-10-29 02:51:00.000\t2023-10-29 02:10:00.000\t20m\t19m\t4 GB\t1 GB\n"
    // Submitted at 02:10, done at 03:05 CET (02:05Z, shown once): the duration, 55m, says the
    // 02:10 was the second one (01:10Z), not the first (00:10Z: 1h 55m).
    "3\tA\t2023-10-29 02:10:00.000\t2023-10-29 02:11:00.000\t2023-10-29 03:05:00.000\t55m\t54m\t4 GB\t1 GB\n"
    // Wholly within the hour shown twice: both readings agree with the duration. Written after
    // a task that completed at 02:05Z, so (rows are written as tasks complete) its 02:30 is the
    // second one.
    "4\tA\t2023-10-29 02:20:00.000\t2023-10-29 02:21:00.000\t2023-10-29 02:30:00.000\t10m\t9m\t4 GB\t1 GB\n"
    // No duration recorded: the row order settles complete (the second 02:45), not submit.
    "5\tA\t2023-10-29 02:40:00.000\t-\t2023-10-29 02:45:00.000\t-\t-\t4 GB\t1 GB\n"
    // Summer time, far from a change: CEST, +2.
    "6\tA\t2023-07-01 12:00:00.000\t-\t2023-07-01 12:01:00.000\t1m\t-\t4 GB\t1 GB\n"
    // Raw epoch milliseconds (trace.raw = true) are instants: no zone applies.
    "7\tA\t1698540000000\t-\t1698540060000\t60000\t-\t4294967296\t1073741824\n";

TEST(NextflowZone, TimesAreReadInTheZoneAcrossBothChangesOfTheClocks) {
  if (!TimeZone::load("Europe/Berlin")) GTEST_SKIP() << "no Europe/Berlin in the system's tz database";
  Trace t;
  ASSERT_TRUE(parse_nextflow(kAcrossBothChanges, "trace_run.tsv", berlin(), t));
  EXPECT_EQ(t.stats.skipped, 0u) << reasons(t);
  ASSERT_EQ(t.jobs.size(), 7u) << reasons(t);

  const Job& spring = job(t, "run:1");
  EXPECT_EQ(spring.submit_ms, kSpring0z + 50 * kMin + 250);
  EXPECT_EQ(spring.start_ms, kSpring0z + 51 * kMin);
  EXPECT_EQ(spring.end_ms, kSpring0z + 70 * kMin + 999);

  const Job& across = job(t, "run:2");
  EXPECT_EQ(across.submit_ms, kAutumn0z + 50 * kMin + 500);
  EXPECT_EQ(across.start_ms, kAutumn0z + 51 * kMin);  // realtime 19m before the end
  EXPECT_EQ(across.end_ms, kAutumn0z + 70 * kMin + 999);

  const Job& settled = job(t, "run:3");
  EXPECT_EQ(settled.submit_ms, kAutumn0z + 70 * kMin);
  EXPECT_EQ(settled.start_ms, kAutumn0z + 71 * kMin);
  EXPECT_EQ(settled.end_ms, kAutumn0z + 125 * kMin + 999);

  const Job& twice = job(t, "run:4");
  EXPECT_EQ(twice.submit_ms, kAutumn0z + kHour + 20 * kMin);
  EXPECT_EQ(twice.end_ms, kAutumn0z + kHour + 30 * kMin + 999);
  EXPECT_EQ(twice.start_ms, kAutumn0z + kHour + 21 * kMin);  // 9m (realtime) before that end

  // Ambiguous still: the earliest submit, so that the task never sees as history a task that
  // ended after its real submission.
  const Job& bare = job(t, "run:5");
  EXPECT_EQ(bare.submit_ms, kAutumn0z + 40 * kMin);
  EXPECT_EQ(bare.end_ms, kAutumn0z + kHour + 45 * kMin + 999);

  const Job& summer = job(t, "run:6");
  EXPECT_EQ(summer.submit_ms, 1688205600000);  // 2023-07-01T10:00:00Z
  EXPECT_EQ(summer.end_ms, 1688205600000 + kMin + 999);

  const Job& raw = job(t, "run:7");
  EXPECT_EQ(raw.submit_ms, 1698540000000);
  EXPECT_EQ(raw.end_ms, 1698540060999);
}

// The default is UTC, as before the option: the autumn task is skipped as it always was.
TEST(NextflowZone, WithoutAZoneTimesAreUtcAsBefore) {
  Trace t;
  ASSERT_TRUE(parse_nextflow(kAcrossBothChanges, "trace_run.tsv", {}, t));
  EXPECT_EQ(t.stats.skipped, 1u) << reasons(t);
  ASSERT_EQ(t.stats.reasons.size(), 1u);
  EXPECT_NE(t.stats.reasons[0].find(":3: complete: before submit"), std::string::npos) << reasons(t);
  EXPECT_EQ(job(t, "run:1").submit_ms, kSpring0z + kHour + 50 * kMin + 250);
  EXPECT_EQ(job(t, "run:6").submit_ms, 1688212800000);  // 2023-07-01T12:00:00Z
}

// Rows are written as tasks complete (out of order by up to a few minutes): across the autumn
// change the wall clock of `complete` runs 01:50, 02:15, 02:55, then back to 02:10, 02:15, 02:12,
// 03:20. A row wholly within the hour shown twice, which its duration cannot settle, is read in
// the pass the order says, and every task keeps its recorded duration.
TEST(NextflowZone, TheRowOrderSettlesWhatTheDurationCannot) {
  if (!TimeZone::load("Europe/Berlin")) GTEST_SKIP() << "no Europe/Berlin in the system's tz database";
  Trace t;
  ASSERT_TRUE(parse_nextflow("task_id\tprocess\tsubmit\tcomplete\tduration\tmemory\tpeak_rss\n"
                             "0\tA\t2023-10-29 01:30:00.000\t2023-10-29 01:50:00.000\t20m\t4 GB\t1 GB\n"
                             "1\tA\t2023-10-29 02:05:00.000\t2023-10-29 02:15:00.000\t10m\t4 GB\t1 GB\n"
                             "2\tA\t2023-10-29 02:40:00.000\t2023-10-29 02:55:00.000\t15m\t4 GB\t1 GB\n"
                             "3\tA\t2023-10-29 02:50:00.500\t2023-10-29 02:10:00.000\t20m\t4 GB\t1 GB\n"
                             "4\tA\t2023-10-29 02:05:00.000\t2023-10-29 02:15:00.000\t10m\t4 GB\t1 GB\n"
                             "5\tA\t2023-10-29 02:00:00.000\t2023-10-29 02:12:00.000\t12m\t4 GB\t1 GB\n"
                             "6\tA\t2023-10-29 03:10:00.000\t2023-10-29 03:20:00.000\t10m\t4 GB\t1 GB\n",
                             "trace_run.tsv", berlin(), t));
  ASSERT_EQ(t.jobs.size(), 7u) << reasons(t);
  const int64_t from = kAutumn0z - kHour;  // 2023-10-28T23:00:00Z, 01:00 CEST
  const std::pair<int64_t, int64_t> want[] = {
      {from + 30 * kMin, from + 50 * kMin},                   // 23:30Z-23:50Z, CEST
      {kAutumn0z + 5 * kMin, kAutumn0z + 15 * kMin},          // the first 02:05-02:15
      {kAutumn0z + 40 * kMin, kAutumn0z + 55 * kMin},         // the first 02:40-02:55
      {kAutumn0z + 50 * kMin + 500, kAutumn0z + 70 * kMin},   // the duration says
      {kAutumn0z + 65 * kMin, kAutumn0z + 75 * kMin},         // the second 02:05-02:15
      {kAutumn0z + 60 * kMin, kAutumn0z + 72 * kMin},         // 3 min out of order: still second
      {kAutumn0z + 130 * kMin, kAutumn0z + 140 * kMin}};      // CET
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    EXPECT_EQ(t.jobs[i].submit_ms, want[i].first) << t.jobs[i].job_id;
    EXPECT_EQ(t.jobs[i].end_ms, want[i].second + 999) << t.jobs[i].job_id;
  }
}

// Nextflow's default trace.fields has no `complete`: the end is submit + duration, and the row
// order settles a submit shown twice. The first row has no row before it: the earlier submit and
// the latest end either reading allows (the task is never history for one submitted before its
// real end, and never sees as history a task that ended after its real submission).
TEST(NextflowZone, AnEndFromTheDurationIsSettledByTheRowOrder) {
  if (!TimeZone::load("Europe/Berlin")) GTEST_SKIP() << "no Europe/Berlin in the system's tz database";
  Trace t;
  ASSERT_TRUE(parse_nextflow("task_id\tprocess\tsubmit\tduration\tmemory\tpeak_rss\n"
                             "1\tA\t2023-10-29 02:30:00.000\t600000\t4 GB\t1 GB\n"
                             "2\tA\t2023-10-29 03:30:00.000\t600000\t4 GB\t1 GB\n"
                             "3\tA\t2023-10-29 02:50:00.000\t600000\t4 GB\t1 GB\n"
                             "4\tA\t2023-03-26 01:55:00.000\t600000\t4 GB\t1 GB\n",
                             "trace_run.tsv", berlin(), t));
  ASSERT_EQ(t.jobs.size(), 4u) << reasons(t);
  EXPECT_EQ(job(t, "run:1").submit_ms, kAutumn0z + 30 * kMin);
  EXPECT_EQ(job(t, "run:1").end_ms, kAutumn0z + kHour + 40 * kMin + 999);
  EXPECT_EQ(job(t, "run:2").submit_ms, kAutumn0z + 2 * kHour + 30 * kMin);  // CET
  // Neither reading ends within kOutOfOrderMs of the 02:40Z before it: the later.
  EXPECT_EQ(job(t, "run:3").submit_ms, kAutumn0z + kHour + 50 * kMin);
  EXPECT_EQ(job(t, "run:3").end_ms, kAutumn0z + 2 * kHour + 999);
  EXPECT_EQ(job(t, "run:4").submit_ms, kSpring0z + 55 * kMin);  // the spring change: CET, then CEST
  EXPECT_EQ(job(t, "run:4").end_ms, kSpring0z + 65 * kMin + 999);
}

// The JVM never prints a time its zone's clocks skipped: one means the trace was written in
// another zone (or edited). The row is skipped, its reason naming the field and the zone, as
// --sacct-timezone does.
TEST(NextflowZone, ATimeTheClocksSkippedSkipsTheRow) {
  if (!TimeZone::load("Europe/Berlin")) GTEST_SKIP() << "no Europe/Berlin in the system's tz database";
  Trace t;
  ASSERT_TRUE(parse_nextflow("task_id\tprocess\tsubmit\tcomplete\tmemory\tpeak_rss\n"
                             "1\tA\t2023-03-26 02:30:00.000\t2023-03-26 03:40:00.000\t4 GB\t1 GB\n"
                             "2\tA\t2023-03-26 01:30:00.000\t2023-03-26 02:40:00.000\t4 GB\t1 GB\n"
                             "3\tA\t2023-03-26 01:30:00.000\t2023-03-26 03:40:00.000\t4 GB\t1 GB\n",
                             "trace_run.tsv", berlin(), t));
  ASSERT_EQ(t.jobs.size(), 1u) << reasons(t);
  EXPECT_EQ(t.jobs[0].submit_ms, kSpring0z + 30 * kMin);
  EXPECT_EQ(t.jobs[0].end_ms, kSpring0z + 100 * kMin + 999);
  ASSERT_EQ(t.stats.reasons.size(), 2u) << reasons(t);
  EXPECT_NE(t.stats.reasons[0].find(":2: submit: '2023-03-26 02:30:00.000': no such local time in "
                                    "Europe/Berlin (the clocks skipped it)"),
            std::string::npos)
      << reasons(t);
  EXPECT_NE(t.stats.reasons[1].find(":3: complete: '2023-03-26 02:40:00.000'"), std::string::npos)
      << reasons(t);
}

// A name that is not a zone fails the read (not each row), naming the option, with or without
// the rows' times being read (Sizey's protocol reads none).
TEST(NextflowZone, ANameThatIsNoZoneFailsTheReadNamingTheOption) {
  for (bool sizey_rows : {false, true}) {
    ReadOptions o;
    o.nextflow_timezone = "Europe/Atlantis";
    o.sizey_rows = sizey_rows;
    Trace t;
    const Status s = parse_nextflow(kAcrossBothChanges, "trace_run.tsv", o, t);
    EXPECT_FALSE(s);
    EXPECT_NE(s.message().find("--nextflow-timezone"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("Europe/Atlantis"), std::string::npos) << s.message();
    EXPECT_TRUE(t.jobs.empty());
  }
}

}  // namespace
}  // namespace peakcast::ingest
