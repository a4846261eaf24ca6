// The recommended-request rule: each step, the rule it names, the OOM guarantee, the config file.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "peakcast/sizing/recommend.h"

namespace peakcast::sizing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

RecommendConfig plain() {
  RecommendConfig c;
  c.defaults.margin_fraction = 0.1;
  c.defaults.granularity_bytes = 256 * kMiB;
  c.defaults.floor_bytes = 512 * kMiB;
  return c;
}

TEST(Recommend, UpperPlusMarginRoundedUpToGranularity) {
  RecommendInput in;
  in.upper_bytes = 2.0 * kGiB;  // * 1.1 = 2.2 GiB -> 2.25 GiB
  in.request_bytes = 8 * kGiB;
  auto r = recommend_request(in, plain());
  EXPECT_EQ(r.bytes, 9 * 256 * kMiB);
  EXPECT_EQ(r.rule, "default: upper+margin");
  EXPECT_EQ(r.bytes % (256 * kMiB), 0u);
}

TEST(Recommend, MarginBytesAddsAfterTheFraction) {
  RecommendConfig c = plain();
  c.defaults.margin_fraction = 0.0;
  c.defaults.margin_bytes = 100 * kMiB;
  c.defaults.granularity_bytes = kMiB;
  RecommendInput in;
  in.upper_bytes = 1000.0 * kMiB;
  EXPECT_EQ(recommend_request(in, c).bytes, 1100 * kMiB);
}

TEST(Recommend, FloorAndPartitionSettings) {
  RecommendConfig c = plain();
  RecommendSettings gpu = c.defaults;
  gpu.floor_bytes = 4 * kGiB;
  c.partitions["gpu"] = gpu;
  RecommendInput in;
  in.upper_bytes = 100.0 * kMiB;
  in.request_bytes = 16 * kGiB;
  in.partition = "gpu";
  auto r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 4 * kGiB);
  EXPECT_EQ(r.rule, "partition gpu: floor");
  in.partition = "cpu";  // no settings of its own: the defaults
  r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 512 * kMiB);
  EXPECT_EQ(r.rule, "default: floor");
}

TEST(Recommend, NeverAboveTheUsersRequestUnlessConfigured) {
  RecommendInput in;
  in.upper_bytes = 10.0 * kGiB;
  in.request_bytes = 4 * kGiB;
  auto r = recommend_request(in, plain());
  EXPECT_EQ(r.bytes, 4 * kGiB);
  EXPECT_EQ(r.rule, "default: capped at request");
  RecommendConfig above = plain();
  above.defaults.allow_above_request = true;
  r = recommend_request(in, above);
  EXPECT_GT(r.bytes, 4 * kGiB);
  EXPECT_EQ(r.rule, "default: upper+margin");
  // Over many uppers and requests, the default never exceeds the request.
  for (double u = 0; u < 64.0 * kGiB; u += 0.37 * kGiB) {
    for (uint64_t req : {1 * kGiB, 3 * kGiB + 5, 32 * kGiB}) {
      in.upper_bytes = u;
      in.request_bytes = req;
      EXPECT_LE(recommend_request(in, plain()).bytes, req);
    }
  }
}

TEST(Recommend, AnOomNeverGivesARecommendationAtOrBelowTheFailedRequest) {
  RecommendInput in;
  in.request_bytes = 4 * kGiB;
  in.failed_request_bytes = 4 * kGiB;  // the user's request ran out of memory
  for (double u = 0; u < 16.0 * kGiB; u += 0.25 * kGiB) {
    in.upper_bytes = u;
    auto r = recommend_request(in, plain());
    EXPECT_GT(r.bytes, 4 * kGiB) << "upper " << u;
    if (u < 4.0 * kGiB) {
      EXPECT_EQ(r.rule, "default: oom: above failed request");
    }
  }
  in.upper_bytes = 1.0 * kGiB;
  EXPECT_GE(recommend_request(in, plain()).bytes, static_cast<uint64_t>(1.2 * 4 * kGiB));
}

