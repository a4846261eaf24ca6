// The report's upper bounds and recommended requests are what peakcastd would have answered
// (report_internal.h, replay_daemon): checked against the daemon's own sizing state
// (serve::SizingState) fed the same completions, and for a new script, an OOM run and the
// user's request.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "peakcast/eval/coverage.h"
#include "peakcast/serve/sizing_state.h"
#include "peakcast/sizing/warm_runs.h"
#include "report/report_internal.h"

namespace peakcast::report {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr int64_t kHourMs = 3'600'000;

Job make_job(int i, const std::string& script, double share, uint64_t request, bool oom = false) {
  Job j;
  j.job_id = std::to_string(i);
  j.user = "alice";
  j.submit_ms = 1'700'000'000'000 + i * kHourMs;
  j.end_ms = j.submit_ms + kHourMs / 2;  // ends before the next submission
  j.workload = script;
  j.script_key = script;
  j.req_mem_bytes = request;
  if (oom) {
    j.state = "OUT_OF_MEMORY";
  } else {
    j.peak_mem_bytes = static_cast<uint64_t>(share * static_cast<double>(request));
  }
  compute_labels(j);
  return j;
}

cascade::JobPrediction predict(const Job& j, double util, history::Level level) {
  cascade::JobPrediction p;
  p.job_id = j.job_id;
  p.mem.util = util;
  p.mem.history_level = std::string(history::level_name(level));
  return p;
}

ReplayOptions daemon_options() {
  ReplayOptions o;
  o.bound = eval::coverage_bound_options(serve::default_bound_options().coverage);
  return o;
}

std::vector<PredictedRun> runs(const std::vector<Job>& jobs, const std::vector<cascade::JobPrediction>& p) {
  std::vector<PredictedRun> out;
  for (size_t i = 0; i < jobs.size(); ++i) out.push_back({&jobs[i], &p[i]});
  return out;
}

// A stream where each job ends before the next is submitted: 14 scripts with different spreads,
// some runs killed for memory; the first run of a script is answered at the user level.
struct Stream {
  std::vector<Job> jobs;
  std::vector<cascade::JobPrediction> preds;
};
Stream make_stream(unsigned seed) {
  Stream s;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, 13);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<int> runs_of(14, 0);
  for (int i = 0; i < 400; ++i) {
    const int k = pick(rng);
    const double mean = 0.2 + 0.04 * k, spread = 0.01 + 0.01 * (k % 5);
    const double share = std::clamp(mean + spread * noise(rng), 0.01, 0.99);
    const bool oom = k == 13 && runs_of[k] % 7 == 3;
    const uint64_t request = (4 + static_cast<uint64_t>(k % 3) * 4) * kGiB;
    s.jobs.push_back(make_job(i, "script" + std::to_string(k), share, request, oom));
    const history::Level level = runs_of[k] == 0 ? history::Level::kUser : history::Level::kExactScript;
    s.preds.push_back(predict(s.jobs.back(), mean, level));
    ++runs_of[k];
  }
  return s;
}

// The daemon's failed_request: the largest request among the script's trailing OOM runs.
std::optional<uint64_t> trailing_oom(const std::vector<Job>& jobs, size_t i) {
  std::optional<uint64_t> out;
  for (size_t k = i; k-- > 0;) {
    if (jobs[k].script_key != jobs[i].script_key) continue;
    if (jobs[k].state != "OUT_OF_MEMORY") break;
    out = std::max(out.value_or(0), *jobs[k].req_mem_bytes);
  }
  return out;
}

