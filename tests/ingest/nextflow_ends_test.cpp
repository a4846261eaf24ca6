// When a Nextflow task ended: from `complete`, or from `submit` + `duration` (Nextflow's default
// trace.fields has no `complete`), raw or in the human form that Nextflow rounds.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

// nextflow.util.Duration.toString, as Nextflow prints a duration in its default (not raw) trace:
// under a second the milliseconds ("163ms"); under a minute the seconds rounded half up to 0.1
// ("12.5s"; a whole number "3s", as Groovy prints 30/10, or "3.0s" with `point_zero`); else
// rounded half up to the second, as days, hours, minutes and seconds without the zero parts
// ("1h 2m", "3m 4s", "1d 5s").
std::string nextflow_duration(int64_t ms, bool point_zero) {
  if (ms < 1000) return std::to_string(ms) + "ms";
  if (ms < 60000) {
    const int64_t tenths = (ms + 50) / 100;
    if (tenths % 10 == 0 && !point_zero) return std::to_string(tenths / 10) + "s";
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "s";
  }
  int64_t secs = (ms + 500) / 1000;
  const int64_t days = secs / 86400;
  const int64_t hours = secs / 3600 % 24;
  const int64_t mins = secs / 60 % 60;
  secs %= 60;
  std::string out;
  for (auto [n, unit] : {std::pair{days, "d"}, {hours, "h"}, {mins, "m"}, {secs, "s"}}) {
    if (n == 0) continue;
    out += (out.empty() ? "" : " ") + std::to_string(n) + unit;
  }
  return out;
}

Trace parse(const std::string& text) {
  Trace t;
  const Status s = parse_nextflow(text, "t.tsv", {}, t);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return t;
}

TEST(NextflowEnds, TheDurationFormatterPrintsAsNextflowDoes) {
  // Examples from Nextflow's own DurationTest and trace files.
  EXPECT_EQ(nextflow_duration(163, false), "163ms");
  EXPECT_EQ(nextflow_duration(12449, false), "12.4s");
  EXPECT_EQ(nextflow_duration(12450, false), "12.5s");
  EXPECT_EQ(nextflow_duration(2960, false), "3s");
  EXPECT_EQ(nextflow_duration(2960, true), "3.0s");
  EXPECT_EQ(nextflow_duration(184499, false), "3m 4s");
  EXPECT_EQ(nextflow_duration(184500, false), "3m 5s");
  EXPECT_EQ(nextflow_duration(3720000, false), "1h 2m");
  EXPECT_EQ(nextflow_duration(86405000, false), "1d 5s");
}

// The leak: without `complete`, the end is submit + duration, and a rounded duration (Nextflow's
// default output) can fall up to half its unit short of the task's real end; an end on a whole
// second then hides that second's remaining 999 ms as well. On eager 573 of 630 validation and
// test tasks ended up to 1.499 s before the end their `complete` gives. Over durations printed
// as Nextflow prints them, from ends recorded to the millisecond and to the second (as
// Kubernetes records them), the end read from the duration is never before the one read from
// `complete`, and less than two seconds after it (the rounding's 1 s range, and the rest of a
// whole second in it that an end recorded to the second may hide); a raw duration gives the
// same end.
TEST(NextflowEnds, AnEndFromARoundedDurationIsNeverBeforeTheRecordedEnd) {
  std::vector<int64_t> durations;
  for (int64_t d = 0; d < 2500; ++d) durations.push_back(d);
  for (int64_t d = 2500; d < 70000; d += 7) durations.push_back(d);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3000; ++i) durations.push_back(static_cast<int64_t>(rng() % (3 * 86400000ULL)));
  const int64_t base = 1719452535000;
  for (bool point_zero : {false, true}) {
    std::string completes = "task_id\tsubmit\tcomplete\n";
    std::string raw = "task_id\tsubmit\tduration\n";
    std::string human = "task_id\tsubmit\tduration\n";
    size_t rows = 0;
    for (size_t i = 0; i < durations.size(); ++i) {
      const int64_t submit = base + static_cast<int64_t>(i) * 60000 + static_cast<int64_t>(i * 137 % 1000);
      for (bool to_the_second : {false, true}) {
        int64_t complete = submit + durations[i];
        if (to_the_second) complete -= complete % 1000;
        const int64_t d = complete - submit;
        if (d < 0) continue;  // negative durations: ASmallNegativeDuration... below
        const std::string id = std::to_string(++rows);
        completes += id + "\t" + std::to_string(submit) + "\t" + std::to_string(complete) + "\n";
        raw += id + "\t" + std::to_string(submit) + "\t" + std::to_string(d) + "\n";
        human += id + "\t" + std::to_string(submit) + "\t" + nextflow_duration(d, point_zero) + "\n";
      }
    }
    const Trace by_complete = parse(completes);
    const Trace by_raw = parse(raw);
    const Trace by_human = parse(human);
    ASSERT_EQ(by_complete.jobs.size(), rows);
    ASSERT_EQ(by_raw.jobs.size(), rows);
    ASSERT_EQ(by_human.jobs.size(), rows);
    size_t later = 0;
    for (size_t i = 0; i < rows; ++i) {
      const Job& want = by_complete.jobs[i];
      const Job& got = by_human.jobs[i];
      ASSERT_EQ(got.submit_ms, want.submit_ms);
      ASSERT_GE(got.end_ms, want.end_ms) << want.job_id << " submit " << want.submit_ms;
      ASSERT_LT(got.end_ms - want.end_ms, 2000) << want.job_id;
      later += got.end_ms > want.end_ms ? 1 : 0;
      ASSERT_EQ(by_raw.jobs[i].end_ms, want.end_ms) << want.job_id;  // raw milliseconds are exact
    }
    EXPECT_GT(later, 0u);  // the rounding costs something: not the same ends by construction
  }
}