TEST(Recommend, OnceTheRequestItselfRanOutOfMemoryTheBoundIsNotCappedAtIt) {
  RecommendInput in;
  in.request_bytes = 4 * kGiB;
  in.upper_bytes = 10.0 * kGiB;
  in.failed_request_bytes = 4 * kGiB;  // the user's own request was too small
  auto r = recommend_request(in, plain());
  EXPECT_GE(r.bytes, 10 * kGiB);  // the bound, not failed x 1.2
  EXPECT_EQ(r.rule, "default: upper+margin");
  in.failed_request_bytes = 5 * kGiB;  // a larger request failed too
  EXPECT_GE(recommend_request(in, plain()).bytes, 10 * kGiB);
  // A request below the user's that failed (a lowered one) says nothing about the user's own:
  // the cap at the user's request stands, above the failed one.
  in.failed_request_bytes = 3 * kGiB;
  r = recommend_request(in, plain());
  EXPECT_EQ(r.bytes, 4 * kGiB);
  EXPECT_EQ(r.rule, "default: capped at request");
  // Without an OOM the cap stands.
  in.failed_request_bytes.reset();
  EXPECT_EQ(recommend_request(in, plain()).bytes, 4 * kGiB);
}

// The hook lowered --mem and the run was killed there: the next answer is the user's request
// (not the lowered limit plus the OOM step, which fails again wherever the cut was deeper), never
// above it, and a partition limit still holds.
TEST(Recommend, AfterAKillAtALoweredLimitTheRequestItself) {
  RecommendInput in;
  in.request_bytes = 8 * kGiB;
  in.upper_bytes = 2.0 * kGiB;
  in.failed_request_bytes = 3 * kGiB;  // the lowered limit it was killed at
  auto r = recommend_request(in, plain());
  EXPECT_LT(r.bytes, 8 * kGiB);  // without the flag: above the failed limit, below the request
  EXPECT_GT(r.bytes, 3 * kGiB);
  in.failed_at_lowered_limit = true;
  r = recommend_request(in, plain());
  EXPECT_EQ(r.bytes, 8 * kGiB);
  EXPECT_EQ(r.rule, "default: oom at a lowered limit: the request");
  in.upper_bytes = 20.0 * kGiB;  // a bound above the request: capped at it, as ever
  EXPECT_EQ(recommend_request(in, plain()).bytes, 8 * kGiB);
  RecommendConfig c = plain();
  c.defaults.limit_bytes = 6 * kGiB;
  in.upper_bytes = 2.0 * kGiB;
  r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 6 * kGiB);
  EXPECT_EQ(r.rule, "default: capped at partition limit");
}

TEST(Recommend, NeverAboveThePartitionLimitEvenAfterAnOom) {
  RecommendConfig c = plain();
  c.defaults.allow_above_request = true;
  c.defaults.limit_bytes = 6 * kGiB;
  RecommendInput in;
  in.upper_bytes = 20.0 * kGiB;
  auto r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 6 * kGiB);
  EXPECT_EQ(r.rule, "default: capped at partition limit");
  in.upper_bytes = 1.0 * kGiB;
  in.failed_request_bytes = 6 * kGiB;
  r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 6 * kGiB);
  EXPECT_EQ(r.rule, "default: capped at partition limit");
}

