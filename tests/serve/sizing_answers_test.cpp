// The daemon's answers on record: a burst judged by the bounds it was answered, answers kept and
// bounded, jobs run at a lowered request (what they teach, what lowering cost), and answers told
// apart by name and answer id across restarts.
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


// A burst submitted before any of it completes is answered with one bound; its misses arrive
// together, after the first of them has already widened the bound. The daemon judges each by
// the bound it answered (as `evaluate` walks: sizing::walk_bounds), and a restart, which rebuilds
// the bound by that walk, answers the same.
TEST(ServiceSizing, ABurstIsJudgedByTheBoundsItWasAnsweredAndARestartAnswersTheSame) {
  TempDir dir;
  std::vector<sizing::BoundStep> steps;  // the same completions, for a reference walk
  auto ask_and_complete = [&](Service& s, const std::vector<int64_t>& submits, int64_t end, double share,
                              int& id) {
    for (int64_t submit : submits) {  // every submission answered first ...
      const Reply r = s.predict(request_json("alice", kScript, submit, 8 * kGiB).dump());
      ASSERT_EQ(r.status, 200) << r.body;
      const json mem = json::parse(r.body)["predictions"]["mem"];
      steps.push_back({submit * 1000, end * 1000, history::level_from_name(mem["history_level"].get<std::string>()),
                       mem["util"].get<double>(), share, false, "kScript"});
    }
    for (int64_t submit : submits) {  // ... then their completions
      const json c = completion_json("run" + std::to_string(id++), "alice", kScript, submit, end, 8 * kGiB,
                                     static_cast<uint64_t>(share * 8 * kGiB));
      ASSERT_EQ(s.complete(c.dump()).status, 200);
    }
  };
  json before, health;
  {
    auto s = open_service(dir, options());
    int id = 0;
    for (int i = 0; i < 30; ++i) {  // one run an hour, each ending before the next
      const int64_t submit = kNow - 100 * 3600 + i * 3600;
      ask_and_complete(*s, {submit}, submit + 1800, 0.2 + 0.05 * (i % 3), id);
    }
    std::vector<int64_t> burst;
    for (int j = 0; j < 12; ++j) burst.push_back(kNow - 40 * 3600 + j);
    ask_and_complete(*s, burst, kNow - 39 * 3600, 0.7, id);  // twelve misses, arriving together
    before = predict_mem(*s, 8 * kGiB);
    health = json::parse(s->healthz().body)["sizing"];
    const std::string m = s->metrics_text().body;
    EXPECT_NE(m.find("\npeakcast_bound_judged_by_answer_total 42\n"), std::string::npos) << m;
    EXPECT_NE(m.find("\npeakcast_bound_judged_as_it_stands_total 0\n"), std::string::npos);
    EXPECT_NE(m.find("\npeakcast_bound_answers_pending 1\n"), std::string::npos);  // the last answer
  }
  EXPECT_EQ(health["learned_from"]["issued"], 42);
  EXPECT_EQ(health["learned_from"]["current"], 0);
  EXPECT_EQ(health["learned_from"]["answers_pending"], 1);
  sizing::OnlineBound walked(default_bound_options()), as_it_stands(default_bound_options());
  sizing::walk_bounds(walked, steps, 1.0, /*observe_all=*/true);
  for (const sizing::BoundStep& st : steps) as_it_stands.observe(st.level, st.point, st.label, false, st.script);
  const double alpha = health["mem"]["exact_script"]["alpha_t"].get<double>();
  EXPECT_DOUBLE_EQ(alpha, walked.alpha_t(history::Level::kExactScript));
  // Judged by the bound as it stands when they arrive, fewer of the burst count as misses.
  EXPECT_GT(as_it_stands.alpha_t(history::Level::kExactScript), alpha + 0.05);

  auto s = open_service(dir, options());
  const json after = predict_mem(*s, 8 * kGiB);
  expect_same_answer(before, after);
  EXPECT_DOUBLE_EQ(json::parse(s->healthz().body)["sizing"]["mem"]["exact_script"]["alpha_t"].get<double>(), alpha);
}

