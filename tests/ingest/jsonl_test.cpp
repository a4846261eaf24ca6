#include <algorithm>

#include "golden_util.h"

#include <rapidcheck/gtest.h>
#include "peakcast/ingest/jsonl.h"

namespace peakcast::ingest {
namespace {

using nlohmann::json;
using test_util::expect_jobs_match;
using test_util::golden;
using test_util::shared_data;

TEST(Jsonl, GoldenRecordsAndSkips) {
  auto trace = read_trace(golden("canonical.jsonl"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->format, Format::kJsonl);
  expect_jobs_match(*trace, golden("canonical.jsonl.expected.jsonl"));
  EXPECT_EQ(trace->stats.lines, 9u);  // the blank line is not a record
  EXPECT_EQ(trace->stats.skipped, 6u);
  ASSERT_EQ(trace->stats.reasons.size(), 5u);  // max_reasons default
  const auto& r = trace->stats.reasons;
  EXPECT_NE(r[0].find("canonical.jsonl:4: colour: unknown key"), std::string::npos) << r[0];
  EXPECT_NE(r[1].find("canonical.jsonl:5: submit_time: expected a number, got a string"),
            std::string::npos)
      << r[1];
  EXPECT_NE(r[2].find("canonical.jsonl:6: peak_mem_bytes: negative"), std::string::npos) << r[2];
  EXPECT_NE(r[3].find("canonical.jsonl:8: json:"), std::string::npos) << r[3];
  EXPECT_NE(r[4].find("canonical.jsonl:9: record: expected a JSON object"), std::string::npos) << r[4];
}

TEST(Jsonl, MaxReasonsKeepsOnlyTheFirstFew) {
  ReadOptions o;
  o.max_reasons = 1;
  auto trace = read_trace(golden("canonical.jsonl"), o);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(trace->stats.skipped, 6u);
  EXPECT_EQ(trace->stats.reasons.size(), 1u);
}

TEST(Jsonl, OomRecordIsCensoredAndScriptsAreHashed) {
  auto trace = read_trace(golden("canonical.jsonl"));
  ASSERT_TRUE(trace.ok());
  ASSERT_EQ(trace->jobs.size(), 3u);
  const Job& gpu = trace->jobs[0];
  EXPECT_TRUE(gpu.is_valid(Resource::kVram));
  EXPECT_DOUBLE_EQ(gpu.label(Resource::kVram), 3289382912.0 / 42949672960.0);
  EXPECT_FALSE(gpu.is_valid(Resource::kMem));
  EXPECT_EQ(gpu.script_key.size(), 64u);  // SHA-256 hex of the redacted script
  const Job& oom = trace->jobs[1];
  EXPECT_TRUE(oom.censored);
  EXPECT_TRUE(oom.is_valid(Resource::kMem));
  EXPECT_EQ(trace->stats.censored, 1u);
  EXPECT_TRUE(trace->has_scripts);
  EXPECT_NE(oom.script_key, gpu.script_key);
  EXPECT_TRUE(trace->jobs[2].script_key.empty());  // neither script nor workload
}

// A host-memory peak of 0 is none measured (a job that ran held memory): no label, as the sacct,
// SWF and Nextflow readers read their zeros, with a note. A GPU peak of 0 is a GPU the job never
// touched: a label. Until 2026-12-06 evaluate scored a 0 host peak as a 0% label while simulate
// dropped it.
TEST(Jsonl, AHostPeakOfZeroIsNotMeasuredAGpuPeakOfZeroIs) {
  const std::string path = test_util::temp_path("zero_peaks.jsonl");
  test_util::write_text(path,
      R"({"job_id":"a","user":"u","submit_time":0,"end_time":10,"req_mem_bytes":1000,"peak_mem_bytes":0})" "\n"
      R"({"job_id":"b","user":"u","submit_time":1,"end_time":10,"req_mem_bytes":1000,"peak_mem_bytes":400})" "\n"
      R"({"job_id":"c","user":"u","submit_time":2,"end_time":10,"req_gpus":1,"gpu_mem_bytes":1000,"peak_vram_bytes":0})" "\n"
      R"({"job_id":"d","user":"u","submit_time":3,"end_time":10,"state":"OUT_OF_MEMORY","req_mem_bytes":1000,"peak_mem_bytes":0})" "\n");
  auto trace = read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->jobs.size(), 4u);
  EXPECT_FALSE(trace->jobs[0].peak_mem_bytes.has_value());
  EXPECT_FALSE(trace->jobs[0].is_valid(Resource::kMem));
  EXPECT_EQ(trace->jobs[0].req_mem_bytes, 1000u);  // the job keeps its request
  EXPECT_DOUBLE_EQ(trace->jobs[1].label(Resource::kMem), 0.4);
  ASSERT_TRUE(trace->jobs[2].is_valid(Resource::kVram));
  EXPECT_DOUBLE_EQ(trace->jobs[2].label(Resource::kVram), 0.0);
  // Killed for memory: still its censored label at the cap, with no peak.
  EXPECT_TRUE(trace->jobs[3].censored);
  EXPECT_TRUE(trace->jobs[3].is_valid(Resource::kMem));
  EXPECT_DOUBLE_EQ(trace->jobs[3].label(Resource::kMem), 1.0);
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kMem)], 2u);
  const bool noted = std::any_of(trace->notes.begin(), trace->notes.end(), [](const std::string& n) {
    return n.find("memory of 0 read as not measured (peak_mem_bytes in 2 job(s))") != std::string::npos;
  });
  EXPECT_TRUE(noted);
}

