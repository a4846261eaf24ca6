// ReadOptions::progress: every reader says how far it is, so that a command reading a large trace
// (a 300,000-job JSONL took 31 s before anything was printed) can show it.
#include <string>
#include <vector>

#include "golden_util.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

using test_util::golden;

struct Call {
  std::string stage;
  size_t done;
  size_t total;
};

TEST(ReaderProgress, EveryFormatReportsItsLinesAndJobsToTheEnd) {
  for (const char* name : {"canonical.jsonl", "small.swf", "sacct_2205.txt", "trace_demo.csv"}) {
    std::vector<Call> calls;
    ReadOptions o;
    o.progress = [&calls](std::string_view stage, size_t done, size_t total) {
      calls.push_back({std::string(stage), done, total});
    };
    auto trace = read_trace(golden(name), o);
    ASSERT_TRUE(trace.ok()) << name << ": " << trace.status().message();
    ASSERT_FALSE(trace->jobs.empty()) << name;
    const Call* lines = nullptr;
    const Call* jobs = nullptr;
    for (const Call& c : calls) {
      EXPECT_LE(c.done, c.total) << name << " " << c.stage;
      if (c.stage == "read lines") lines = &c;
      if (c.stage == "read jobs") jobs = &c;
    }
    ASSERT_NE(lines, nullptr) << name << ": no line progress";
    EXPECT_GT(lines->total, 0u) << name;
    EXPECT_EQ(lines->done, lines->total) << name << ": the last line call is not the end";
    ASSERT_NE(jobs, nullptr) << name << ": no job progress";
    EXPECT_EQ(jobs->total, trace->jobs.size()) << name;
    EXPECT_EQ(jobs->done, jobs->total) << name;
  }
}

}  // namespace
}  // namespace peakcast::ingest
