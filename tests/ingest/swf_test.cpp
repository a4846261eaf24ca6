#include <algorithm>

#include "golden_util.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

using test_util::expect_jobs_match;
using test_util::golden;
using test_util::shared_data;
using test_util::temp_path;
using test_util::write_text;

TEST(Swf, GoldenRecords) {
  ReadOptions o;
  o.format = Format::kSwf;
  auto trace = read_trace(golden("small.swf"), o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  expect_jobs_match(*trace, golden("small.swf.expected.jsonl"));
  EXPECT_EQ(trace->stats.lines, 8u);
  EXPECT_EQ(trace->stats.jobs, 4u);
  EXPECT_EQ(trace->stats.skipped, 4u);
}

TEST(Swf, SkipReasonsNameFileLineAndField) {
  auto trace = read_trace(golden("small.swf"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const auto& r = trace->stats.reasons;
  ASSERT_EQ(r.size(), 4u);
  EXPECT_NE(r[0].find("small.swf:11: field 2 (submit time): unknown"), std::string::npos) << r[0];
  EXPECT_NE(r[1].find("small.swf:12: field 4 (run time): unknown"), std::string::npos) << r[1];
  EXPECT_NE(r[2].find("small.swf:13: fields: expected 18"), std::string::npos) << r[2];
  EXPECT_NE(r[3].find("small.swf:14: field 3 (wait time): not a number"), std::string::npos) << r[3];
}

TEST(Swf, LabelIsUsedOverRequestedAndClipsAtCap) {
  auto trace = read_trace(golden("small.swf"));
  ASSERT_TRUE(trace.ok());
  const auto& jobs = trace->jobs;
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_TRUE(jobs[0].is_valid(Resource::kMem));
  EXPECT_DOUBLE_EQ(jobs[0].label(Resource::kMem), 1000.0 / 2000.0);
  EXPECT_TRUE(jobs[2].clipped[idx(Resource::kMem)]);  // 500 / 400 KB per processor
  EXPECT_DOUBLE_EQ(jobs[2].label(Resource::kMem), 1.0);
  EXPECT_FALSE(jobs[1].is_valid(Resource::kMem));
  EXPECT_FALSE(jobs[0].is_valid(Resource::kVram));
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kMem)], 2u);
  EXPECT_EQ(trace->stats.clipped[idx(Resource::kMem)], 1u);

  ReadOptions o;
  o.util_cap = 2.0;
  auto wide = read_trace(golden("small.swf"), o);
  ASSERT_TRUE(wide.ok());
  EXPECT_DOUBLE_EQ(wide->jobs[2].label(Resource::kMem), 500.0 / 400.0);
  EXPECT_EQ(wide->stats.clipped[idx(Resource::kMem)], 0u);
}

TEST(Swf, IdentityIsTheExecutableNumber) {
  auto trace = read_trace(golden("small.swf"));
  ASSERT_TRUE(trace.ok());
  const auto& jobs = trace->jobs;
  EXPECT_FALSE(jobs[0].script_key.empty());
  EXPECT_EQ(jobs[0].script_key, jobs[2].script_key);  // both executable 12
  EXPECT_NE(jobs[0].script_key, jobs[3].script_key);  // executable 13
  EXPECT_TRUE(jobs[1].script_key.empty());            // executable unknown
  EXPECT_FALSE(trace->has_scripts);
}

TEST(Swf, NotesExplainUnknownWaitAndMissingProcessors) {
  auto trace = read_trace(golden("small.swf"));
  ASSERT_TRUE(trace.ok());
  auto has = [&](std::string_view needle) {
    return std::any_of(trace->notes.begin(), trace->notes.end(),
                       [&](const std::string& n) { return n.find(needle) != std::string::npos; });
  };
  EXPECT_TRUE(has("unknown wait time"));
  EXPECT_TRUE(has("no processor count"));
}

// A job whose wait is unknown ended at or after submit + run time, when is not known: its peak is
// not a label (as history it could be seen by a job submitted before it had ended).
TEST(Swf, APeakWhoseEndIsUnknownIsLeftOut) {
  const std::string path = temp_path("unknown_wait.swf");
  write_text(path,
             "; UnixStartTime: 1000000000\n"
             "1 0 -1 100 4 -1 1000 4 3600 2000 1 7 3 12 1 -1 -1 -1\n"
             "2 10 5 100 4 -1 1000 4 3600 2000 1 7 3 12 1 -1 -1 -1\n");
  auto trace = read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->jobs.size(), 2u);
  EXPECT_FALSE(trace->jobs[0].start_ms.has_value());
  EXPECT_FALSE(trace->jobs[0].peak_mem_bytes.has_value());
  EXPECT_FALSE(trace->jobs[0].is_valid(Resource::kMem));
  EXPECT_TRUE(trace->jobs[0].req_mem_bytes.has_value());  // the job and its request stay
  EXPECT_TRUE(trace->jobs[1].is_valid(Resource::kMem));   // a known wait keeps its peak
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kMem)], 1u);
  const bool noted = std::any_of(trace->notes.begin(), trace->notes.end(), [](const std::string& n) {
    return n.find("memory peaks of 1 of them are left out") != std::string::npos;
  });
  EXPECT_TRUE(noted);
}