TEST(Jsonl, RequiredFieldsAndNulls) {
  auto missing = job_from_json(json{{"job_id", "x"}, {"user", "u"}, {"submit_time", 1}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message().rfind("end_time:", 0), 0u) << missing.status().message();

  JobParseOptions request;
  request.require_outcome = false;
  auto ok = job_from_json(json{{"job_id", "x"}, {"user", "u"}, {"submit_time", 1}}, request);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_FALSE(ok->peak_mem_bytes.has_value());

  auto null_required = job_from_json(
      json{{"job_id", "x"}, {"user", nullptr}, {"submit_time", 1}, {"end_time", 2}});
  ASSERT_FALSE(null_required.ok());
  EXPECT_EQ(null_required.status().message().rfind("user:", 0), 0u);

  auto null_optional = job_from_json(json{{"job_id", "x"}, {"user", "u"}, {"submit_time", 1},
                                          {"end_time", 2}, {"req_mem_bytes", nullptr}});
  ASSERT_TRUE(null_optional.ok());
  EXPECT_FALSE(null_optional->req_mem_bytes.has_value());
}

// `state` is optional and means COMPLETED when absent or null (docs/formats.md); given as "" it
// says nothing about how the job ended, and is refused rather than read as COMPLETED.
TEST(Jsonl, AnEmptyStateIsAnError) {
  const json base{{"job_id", "x"}, {"user", "u"}, {"submit_time", 1}, {"end_time", 2}};
  for (const json& state : {json(""), json("  ")}) {
    json obj = base;
    obj["state"] = state;
    auto r = job_from_json(obj);
    ASSERT_FALSE(r.ok()) << obj.dump();
    EXPECT_EQ(r.status().message(), "state: empty");
  }
  json null_state = base;
  null_state["state"] = nullptr;
  for (const json& obj : {base, null_state}) {
    auto r = job_from_json(obj);
    ASSERT_TRUE(r.ok()) << obj.dump();
    EXPECT_EQ(r->state, "COMPLETED");
  }
  Trace t;
  ASSERT_TRUE(parse_jsonl("{\"job_id\": \"a\", \"user\": \"u\", \"submit_time\": 1, \"end_time\": 2, "
                          "\"state\": \"\"}\n",
                          "s.jsonl", {}, t));
  EXPECT_TRUE(t.jobs.empty());
  ASSERT_EQ(t.stats.reasons.size(), 1u);
  EXPECT_EQ(t.stats.reasons[0], "s.jsonl:1: state: empty");
}

TEST(Jsonl, WrongTypesNameTheField) {
  const json base = {{"job_id", "x"}, {"user", "u"}, {"submit_time", 10}, {"end_time", 20}};
  const std::pair<const char*, json> cases[] = {
      {"job_id", 5},          {"user", true},         {"state", 3},
      {"req_cpus", "four"},   {"req_gpus", 1.5},      {"req_mem_bytes", json::array()},
      {"gpu_mem_bytes", -1},  {"script", 1},          {"start_time", "t"},
      {"end_time", 5},        {"req_time_s", -3},     {"peak_vram_bytes", "1G"},
  };
  for (const auto& [field, value] : cases) {
    json obj = base;
    obj[field] = value;
    auto r = job_from_json(obj);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_EQ(r.status().message().rfind(std::string(field) + ":", 0), 0u)
        << field << " -> " << r.status().message();
  }
}

TEST(Jsonl, ExtensionKeysAreIgnored) {
  auto r = job_from_json(json{{"job_id", "x"}, {"user", "u"}, {"submit_time", 1}, {"end_time", 2},
                              {"x_site", {{"rack", 4}}}});
  EXPECT_TRUE(r.ok()) << r.status().message();
}

TEST(Jsonl, StrictModeReturnsTheFirstError) {
  ReadOptions o;
  o.strict = true;
  auto trace = read_trace(golden("canonical.jsonl"), o);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("canonical.jsonl:4: colour"), std::string::npos);
}

TEST(Jsonl, LineWriterIsOneLineAndSurvivesBadUtf8) {
  Job j;
  j.job_id = "1";
  j.user = "u";
  j.submit_ms = 5;
  j.end_ms = 6;
  j.script = std::string("echo \xff\xfe\nexit 0\n");
  const std::string line = job_to_jsonl_line(j);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_TRUE(json::accept(line));
}

template <typename T>
rc::Gen<std::optional<T>> opt(rc::Gen<T> g) {
  return rc::gen::map(rc::gen::maybe(std::move(g)), [](rc::Maybe<T> m) {
    return m ? std::optional<T>(*m) : std::nullopt;
  });
}

