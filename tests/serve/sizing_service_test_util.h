// What the daemon's sizing tests share (sizing_service_test.cpp, sizing_answers_test.cpp): a
// service with a fixed clock, one script's completions, its memory prediction, and that a restart
// answers the same.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "peakcast/serve/service.h"
#include "peakcast/sizing/recommend.h"
#include "serve_test_util.h"

namespace peakcast::serve::sizing_testing {

using nlohmann::json;
using testing::completion_json;
using testing::request_json;
using testing::TempDir;

inline constexpr int64_t kNow = 1'800'000'000;
inline constexpr uint64_t kGiB = 1ull << 30;
inline const std::string kScript = "#!/bin/bash\nsrun ./simulate --size large\n";

inline ServiceOptions options(const std::string& config_json = "") {
  ServiceOptions o;
  o.clock = [] { return kNow; };
  if (!config_json.empty()) {
    auto cfg = sizing::parse_recommend_config(config_json, "test.json");
    EXPECT_TRUE(cfg.ok()) << cfg.status().message();
    o.sizing.recommend = *cfg;
    o.sizing.config_source = "test.json";
  }
  return o;
}

inline std::unique_ptr<Service> open_service(const TempDir& dir, const ServiceOptions& o) {
  auto store = open_sqlite_store(dir.file("h.db"));
  EXPECT_TRUE(store.ok()) << store.status().message();
  auto s = std::make_unique<Service>(testing::history_model(), std::move(*store), o);
  EXPECT_TRUE(s->rebuild().is_ok());
  return s;
}

// n completions of kScript, one an hour, peaks cycling through `shares` of an 8 GiB request.
inline void complete_runs(Service& s, int n, std::vector<double> shares, const std::string& partition = "") {
  for (int i = 0; i < n; ++i) {
    const int64_t submit = kNow - 100 * 3600 + i * 3600;
    json c = completion_json("run" + std::to_string(i), "alice", kScript, submit, submit + 1800,
                             8 * kGiB, static_cast<uint64_t>(shares[i % shares.size()] * 8 * kGiB));
    if (!partition.empty()) c["partition"] = partition;
    ASSERT_EQ(s.complete(c.dump()).status, 200);
  }
}

inline json predict_mem(Service& s, uint64_t request, const std::string& partition = "") {
  json r = request_json("alice", kScript, kNow, request);
  if (!partition.empty()) r["partition"] = partition;
  const Reply reply = s.predict(r.dump());
  EXPECT_EQ(reply.status, 200) << reply.body;
  return json::parse(reply.body)["predictions"]["mem"];
}

// A restart answers the same: the memory prediction `after` it (predict_mem) is the online bound
// and the workload's policy, as `before` it. `before` by value: read as the tests read it, a key it
// lacks is null (const operator[] on a missing key is undefined).
inline void expect_same_answer(json before, const json& after) {
  EXPECT_EQ(after["upper_source"], "online");
  EXPECT_EQ(after["recommendation_source"], "workload");  // its policy, rebuilt from the store too
  EXPECT_EQ(after["recommendation_basis"], before["recommendation_basis"]);
  EXPECT_DOUBLE_EQ(after["upper_util"].get<double>(), before["upper_util"].get<double>());
  EXPECT_EQ(after["recommended_bytes"], before["recommended_bytes"]);
}

}  // namespace peakcast::serve::sizing_testing