// A used memory (field 7) of 0 is none recorded, not a job that used nothing: no label (as a
// Nextflow peak_rss of 0), the job and its request kept, a note counting them. Until 2026-12-06
// evaluate scored it as a 0% label while simulate dropped it.
TEST(Swf, AUsedMemoryOfZeroIsNotMeasured) {
  const std::string path = temp_path("zero_used.swf");
  write_text(path,
             "; UnixStartTime: 1000000000\n"
             "1 0 1 100 4 -1 0 4 3600 2000 1 7 3 12 1 -1 -1 -1\n"
             "2 10 1 0 4 -1 0.00 4 3600 2000 0 7 3 12 1 -1 -1 -1\n"
             "3 20 1 100 4 -1 1000 4 3600 2000 1 7 3 12 1 -1 -1 -1\n"
             "4 30 1 100 4 -1 -1 4 3600 2000 1 7 3 12 1 -1 -1 -1\n");
  auto trace = read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->jobs.size(), 4u);
  for (size_t i : {0u, 1u}) {
    EXPECT_FALSE(trace->jobs[i].peak_mem_bytes.has_value()) << i;
    EXPECT_FALSE(trace->jobs[i].is_valid(Resource::kMem)) << i;
    EXPECT_EQ(trace->jobs[i].req_mem_bytes, 2000u * 1024u * 4u) << i;  // the request stays
  }
  EXPECT_DOUBLE_EQ(trace->jobs[2].label(Resource::kMem), 0.5);
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kMem)], 1u);
  const bool noted = std::any_of(trace->notes.begin(), trace->notes.end(), [](const std::string& n) {
    return n.find("memory of 0 read as not measured (used memory (SWF field 7) in 2 job(s))") !=
           std::string::npos;
  });
  EXPECT_TRUE(noted);
}

// The standard's unknown is -1 and nothing else. Another negative number (a used memory of -7)
// was read as unknown without a word: the job lost its label (or its request, its start) and no
// reason said so. It is a malformed field, skipped with the file, line and field named.
TEST(Swf, ANegativeFieldOtherThanUnknownIsSkippedAndNamed) {
  const std::string path = temp_path("negative.swf");
  write_text(path,
             "; UnixStartTime: 1000000000\n"
             "1 0 1 100 4 -1 1000 4 3600 2000 1 7 3 12 1 -1 -1 -1\n"
             "2 10 1 100 4 -1 -7 4 3600 2000 1 7 3 12 1 -1 -1 -1\n"
             "3 20 1 100 4 -1 1000 4 3600 -2000 1 7 3 12 1 -1 -1 -1\n"
             "4 30 -5 100 4 -1 1000 4 3600 2000 1 7 3 12 1 -1 -1 -1\n"
             "5 -3 1 100 4 -1 1000 4 3600 2000 1 7 3 12 1 -1 -1 -1\n");
  auto trace = read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->jobs.size(), 1u);
  EXPECT_EQ(trace->jobs[0].job_id, "1");
  const auto& r = trace->stats.reasons;
  ASSERT_EQ(r.size(), 4u);
  EXPECT_NE(r[0].find("negative.swf:3: field 7 (used memory): negative (-7); the standard's unknown is -1"),
            std::string::npos) << r[0];
  EXPECT_NE(r[1].find("negative.swf:4: field 10 (requested memory): negative (-2000)"), std::string::npos) << r[1];
  EXPECT_NE(r[2].find("negative.swf:5: field 3 (wait time): negative (-5)"), std::string::npos) << r[2];
  EXPECT_NE(r[3].find("negative.swf:6: field 2 (submit time): negative (-3)"), std::string::npos) << r[3];
}

TEST(Swf, StrictModeFailsOnTheFirstBadLine) {
  ReadOptions o;
  o.strict = true;
  auto trace = read_trace(golden("small.swf"), o);
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(trace.status().message().find("small.swf:11: field 2"), std::string::npos)
      << trace.status().message();
}