// Jobs whose fields survive canonical JSON exactly (integral times, representable numbers).
rc::Gen<Job> arbitrary_job() {
  using namespace rc;
  return gen::apply(
      [](std::string id, std::string user, int64_t submit, int64_t run, std::optional<int64_t> wait,
         std::string state, std::optional<int> cpus_x2, std::optional<uint64_t> mem,
         std::optional<int> gpus, std::optional<int64_t> walltime, std::optional<uint64_t> gmem,
         std::optional<std::string> script, std::optional<std::string> workload,
         std::string name, std::optional<uint64_t> peak, std::optional<uint64_t> vram) {
        Job j;
        j.job_id = id.empty() ? "j" : id;
        j.user = user;
        j.submit_ms = submit;
        j.end_ms = submit + run;
        if (wait) j.start_ms = submit + std::min(*wait, run);
        j.state = state;
        if (cpus_x2) j.req_cpus = *cpus_x2 / 2.0;
        j.req_mem_bytes = mem;
        j.req_gpus = gpus;
        j.req_time_s = walltime;
        j.gpu_mem_bytes = gmem;
        j.script = script;
        j.workload = workload;
        j.job_name = name;
        j.peak_mem_bytes = peak;
        j.peak_vram_bytes = vram;
        return j;
      },
      gen::arbitrary<std::string>(), gen::arbitrary<std::string>(),
      gen::inRange<int64_t>(0, 4'000'000'000), gen::inRange<int64_t>(0, 10'000'000),
      opt(gen::inRange<int64_t>(0, 10'000'000)),
      gen::element<std::string>("COMPLETED", "FAILED", "OUT_OF_MEMORY", "CANCELLED", "TIMEOUT"),
      opt(gen::inRange(0, 2000)),
      opt(gen::inRange<uint64_t>(0, 1ULL << 50)), opt(gen::inRange(0, 64)),
      opt(gen::inRange<int64_t>(0, 10'000'000)),
      opt(gen::inRange<uint64_t>(0, 1ULL << 40)),
      opt(gen::arbitrary<std::string>()), opt(gen::arbitrary<std::string>()),
      gen::arbitrary<std::string>(), opt(gen::inRange<uint64_t>(0, 1ULL << 50)),
      opt(gen::inRange<uint64_t>(0, 1ULL << 50)));
}

bool valid_utf8(const std::string& s) {
  return json::accept(json(s).dump(-1, ' ', false, json::error_handler_t::ignore)) &&
         json(s).dump(-1, ' ', false, json::error_handler_t::ignore) ==
             json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

RC_GTEST_PROP(JsonlProperty, JobRoundTripsThroughCanonicalJson, ()) {
  Job j = *arbitrary_job();
  j.answer_id = *rc::gen::element<std::string>("", "0123456789abcdef", "standin00000001");
  auto back = job_from_json(job_to_json(j));
  RC_ASSERT(back.ok());
  RC_ASSERT(back->job_id == j.job_id);
  RC_ASSERT(back->user == j.user);
  RC_ASSERT(back->submit_ms == j.submit_ms);
  RC_ASSERT(back->start_ms == j.start_ms);
  RC_ASSERT(back->end_ms == j.end_ms);
  RC_ASSERT(back->state == j.state);
  RC_ASSERT(back->req_cpus == j.req_cpus);
  RC_ASSERT(back->req_mem_bytes == j.req_mem_bytes);
  RC_ASSERT(back->req_gpus == j.req_gpus);
  RC_ASSERT(back->req_time_s == j.req_time_s);
  RC_ASSERT(back->gpu_mem_bytes == j.gpu_mem_bytes);
  RC_ASSERT(back->script == j.script);
  RC_ASSERT(back->workload == j.workload);
  RC_ASSERT(back->job_name == j.job_name);
  RC_ASSERT(back->answer_id == j.answer_id);
  RC_ASSERT(back->peak_mem_bytes == j.peak_mem_bytes);
  RC_ASSERT(back->peak_vram_bytes == j.peak_vram_bytes);
  // Through the text form too, when the strings are valid UTF-8 (JSON text must be).
  if (valid_utf8(j.user) && valid_utf8(j.job_id) && valid_utf8(j.job_name) &&
      valid_utf8(j.script.value_or("")) && valid_utf8(j.workload.value_or(""))) {
    auto text = job_from_json(json::parse(job_to_jsonl_line(j)));
    RC_ASSERT(text.ok());
    RC_ASSERT(job_to_json(*text) == job_to_json(j));
  }
}

// The GPUMemNet measurements file is canonical JSONL written outside this project.
TEST(JsonlRealData, GpuMemNetReadsCompletely) {
  const std::string path = shared_data("gpu/gpumemnet-timm-a100.dev.jsonl");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "real trace absent: " << path;
  auto trace = read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->format, Format::kJsonl);
  EXPECT_EQ(trace->stats.jobs, 2350u);
  EXPECT_EQ(trace->stats.skipped, 0u);
  EXPECT_TRUE(trace->has_scripts);
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kVram)], 2350u);
  EXPECT_GT(trace->stats.censored, 0u);  // rows at the card's limit
}

}  // namespace
}  // namespace peakcast::ingest