// A job that may run in several partitions (--partition=gpu,cpu) gets the strictest settings of
// them: it may land in any. Looked up as one name, the list had no settings and got the defaults,
// so a partition's floor and limit were ignored (above the limit with allow_above_request, or
// after an OOM).
TEST(Recommend, APartitionListTakesTheStrictestOfEachSetting) {
  RecommendConfig c = plain();
  RecommendSettings gpu = c.defaults, cpu = c.defaults;
  gpu.floor_bytes = 4 * kGiB;
  gpu.limit_bytes = 512 * kGiB;
  gpu.allow_above_request = true;
  gpu.margin_fraction = 0.5;
  cpu.limit_bytes = 64 * kGiB;
  cpu.allow_above_request = true;
  cpu.granularity_bytes = kGiB;
  c.partitions["gpu"] = gpu;
  c.partitions["cpu"] = cpu;
  RecommendInput in;
  in.request_bytes = 16 * kGiB;
  in.partition = "gpu,cpu";
  in.upper_bytes = 100.0 * kMiB;
  auto r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 4 * kGiB);  // gpu's floor
  EXPECT_EQ(r.rule, "partitions gpu,cpu (strictest): floor");
  in.upper_bytes = 10.0 * kGiB;  // x 1.5 (gpu's margin) = 15 GiB, rounded to cpu's 1 GiB
  r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 15 * kGiB);
  EXPECT_EQ(r.rule, "partitions gpu,cpu (strictest): upper+margin");
  in.upper_bytes = 100.0 * kGiB;  // both allow above the request; cpu's limit is the smaller
  r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 64 * kGiB);
  EXPECT_EQ(r.rule, "partitions gpu,cpu (strictest): capped at partition limit");
  in.upper_bytes = 1.0 * kGiB;  // after an OOM above cpu's limit: still never above it
  in.failed_request_bytes = 100 * kGiB;
  r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 64 * kGiB);
  EXPECT_EQ(r.rule, "partitions gpu,cpu (strictest): capped at partition limit");
  // A partition without settings of its own brings the defaults: not above the request.
  in.failed_request_bytes.reset();
  in.upper_bytes = 100.0 * kGiB;
  in.partition = " gpu , debug,,gpu";
  r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 16 * kGiB);
  EXPECT_EQ(r.rule, "partitions gpu,debug (strictest): capped at request");
  // One name, however written; none of the names with settings: the defaults.
  in.partition = "gpu,";
  EXPECT_EQ(recommend_request(in, c).rule, "partition gpu: upper+margin");
  in.partition = "debug,short";
  EXPECT_EQ(recommend_request(in, c).rule, "default: capped at request");
}

TEST(Recommend, PartitionNamesSplitTrimAndDeduplicate) {
  EXPECT_EQ(partition_names(" gpu, cpu,,gpu ,\t"), (std::vector<std::string>{"gpu", "cpu"}));
  EXPECT_TRUE(partition_names("").empty());
  EXPECT_TRUE(partition_names(",, ,").empty());
  EXPECT_EQ(partition_names("debug"), std::vector<std::string>{"debug"});
}

// A job that names no partition runs in slurm.conf's default one: default_partition says which,
// and its settings (limit included) apply. Without it, the "default" settings.
TEST(Recommend, NoPartitionIsTheConfiguredDefaultPartition) {
  RecommendConfig c = plain();
  RecommendSettings cpu = c.defaults;
  cpu.allow_above_request = true;
  cpu.limit_bytes = 6 * kGiB;
  c.partitions["cpu"] = cpu;
  RecommendInput in;
  in.request_bytes = 4 * kGiB;
  in.upper_bytes = 20.0 * kGiB;
  auto r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 4 * kGiB);
  EXPECT_EQ(r.rule, "default: capped at request");
  c.default_partition = "cpu";
  r = recommend_request(in, c);
  EXPECT_EQ(r.bytes, 6 * kGiB);
  EXPECT_EQ(r.rule, "partition cpu (the default partition): capped at partition limit");
  c.default_partition = "short";  // a default partition without settings of its own
  EXPECT_EQ(recommend_request(in, c).rule, "default: capped at request");
}

TEST(RecommendConfigFile, ReadsTheDefaultPartition) {
  auto c = parse_recommend_config(R"({"default_partition": "cpu", "partitions": {"cpu": {"limit_bytes": "64G"}}})",
                                  "sizing.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->default_partition, "cpu");
  for (const char* bad : {R"({"default_partition": "gpu,cpu"})", R"({"default_partition": ""})",
                          R"({"default_partition": " cpu"})", R"({"default_partition": 3})"}) {
    auto e = parse_recommend_config(bad, "sizing.json");
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().message().rfind("sizing.json: default_partition: must be one partition name", 0), 0u)
        << e.status().message();
  }
}

TEST(RecommendConfigFile, ReadsDefaultsAndPartitionsWithUnits) {
  auto c = parse_recommend_config(
      R"({"default": {"margin_fraction": 0.2, "granularity_bytes": "128M", "floor_bytes": 1073741824},
          "partitions": {"gpu": {"floor_bytes": "4G", "limit_bytes": "512G", "allow_above_request": true}}})",
      "sizing.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->defaults.margin_fraction, 0.2);
  EXPECT_EQ(c->defaults.granularity_bytes, 128 * kMiB);
  const auto& gpu = c->partitions.at("gpu");
  EXPECT_EQ(gpu.floor_bytes, 4 * kGiB);
  EXPECT_EQ(gpu.limit_bytes, 512 * kGiB);
  EXPECT_TRUE(gpu.allow_above_request);
  EXPECT_DOUBLE_EQ(gpu.margin_fraction, 0.2);  // inherited from "default"
}

