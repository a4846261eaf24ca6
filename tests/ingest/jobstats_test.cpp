// jobstats summaries in AdminComment: the decoder on summaries built to jobstats' schema (by
// Python's gzip in the golden file, by our encoder here), the special values, malformed input,
// and the sacct reader's labels from them (golden sacct_jobstats.txt, made by
// golden/make_sacct_jobstats.py).
#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "golden_util.h"  // gtest first
#include "peakcast/ingest/jobstats.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

using test_util::expect_jobs_match;
using test_util::golden;

constexpr uint64_t kG = 1024ull * 1024 * 1024;

// The gzip bytes of a comment ("JS1:" + base64), and a comment of gzip bytes: to build inputs
// our encoder does not (concatenated members, a flipped CRC, bytes after the end).
std::string gzip_of(const std::string& comment) {
  const std::string b64 = comment.substr(4);
  std::string out(b64.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  out.resize(static_cast<size_t>(n) - static_cast<size_t>(std::count(b64.end() - 2, b64.end(), '=')));
  return out;
}

std::string comment_of(const std::string& gz) {
  std::string b64(4 * ((gz.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                                reinterpret_cast<const unsigned char*>(gz.data()), static_cast<int>(gz.size()));
  b64.resize(static_cast<size_t>(n));
  return "JS1:" + b64;
}

// A summary whose JSON text is exactly `size` bytes (a padding string makes up the rest).
std::string summary_of_size(size_t size) {
  const std::string head = R"({"nodes": {"n": {"used_memory": 5}}, "pad": ")";
  return head + std::string(size - head.size() - 2, 'a') + "\"}";
}

const Job* find_job(const Trace& t, std::string_view id) {
  for (const Job& j : t.jobs) {
    if (j.job_id == id) return &j;
  }
  return nullptr;
}

std::string note_with(const Trace& t, std::string_view needle) {
  for (const std::string& n : t.notes) {
    if (n.find(needle) != std::string::npos) return n;
  }
  return {};
}

TEST(Jobstats, RoundTripsTheDocumentedExample) {
  const std::string json = R"({"gpus": 1, "nodes": {"della-k1g1": {"cpus": 12,
      "gpu_total_memory": {"1": 85899345920}, "gpu_used_memory": {"1": 83314868224},
      "gpu_utilization": {"1": 98.6}, "total_memory": 137438953472, "total_time": 57620.8,
      "used_memory": 84683702272}}, "total_time": 50944})";
  const std::string comment = jobstats::encode_admin_comment(json);
  ASSERT_TRUE(comment.starts_with("JS1:H4sI")) << "gzip magic, base64: " << comment.substr(0, 12);
  auto d = jobstats::decode_admin_comment(comment);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->kind, jobstats::Kind::kSummary);
  EXPECT_EQ(d->summary.used_memory_bytes, 84683702272u);
  EXPECT_EQ(d->summary.total_memory_bytes, 137438953472u);
  ASSERT_EQ(d->summary.gpus.size(), 1u);
  EXPECT_EQ(d->summary.gpus[0].node, "della-k1g1");
  EXPECT_EQ(d->summary.gpus[0].index, "1");
  EXPECT_EQ(d->summary.gpus[0].used_bytes, 83314868224u);
  EXPECT_EQ(d->summary.gpus[0].total_bytes, 85899345920u);
}

TEST(Jobstats, SpecialValuesAndOtherComments) {
  auto s = jobstats::decode_admin_comment("JS1:Short");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, jobstats::Kind::kShort);
  auto n = jobstats::decode_admin_comment(" JS1:None ");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->kind, jobstats::Kind::kNoData);
  for (const char* other : {"", "rebooted node", "js1:lowercase is not the prefix"}) {
    auto a = jobstats::decode_admin_comment(other);
    ASSERT_TRUE(a.ok()) << other;
    EXPECT_EQ(a->kind, jobstats::Kind::kAbsent) << other;
  }
}