TEST(ReportDaemon, AnswersAsTheDaemonsSizingStateDoes) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const Stream s = make_stream(seed);
    const std::vector<DaemonAnswer> report = replay_daemon({}, runs(s.jobs, s.preds), s.jobs, daemon_options());
    ASSERT_EQ(report.size(), s.jobs.size());
    serve::SizingState daemon;  // peakcastd's defaults
    size_t with_bound = 0, oom_steps = 0, own = 0;
    for (size_t i = 0; i < s.jobs.size(); ++i) {
      cascade::JobPrediction answered = s.preds[i];
      const serve::SizingState::Applied a = daemon.apply(s.jobs[i], trailing_oom(s.jobs, i), answered);
      const bool online = a.upper_source[idx(Resource::kMem)] == "online";
      ASSERT_EQ(report[i].upper[idx(Resource::kMem)].has_value(), online) << "seed " << seed << " job " << i;
      if (online) {
        ++with_bound;
        EXPECT_DOUBLE_EQ(*report[i].upper[idx(Resource::kMem)], *answered.mem.upper_util) << "job " << i;
      }
      EXPECT_EQ(report[i].recommended_bytes, answered.mem.recommended_bytes) << "job " << i;
      EXPECT_EQ(report[i].rule, a.rule) << "job " << i;
      EXPECT_EQ(report[i].source, a.source) << "job " << i;
      if (a.rule.find("oom") != std::string::npos) ++oom_steps;
      own += a.source == "workload" ? 1 : 0;
      daemon.observe(s.jobs[i], s.preds[i]);
    }
    EXPECT_GT(with_bound, 300u) << "seed " << seed;  // not a comparison of empty answers
    EXPECT_GT(oom_steps, 0u) << "seed " << seed;
    EXPECT_GT(own, 200u) << "seed " << seed;  // scripts with 10 runs: their own policy answers
    EXPECT_LT(own, 400u) << "seed " << seed;  // and before that the bound
    // The daemon's live advice tallies are the report's "saved and cost" over the same jobs (those
    // answered with a recommendation).
    std::vector<Job> advised;
    std::vector<DaemonAnswer> advice;
    for (size_t i = 0; i < s.jobs.size(); ++i) {
      if (!report[i].recommended_bytes) continue;
      advised.push_back(s.jobs[i]);
      advice.push_back(report[i]);
    }
    const std::optional<RecommendationOutcome> outcome = recommendation_outcome(advised, advice);
    ASSERT_TRUE(outcome.has_value());
    const serve::SizingState::Learned live = daemon.learned();
    const std::vector<sizing::SeedSummary>& rows = outcome->totals.results;
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(live.advice_at_request.jobs, static_cast<size_t>(rows[0].jobs.mean)) << "seed " << seed;
    EXPECT_GT(live.advice_at_request.jobs, 300u);
    EXPECT_GT(live.advice_oom_jobs, 0u);
    EXPECT_NEAR(live.advice_at_request.waste_gbh, rows[0].waste_gbh.mean, 1e-9 * rows[0].waste_gbh.mean);
    EXPECT_NEAR(live.advice_at_recommendation.waste_gbh, rows[1].waste_gbh.mean, 1e-9 * rows[1].waste_gbh.mean);
    EXPECT_EQ(live.advice_at_recommendation.failures, static_cast<size_t>(rows[1].failures.mean));
  }
}

// A workflow's bursts: each of 24 bursts runs one of 6 scripts on 15 jobs submitted within
// 15 s, all ending 20-40 min later (after the next burst's submissions); the peaks of a script
// move between bursts, so a burst is missed as a whole and its misses arrive together.
Stream make_bursts(unsigned seed) {
  Stream s;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, 5), lag(20 * 60, 40 * 60);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<int> runs_of(6, 0);
  std::vector<double> level_of(6, 0.3);
  int i = 0;
  for (int burst = 0; burst < 24; ++burst) {
    const int k = pick(rng);
    const double mean = level_of[k];
    level_of[k] = std::clamp(mean + 0.15 * noise(rng), 0.05, 0.9);  // where its next burst peaks
    const int64_t start = 1'700'000'000'000 + burst * 10 * 60'000;
    for (int j = 0; j < 15; ++j, ++i) {
      Job job = make_job(i, "script" + std::to_string(k), std::clamp(level_of[k] + 0.01 * noise(rng), 0.01, 0.99),
                         8 * kGiB);
      job.submit_ms = start + j * 1000;
      job.end_ms = job.submit_ms + lag(rng) * 1000;
      s.jobs.push_back(job);
      const history::Level level = runs_of[k] == 0 ? history::Level::kUser : history::Level::kExactScript;
      s.preds.push_back(predict(s.jobs.back(), mean, level));
    }
    runs_of[k] += 15;
  }
  return s;
}

