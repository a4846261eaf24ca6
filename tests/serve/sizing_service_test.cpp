// The daemon's online upper bound and recommended request (sizing_state.h): the answer carries
// the recommendation and the rule that set it; it never exceeds the user's request unless the
// partition's settings allow it; an OOM run never lets it fall to the failed request; the bound
// is rebuilt from the store at start. Answers on record and lowered jobs: sizing_answers_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "peakcast/serve/service.h"
#include "peakcast/serve/sizing_state.h"
#include "peakcast/sizing/bound_walk.h"
#include "peakcast/sizing/recommend.h"
#include "peakcast/sizing/workload_sizer.h"
#include "serve_test_util.h"
#include "sizing_service_test_util.h"

namespace peakcast::serve {
namespace {

using namespace sizing_testing;

TEST(ServiceSizing, AnswersWithTheOnlineBoundTheRecommendationAndItsRule) {
  TempDir dir;
  auto s = open_service(dir, options());
  json cold = predict_mem(*s, 8 * kGiB);
  EXPECT_TRUE(cold["upper_source"].is_null());        // no evidence yet, and the model has none
  EXPECT_TRUE(cold["recommendation_rule"].is_null());
  complete_runs(*s, 60, {0.25, 0.30, 0.35, 0.28});
  const json p = predict_mem(*s, 8 * kGiB);
  EXPECT_EQ(p["upper_source"], "online");
  EXPECT_DOUBLE_EQ(p["upper_coverage"].get<double>(), 0.9);
  const double util = p["util"].get<double>(), upper = p["upper_util"].get<double>();
  EXPECT_GE(upper, util);
  EXPECT_LT(upper, 0.5);  // the runs never used more than 35%: the bound says so
  ASSERT_TRUE(p["recommended_bytes"].is_number()) << p.dump();
  const auto rec = p["recommended_bytes"].get<uint64_t>();
  EXPECT_GE(static_cast<double>(rec), upper * 8 * kGiB);
  EXPECT_LT(rec, 8 * kGiB);
  EXPECT_EQ(rec % (256ull << 20), 0u);  // the default granularity
  EXPECT_EQ(p["recommendation_rule"], "default: upper+margin");
  const json h = json::parse(s->healthz().body)["sizing"];
  EXPECT_GT(h["mem"]["exact_script"]["updates"].get<size_t>(), 0u);
}

// The daemon issues the bound `evaluate` measures: at the user level (a script with no run of its
// own) it is calibrated on scripts, so it is online only once 9 scripts have completed there
// (coverage 0.9), whatever the number of jobs.
TEST(ServiceSizing, ANewScriptsBoundIsOnlineOnceNineScriptsCompletedAtTheUserLevel) {
  TempDir dir;
  auto s = open_service(dir, options());
  auto script = [](int k) { return "#!/bin/bash\nsrun ./step" + std::to_string(k) + "\n"; };
  auto complete_script = [&](int k) {
    const int64_t submit = kNow - 100 * 3600 + k * 3600;
    const json c = completion_json("step" + std::to_string(k), "alice", script(k), submit,
                                   submit + 1800, 8 * kGiB, static_cast<uint64_t>(0.3 * 8 * kGiB));
    ASSERT_EQ(s->complete(c.dump()).status, 200);
  };
  auto predict_new_script = [&] {
    const Reply reply = s->predict(request_json("alice", script(999), kNow, 8 * kGiB).dump());
    EXPECT_EQ(reply.status, 200) << reply.body;
    return json::parse(reply.body)["predictions"]["mem"];
  };
  for (int k = 0; k < 6; ++k) complete_script(k);
  const json few = predict_new_script();
  EXPECT_EQ(few["history_level"], "user") << few.dump();
  EXPECT_NE(few["upper_source"], "online") << few.dump();
  for (int k = 6; k < 16; ++k) complete_script(k);
  const json enough = predict_new_script();
  EXPECT_EQ(enough["upper_source"], "online") << enough.dump();
  const json h = json::parse(s->healthz().body)["sizing"]["mem"]["user"];
  EXPECT_GE(h["scores"].get<size_t>(), 9u);  // scripts, one each
  EXPECT_LE(h["scores"].get<size_t>(), 16u);
}

// Script windows (default_bound_options): once a script has 9 completions at the exact level its
// bound comes from its own scores, so a steady script is not given the spread of a varied one
// that shares the level's window.
TEST(ServiceSizing, AScriptWithNineRunsIsBoundedByItsOwnSpread) {
  TempDir dir;
  auto s = open_service(dir, options());
  const std::string steady = "#!/bin/bash\nsrun ./steady\n", varied = "#!/bin/bash\nsrun ./varied\n";
  for (int i = 0; i < 24; ++i) {
    const int64_t submit = kNow - 100 * 3600 + i * 3600;
    const bool v = i % 2 == 1;
    const double share = v ? (i % 4 == 1 ? 0.2 : 0.7) : 0.3;
    const json c = completion_json("run" + std::to_string(i), "alice", v ? varied : steady, submit,
                                   submit + 1800, 8 * kGiB, static_cast<uint64_t>(share * 8 * kGiB));
    ASSERT_EQ(s->complete(c.dump()).status, 200);
  }
  auto width = [&](const std::string& script) {
    const Reply reply = s->predict(request_json("alice", script, kNow, 8 * kGiB).dump());
    EXPECT_EQ(reply.status, 200) << reply.body;
    const json m = json::parse(reply.body)["predictions"]["mem"];
    EXPECT_EQ(m["history_level"], "exact_script") << m.dump();
    EXPECT_EQ(m["upper_source"], "online") << m.dump();
    return m["upper_util"].get<double>() - m["util"].get<double>();
  };
  const double steady_width = width(steady), varied_width = width(varied);
  EXPECT_LT(steady_width, 0.02);  // its own scores are all 0
  EXPECT_GT(varied_width, 0.2);   // its own: misses of 0.25-0.5 around its estimate
  const json h = json::parse(s->healthz().body)["sizing"]["mem"]["exact_script"];
  EXPECT_EQ(h["own_windows"], 2) << h.dump();
}

// A model with a bound of its own (a cascade's, fitted at training) and no online evidence yet:
// the answer shows the model's bound (upper_source "model") but recommends nothing from it;
// once the online bound has evidence it answers and recommends.
TEST(ServiceSizing, AModelsOwnBoundIsShownButNeverLowersTheRequest) {
  SizingState state;
  Job job;
  job.user = "alice";
  job.script_key = "s-new";
  job.req_mem_bytes = 8 * kGiB;
  auto model_answer = [](const std::string& level) {
    cascade::JobPrediction p;
    p.mem.util = 0.2;
    p.mem.history_level = level;
    p.mem.upper_util = 0.3;  // the model's own bound
    p.mem.upper_coverage = 0.9;
    return p;
  };
  cascade::JobPrediction p = model_answer("user");
  const SizingState::Applied cold = state.apply(job, std::nullopt, p);
  EXPECT_EQ(cold.upper_source[0], "model");
  ASSERT_TRUE(p.mem.upper_util.has_value());
  EXPECT_DOUBLE_EQ(*p.mem.upper_util, 0.3);
  EXPECT_FALSE(p.mem.recommended_bytes.has_value());
  EXPECT_TRUE(cold.rule.empty());
  for (int k = 0; k < 9; ++k) {  // nine scripts complete at the user level: evidence
    Job done = job;
    done.script_key = "s" + std::to_string(k);
    done.util[0] = 0.25;
    done.valid[0] = true;
    state.observe(done, model_answer("user"));
  }
  p = model_answer("user");
  const SizingState::Applied warm = state.apply(job, std::nullopt, p);
  EXPECT_EQ(warm.upper_source[0], "online");
  EXPECT_TRUE(p.mem.recommended_bytes.has_value());
  EXPECT_FALSE(warm.rule.empty());
}

// Once a script has kPeakcastMinHistory runs completed, its own sizing policy (the `peakcast`
// that `peakcast simulate` replays, sizing::WorkloadSizer) sets the recommendation, through the
// site's settings, with the allocation it chose; before that, the online bound does.
TEST(ServiceSizing, AScriptWithTenRunsIsSizedByItsOwnPolicy) {
  TempDir dir;
  auto s = open_service(dir, options());
  const std::vector<double> shares = {0.25, 0.31, 0.28, 0.36, 0.22, 0.30, 0.27, 0.33, 0.29, 0.26, 0.34, 0.24};
  sizing::WorkloadSizerOptions ro;
  ro.policy.recommend = sizing::RecommendConfig{};  // peakcastd's built-in settings, not simulate's
  sizing::WorkloadSizer reference(ro);
  int by_bound = 0;
  sizing::SimTask task;
  task.info.workload = "the script";
  task.info.request_bytes = 8.0 * kGiB;
  task.runtime_ms = 1'800'000.0;
  for (size_t i = 0; i < shares.size(); ++i) {
    const int64_t submit = kNow - 100 * 3600 + static_cast<int64_t>(i) * 3600;
    const auto peak = static_cast<uint64_t>(shares[i] * 8 * kGiB);
    const json c = completion_json("run" + std::to_string(i), "alice", kScript, submit, submit + 1800, 8 * kGiB, peak);
    ASSERT_EQ(s->complete(c.dump()).status, 200);
    task.peak_bytes = static_cast<double>(peak);
    reference.observe(task);
    const json p = predict_mem(*s, 8 * kGiB);
    if (i + 1 < sizing::kPeakcastMinHistory) {
      EXPECT_NE(p["recommendation_source"], "workload") << i << ": " << p.dump();
      EXPECT_TRUE(p["recommendation_basis"].is_null()) << p.dump();
      EXPECT_EQ(p["recommendation_source"] == "bound", p["recommended_bytes"].is_number()) << p.dump();
      by_bound += p["recommendation_source"] == "bound" ? 1 : 0;
      continue;
    }
    EXPECT_EQ(p["recommendation_source"], "workload") << p.dump();
    const std::optional<sizing::WorkloadSizer::Answer> own = reference.first(task.info);
    ASSERT_TRUE(own);
    EXPECT_EQ(p["recommended_bytes"].get<uint64_t>(), own->bytes) << i;
    EXPECT_EQ(p["recommendation_rule"], own->rule);
    EXPECT_EQ(p["recommendation_basis"], own->basis + " (over its last " + std::to_string(i + 1) + " runs)");
    EXPECT_LE(own->bytes, 8 * kGiB);
    EXPECT_EQ(own->bytes % (256ull << 20), 0u);  // the site's granularity, not simulate's
  }
  const json h = json::parse(s->healthz().body)["sizing"]["workloads"];
  EXPECT_EQ(h["kept"], 1);
  EXPECT_GT(h["memory_bytes"].get<uint64_t>(), 0u);
  EXPECT_LE(h["memory_bytes"].get<uint64_t>(), h["max_memory_bytes"].get<uint64_t>());
  EXPECT_GT(h["failure_price_gbh"].get<double>(), 0.0);
  EXPECT_GT(by_bound, 0);  // the bound answered before the script's policy had 10 runs
  const std::string m = s->metrics_text().body;
  EXPECT_NE(m.find("\npeakcast_recommendations_by_workload_total 3\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\npeakcast_recommendations_by_bound_total " + std::to_string(by_bound) + "\n"), std::string::npos);
  EXPECT_NE(m.find("\npeakcast_sizing_workloads 1\n"), std::string::npos);
  EXPECT_NE(m.find("\npeakcast_sizing_memory_bytes " + std::to_string(h["memory_bytes"].get<uint64_t>()) + "\n"),
            std::string::npos);
}

TEST(ServiceSizing, WithNoWorkloadsKeptEveryRecommendationIsTheBounds) {
  TempDir dir;
  ServiceOptions o = options();
  o.sizing.workloads.max_workloads = 0;  // peakcastd --sizing-workloads 0
  auto s = open_service(dir, o);
  complete_runs(*s, 40, {0.25, 0.30, 0.35});
  const json p = predict_mem(*s, 8 * kGiB);
  EXPECT_EQ(p["recommendation_source"], "bound") << p.dump();
  EXPECT_EQ(p["recommendation_rule"], "default: upper+margin");
  EXPECT_EQ(json::parse(s->healthz().body)["sizing"]["workloads"]["kept"], 0);
}

TEST(ServiceSizing, NeverAboveTheUsersRequestUnlessThePartitionAllowsIt) {
  TempDir dir;
  auto s = open_service(dir, options(R"({"partitions": {"big": {"allow_above_request": true}}})"));
  complete_runs(*s, 40, {0.97, 0.99, 1.0});
  for (uint64_t req : {2 * kGiB, 8 * kGiB, 64 * kGiB}) {
    const json p = predict_mem(*s, req);
    ASSERT_TRUE(p["recommended_bytes"].is_number());
    EXPECT_LE(p["recommended_bytes"].get<uint64_t>(), req);
    EXPECT_EQ(p["recommendation_rule"], "default: capped at request");
  }
  const json big = predict_mem(*s, 8 * kGiB, "big");
  EXPECT_GT(big["recommended_bytes"].get<uint64_t>(), 8 * kGiB);
  EXPECT_EQ(big["recommendation_rule"], "partition big: upper+margin");
}

TEST(ServiceSizing, AnOomRunNeverLowersTheNextRecommendationBelowTheFailedRequest) {
  TempDir dir;
  auto s = open_service(dir, options());
  complete_runs(*s, 40, {0.30, 0.32});
  EXPECT_LT(predict_mem(*s, 8 * kGiB)["recommended_bytes"].get<uint64_t>(), 4 * kGiB);
  // The user lowered the request to 4 GiB and the run was killed for memory. Submitted ten minutes
  // before the 8 GiB question above, so not its answer (a run the hook lowered from 8 GiB is the
  // test after the next).
  json oom = completion_json("oom1", "alice", kScript, kNow - 600, kNow - 20, 4 * kGiB, 4 * kGiB);
  oom["state"] = "OUT_OF_MEMORY";
  ASSERT_EQ(s->complete(oom.dump()).status, 200);
  for (uint64_t req : {4 * kGiB, 6 * kGiB, 16 * kGiB}) {
    const json p = predict_mem(*s, req);
    EXPECT_GE(p["util"].get<double>() * static_cast<double>(req), 0.999 * 4 * kGiB) << req;
    ASSERT_TRUE(p["recommended_bytes"].is_number());
    EXPECT_GT(p["recommended_bytes"].get<uint64_t>(), 4 * kGiB) << req;
  }
  EXPECT_EQ(predict_mem(*s, 4 * kGiB)["recommendation_rule"], "default: oom: above failed request");
}

// An OOM and then a run that was cancelled (or timed out, or failed): that run shows nothing about
// what the script needs, so the OOM still holds the next recommendation above its request. The
// chain stopped at the cancelled run, and the answer fell back to the bound, below 4 GiB.
TEST(ServiceSizing, ARunCancelledAfterAnOomDoesNotLetTheRecommendationFallBelowIt) {
  for (const char* state : {"CANCELLED", "TIMEOUT", "FAILED"}) {
    TempDir dir;
    auto s = open_service(dir, options());
    complete_runs(*s, 40, {0.30, 0.32});
    json oom = completion_json("oom1", "alice", kScript, kNow - 900, kNow - 600, 4 * kGiB, 4 * kGiB);
    oom["state"] = "OUT_OF_MEMORY";
    ASSERT_EQ(s->complete(oom.dump()).status, 200);
    json later = completion_json("later", "alice", kScript, kNow - 500, kNow - 440, 4 * kGiB, 100u << 20);
    later["state"] = state;
    ASSERT_EQ(s->complete(later.dump()).status, 200);
    const json p = predict_mem(*s, 4 * kGiB);
    ASSERT_TRUE(p["recommended_bytes"].is_number()) << state;
    EXPECT_GT(p["recommended_bytes"].get<uint64_t>(), 4 * kGiB) << state << ": " << p.dump();
    // A completed run since: the script fits, and the recommendation follows its runs again.
    json done = completion_json("done", "alice", kScript, kNow - 400, kNow - 100, 8 * kGiB, 2 * kGiB);
    ASSERT_EQ(s->complete(done.dump()).status, 200);
    EXPECT_LT(predict_mem(*s, 8 * kGiB)["recommended_bytes"].get<uint64_t>(), 4 * kGiB) << state;
  }
}

// The hook sends the partitions a job may run in: a list gets the strictest settings of them (here
// the smaller limit, and no answer above the request as cpu allows none), and a job with no
// partition is sized in the configured default partition. Before, both were looked up as one
// name, found nothing and got the "default" settings, ignoring every partition limit.
TEST(ServiceSizing, APartitionListAndTheDefaultPartitionGetTheirPartitionsSettings) {
  TempDir dir;
  auto s = open_service(dir, options(R"({"default_partition": "cpu",
      "partitions": {"cpu": {"limit_bytes": "2G"}, "big": {"allow_above_request": true, "limit_bytes": "64G"}}})"));
  complete_runs(*s, 40, {0.30, 0.32});
  json p = predict_mem(*s, 8 * kGiB);
  EXPECT_EQ(p["recommended_bytes"].get<uint64_t>(), 2 * kGiB) << p.dump();
  EXPECT_EQ(p["recommendation_rule"], "partition cpu (the default partition): capped at partition limit");
  p = predict_mem(*s, 8 * kGiB, "big,cpu");
  EXPECT_EQ(p["recommended_bytes"].get<uint64_t>(), 2 * kGiB) << p.dump();
  EXPECT_EQ(p["recommendation_rule"], "partitions big,cpu (strictest): capped at partition limit");
  // An OOM at 4 GiB: above it wherever the job may run, except over a partition's limit.
  json oom = completion_json("oom1", "alice", kScript, kNow - 600, kNow - 20, 4 * kGiB, 4 * kGiB);
  oom["state"] = "OUT_OF_MEMORY";
  ASSERT_EQ(s->complete(oom.dump()).status, 200);
  p = predict_mem(*s, 4 * kGiB, "big");
  EXPECT_GT(p["recommended_bytes"].get<uint64_t>(), 4 * kGiB) << p.dump();
  EXPECT_LE(p["recommended_bytes"].get<uint64_t>(), 64 * kGiB) << p.dump();
  p = predict_mem(*s, 4 * kGiB, "big,cpu");
  EXPECT_EQ(p["recommended_bytes"].get<uint64_t>(), 2 * kGiB) << p.dump();
  EXPECT_EQ(p["recommendation_rule"], "partitions big,cpu (strictest): capped at partition limit");
}

// Each completed job with a recommendation on record is run at its request and at the
// recommendation (sizing::run_at); /healthz and /metrics show the sums.
TEST(ServiceSizing, CompletedJobsCountWhatTheirRecommendationWouldHaveSavedAndCost) {
  TempDir dir;
  auto s = open_service(dir, options());
  complete_runs(*s, 40, {0.25, 0.30, 0.35});
  const json first = predict_mem(*s, 8 * kGiB);  // submitted at kNow
  ASSERT_TRUE(first["recommended_bytes"].is_number()) << first.dump();
  const double rec = first["recommended_bytes"].get<double>(), req = 8.0 * kGiB;
  ASSERT_LT(rec, 0.5 * req);
  // It held: used a quarter of its request for two hours.
  const uint64_t held = static_cast<uint64_t>(0.25 * req);
  ASSERT_EQ(s->complete(completion_json("a1", "alice", kScript, kNow, kNow + 7200, 8 * kGiB, held).dump()).status, 200);
  // Answered the same; it needed more than the recommendation (not more than its request): one
  // failed attempt at the recommendation, then its request.
  ASSERT_EQ(predict_mem(*s, 8 * kGiB)["recommended_bytes"].get<double>(), rec);
  const uint64_t over = static_cast<uint64_t>(0.75 * req);
  ASSERT_EQ(s->complete(completion_json("a2", "alice", kScript, kNow, kNow + 3600, 8 * kGiB, over).dump()).status, 200);
  // Answered; killed for memory: no peak, counted apart.
  predict_mem(*s, 8 * kGiB);
  json oom = completion_json("a3", "alice", kScript, kNow, kNow + 600, 8 * kGiB, 8 * kGiB);
  oom["state"] = "OUT_OF_MEMORY";
  ASSERT_EQ(s->complete(oom.dump()).status, 200);
  // Never answered (its submission is a day earlier): not counted.
  ASSERT_EQ(s->complete(completion_json("a4", "alice", kScript, kNow - 86400, kNow - 80000, 8 * kGiB, held).dump()).status, 200);

  const double gbh = 1e9 * 3.6e6;
  const double at_request = ((req - held) * 2 + (req - over) * 1) * 3.6e6 / gbh;
  const double at_rec = ((rec - held) * 2 + rec * 1 + (req - over) * 1) * 3.6e6 / gbh;
  const json a = json::parse(s->healthz().body)["sizing"]["advice"];
  EXPECT_EQ(a["jobs"], 2) << a.dump();
  EXPECT_EQ(a["oom_jobs"], 1);
  EXPECT_NEAR(a["at_request"]["waste_gbh"].get<double>(), at_request, 1e-6);
  EXPECT_EQ(a["at_request"]["failed_attempts"], 0);
  EXPECT_NEAR(a["at_recommendation"]["waste_gbh"].get<double>(), at_rec, 1e-6);
  EXPECT_NEAR(a["at_recommendation"]["failed_gbh"].get<double>(), rec * 3.6e6 / gbh, 1e-6);
  EXPECT_EQ(a["at_recommendation"]["failed_attempts"], 1);
  EXPECT_EQ(a["at_recommendation"]["failed_jobs"], 1);
  const std::string m = s->metrics_text().body;
  EXPECT_NE(m.find("\npeakcast_advice_jobs_total 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\npeakcast_advice_oom_jobs_total 1\n"), std::string::npos);
  EXPECT_NE(m.find("\npeakcast_advice_failed_attempts_total{at=\"recommendation\"} 1\n"), std::string::npos);
  EXPECT_NE(m.find("\npeakcast_advice_failed_attempts_total{at=\"request\"} 0\n"), std::string::npos);
  const std::string waste = "\npeakcast_advice_waste_byte_seconds_total{at=\"recommendation\"} ";
  const size_t at = m.find(waste);
  ASSERT_NE(at, std::string::npos) << m;
  EXPECT_NEAR(std::stod(m.substr(at + waste.size())), at_rec * 3.6e12, 1.0);
}

TEST(ServiceSizing, TheBoundIsRebuiltFromTheStoreAtStart) {
  TempDir dir;
  json before;
  {
    auto s = open_service(dir, options());
    complete_runs(*s, 50, {0.2, 0.4, 0.3, 0.5, 0.25});
    before = predict_mem(*s, 8 * kGiB);
  }
  auto s = open_service(dir, options());
  const json after = predict_mem(*s, 8 * kGiB);
  expect_same_answer(before, after);
}

// At start every script's policy learns its own stored runs, not only those among the
// --bound-rebuild-jobs most recent completions: a script that last ran before a busier one is
// answered by its own policy after a restart as before it (--sizing-rebuild-runs 0: it starts over).
TEST(ServiceSizing, ARestartRebuildsEachScriptsPolicyFromItsOwnStoredRuns) {
  TempDir dir;
  ServiceOptions o = options();
  o.sizing.rebuild_jobs = 5;  // the bound's walk holds only the other script's runs
  const std::string other = "#!/bin/bash\nsrun ./postprocess\n";
  json before;
  {
    auto s = open_service(dir, o);
    complete_runs(*s, 12, {0.25, 0.31, 0.28, 0.36, 0.22, 0.30});
    for (int i = 0; i < 8; ++i) {
      const int64_t submit = kNow - 50 * 3600 + i * 3600;
      const json c = completion_json("post" + std::to_string(i), "alice", other, submit, submit + 600, 4 * kGiB,
                                     static_cast<uint64_t>(0.5 * 4 * kGiB));
      ASSERT_EQ(s->complete(c.dump()).status, 200);
    }
    before = predict_mem(*s, 8 * kGiB);
    ASSERT_EQ(before["recommendation_source"], "workload") << before.dump();
  }
  auto s = open_service(dir, o);
  const json after = predict_mem(*s, 8 * kGiB);
  EXPECT_EQ(after["recommendation_source"], "workload") << after.dump();
  EXPECT_EQ(after["recommended_bytes"], before["recommended_bytes"]);
  EXPECT_EQ(after["recommendation_basis"], before["recommendation_basis"]);
  const json h = json::parse(s->healthz().body)["sizing"]["workloads"];
  EXPECT_EQ(h["kept"], 2);  // both scripts, each with its own runs
  EXPECT_EQ(h["rebuilt_from_runs"], 20);
  o.sizing.workloads.rebuild_runs = 0;
  auto cold = open_service(dir, o);
  const json started_over = predict_mem(*cold, 8 * kGiB);
  EXPECT_NE(started_over["recommendation_source"], "workload") << started_over.dump();
  EXPECT_EQ(json::parse(cold->healthz().body)["sizing"]["workloads"]["kept"], 0);
}

// Under --history-days the hourly sweep forgets the policy of a script whose last run ended before
// the horizon, as a restart (which learns only the runs since) would not have it.
TEST(ServiceSizing, UnderHistoryDaysAnIdleScriptsPolicyIsForgottenAsARestartWould) {
  TempDir dir;
  auto now = std::make_shared<int64_t>(kNow);
  ServiceOptions o = options();
  o.clock = [now] { return *now; };
  o.history_days = 10;
  auto s = open_service(dir, o);
  complete_runs(*s, 12, {0.25, 0.31, 0.28, 0.36});  // ended 89 to 100 hours ago
  ASSERT_EQ(predict_mem(*s, 8 * kGiB)["recommendation_source"], "workload");
  *now += 11 * 86400;
  const std::string other = "#!/bin/bash\nsrun ./postprocess\n";
  const json c = completion_json("post", "alice", other, *now - 7200, *now - 3600, 4 * kGiB, 2 * kGiB);
  ASSERT_EQ(s->complete(c.dump()).status, 200);  // the sweep
  const auto kept = [](Service& svc) { return json::parse(svc.healthz().body)["sizing"]["workloads"]["kept"]; };
  EXPECT_EQ(kept(*s), 1);  // the other script's
  EXPECT_NE(predict_mem(*s, 8 * kGiB)["recommendation_source"], "workload");
  s.reset();
  auto restarted = open_service(dir, o);
  EXPECT_EQ(kept(*restarted), 1);
  EXPECT_NE(predict_mem(*restarted, 8 * kGiB)["recommendation_source"], "workload");
}

// --sizing-days: a script's policy answers from its runs of about the last DAYS to 2 x DAYS days
// (sizing::WorkloadSizer's max_age). A script run once a day, DAYS 10: after day 20 its policy
// answers over 21 runs, after day 21 over 11 (days 11-21: the second policy, started at day 11,
// took over), after day 24 over 14. The hourly sweep hands over without a run of the script: at
// day 32 the second policy (days 22-24) takes over with 3 runs, too few to answer; at day 40 the
// script goes (/metrics counts both). A restart at day 24 learns the last 10 days. Under
// --history-days the limit is at most that.
TEST(ServiceSizing, UnderSizingDaysAScriptsPolicyAnswersFromItsRecentRuns) {
  TempDir dir;
  auto now = std::make_shared<int64_t>(kNow);
  ServiceOptions o = options();
  o.clock = [now] { return *now; };
  o.sizing.workloads.max_age_ms = int64_t{10} * 86'400'000;
  auto s = open_service(dir, o);
  const auto ask = [&](Service& svc) {
    const Reply r = svc.predict(request_json("alice", kScript, *now, 8 * kGiB).dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["predictions"]["mem"];
  };
  const auto over = [](const json& mem) {
    const std::string basis = mem["recommendation_basis"].is_string() ? mem["recommendation_basis"].get<std::string>() : "";
    const size_t at = basis.find("(over its last ");
    return at == std::string::npos ? -1 : std::stoi(basis.substr(at + 15));
  };
  const std::map<int, int> runs = {{9, 10}, {20, 21}, {21, 11}, {24, 14}};
  for (int day = 0; day <= 24; ++day) {
    *now = kNow + day * 86400;
    const double share = day < 15 ? 0.9 : 0.25 + 0.01 * (day % 5);
    const json c = completion_json("day" + std::to_string(day), "alice", kScript, *now - 7200, *now - 3600, 8 * kGiB,
                                   static_cast<uint64_t>(share * 8 * kGiB));
    ASSERT_EQ(s->complete(c.dump()).status, 200);
    if (const auto want = runs.find(day); want != runs.end()) {
      const json mem = ask(*s);
      EXPECT_EQ(mem["recommendation_source"], "workload") << day << ": " << mem.dump();
      EXPECT_EQ(over(mem), want->second) << day << ": " << mem.dump();
    }
  }
  EXPECT_EQ(json::parse(s->healthz().body)["sizing"]["workloads"]["max_age_days"], 10.0);
  *now = kNow + 32 * 86400;  // another script's completion: the sweep
  const json c = completion_json("post", "alice", "#!/bin/bash\nsrun ./post\n", *now - 7200, *now - 3600, 4 * kGiB, kGiB);
  ASSERT_EQ(s->complete(c.dump()).status, 200);
  EXPECT_NE(ask(*s)["recommendation_source"], "workload");
  const auto counted = [](Service& svc, const std::string& line) {
    const std::string m = svc.metrics_text().body;
    return m.find("\n" + line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(counted(*s, "peakcast_sizing_policies_handed_over_total 2"));  // days 21 and 32
  EXPECT_TRUE(counted(*s, "peakcast_sizing_policies_aged_out_total 0"));
  *now = kNow + 40 * 86400;  // the script's last run (day 24) is now older than 10 days
  const json later = completion_json("post2", "alice", "#!/bin/bash\nsrun ./post\n", *now - 7200, *now - 3600, 4 * kGiB, kGiB);
  ASSERT_EQ(s->complete(later.dump()).status, 200);
  EXPECT_TRUE(counted(*s, "peakcast_sizing_policies_aged_out_total 1"));
  EXPECT_EQ(json::parse(s->healthz().body)["sizing"]["workloads"]["kept"], 1);  // the other script's
  s.reset();
  *now = kNow + 24 * 86400;  // a restart at day 24 learns days 15-24
  auto restarted = open_service(dir, o);
  EXPECT_EQ(over(ask(*restarted)), 10);
  restarted.reset();
  // --history-days bounds it too; --sizing-days may say less.
  for (const auto& [sizing_days, history_days, limit] : {std::tuple{0, 7, 7.0}, {10, 7, 7.0}, {3, 7, 3.0}}) {
    ServiceOptions h = o;
    h.sizing.workloads.max_age_ms = int64_t{sizing_days} * 86'400'000;
    h.history_days = history_days;
    TempDir other;
    EXPECT_EQ(json::parse(open_service(other, h)->healthz().body)["sizing"]["workloads"]["max_age_days"], limit)
        << sizing_days << " " << history_days;
  }
  EXPECT_TRUE(json::parse(open_service(dir, options())->healthz().body)["sizing"]["workloads"]["max_age_days"].is_null());
}

// A job that completes more than --late-tolerance after its submission (a long run, or a long
// wait in the queue) has no exact prediction at its submission any more (the history before the
// watermark is folded), so the bound does not learn it; its script's sizing policy, which needs
// none, does, as a restart would have it learn the stored run.
TEST(ServiceSizing, ARunLongerThanTheLateToleranceTeachesItsScriptsPolicy) {
  TempDir dir;
  ServiceOptions o = options();
  o.late_tolerance_s = 86400;
  auto s = open_service(dir, o);
  const std::vector<double> shares = {0.25, 0.31, 0.28, 0.36};
  for (int i = 0; i < 12; ++i) {  // each ran two days, the last ending an hour ago
    const int64_t end = kNow - 3600 - (11 - i) * 60;
    const json c = completion_json("long" + std::to_string(i), "alice", kScript, end - 2 * 86400, end, 8 * kGiB,
                                   static_cast<uint64_t>(shares[i % shares.size()] * 8 * kGiB));
    ASSERT_EQ(s->complete(c.dump()).status, 200);
  }
  const json p = predict_mem(*s, 8 * kGiB);
  EXPECT_EQ(p["recommendation_source"], "workload") << p.dump();
  const json h = json::parse(s->healthz().body)["sizing"];
  EXPECT_EQ(h["workloads"]["kept"], 1);
  EXPECT_EQ(h["mem"]["exact_script"]["updates"], 0);  // the bound judged none of them
  EXPECT_EQ(h["learned_from"]["not_judged"], 12);
  const std::string m = s->metrics_text().body;
  EXPECT_NE(m.find("\npeakcast_bound_not_judged_total 12\n"), std::string::npos) << m;
  s.reset();
  auto restarted = open_service(dir, o);
  const json after = predict_mem(*restarted, 8 * kGiB);
  EXPECT_EQ(after["recommendation_source"], "workload") << after.dump();
  EXPECT_EQ(after["recommended_bytes"], p["recommended_bytes"]);
}

}  // namespace
}  // namespace peakcast::serve