// The answers kept to judge completions by are bounded: at most kMaxIssuedPerScript of one
// user's script (a client asking again and again) and kMaxIssued in all; the oldest go first,
// and a completion whose answer was forgotten is judged by the bound as it stands.
TEST(ServiceSizing, AnswersKeptForJudgingAreBoundedAndTheOldestGoFirst) {
  SizingState state;
  Job job;
  job.user = "alice";
  job.req_mem_bytes = 8 * kGiB;
  auto answer = [&](const std::string& script, int64_t submit_ms) {
    job.script_key = script;
    job.submit_ms = submit_ms;
    cascade::JobPrediction p;
    p.mem.util = 0.4;
    p.mem.history_level = "exact_script";
    state.apply(job, std::nullopt, p);
    return p;
  };
  for (size_t i = 0; i < SizingState::kMaxIssuedPerScript + 100; ++i) answer("same", 1000);
  EXPECT_EQ(state.learned().answers_pending, SizingState::kMaxIssuedPerScript);
  for (size_t i = 0; i < SizingState::kMaxIssued; ++i) answer("s" + std::to_string(i), 1000);
  EXPECT_EQ(state.learned().answers_pending, SizingState::kMaxIssued);
  auto complete = [&](const std::string& script) {
    Job done = job;
    done.script_key = script;
    done.submit_ms = 1000;
    done.end_ms = 2000;
    done.util[0] = 0.5;
    done.valid[0] = true;
    cascade::JobPrediction p;
    p.mem.util = 0.4;
    p.mem.history_level = "exact_script";
    state.observe(done, p);
  };
  complete("same");  // its answers were the oldest: all forgotten
  EXPECT_EQ(state.learned().as_it_stands, 1u);
  complete("s" + std::to_string(SizingState::kMaxIssued - 1));  // the newest
  EXPECT_EQ(state.learned().by_answer, 1u);
  EXPECT_EQ(state.learned().answers_pending, SizingState::kMaxIssued - 1);
  complete("s0");  // still on record: the older answers of "same" made the room
  EXPECT_EQ(state.learned().by_answer, 2u);
}