// peakcastd answers each submission and learns each completion when it arrives; the report's
// walk must give the same answers when completions arrive long after the bounds they judge.
TEST(ReportDaemon, AnswersAsTheDaemonDoesWhenBurstsCompleteLate) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const Stream s = make_bursts(seed);
    const std::vector<DaemonAnswer> report = replay_daemon({}, runs(s.jobs, s.preds), s.jobs, daemon_options());
    serve::SizingState daemon;
    std::vector<size_t> by_end(s.jobs.size());
    for (size_t i = 0; i < by_end.size(); ++i) by_end[i] = i;
    std::stable_sort(by_end.begin(), by_end.end(),
                     [&](size_t a, size_t b) { return s.jobs[a].end_ms < s.jobs[b].end_ms; });
    size_t next_done = 0, with_bound = 0, misses = 0, own = 0;
    for (size_t i = 0; i < s.jobs.size(); ++i) {
      while (next_done < by_end.size() && s.jobs[by_end[next_done]].end_ms < s.jobs[i].submit_ms) {
        const size_t k = by_end[next_done++];
        daemon.observe(s.jobs[k], s.preds[k]);
      }
      cascade::JobPrediction answered = s.preds[i];
      const serve::SizingState::Applied a = daemon.apply(s.jobs[i], std::nullopt, answered);
      const bool online = a.upper_source[idx(Resource::kMem)] == "online";
      ASSERT_EQ(report[i].upper[idx(Resource::kMem)].has_value(), online) << "seed " << seed << " job " << i;
      EXPECT_EQ(report[i].recommended_bytes, answered.mem.recommended_bytes) << "job " << i;
      EXPECT_EQ(report[i].source, a.source) << "job " << i;
      own += a.source == "workload" ? 1 : 0;
      if (!online) continue;
      ++with_bound;
      EXPECT_DOUBLE_EQ(*report[i].upper[idx(Resource::kMem)], *answered.mem.upper_util) << "job " << i;
      if (s.jobs[i].label(Resource::kMem) > *answered.mem.upper_util) ++misses;
    }
    EXPECT_GT(with_bound, 200u) << "seed " << seed;
    EXPECT_GT(misses, 15u) << "seed " << seed;  // whole bursts missed: feedback that comes late
    EXPECT_GT(own, 100u) << "seed " << seed;     // answered by the script's own policy, learned late too
    // Every completion was judged by the answer given at its submission.
    const nlohmann::json learned = daemon.to_json()["learned_from"];
    EXPECT_EQ(learned["issued"].get<size_t>(), next_done);
    EXPECT_EQ(learned["current"].get<size_t>(), 0u);
  }
}

// The report's replay of the stream and a daemon fed the same, both with the scripts' policies
// bounded by `w`: each job's recommendation and its source are the same. Returns the report's
// answers and the daemon's state at the end.
struct Replayed {
  std::vector<DaemonAnswer> report;
  serve::SizingState::Learned daemon;
};
Replayed replay_beside_the_daemon(const Stream& s, const sizing::WorkloadSizerOptions& w) {
  ReplayOptions o = daemon_options();
  o.workloads = w;
  Replayed out{replay_daemon({}, runs(s.jobs, s.preds), s.jobs, o), {}};
  serve::SizingOptions so;
  so.workloads = w;
  serve::SizingState daemon(so);
  for (size_t i = 0; i < s.jobs.size(); ++i) {
    cascade::JobPrediction answered = s.preds[i];
    const serve::SizingState::Applied a = daemon.apply(s.jobs[i], trailing_oom(s.jobs, i), answered);
    EXPECT_EQ(out.report[i].recommended_bytes, answered.mem.recommended_bytes) << "job " << i;
    EXPECT_EQ(out.report[i].source, a.source) << "job " << i;
    daemon.observe(s.jobs[i], s.preds[i]);
  }
  out.daemon = daemon.learned();
  return out;
}

// `peakcast report --sizing-workloads 0`, as peakcastd's: every recommendation from the bound,
// and the same ones a daemon with no scripts' policies gives.
TEST(ReportDaemon, WithNoWorkloadsKeptEveryRecommendationIsTheBounds) {
  sizing::WorkloadSizerOptions w;
  w.max_workloads = 0;
  const Replayed r = replay_beside_the_daemon(make_stream(4), w);
  size_t recommended = 0;
  for (const DaemonAnswer& a : r.report) {
    EXPECT_NE(a.source, "workload");
    recommended += a.recommended_bytes ? 1 : 0;
  }
  EXPECT_GT(recommended, 300u);
}