TEST(RecommendConfigFile, ErrorsNameTheFileAndTheField) {
  struct Case { const char* text; const char* where; };
  for (const Case& k : {Case{R"({"default": {"floor_bytes": "lots"}})", "sizing.json: default.floor_bytes: "},
                        Case{R"({"partitions": {"gpu": {"margin_fraction": "x"}}})",
                             "sizing.json: partitions.gpu.margin_fraction: "},
                        Case{R"({"partitions": {"gpu": {"flor_bytes": 1}}})", "sizing.json: partitions.gpu.flor_bytes: unknown"},
                        Case{R"({"default": {"limit_bytes": 0}})", "sizing.json: default.limit_bytes: "},
                        Case{R"({"defaults": {}})", "sizing.json: defaults: unknown"},
                        Case{R"({"default": )", "sizing.json:1: not valid JSON"},
                        // a number no double holds is the parser's out_of_range, not a parse_error
                        Case{R"({"default": {"margin_fraction": 1e400}})", "sizing.json: not valid JSON"}}) {
    auto c = parse_recommend_config(k.text, "sizing.json");
    ASSERT_FALSE(c.ok()) << k.text;
    EXPECT_EQ(c.status().message().rfind(k.where, 0), 0u) << c.status().message();
  }
}

// Found in review: a sizing.json that did not parse was reported with nlohmann's whole message,
// whose "last read: '...'" echoes the file's raw bytes (a control character, the text around it)
// into peakcastd's log. Now: the reason, the line and column, and no byte of the input beyond a
// number too large for a double (the admin's own file: naming it helps find it).
TEST(RecommendConfigFile, NotJsonSaysWhereAndEchoesNoInput) {
  struct Case { std::string text; std::string start; std::string end; std::string secret; };
  for (const Case& k : {Case{"{\n  \"default\": {\n    \"note\": \"hunter2\x01\"\n  }\n}\n",
                             "sizing.json:3: not valid JSON: invalid string: control character U+0001",
                             " (column 21)", "hunter2"},
                        Case{"{\"partitions\":\n {\"gpu\": {\"floor_bytes\": \"s3cr3t\\q\"}}}",
                             "sizing.json:2: not valid JSON: invalid string: forbidden character after backslash",
                             " (column 34)", "s3cr3t"}}) {
    auto c = parse_recommend_config(k.text, "sizing.json");
    ASSERT_FALSE(c.ok()) << k.text;
    const std::string& m = c.status().message();
    EXPECT_EQ(m.rfind(k.start, 0), 0u) << m;
    EXPECT_TRUE(m.ends_with(k.end)) << m;
    EXPECT_EQ(m.find(k.secret), std::string::npos) << m;
    EXPECT_EQ(m.find("last read"), std::string::npos) << m;
  }
  auto big = parse_recommend_config(R"({"default": {"margin_fraction": 1e400}})", "sizing.json");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(), "sizing.json: not valid JSON: number overflow parsing '1e400'");
}

// Sizes are at most 1.8e19 bytes, as parse_size and the trace readers keep them: a floor of
// UINT64_MAX became the recommendation, and a double of it, converted back, was out of uint64's
// range (undefined). Floats between 9.2e18 and 1.8e19 are read as they are (llround gave 2^63).
TEST(RecommendConfigFile, SizesAreAtMostOnePointEightE19Bytes) {
  for (const char* bad : {R"({"default": {"floor_bytes": 18446744073709551615}})",
                          R"({"default": {"margin_bytes": 18000000000000000001}})",
                          R"({"default": {"floor_bytes": 1.9e19}})"}) {
    auto c = parse_recommend_config(bad, "sizing.json");
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().message().rfind("sizing.json: default.", 0), 0u) << c.status().message();
    EXPECT_NE(c.status().message().find("1.8e19"), std::string::npos) << c.status().message();
  }
  auto c = parse_recommend_config(R"({"default": {"margin_bytes": 1e19, "floor_bytes": 18000000000000000000}})",
                                  "sizing.json");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->defaults.margin_bytes, 10'000'000'000'000'000'000ull);
  EXPECT_EQ(c->defaults.floor_bytes, 18'000'000'000'000'000'000ull);
}