TEST(Jobstats, MalformedSummariesSayWhy) {
  struct Case {
    std::string text;
    std::string why;
  } cases[] = {
      {"JS1:", "base64"},
      {"JS1:abc", "base64"},
      {"JS1:ab*d", "base64"},
      {"JS1:aGVsbG8gd29ybGQh", "gzip"},  // "hello world!": base64 but not gzip
      {jobstats::encode_admin_comment("{not json"), "json"},
      {jobstats::encode_admin_comment("[1,2]"), "not an object"},
      {jobstats::encode_admin_comment(R"({"gpus": 1})"), "no \"nodes\""},
      {jobstats::encode_admin_comment(R"({"nodes": [1]})"), "nodes: not an object"},
      {jobstats::encode_admin_comment(R"({"nodes": {"n": {"used_memory": "lots"}}})"),
       "nodes.n.used_memory"},
      {jobstats::encode_admin_comment(R"({"nodes": {"n": {"used_memory": -5}}})"), "out of range"},
      {jobstats::encode_admin_comment(R"({"nodes": {"n": {"gpu_used_memory": {"0": true}}}})"),
       "gpu_used_memory.0"},
      {jobstats::encode_admin_comment(R"({"nodes": {"n": {"gpu_used_memory": 5}}})"),
       "not an object"},
  };
  for (const Case& c : cases) {
    auto d = jobstats::decode_admin_comment(c.text);
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_NE(d.status().message().find(c.why), std::string::npos)
        << c.text << " -> " << d.status().message();
  }
  // A truncated stream (the comment cut short) is malformed, not a shorter summary.
  const std::string whole = jobstats::encode_admin_comment(R"({"nodes": {"n": {"used_memory": 5}}})");
  std::string cut = whole.substr(0, whole.size() - 8);
  cut.resize(cut.size() - (cut.size() - 4) % 4);
  EXPECT_FALSE(jobstats::decode_admin_comment(cut).ok());
}

// A summary is a few KB; one that inflates past 4 MiB is refused before it is held whole (a small
// comment can inflate a thousandfold). Exactly 4 MiB is still read.
TEST(Jobstats, InflatedSizeIsCappedAtFourMiB) {
  constexpr size_t kCap = size_t{4} << 20;
  auto at_cap = jobstats::decode_admin_comment(jobstats::encode_admin_comment(summary_of_size(kCap)));
  ASSERT_TRUE(at_cap.ok()) << at_cap.status().message();
  EXPECT_EQ(at_cap->summary.used_memory_bytes, 5u);
  const std::string big = jobstats::encode_admin_comment(summary_of_size(kCap + 1));
  EXPECT_LT(big.size(), size_t{64} << 10) << "the cap is on what it inflates to, not on the comment";
  auto over = jobstats::decode_admin_comment(big);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(), "gzip: inflates past 4 MiB");
}

// Corrupt compressed data is malformed, wherever it is: each base64 character of the deflate data
// changed in turn, and the gzip trailer's CRC changed (the data inflates, the check fails).
TEST(Jobstats, CorruptGzipIsMalformed) {
  const std::string json = R"({"nodes": {"n1": {"used_memory": 5, "gpu_used_memory": {"0": 7}}, "n2": {"used_memory": 6}}})";
  const std::string whole = jobstats::encode_admin_comment(json);
  ASSERT_TRUE(jobstats::decode_admin_comment(whole).ok());
  // "JS1:" + 10 header bytes (14 characters) ... deflate data ... 8 trailer bytes (11 characters).
  for (size_t i = 4 + 16; i + 16 < whole.size(); ++i) {
    std::string bad = whole;
    bad[i] = bad[i] == 'A' ? 'B' : 'A';
    auto d = jobstats::decode_admin_comment(bad);
    ASSERT_FALSE(d.ok()) << "character " << i << " changed";
    EXPECT_EQ(d.status().message().rfind("gzip: ", 0), 0u) << d.status().message();
  }
  std::string gz = gzip_of(whole);
  gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0x01);  // CRC-32, first byte
  auto d = jobstats::decode_admin_comment(comment_of(gz));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message().rfind("gzip: ", 0), 0u) << d.status().message();
}

// A gzip file is a series of members (RFC 1952 2.2); gzip -d and Python's gzip.decompress, which
// jobstats' own reader uses, read them all, so one summary split over two members is whole. Bytes
// after the last member that are no member are corrupt, as they are to both (the first member's
// JSON alone was read before).
TEST(Jobstats, ConcatenatedMembersAreOneSummaryAndTrailingBytesAreCorrupt) {
  const std::string json = R"({"nodes": {"n": {"used_memory": 5, "gpu_used_memory": {"0": 7}}}})";
  const std::string two = gzip_of(jobstats::encode_admin_comment(json.substr(0, 20))) +
                          gzip_of(jobstats::encode_admin_comment(json.substr(20)));
  auto d = jobstats::decode_admin_comment(comment_of(two));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->summary.used_memory_bytes, 5u);
  ASSERT_EQ(d->summary.gpus.size(), 1u);
  EXPECT_EQ(d->summary.gpus[0].used_bytes, 7u);
  const std::string one = gzip_of(jobstats::encode_admin_comment(json));
  for (const std::string& tail : {std::string("garbage"), std::string(1, '\x1f'), std::string("\x1f\x8b\x08")}) {
    auto t = jobstats::decode_admin_comment(comment_of(one + tail));
    ASSERT_FALSE(t.ok()) << "tail of " << tail.size() << " bytes";
    EXPECT_EQ(t.status().message().rfind("gzip: ", 0), 0u) << t.status().message();
  }
}