TEST(Swf, WithoutHeaderTimesAreRelative) {
  Trace t;
  ReadOptions o;
  ASSERT_TRUE(parse_swf("1 100 0 10 1 -1 5 1 60 10 1 1 1 1 1 -1 -1 -1\n", "x.swf", o, t));
  ASSERT_EQ(t.jobs.size(), 1u);
  EXPECT_EQ(t.jobs[0].submit_ms, 100000);  // ms
  EXPECT_EQ(t.jobs[0].end_ms, 110000);
  EXPECT_FALSE(t.notes.empty());
}

// Some logs drop SWF's trailing fields (16 partition, 17 preceding job, 18 think time): the
// format detection takes 15 to 18 fields as SWF, and the reader reads such a line as a job
// (peakcast reads fields 1 to 15 only; the dropped ones are unknown, -1). Before, detection
// accepted the file and the reader skipped every line ("none of its records could be read").
TEST(Swf, LinesWithTrailingFieldsDroppedAreJobs) {
  const std::string path = temp_path("short_fields.swf");
  write_text(path,
             "; UnixStartTime: 1000000000\n"
             "1 0 5 100 4 -1 1000 4 3600 2000 1 7 3 12 1\n"
             "2 10 5 100 4 -1 1000 4 3600 2000 1 7 3 12 2 -1\n"
             "3 20 5 100 4 -1 1000 4 3600 2000 1 7 3 12 1 -1 -1\n"
             "4 30 5 100 4 -1 1000 4 3600 2000 1 7 3 12\n");
  auto trace = read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->jobs.size(), 3u);
  for (const Job& j : trace->jobs) {
    EXPECT_TRUE(j.is_valid(Resource::kMem)) << j.job_id;
    EXPECT_DOUBLE_EQ(j.label(Resource::kMem), 0.5) << j.job_id;
  }
  EXPECT_EQ(trace->jobs[1].partition, "2");
  ASSERT_EQ(trace->stats.skipped, 1u);
  EXPECT_NE(trace->stats.reasons[0].find("short_fields.swf:5: fields: expected 18"), std::string::npos)
      << trace->stats.reasons[0];
}

// A UTF-8 byte-order mark before the header is dropped, as the other readers do: left in, it hid
// the first header line, and the times fell back to seconds from 1970.
TEST(Swf, AByteOrderMarkDoesNotHideTheHeader) {
  const std::string body = "; UnixStartTime: 1000000000\n1 100 0 10 1 -1 5 1 60 10 1 1 1 1 1 -1 -1 -1\n";
  for (const std::string& text : {body, "\xEF\xBB\xBF" + body}) {
    Trace t;
    ASSERT_TRUE(parse_swf(text, "bom.swf", {}, t));
    ASSERT_EQ(t.jobs.size(), 1u);
    EXPECT_EQ(t.jobs[0].submit_ms, (1000000000LL + 100) * 1000);
    EXPECT_EQ(t.stats.skipped, 0u);
  }
}

// The LANL CM-5 log from the Parallel Workloads Archive (first 60% by submit time).
TEST(SwfRealData, LanlCm5CountsAndClippedShare) {
  const std::string path = shared_data("swf/LANL-CM5-1994-4.1-cln.first60pct.swf.gz");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "real trace absent: " << path;
  auto trace = read_trace(path);  // gzip and format detected from content
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->format, Format::kSwf);
  EXPECT_EQ(trace->stats.lines, 73236u);
  EXPECT_EQ(trace->stats.jobs, 73236u);
  EXPECT_EQ(trace->stats.skipped, 0u);
  const size_t labelled = trace->stats.labelled[idx(Resource::kMem)];
  const size_t clipped = trace->stats.clipped[idx(Resource::kMem)];
  EXPECT_GT(labelled, 50000u);
  const double share = static_cast<double>(clipped) / static_cast<double>(labelled);
  EXPECT_GT(share, 0.15);
  EXPECT_LT(share, 0.30);
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kVram)], 0u);
  // Ordered in time: submit times never decrease (the log is sorted by submission).
  for (size_t i = 1; i < trace->jobs.size(); ++i) {
    ASSERT_LE(trace->jobs[i - 1].submit_ms, trace->jobs[i].submit_ms) << i;
    ASSERT_LE(trace->jobs[i].submit_ms, trace->jobs[i].end_ms) << i;
  }
  EXPECT_EQ(trace->jobs.front().submit_ms, 781275672000LL);  // UnixStartTime + 0
}

}  // namespace
}  // namespace peakcast::ingest