// With the hook's LOWER_MEM_TO_RECOMMENDATION the job runs, and Slurm records it, at the
// recommendation. Learned at that request its peak would look like a larger share of what its
// user asks for (here 0.80 of the request after one lowered run, for 0.30), and answers from the
// bound would climb back toward the request. The daemon learns it at the request it answered:
// each run of a script that keeps its peak gets the same prediction and recommendation, lowered
// or not, and the record keeps the limit it ran under.
TEST(ServiceSizing, AJobRunAtItsLoweredRequestTeachesWhatItsUsersRequestWould) {
  struct Outcome {
    std::vector<std::pair<double, double>> answers;  // (util, recommended_bytes) of each submission
    json after_restart, lowered_row, healthz;
  };
  const auto run = [](bool lowered) {
    Outcome out;
    TempDir dir;
    {
      auto s = open_service(dir, options());
      complete_runs(*s, 40, {0.25, 0.30, 0.35});
      for (int i = 0; i < 6; ++i) {
        const int64_t submit = kNow - 50 * 3600 + i * 3600;
        const Reply reply = s->predict(request_json("alice", kScript, submit, 8 * kGiB).dump());
        EXPECT_EQ(reply.status, 200) << reply.body;
        const json p = json::parse(reply.body)["predictions"]["mem"];
        EXPECT_TRUE(p["recommended_bytes"].is_number()) << p.dump();
        const double rec = p["recommended_bytes"].get<double>();
        EXPECT_LT(rec, 0.5 * 8 * kGiB);
        out.answers.emplace_back(p["util"].get<double>(), rec);
        const uint64_t ran = lowered ? static_cast<uint64_t>(rec) : 8 * kGiB;
        json c = completion_json("low" + std::to_string(i), "alice", kScript, submit, submit + 1800, ran,
                                 static_cast<uint64_t>(0.30 * 8 * kGiB));
        EXPECT_EQ(s->complete(c.dump()).status, 200);
        // Sent again (slurm-sync reads the same record again): the same completion, not a conflict.
        const Reply again = s->complete(c.dump());
        EXPECT_EQ(again.status, 200) << again.body;
        EXPECT_EQ(json::parse(again.body)["duplicate"], true);
      }
      const json rows = json::parse(s->history({{"user", "alice"}}).body)["jobs"];
      for (const json& r : rows) {
        if (r["job_id"] == "low5") out.lowered_row = r;
      }
      out.healthz = json::parse(s->healthz().body)["sizing"]["advice"];
    }
    // Restarted: the store holds what was learned, and the next answer is the same.
    auto s = open_service(dir, options());
    out.after_restart = predict_mem(*s, 8 * kGiB);
    return out;
  };
  const Outcome asked = run(false), lowered = run(true);
  ASSERT_EQ(asked.answers.size(), lowered.answers.size());
  for (size_t i = 0; i < asked.answers.size(); ++i) {
    EXPECT_NEAR(lowered.answers[i].first, asked.answers[i].first, 1e-9) << "submission " << i;
    EXPECT_EQ(lowered.answers[i].second, asked.answers[i].second) << "submission " << i;
  }
  EXPECT_NEAR(lowered.after_restart["util"].get<double>(), asked.after_restart["util"].get<double>(), 1e-9);
  EXPECT_EQ(lowered.after_restart["recommended_bytes"], asked.after_restart["recommended_bytes"]);
  EXPECT_DOUBLE_EQ(lowered.after_restart["upper_util"].get<double>(), asked.after_restart["upper_util"].get<double>());
  // The record: its user's request, the limit it ran under, its utilization of the request.
  ASSERT_TRUE(lowered.lowered_row.is_object());
  EXPECT_EQ(lowered.lowered_row["req_mem_bytes"], 8 * kGiB);
  EXPECT_EQ(lowered.lowered_row["ran_mem_bytes"], static_cast<uint64_t>(lowered.answers[5].second));
  EXPECT_NEAR(lowered.lowered_row["mem_util"].get<double>(), 0.30, 1e-9);
  EXPECT_TRUE(asked.lowered_row["ran_mem_bytes"].is_null());
  EXPECT_EQ(lowered.healthz["lowered_jobs"], 6);
  EXPECT_EQ(asked.healthz["lowered_jobs"], 0);
  // The advice tallies count the same jobs at the same requests either way.
  EXPECT_EQ(lowered.healthz["at_request"], asked.healthz["at_request"]);
  EXPECT_EQ(lowered.healthz["at_recommendation"], asked.healthz["at_recommendation"]);
}

// A service that has learned 40 runs of kScript, and the recommendation it answers for an 8 GiB
// submission of it at `submit` (below 4 GiB).
uint64_t recommendation_after_40_runs(Service& s, int64_t submit) {
  complete_runs(s, 40, {0.25, 0.30, 0.35});
  const Reply reply = s.predict(request_json("alice", kScript, submit, 8 * kGiB).dump());
  EXPECT_EQ(reply.status, 200) << reply.body;
  const uint64_t rec = json::parse(reply.body)["predictions"]["mem"]["recommended_bytes"].get<uint64_t>();
  EXPECT_LT(rec, 4 * kGiB);
  return rec;
}