TEST(Jobstats, BusiestGpuIsTheFullestNotTheLargest) {
  jobstats::Summary s;
  s.gpus = {{"a", "0", 40 * kG, 80 * kG}, {"a", "1", 30 * kG, 40 * kG}, {"b", "0", 10 * kG, 80 * kG}};
  const jobstats::Gpu* g = jobstats::busiest_gpu(s);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->index, "1");  // 75% beats 50% though it holds fewer bytes
  EXPECT_EQ(jobstats::busiest_gpu(jobstats::Summary{}), nullptr);
}

TEST(Jobstats, SacctGolden) {
  ReadOptions o;
  o.format = Format::kSacct;
  auto trace = read_trace(golden("sacct_jobstats.txt"), o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  expect_jobs_match(*trace, golden("sacct_jobstats.txt.expected.jsonl"));
  EXPECT_EQ(trace->stats.skipped, 0u) << "a malformed summary never drops its job";
  EXPECT_EQ(trace->stats.jobs, 9u);
  // Counted in the reader's notes: used, empty (Short/None), malformed with the first reason.
  EXPECT_NE(note_with(*trace, "4 job(s) labelled from jobstats"), "");
  EXPECT_NE(note_with(*trace, "2 job(s) with AdminComment JS1:Short or JS1:None"), "");
  const std::string bad = note_with(*trace, "2 malformed jobstats");
  EXPECT_NE(bad.find("sacct_jobstats.txt:7: AdminComment: base64"), std::string::npos) << bad;
  // The labels the summaries gave, counted like any other.
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kVram)], 3u);
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kMem)], 9u);
  const Job* two = find_job(*trace, "101");
  ASSERT_NE(two, nullptr);
  EXPECT_DOUBLE_EQ(two->label(Resource::kVram), 0.75);  // busiest of 2 GPUs: 60 of 80 GiB
  EXPECT_DOUBLE_EQ(find_job(*trace, "102")->label(Resource::kMem), 3.0 / 8.0);
  EXPECT_DOUBLE_EQ(find_job(*trace, "108")->label(Resource::kVram), 0.25);
  EXPECT_DOUBLE_EQ(find_job(*trace, "109")->label(Resource::kVram), 0.5);
}

// A job --exclusive gave GPUs it did not ask for (ReqTRES names none, AllocTRES every GPU of the
// node) is a job without GPUs, as the Slurm hook sends it: the GPUs jobstats saw on its node are
// not its request, so they give it no GPU count and no VRAM label (its host memory is read as
// before). Where neither TRES names a GPU (109 in the golden file: no gres configured), the
// summary's GPUs are the job's, as before.
TEST(Jobstats, GpusTheJobDidNotAskForGiveNoVramLabel) {
  const std::string summary = jobstats::encode_admin_comment(
      R"({"gpus": 2, "nodes": {"n1": {"gpu_total_memory": {"0": 17179869184, "1": 17179869184},
      "gpu_used_memory": {"0": 0, "1": 0}, "used_memory": 104857600, "total_memory": 1048576000}}})");
  const std::string path = testing::TempDir() + "/exclusive_jobstats.txt";
  {
    std::ofstream f(path);
    f << "JobID|State|ReqTRES|AllocTRES|AdminComment\n"
      << "1|COMPLETED|cpu=1,mem=500M,node=1|cpu=2,gres/gpu=2,mem=1000M,node=1|" << summary << "\n"
      << "2|COMPLETED|cpu=1,mem=500M,node=1|cpu=1,mem=500M,node=1|" << summary << "\n";
  }
  ReadOptions o;
  o.format = Format::kSacct;
  auto trace = read_trace(path, o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const Job* excl = find_job(*trace, "1");
  ASSERT_NE(excl, nullptr);
  EXPECT_FALSE(excl->req_gpus);
  EXPECT_FALSE(excl->peak_vram_bytes);
  EXPECT_DOUBLE_EQ(excl->label(Resource::kMem), 0.1);  // 100 MiB of AllocTRES's 1000M
  const Job* nogres = find_job(*trace, "2");
  ASSERT_NE(nogres, nullptr);
  EXPECT_EQ(nogres->req_gpus, 2);
  EXPECT_DOUBLE_EQ(nogres->label(Resource::kVram), 0.0);
}