TEST(RecommendConfigFile, MissingFileSaysSo) {
  auto c = load_recommend_config("/nonexistent/sizing.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/sizing.json"), std::string::npos);
}

TEST(Recommend, RuleObjectKeepsItsConfig) {
  RecommendRule rule(plain());
  RecommendInput in;
  in.upper_bytes = 1.0 * kGiB;
  EXPECT_EQ(rule(in).bytes, recommend_request(in, plain()).bytes);
}

// The failed request passed after OOM runs: the largest request among the leading OOM runs of
// the newest-first list; nothing once the newest run completed.
TEST(Recommend, TrailingOomRequestIsTheLargestOfTheLeadingOomRuns) {
  auto run = [](uint64_t request, bool oom) {
    Job j;
    j.req_mem_bytes = request;
    j.state = oom ? "OUT_OF_MEMORY" : "COMPLETED";
    if (!oom) j.peak_mem_bytes = request / 2;
    compute_labels(j);
    return j;
  };
  const Job oom4 = run(4 * kGiB, true), oom6 = run(6 * kGiB, true), done = run(8 * kGiB, false),
            oom16 = run(16 * kGiB, true);
  const std::vector<const Job*> after_ooms = {&oom4, &oom6, &done, &oom16};  // newest first
  EXPECT_EQ(trailing_oom_request(after_ooms), 6 * kGiB);  // oom16 is before a completed run
  const std::vector<const Job*> completed_last = {&done, &oom6};
  EXPECT_FALSE(trailing_oom_request(completed_last));
  EXPECT_FALSE(trailing_oom_request({}));
  EXPECT_FALSE(trailing_oom_lowered(after_ooms));
  // Killed at a lowered limit: that limit, not the user's request, and it was lowered.
  Job lowered = run(16 * kGiB, true);
  lowered.ran_mem_bytes = 5 * kGiB;
  compute_labels(lowered);
  const std::vector<const Job*> after_lowered = {&lowered, &oom4, &done};
  EXPECT_EQ(trailing_oom_request(after_lowered), 5 * kGiB);
  EXPECT_TRUE(trailing_oom_lowered(after_lowered));
  const std::vector<const Job*> lowered_before_done = {&oom4, &done, &lowered};
  EXPECT_FALSE(trailing_oom_lowered(lowered_before_done));
}

// An OOM, then runs that were cancelled, timed out or failed: none of them shows the script fits
// below the failed limit, so the chain goes on past them (it stopped at the first, and the next
// answer fell back to the bound: 3.25 GiB after an OOM at 4 GiB). Only a completed run with a
// known peak ends it.
TEST(Recommend, TrailingOomRequestSkipsRunsThatDidNotComplete) {
  auto run = [](uint64_t request, const std::string& state, std::optional<uint64_t> peak) {
    Job j;
    j.req_mem_bytes = request;
    j.state = state;
    j.peak_mem_bytes = peak;
    compute_labels(j);
    return j;
  };
  const Job oom4 = run(4 * kGiB, "OUT_OF_MEMORY", std::nullopt);
  const Job cancelled = run(4 * kGiB, "CANCELLED", 100 * kMiB), timeout = run(4 * kGiB, "TIMEOUT", 3 * kGiB),
            failed = run(4 * kGiB, "FAILED", std::nullopt), node_fail = run(4 * kGiB, "NODE_FAIL", std::nullopt),
            done_no_peak = run(4 * kGiB, "COMPLETED", std::nullopt), done = run(8 * kGiB, "COMPLETED", 2 * kGiB);
  for (const Job* later : {&cancelled, &timeout, &failed, &node_fail, &done_no_peak}) {
    const std::vector<const Job*> runs = {later, &oom4};  // newest first
    EXPECT_EQ(trailing_oom_request(runs), 4 * kGiB) << later->state;
    RecommendInput in;
    in.upper_bytes = 3.0 * kGiB;
    in.request_bytes = 4 * kGiB;
    in.failed_request_bytes = trailing_oom_request(runs);
    EXPECT_GT(recommend_request(in, plain()).bytes, 4 * kGiB) << later->state;
  }
  const std::vector<const Job*> several = {&cancelled, &timeout, &oom4, &failed};
  EXPECT_EQ(trailing_oom_request(several), 4 * kGiB);
  const std::vector<const Job*> completed_since = {&cancelled, &done, &oom4};
  EXPECT_FALSE(trailing_oom_request(completed_since));
  // The lowered flag follows the same chain.
  Job lowered = run(16 * kGiB, "OUT_OF_MEMORY", std::nullopt);
  lowered.ran_mem_bytes = 5 * kGiB;
  compute_labels(lowered);
  const std::vector<const Job*> cancelled_after_lowered = {&cancelled, &lowered};
  EXPECT_EQ(trailing_oom_request(cancelled_after_lowered), 5 * kGiB);
  EXPECT_TRUE(trailing_oom_lowered(cancelled_after_lowered));
  const std::vector<const Job*> done_after_lowered = {&done, &lowered};
  EXPECT_FALSE(trailing_oom_lowered(done_after_lowered));
}