// `peakcast report --sizing-memory`, as peakcastd's: under a budget that holds only a few of the
// 14 scripts' policies, scripts are forgotten and start over alike in both, and the answers are
// the same; with room for all of them more answers come from a script's own policy.
TEST(ReportDaemon, UnderATightSizingMemoryTheReportAnswersAsTheDaemon) {
  const Stream s = make_stream(5);
  const auto by_workload = [&](size_t max_bytes) {
    sizing::WorkloadSizerOptions w;
    w.max_bytes = max_bytes;
    const Replayed r = replay_beside_the_daemon(s, w);
    EXPECT_LE(r.daemon.workloads_bytes, max_bytes);
    return std::count_if(r.report.begin(), r.report.end(), [](const DaemonAnswer& a) { return a.source == "workload"; });
  };
  const auto tight = by_workload(size_t{64} << 10);  // a few scripts of tens of runs
  const auto roomy = by_workload(size_t{128} << 20);
  EXPECT_GT(roomy, tight);
}

// The report's replay against peakcastd's SizingState, both started at the first test submission
// (job `cut`; every earlier job has ended) with the same workload settings `w`: the daemon's
// policies learn the stored runs sizing::WarmRuns keeps (those before the age limit priced only),
// then at each submission it is swept (under an age limit: hourly, and the jobs here come an hour
// apart), asked and told the completion. Each answer must be the daemon's. Returns how many were a
// script's own, and the hand-overs the sweeps made.
std::pair<long, size_t> compare_with_daemon(const Stream& s, size_t cut, const sizing::WorkloadSizerOptions& w) {
  std::vector<const Job*> stored;
  for (size_t i = 0; i < cut; ++i) stored.push_back(&s.jobs[i]);
  const std::vector<Job> test(s.jobs.begin() + static_cast<std::ptrdiff_t>(cut), s.jobs.end());
  const std::vector<cascade::JobPrediction> test_p(s.preds.begin() + static_cast<std::ptrdiff_t>(cut), s.preds.end());
  ReplayOptions o = daemon_options();
  o.workloads = w;
  const std::vector<DaemonAnswer> report = replay_daemon({}, runs(test, test_p), s.jobs, o, stored);
  serve::SizingOptions so;
  so.workloads = w;
  serve::SizingState daemon(so);
  sizing::WarmRuns warm(w, test.front().submit_ms);
  for (const Job* j : stored) {
    if (std::optional<sizing::SimTask> t = sizing::learned_run(*j)) warm.add(*t);
  }
  daemon.warm(warm);
  size_t handed_over = 0;
  for (size_t i = 0; i < test.size(); ++i) {
    if (i > 0) handed_over += daemon.age_workloads(test[i].submit_ms).handed_over;
    cascade::JobPrediction answered = test_p[i];
    const serve::SizingState::Applied a = daemon.apply(test[i], trailing_oom(s.jobs, cut + i), answered);
    EXPECT_EQ(report[i].recommended_bytes, answered.mem.recommended_bytes) << "job " << i;
    EXPECT_EQ(report[i].source, a.source) << "job " << i;
    daemon.observe(test[i], test_p[i]);
  }
  return {std::count_if(report.begin(), report.end(), [](const DaemonAnswer& a) { return a.source == "workload"; }),
          handed_over};
}

// The report's daemon starts at the first test submission, its scripts' policies warmed from the
// jobs that had ended by then as peakcastd's start warms them from its store (SizingState::warm
// with sizing::WarmRuns): the answers are the daemon's under any --sizing-rebuild-runs, and with
// none the policies start with the test block and fewer answers are a script's own.
TEST(ReportDaemon, ThePoliciesAreWarmedFromTheStoredRunsAsAtTheDaemonsStart) {
  const Stream s = make_stream(6);
  std::map<size_t, long> own;
  for (size_t budget : {size_t{100000}, size_t{60}, size_t{0}}) {
    sizing::WorkloadSizerOptions w;
    w.rebuild_runs = budget;
    SCOPED_TRACE(budget);
    own[budget] = compare_with_daemon(s, 300, w).first;
  }
  EXPECT_GT(own[100000], own[60]);
  EXPECT_GT(own[60], own[0]);
}