// An --exclusive job is given every GPU of its node (AllocTRES) beyond the GPUs it asked for
// (ReqTRES, the count the Slurm hook sends), and jobstats samples each of them. Its VRAM label is a
// share of the requested GPUs' memory, as for gres/gpumem (SacctLabels tests): the memory used on
// all of them over the requested GPUs' capacity, never less than the busiest GPU's share. A job
// that used two GPUs when it asked for one needed both: the busiest alone (6 of 16 GiB) would
// tell the daemon it fits in 37.5% of the one it asks for. A note counts and names such jobs.
TEST(Jobstats, AnExclusiveJobThatUsedMoreGpusThanItAskedForIsLabelledOverTheRequestedOnes) {
  auto summary = [](const std::string& used) {
    return jobstats::encode_admin_comment(
        R"({"gpus": 4, "nodes": {"n1": {"gpu_total_memory": {"0": 17179869184, "1": 17179869184,
        "2": 17179869184, "3": 17179869184}, "gpu_used_memory": )" + used + R"(}}})");
  };
  const std::string path = testing::TempDir() + "/exclusive_multi_gpu.txt";
  {
    std::ofstream f(path);
    f << "JobID|State|ReqTRES|AllocTRES|AdminComment\n"
      // asked for 1, given 2, used both: 6 + 4 GiB over 16 GiB
      << "1|COMPLETED|cpu=1,gres/gpu=1,mem=1G,node=1|cpu=2,gres/gpu=2,mem=2G,node=1|"
      << summary(R"({"0": 6442450944, "1": 4294967296})") << "\n"
      // asked for 2, given 4, used three: 10 + 8 + 6 GiB over 2 x 16 GiB
      << "2|COMPLETED|cpu=1,gres/gpu=2,mem=1G,node=1|cpu=4,gres/gpu=4,mem=4G,node=1|"
      << summary(R"({"0": 10737418240, "1": 8589934592, "2": 6442450944, "3": 0})") << "\n"
      // asked for 1, given 2, used one: the busiest GPU's share, as before
      << "3|COMPLETED|cpu=1,gres/gpu=1,mem=1G,node=1|cpu=2,gres/gpu=2,mem=2G,node=1|"
      << summary(R"({"0": 0, "1": 6442450944})") << "\n"
      // asked for 1, given 2, used 12 + 10 GiB: more than the one it asked for holds, clipped
      << "4|COMPLETED|cpu=1,gres/gpu=1,mem=1G,node=1|cpu=2,gres/gpu=2,mem=2G,node=1|"
      << summary(R"({"0": 12884901888, "1": 10737418240})") << "\n"
      // asked for 2 and given 2 (no --exclusive): the busiest GPU's share, as before
      << "5|COMPLETED|cpu=1,gres/gpu=2,mem=1G,node=1|cpu=1,gres/gpu=2,mem=1G,node=1|"
      << summary(R"({"0": 6442450944, "1": 4294967296})") << "\n";
  }
  ReadOptions o;
  o.format = Format::kSacct;
  auto trace = read_trace(path, o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->jobs.size(), 5u);
  const Job* both = find_job(*trace, "1");
  ASSERT_NE(both, nullptr);
  EXPECT_EQ(both->req_gpus, 1);
  EXPECT_EQ(both->gpu_mem_bytes, 16 * kG);
  EXPECT_EQ(both->peak_vram_bytes, 10 * kG);
  EXPECT_DOUBLE_EQ(both->label(Resource::kVram), 10.0 / 16.0);
  EXPECT_DOUBLE_EQ(find_job(*trace, "2")->label(Resource::kVram), 24.0 / 32.0);
  EXPECT_DOUBLE_EQ(find_job(*trace, "3")->label(Resource::kVram), 6.0 / 16.0);
  const Job* over = find_job(*trace, "4");
  ASSERT_NE(over, nullptr);
  EXPECT_DOUBLE_EQ(over->label(Resource::kVram), 1.0);
  EXPECT_TRUE(over->clipped[idx(Resource::kVram)]);
  EXPECT_DOUBLE_EQ(find_job(*trace, "5")->label(Resource::kVram), 6.0 / 16.0);
  const std::string note = note_with(*trace, "3 job(s) used more GPUs than their ReqTRES states");
  EXPECT_NE(note, "") << "notes: " << (trace->notes.empty() ? "" : trace->notes.back());
  EXPECT_NE(note.find("exclusive_multi_gpu.txt:2 1"), std::string::npos) << note;
  EXPECT_EQ(note_with(*trace, "(gres/gpumem)"), "") << "not counted again as a gres/gpumem peak";
}

TEST(Jobstats, StrictModeDoesNotRejectAMalformedSummary) {
  // A broken summary is the monitoring's fault, not a malformed sacct row.
  ReadOptions o;
  o.format = Format::kSacct;
  o.strict = true;
  auto trace = read_trace(golden("sacct_jobstats.txt"), o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->jobs.size(), 9u);
}

}  // namespace
}  // namespace peakcast::ingest