// A job killed for memory at a lowered limit is learned at its user's request too, as a share of
// it that it used at least (censored); the next answer for its script is the request itself
// until a run completes; it is counted as what lowering cost. One that asked for more than it was
// answered about, or was never answered, is left as it came.
TEST(ServiceSizing, AJobKilledAtItsLoweredLimitIsWhatLoweringCost) {
  TempDir dir;
  auto s = open_service(dir, options());
  const int64_t submit = kNow - 3600;
  const uint64_t rec = recommendation_after_40_runs(*s, submit);
  json oom = completion_json("k1", "alice", kScript, submit, submit + 900, rec, rec);
  oom["state"] = "OUT_OF_MEMORY";
  ASSERT_EQ(s->complete(oom.dump()).status, 200);
  // Its resubmission is answered with the request itself (the lowering failed), not more.
  const json next = predict_mem(*s, 8 * kGiB);  // submitted at kNow
  EXPECT_EQ(next["recommended_bytes"].get<uint64_t>(), 8 * kGiB) << next.dump();
  EXPECT_EQ(next["recommendation_rule"], "default: oom at a lowered limit: the request");
  // Its point: at least the share of the request it was killed at (a censored label's floor).
  EXPECT_GE(next["util"].get<double>() * 8.0 * static_cast<double>(kGiB), 0.999 * static_cast<double>(rec));
  // Submitted with more than it was answered about (a later `scontrol update`): as it came.
  ASSERT_EQ(s->complete(completion_json("k2", "alice", kScript, kNow, kNow + 600, 16 * kGiB, 2 * kGiB).dump()).status, 200);
  EXPECT_EQ(json::parse(s->healthz().body)["sizing"]["learned_from"]["issued"], 2);  // k1 and k2 matched answers
  // Never answered (a day earlier) and below its script's usual request: as it came.
  ASSERT_EQ(s->complete(completion_json("k3", "alice", kScript, kNow - 86400, kNow - 86000, 2 * kGiB, kGiB).dump()).status, 200);
  const json a = json::parse(s->healthz().body)["sizing"]["advice"];
  EXPECT_EQ(a["oom_jobs"], 1) << a.dump();
  EXPECT_EQ(a["lowered_oom_jobs"], 1);
  EXPECT_NEAR(a["lowered_oom_gbh"].get<double>(), static_cast<double>(rec) * 1e-9 * 900.0 / 3600.0, 1e-9);
  EXPECT_EQ(a["lowered_jobs"], 1);  // k1
  const json rows = json::parse(s->history({{"user", "alice"}}).body)["jobs"];
  size_t seen = 0;
  for (const json& r : rows) {
    if (r["job_id"] == "k1") {
      EXPECT_EQ(r["req_mem_bytes"], 8 * kGiB);
      EXPECT_EQ(r["ran_mem_bytes"], rec);
      EXPECT_TRUE(r["censored"].get<bool>());
      EXPECT_NEAR(r["mem_util"].get<double>(), static_cast<double>(rec) / (8.0 * static_cast<double>(kGiB)), 1e-12);
      ++seen;
      continue;
    }
    if (r["job_id"] == "k2") { EXPECT_EQ(r["req_mem_bytes"], 16 * kGiB); ++seen; }
    if (r["job_id"] == "k3") { EXPECT_EQ(r["req_mem_bytes"], 2 * kGiB); ++seen; }
    EXPECT_TRUE(r["ran_mem_bytes"].is_null()) << r.dump();
  }
  EXPECT_EQ(seen, 3u);
  const std::string m = s->metrics_text().body;
  EXPECT_NE(m.find("\npeakcast_lowered_oom_jobs_total 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("\npeakcast_lowered_jobs_total 1\n"), std::string::npos);
}

// A job array is one submission: the hook asks once and lowers every task, which complete with
// the array's submit time. The first to complete takes the answer (and judges the bound); each
// of the others is learned at the same user's request too.
TEST(ServiceSizing, EveryTaskOfALoweredArrayIsLearnedAtItsUsersRequest) {
  TempDir dir;
  auto s = open_service(dir, options());
  const int64_t submit = kNow - 7200;
  const uint64_t rec = recommendation_after_40_runs(*s, submit);
  for (int t = 1; t <= 5; ++t) {
    json c = completion_json("900_" + std::to_string(t), "alice", kScript, submit, submit + 600 * t, rec,
                             static_cast<uint64_t>(0.28 * 8 * kGiB));
    ASSERT_EQ(s->complete(c.dump()).status, 200);
  }
  const json h = json::parse(s->healthz().body)["sizing"];
  EXPECT_EQ(h["advice"]["lowered_jobs"], 5) << h.dump();
  EXPECT_EQ(h["learned_from"]["issued"], 1);   // the bound judges the first task by the answer
  EXPECT_EQ(h["learned_from"]["current"], 40 + 4);  // the others as it stands, as before
  size_t seen = 0;
  const json rows = json::parse(s->history({{"user", "alice"}}).body)["jobs"];
  for (const json& r : rows) {
    if (r["job_id"].get<std::string>().rfind("900_", 0) != 0) continue;
    EXPECT_EQ(r["req_mem_bytes"], 8 * kGiB) << r.dump();
    EXPECT_EQ(r["ran_mem_bytes"], rec);
    EXPECT_NEAR(r["mem_util"].get<double>(), 0.28, 1e-9);
    ++seen;
  }
  EXPECT_EQ(seen, 5u);
}

// The answers are kept on record: after a restart a completion is matched to the answer its
// submission got as it would have been without one. A lowered job completing after the restart
// is learned at its user's request and judged by its answer; a job array whose first task
// completed before the restart has its answer taken already, and its later tasks are learned at
// the user's request too.
TEST(ServiceSizing, AnswersOnRecordOutliveARestart) {
  TempDir dir;
  const int64_t job_submit = kNow - 3 * 3600, array_submit = kNow - 7200;
  const auto lowered = [](const std::string& id, int64_t submit, uint64_t ran) {
    return completion_json(id, "alice", kScript, submit, submit + 1800, ran, static_cast<uint64_t>(0.28 * 8 * kGiB))
        .dump();
  };
  uint64_t job_rec = 0, array_rec = 0;
  {
    auto s = open_service(dir, options());
    job_rec = recommendation_after_40_runs(*s, job_submit);
    array_rec = json::parse(s->predict(request_json("alice", kScript, array_submit, 8 * kGiB).dump()).body)
                    ["predictions"]["mem"]["recommended_bytes"].get<uint64_t>();
    ASSERT_LT(array_rec, 4 * kGiB);
    ASSERT_EQ(s->complete(lowered("700_1", array_submit, array_rec)).status, 200);
    EXPECT_EQ(json::parse(s->healthz().body)["sizing"]["learned_from"]["answers_pending"], 1);
  }
  auto s = open_service(dir, options());
  json h = json::parse(s->healthz().body)["sizing"];
  EXPECT_EQ(h["learned_from"]["answers_pending"], 1) << h.dump();  // the job's; the array's was taken
  ASSERT_EQ(s->complete(lowered("600", job_submit, job_rec)).status, 200);
  for (const char* id : {"700_2", "700_3"}) ASSERT_EQ(s->complete(lowered(id, array_submit, array_rec)).status, 200);
  h = json::parse(s->healthz().body)["sizing"];
  EXPECT_EQ(h["advice"]["lowered_jobs"], 3) << h.dump();
  EXPECT_EQ(h["learned_from"]["issued"], 1);  // the job, by its answer
  EXPECT_EQ(h["learned_from"]["current"], 2);  // the array's later tasks, as before a restart
  EXPECT_EQ(h["learned_from"]["answers_pending"], 0);
  EXPECT_EQ(h["advice"]["jobs"], 1);  // the job's advice counted from the answer on record
  size_t seen = 0;
  const json rows = json::parse(s->history({{"user", "alice"}}).body)["jobs"];
  for (const json& r : rows) {
    const std::string id = r["job_id"];
    if (id != "600" && id.rfind("700_", 0) != 0) continue;
    EXPECT_EQ(r["req_mem_bytes"], 8 * kGiB) << r.dump();
    EXPECT_EQ(r["ran_mem_bytes"], id == "600" ? job_rec : array_rec);
    EXPECT_NEAR(r["mem_util"].get<double>(), 0.28, 1e-9);
    ++seen;
  }
  EXPECT_EQ(seen, 4u);
}

// One user's jobs of one script submitted in the same second (the hook sends whole seconds, as
// sacct's Submit has them) are told apart by their names: "small" asks for 1 GiB and runs at it;
// "capped" asks for 8 GiB and the hook lowers it to a partition limit of 1 GiB, below its
// recommendation. By time and recommendation alone "capped" would take "small"'s answer (its
// recommendation is nearer 1 GiB) and be learned at 1 GiB. A job of a third name, never answered,
// is learned as it came. The same after a restart between the answers and the completions.
TEST(ServiceSizing, OneScriptsJobsSubmittedInTheSameSecondAreToldApartByName) {
  for (const bool restart : {false, true}) {
    SCOPED_TRACE(restart ? "restart before the completions" : "no restart");
    TempDir dir;
    const int64_t submit = kNow - 3600;
    auto s = open_service(dir, options());
    complete_runs(*s, 40, {0.25, 0.30, 0.35});
    const auto ask = [&](const std::string& name, uint64_t request) {
      json r = request_json("alice", kScript, submit, request);
      r["job_name"] = name;
      const Reply reply = s->predict(r.dump());
      EXPECT_EQ(reply.status, 200) << reply.body;
      return json::parse(reply.body)["predictions"]["mem"]["recommended_bytes"].get<uint64_t>();
    };
    const uint64_t small_rec = ask("small", kGiB), capped_rec = ask("capped", 8 * kGiB);
    ASSERT_LE(small_rec, kGiB);       // nearer the 1 GiB both ran at than
    ASSERT_GT(capped_rec, 2 * kGiB);  // this, above the partition's 1 GiB: lowered to that
    if (restart) s = open_service(dir, options());
    const auto done = [&](const std::string& id, const std::string& name, int64_t end, uint64_t peak) {
      json c = completion_json(id, "alice", kScript, submit, end, kGiB, peak);
      c["job_name"] = name;
      ASSERT_EQ(s->complete(c.dump()).status, 200);
    };
    done("capped1", "capped", submit + 600, 900u << 20);
    done("small1", "small", submit + 700, 300u << 20);
    done("other1", "other", submit + 800, 500u << 20);
    const json h = json::parse(s->healthz().body)["sizing"];
    EXPECT_EQ(h["learned_from"]["issued"], 2) << h.dump();  // capped1 and small1, each by its own answer
    EXPECT_EQ(h["learned_from"]["answers_pending"], 0);
    EXPECT_EQ(h["advice"]["lowered_jobs"], 1);
    size_t seen = 0;
    const json rows = json::parse(s->history({{"user", "alice"}}).body)["jobs"];
    for (const json& r : rows) {
      const std::string id = r["job_id"];
      if (id == "capped1") {
        EXPECT_EQ(r["req_mem_bytes"], 8 * kGiB) << r.dump();
        EXPECT_EQ(r["ran_mem_bytes"], kGiB);
        ++seen;
      } else if (id == "small1" || id == "other1") {
        EXPECT_EQ(r["req_mem_bytes"], kGiB) << r.dump();
        EXPECT_TRUE(r["ran_mem_bytes"].is_null());
        ++seen;
      }
    }
    EXPECT_EQ(seen, 3u);
  }
}

// A sweep: one name, one script, one second, two requests (`for m in 1G 8G; do sbatch -J sweep
// --mem=$m ...`). Name and time cannot tell the answers apart; the ids the hook wrote into the
// jobs' comments do, before a restart, after it, and across one between the completions (the
// completion stored before it holds its id, so the answer it took is not offered to the other).
TEST(ServiceSizing, ASweepUnderOneNameIsToldApartByAnswerIds) {
  enum class Restart { kNone, kBefore, kBetween };
  for (const Restart restart : {Restart::kNone, Restart::kBefore, Restart::kBetween}) {
    SCOPED_TRACE(restart == Restart::kNone ? "no restart" : restart == Restart::kBefore ? "restart before" : "restart between");
    TempDir dir;
    const int64_t submit = kNow - 3600;
    auto s = open_service(dir, options());
    complete_runs(*s, 40, {0.25, 0.30, 0.35});
    const auto ask = [&](uint64_t request) {
      json r = request_json("alice", kScript, submit, request);
      r["job_name"] = "sweep";
      const Reply reply = s->predict(r.dump());
      EXPECT_EQ(reply.status, 200) << reply.body;
      return json::parse(reply.body);
    };
    const json small = ask(kGiB), capped = ask(8 * kGiB);
    const std::string small_id = small["answer_id"], capped_id = capped["answer_id"];
    EXPECT_EQ(small_id.size(), 16u);
    EXPECT_NE(small_id, capped_id);
    ASSERT_LE(small["predictions"]["mem"]["recommended_bytes"].get<uint64_t>(), kGiB);
    ASSERT_GT(capped["predictions"]["mem"]["recommended_bytes"].get<uint64_t>(), 2 * kGiB);
    if (restart == Restart::kBefore) s = open_service(dir, options());
    const auto done = [&](const std::string& id, const std::string& answer_id, int64_t end, uint64_t peak) {
      json c = completion_json(id, "alice", kScript, submit, end, kGiB, peak);  // both ran at 1 GiB
      c["job_name"] = "sweep";
      c["answer_id"] = answer_id;
      ASSERT_EQ(s->complete(c.dump()).status, 200);
    };
    done("capped1", capped_id, submit + 600, 900u << 20);  // lowered by the hook to the partition's 1 GiB
    if (restart == Restart::kBetween) s = open_service(dir, options());
    done("small1", small_id, submit + 700, 300u << 20);
    const json h = json::parse(s->healthz().body)["sizing"];
    EXPECT_EQ(h["learned_from"]["issued"], restart == Restart::kBetween ? 1 : 2) << h.dump();
    EXPECT_EQ(h["learned_from"]["answers_pending"], 0);
    size_t seen = 0;
    const json rows = json::parse(s->history({{"user", "alice"}}).body)["jobs"];
    for (const json& r : rows) {
      if (r["job_id"] == "capped1") {
        EXPECT_EQ(r["req_mem_bytes"], 8 * kGiB) << r.dump();  // its user's request
        EXPECT_EQ(r["ran_mem_bytes"], kGiB);
        ++seen;
      } else if (r["job_id"] == "small1") {
        EXPECT_EQ(r["req_mem_bytes"], kGiB) << r.dump();
        EXPECT_TRUE(r["ran_mem_bytes"].is_null());
        ++seen;
      }
    }
    EXPECT_EQ(seen, 2u);
  }
}

// A store that cannot keep the answer: the submission is answered all the same, and the failure
// is counted and shown.
TEST(ServiceSizing, AnAnswerNotKeptIsStillAnswered) {
  TempDir dir;
  auto inner = open_sqlite_store(dir.file("h.db"));
  ASSERT_TRUE(inner.ok());
  auto faulty = std::make_unique<testing::FaultyStore>(std::move(*inner));
  testing::FaultyStore* store = faulty.get();
  Service s(testing::history_model(), std::move(faulty), options());
  ASSERT_TRUE(s.rebuild().is_ok());
  store->fail_writes = true;
  const Reply reply = s.predict(request_json("alice", kScript, kNow, 8 * kGiB).dump());
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_TRUE(json::parse(reply.body)["predictions"]["mem"]["util"].is_number());
  const json storage = json::parse(s.healthz().body)["storage"];
  EXPECT_NE(storage["answers_error"].get<std::string>().find("disk is full"), std::string::npos) << storage.dump();
  EXPECT_NE(s.metrics_text().body.find("\npeakcast_answers_not_kept_total 1\n"), std::string::npos);
  store->fail_writes = false;
  EXPECT_EQ(s.predict(request_json("alice", kScript, kNow, 8 * kGiB).dump()).status, 200);
  EXPECT_TRUE(json::parse(s.healthz().body)["storage"]["answers_error"].is_null());
}

}  // namespace
}  // namespace peakcast::serve