// The latest end a rounded duration allows, worked by hand. "3m 4s" is 183.5 s to 184.5 s (half
// a second either way, the tie included): submitted at .100, the task's end was recorded between
// 3:03.600 and 3:04.600, and if at 3:04.000, to the second, it ended as late as 3:04.999.
// "12.5s" is 12.45 s to 12.55 s: submitted at .100, the task ended by 0:12.650, no whole second
// in the range. "163ms" is exact.
TEST(NextflowEnds, ARoundedDurationEndsAtTheLatestInstantItsRoundingAllows) {
  const int64_t submit = 1678701000100;
  const Trace t = parse(
      "task_id\tsubmit\tduration\n"
      "1\t1678701000100\t3m 4s\n"
      "2\t1678701000100\t12.5s\n"
      "3\t1678701000100\t163ms\n");
  ASSERT_EQ(t.jobs.size(), 3u);
  EXPECT_EQ(t.jobs[0].end_ms, submit + 184899);
  EXPECT_EQ(t.jobs[1].end_ms, submit + 12550);
  EXPECT_EQ(t.jobs[2].end_ms, submit + 163);
}

// trace_eager.csv task 1802: submit 1719452535163, complete 1719452535000 (to the second, before
// the submit recorded to the millisecond), duration -163. Read from `complete`, its end is that
// second's last millisecond; the raw duration and its human form '-163ms' give the same end. An
// end less than a second before the submit (to the millisecond) is the submit, as for
// `complete`. A duration that puts the end a second or more before the submit, and garbage, are
// still refused; `realtime` and `time` take no sign.
TEST(NextflowEnds, ASmallNegativeDurationEndsAsAnEarlyCompleteDoes) {
  const Trace want = parse(
      "task_id\tsubmit\tcomplete\n"
      "1802\t1719452535163\t1719452535000\n"
      "2\t1719452535500\t1719452535200\n");
  ASSERT_EQ(want.jobs.size(), 2u);
  EXPECT_EQ(want.jobs[0].end_ms, 1719452535999);
  EXPECT_EQ(want.jobs[1].end_ms, 1719452535500);
  for (auto [a, b] : {std::pair{"-163", "-300"}, {"-163ms", "-300ms"}}) {
    const Trace got = parse(std::string("task_id\tsubmit\tduration\n1802\t1719452535163\t") + a +
                            "\n2\t1719452535500\t" + b + "\n");
    ASSERT_EQ(got.jobs.size(), 2u) << a << (got.stats.reasons.empty() ? "" : got.stats.reasons[0]);
    EXPECT_EQ(got.jobs[0].end_ms, want.jobs[0].end_ms) << a;
    EXPECT_EQ(got.jobs[1].end_ms, want.jobs[1].end_ms) << b;
  }
  for (const char* bad : {"-5000", "-2s", "--163", "- 163", "-abc", "abc", "-inf", "1 parsec", "-"}) {
    Trace t;
    ASSERT_TRUE(parse_nextflow(std::string("task_id\tsubmit\tduration\n1\t1719452535500\t") + bad + "\n",
                               "t.tsv", {}, t));
    EXPECT_TRUE(t.jobs.empty()) << bad;
    ASSERT_EQ(t.stats.reasons.size(), 1u) << bad;
    EXPECT_NE(t.stats.reasons[0].find("t.tsv:2: duration: "), std::string::npos) << t.stats.reasons[0];
  }
  for (const char* column : {"realtime", "time"}) {
    Trace t;
    ASSERT_TRUE(parse_nextflow(std::string("task_id\tsubmit\tduration\t") + column +
                                   "\n1\t1719452535500\t10\t-5\n",
                               "t.tsv", {}, t));
    EXPECT_TRUE(t.jobs.empty()) << column;
    ASSERT_EQ(t.stats.reasons.size(), 1u) << column;
    EXPECT_NE(t.stats.reasons[0].find(std::string(column) + ": not a duration: '-5'"), std::string::npos)
        << t.stats.reasons[0];
  }
}

}  // namespace
}  // namespace peakcast::ingest