// With --sizing-days the report's daemon warms each script's policy with its runs of the last
// DAYS only and sweeps hourly, as peakcastd's start and sweep do (SizingState::age_workloads): the
// answers are the daemon's. Jobs here come hourly, 14 scripts in turn at random; with 3 days a
// script has 5 or so runs at the start, and the policies that reach 10 hand over within the test
// block, so fewer answers are a script's own than with no limit.
TEST(ReportDaemon, UnderSizingDaysThePoliciesAgeAsTheDaemonsDo) {
  const Stream s = make_stream(6);
  std::map<int64_t, std::pair<long, size_t>> got;
  for (int64_t max_age : {int64_t{0}, 72 * kHourMs, 120 * kHourMs}) {
    sizing::WorkloadSizerOptions w;
    w.max_age_ms = max_age;
    SCOPED_TRACE(max_age);
    got[max_age] = compare_with_daemon(s, 300, w);
  }
  EXPECT_EQ(got[0].second, 0u);
  EXPECT_GT(got[72 * kHourMs].second, 0u);
  EXPECT_LT(got[72 * kHourMs].first, got[120 * kHourMs].first);
  EXPECT_LT(got[120 * kHourMs].first, got[0].first);
}

TEST(ReportDaemon, ANewScriptWithoutEvidenceGetsNoBoundAndNoRecommendation) {
  std::vector<Job> jobs = {make_job(0, "a", 0.3, 8 * kGiB), make_job(1, "b", 0.3, 8 * kGiB)};
  std::vector<cascade::JobPrediction> preds = {predict(jobs[0], 0.3, history::Level::kUser),
                                               predict(jobs[1], 0.3, history::Level::kUser)};
  const std::vector<DaemonAnswer> a = replay_daemon({}, runs(jobs, preds), jobs, daemon_options());
  for (const DaemonAnswer& x : a) {
    EXPECT_FALSE(x.upper[idx(Resource::kMem)]);
    EXPECT_FALSE(x.recommended_bytes);
  }
}

TEST(ReportDaemon, WarmUpCompletionsGiveTheTestJobsEvidence) {
  // 30 earlier runs of one script warm the bound; the test job of that script then has one.
  std::vector<Job> warm, test;
  std::vector<cascade::JobPrediction> warm_p, test_p;
  for (int i = 0; i < 30; ++i) {
    warm.push_back(make_job(i, "a", 0.25 + 0.01 * (i % 5), 8 * kGiB));
    warm_p.push_back(predict(warm.back(), 0.27, history::Level::kExactScript));
  }
  test.push_back(make_job(30, "a", 0.26, 8 * kGiB));
  test_p.push_back(predict(test.back(), 0.27, history::Level::kExactScript));
  std::vector<Job> all = warm;
  all.push_back(test[0]);
  const DaemonAnswer cold = replay_daemon({}, runs(test, test_p), all, daemon_options())[0];
  EXPECT_FALSE(cold.recommended_bytes);
  const DaemonAnswer a = replay_daemon(runs(warm, warm_p), runs(test, test_p), all, daemon_options())[0];
  ASSERT_TRUE(a.upper[idx(Resource::kMem)]);
  EXPECT_GE(*a.upper[idx(Resource::kMem)], 0.27);
  EXPECT_LE(*a.upper[idx(Resource::kMem)], 0.27 + 0.03);  // the runs spread over 0.25-0.29
  ASSERT_TRUE(a.recommended_bytes);
  EXPECT_LT(*a.recommended_bytes, 8 * kGiB);  // lowered from the request
}

TEST(ReportDaemon, AfterAnOomRunTheRecommendationIsAboveTheFailedRequestButNotTheUsersOwn) {
  std::vector<Job> warm, test;
  std::vector<cascade::JobPrediction> warm_p, test_p;
  for (int i = 0; i < 30; ++i) {
    warm.push_back(make_job(i, "a", 0.25, 8 * kGiB));
    warm_p.push_back(predict(warm.back(), 0.25, history::Level::kExactScript));
  }
  warm.push_back(make_job(30, "a", 0.0, 4 * kGiB, /*oom=*/true));  // killed at a 4 GiB request
  warm_p.push_back(predict(warm.back(), 0.25, history::Level::kExactScript));
  test.push_back(make_job(31, "a", 0.25, 8 * kGiB));
  test_p.push_back(predict(test.back(), 0.25, history::Level::kExactScript));
  std::vector<Job> all = warm;
  all.push_back(test[0]);
  const DaemonAnswer a = replay_daemon(runs(warm, warm_p), runs(test, test_p), all, daemon_options())[0];
  ASSERT_TRUE(a.recommended_bytes);
  EXPECT_GT(*a.recommended_bytes, 4 * kGiB) << a.rule;
  EXPECT_LE(*a.recommended_bytes, 8 * kGiB) << a.rule;
  EXPECT_NE(a.rule.find("oom"), std::string::npos) << a.rule;
}

}  // namespace
}  // namespace peakcast::report
