// Readers' messages say why a value was refused: a JSONL line that is not JSON gives nlohmann's
// reason (cleaned), keeping "file:line: json:"; a Nextflow size past 2^64 is too large, not
// "not a memory size".
#include "golden_util.h"

#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

std::string first_reason(std::string_view text) {
  Trace out;
  ReadOptions o;
  const Status st = parse_jsonl(text, "t.jsonl", o, out);
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(out.stats.skipped, 1u);
  return out.stats.reasons.empty() ? std::string() : out.stats.reasons.front();
}

// Found by review: both lines said only "t.jsonl:1: json: not a valid JSON value".
TEST(JsonLine, BadJsonSaysWhy) {
  const std::string utf8 = first_reason(
      "{\"job_id\":\"1\",\"user\":\"a\xff\",\"submit_time\":1,\"end_time\":2}\n");
  EXPECT_TRUE(utf8.starts_with("t.jsonl:1: json: ")) << utf8;
  EXPECT_NE(utf8.find("UTF-8"), std::string::npos) << utf8;
  EXPECT_NE(utf8.find("(column 24)"), std::string::npos) << utf8;
  EXPECT_EQ(utf8.find('\xff'), std::string::npos) << "the raw byte is not echoed";

  const std::string big = first_reason(
      "{\"job_id\":\"1\",\"user\":\"a\",\"submit_time\":1,\"end_time\":2,\"req_mem_bytes\":1e400}\n");
  EXPECT_TRUE(big.starts_with("t.jsonl:1: json: ")) << big;
  EXPECT_NE(big.find("number overflow"), std::string::npos) << big;
  EXPECT_NE(big.find("1e400"), std::string::npos) << big;

  // The input echoed after "last read:" (raw bytes, maybe part of a secret) is left out.
  const std::string cut = first_reason("{\"job_id\": \"1\", \"token\": \"s3cr3t\n");
  EXPECT_TRUE(cut.starts_with("t.jsonl:1: json: ")) << cut;
  EXPECT_EQ(cut.find("s3cr3t"), std::string::npos) << cut;
  EXPECT_EQ(cut.find("last read"), std::string::npos) << cut;
}

// Found by review: each said "memory: not a memory size: '...'" though it is a size, too large.
TEST(NextflowSize, ASizePastTheLimitIsTooLargeNotMalformed) {
  for (const char* value : {"18446744073709551615", "99999999999999999999999999999999", "99999999 PB"}) {
    Trace out;
    const Status st = parse_nextflow(
        std::string("task_id,process,submit,complete,memory,peak_rss\n1,A,1000,2000,") + value + ",1073741824\n",
        "t.csv", {}, out);
    ASSERT_TRUE(st.is_ok()) << value << ": " << st.message();
    ASSERT_EQ(out.stats.reasons.size(), 1u) << value;
    const std::string& r = out.stats.reasons.front();
    EXPECT_NE(r.find("t.csv:2: memory: too large: '" + std::string(value) + "'"), std::string::npos) << r;
    EXPECT_NE(r.find("1.8e19 bytes"), std::string::npos) << r;
  }
  // What is no size at all still says so.
  Trace out;
  const Status st =
      parse_nextflow("task_id,process,submit,complete,memory,peak_rss\n1,A,1000,2000,lots,1\n", "t.csv", {}, out);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(out.stats.reasons.size(), 1u);
  EXPECT_NE(out.stats.reasons.front().find("memory: not a memory size: 'lots'"), std::string::npos)
      << out.stats.reasons.front();
}

// The four readers read a host-memory peak of 0 as not measured (no label) and say so in one
// wording, naming the field in the format's own words: an administrator greps for either. Until
// 2026-12-06 each reader wrote its own note ("2 SWF jobs have a used memory (field 7) of 0",
// "sacct: 2 job(s) with a memory peak of 0", ...), and "read as not measured" found two of four.
TEST(ReaderNotes, AZeroMemoryPeakIsNotedInOneWordingByEveryReader) {
  using Parse = Status (*)(std::string_view, const std::string&, const ReadOptions&, Trace&);
  struct Case {
    Parse parse;
    std::string text;
    std::string field;
  };
  const Case cases[] = {
      {parse_swf, "; UnixStartTime: 1000000000\n1 0 1 100 4 -1 0 4 3600 2000 1 7 3 12 1 -1 -1 -1\n",
       "used memory (SWF field 7)"},
      {parse_jsonl,
       R"({"job_id":"a","user":"u","submit_time":0,"end_time":10,"req_mem_bytes":1000,"peak_mem_bytes":0})"
       "\n",
       "peak_mem_bytes"},
      {parse_nextflow,
       "task_id\tprocess\tstatus\texit\tsubmit\tcomplete\trealtime\tmemory\tpeak_rss\n"
       "1\tA\tCOMPLETED\t0\t1000\t2000\t900\t4294967296\t0\n",
       "peak_rss"},
      {parse_sacct, "JobID|State|ReqMem|MaxRSS\n1|COMPLETED|1G|\n1.batch|COMPLETED||0\n",
       "MaxRSS/TRESUsageIn mem= of every step"},
  };
  for (const Case& c : cases) {
    Trace t;
    const Status st = c.parse(c.text, "t", ReadOptions{}, t);
    ASSERT_TRUE(st.is_ok()) << st.message();
    ASSERT_EQ(t.jobs.size(), 1u) << c.field;
    EXPECT_FALSE(t.jobs[0].peak_mem_bytes.has_value()) << c.field;
    std::vector<std::string> noted;
    for (const std::string& n : t.notes) {
      if (n.find("read as not measured") != std::string::npos) noted.push_back(n);
    }
    ASSERT_EQ(noted.size(), 1u) << c.field;
    const std::string& note = noted[0];
    EXPECT_NE(note.find("memory of 0 read as not measured (" + c.field + " in 1 job(s)): "),
              std::string::npos)
        << note;
    EXPECT_TRUE(note.ends_with(". No memory label: evaluate and train do not score them, simulate "
                               "does not replay them"))
        << note;
  }
}

}  // namespace
}  // namespace peakcast::ingest