// The issue's acceptance: over any history of runs, a censored (OOM) run never lowers the next
// recommendation below the limit it failed at, unless a run completed (with a known peak) since
// it; only a partition limit below it can (and the rule says so).
RC_GTEST_PROP(RecommendProperty, AnOomRunKeepsTheNextRecommendationAboveItsLimitUntilARunCompletes, ()) {
  static const char* const kStates[] = {"COMPLETED", "OUT_OF_MEMORY", "CANCELLED", "TIMEOUT", "FAILED", "NODE_FAIL"};
  const int n = *rc::gen::inRange(1, 12);
  std::vector<Job> runs(static_cast<size_t>(n));  // newest first
  for (Job& j : runs) {
    j.state = kStates[*rc::gen::inRange(0, 6)];
    j.req_mem_bytes = static_cast<uint64_t>(*rc::gen::inRange(1, 64)) * kGiB / 4;
    if (*rc::gen::arbitrary<bool>()) j.peak_mem_bytes = *j.req_mem_bytes / 2;
    if (j.state == "OUT_OF_MEMORY" && *rc::gen::arbitrary<bool>()) j.ran_mem_bytes = *j.req_mem_bytes / 2;
    compute_labels(j);
  }
  std::vector<const Job*> newest_first;
  for (const Job& j : runs) newest_first.push_back(&j);
  // The largest limit an OOM run was killed at since the newest completed run with a peak.
  std::optional<uint64_t> want;
  for (const Job& j : runs) {
    if (j.state == "COMPLETED" && j.peak_mem_bytes) break;
    if (j.state == "OUT_OF_MEMORY") want = std::max(want.value_or(0), j.ran_mem_bytes.value_or(*j.req_mem_bytes));
  }
  RC_ASSERT(trailing_oom_request(newest_first) == want);
  if (!want) return;
  RecommendConfig c = plain();
  c.defaults.allow_above_request = *rc::gen::arbitrary<bool>();
  const bool limited = *rc::gen::arbitrary<bool>();
  if (limited) c.defaults.limit_bytes = static_cast<uint64_t>(*rc::gen::inRange(1, 64)) * kGiB / 4;
  RecommendInput in;
  in.upper_bytes = static_cast<double>(*rc::gen::inRange(0, 1 << 20)) * kMiB / 16;
  in.request_bytes = static_cast<uint64_t>(*rc::gen::inRange(1, 64)) * kGiB / 4;
  in.failed_request_bytes = trailing_oom_request(newest_first);
  in.failed_at_lowered_limit = trailing_oom_lowered(newest_first);
  const Recommendation r = recommend_request(in, c);
  if (limited && *c.defaults.limit_bytes <= *want) {
    RC_ASSERT(r.bytes == *c.defaults.limit_bytes);
    RC_ASSERT(r.rule == std::string("default: capped at partition limit"));
  } else {
    RC_ASSERT(r.bytes > *want);
  }
}

}  // namespace
}  // namespace peakcast::sizing
