#include <limits>

#include <gtest/gtest.h>

#include <fstream>

#include "peakcast/cascade/history_predictor.h"
#include "serve_test_util.h"

namespace peakcast::cascade {
namespace {

using serve::testing::TempDir;

Result<std::unique_ptr<Predictor>> load_with(const TempDir& dir, const std::string& manifest) {
  std::ofstream(dir.file("manifest.json")) << manifest;
  return load_predictor(dir.path());
}

TEST(LoadPredictor, ReadsAHistoryManifest) {
  TempDir dir;
  auto p = load_with(dir, R"({"format_version": 1, "kind": "history", "util_cap": 1.5,
      "experts": {"mem": "median3"}, "fallback": {"vram": 0.25}})");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_DOUBLE_EQ((*p)->util_cap(), 1.5);
  EXPECT_NE((*p)->describe().find("median3"), std::string::npos);
}

TEST(LoadPredictor, RefusesNewerVersionsUnknownKindsAndKeys) {
  TempDir dir;
  auto newer = load_with(dir, R"({"format_version": 2, "kind": "history"})");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().kind(), ErrorKind::kUnsupported);
  EXPECT_NE(newer.status().message().find("newer"), std::string::npos);
  auto kind = load_with(dir, R"({"format_version": 1, "kind": "magic"})");
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("known: history"), std::string::npos);
  auto key = load_with(dir, R"({"format_version": 1, "kind": "history", "expert": "last1"})");
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find("expert: unknown manifest key"), std::string::npos);
  auto expert = load_with(dir, R"({"format_version": 1, "kind": "history", "experts": {"mem": "best"}})");
  ASSERT_FALSE(expert.ok());
  EXPECT_NE(expert.status().message().find("experts.mem"), std::string::npos);
  EXPECT_FALSE(load_predictor(dir.file("absent")).ok());
}

// Job "1" of user u, script s: 1000 bytes asked, `peak_mem` used; one GPU of 100 bytes, 80 used.
Job completed_job(uint64_t peak_mem) {
  Job done;
  done.job_id = "1";
  done.user = "u";
  done.script_key = "s";
  done.submit_ms = 10;
  done.end_ms = 20;
  done.req_mem_bytes = 1000;
  done.peak_mem_bytes = peak_mem;
  done.req_gpus = 1;
  done.gpu_mem_bytes = 100;
  done.peak_vram_bytes = 80;
  compute_labels(done);
  return done;
}

// A request's capacity can pass 2^64 bytes (a JSON body may give 1e7 GPUs of 1.8e19 bytes each):
// the answer is saturated, not the value an out-of-range llround happens to give (2^63 on x86-64).
TEST(HistoryPredictor, BytesPastTwoToThe64AreSaturated) {
  HistoryPredictor p(HistoryPredictorConfig{});
  history::HistoryStore h;
  h.add_completion(completed_job(900));
  Job q;
  q.job_id = "huge";
  q.user = "u";
  q.script_key = "s";
  q.submit_ms = 30;
  q.req_mem_bytes = 18'000'000'000'000'000'000ull;  // 0.9 of it fits
  q.req_gpus = 10'000'000;
  q.gpu_mem_bytes = 18'000'000'000'000'000'000ull;
  JobPrediction a = p.predict(q, h);
  EXPECT_EQ(a.mem.bytes, 16'200'000'000'000'000'000ull);
  ASSERT_TRUE(a.vram.has_value());
  EXPECT_EQ(a.vram->bytes, std::numeric_limits<uint64_t>::max());
}

TEST(HistoryPredictor, HierarchyAndBytes) {
  HistoryPredictorConfig c;
  c.fallback = {0.3, 0.6};
  HistoryPredictor p(c);
  history::HistoryStore h;
  h.add_completion(completed_job(400));

  Job q;
  q.job_id = "pending";
  q.user = "u";
  q.script_key = "s";
  q.submit_ms = 30;
  q.req_mem_bytes = 2000;
  q.req_gpus = 2;
  q.gpu_mem_bytes = 100;
  JobPrediction a = p.predict(q, h);
  EXPECT_EQ(a.mem.route, Route::kBypass);
  EXPECT_DOUBLE_EQ(a.mem.util, 0.4);
  EXPECT_EQ(a.mem.bytes, 800u);
  ASSERT_TRUE(a.vram.has_value());
  EXPECT_DOUBLE_EQ(a.vram->util, 0.8);
  EXPECT_EQ(a.vram->bytes, 160u);  // 0.8 x 2 GPUs x 100

  q.script_key = "other";  // user level
  EXPECT_EQ(p.predict(q, h).mem.history_level, "user");
  q.user = "stranger";     // nothing: fallback
  JobPrediction none = p.predict(q, h);
  EXPECT_EQ(none.mem.route, Route::kNoHistory);
  EXPECT_DOUBLE_EQ(none.mem.util, 0.3);
  EXPECT_DOUBLE_EQ(none.vram->util, 0.6);
  q.submit_ms = 15;  // before the completion ended: not visible
  q.user = "u";
  q.script_key = "s";
  EXPECT_EQ(p.predict(q, h).mem.history_level, "none");
  q.req_gpus.reset();
  EXPECT_FALSE(p.predict(q, h).vram.has_value());
}

TEST(Prediction, JsonShape) {
  JobPrediction p;
  p.job_id = "5";
  p.mem.util = 0.5;
  p.mem.route = Route::kCache;
  auto j = to_json(p);
  EXPECT_EQ(j["job_id"], "5");
  EXPECT_EQ(j["predictions"]["mem"]["route"], "cache");
  EXPECT_TRUE(j["predictions"]["mem"]["bytes"].is_null());
  EXPECT_TRUE(j["predictions"]["vram"].is_null());
}

}  // namespace
}  // namespace peakcast::cascade
