// Examples of the history store's contract: strict event time, the experts on small hand-checked
// series, the hierarchy, idempotence, the watermark and bounded memory in replay.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "peakcast/history/history.h"

namespace peakcast::history {
namespace {

constexpr int64_t kHour = 3600 * 1000;  // times are epoch milliseconds

Job make_job(std::string id, std::string user, std::string script, int64_t submit, int64_t end,
             double mem, bool censored = false) {
  Job j;
  j.job_id = std::move(id);
  j.user = std::move(user);
  j.script_key = std::move(script);
  j.submit_ms = submit;
  j.end_ms = end;
  j.util[idx(Resource::kMem)] = mem;
  j.valid[idx(Resource::kMem)] = true;
  j.censored = censored;
  return j;
}

double ex(const KeyStats& s, Expert e) { return s.expert[static_cast<int>(e)]; }

TEST(HistoryNames, RoundTrip) {
  for (Expert e : kExperts) EXPECT_EQ(parse_expert(expert_name(e)), e);
  EXPECT_EQ(expert_name(Expert::kEwma), "ewma");
  EXPECT_EQ(parse_expert("decay"), Expert::kEwma);  // the name older models used
  EXPECT_FALSE(parse_expert("last2").has_value());
  EXPECT_EQ(level_name(Level::kExactScript), "exact_script");
  EXPECT_EQ(level_name(Level::kUser), "user");
  EXPECT_EQ(level_name(Level::kNone), "none");
}

// The clustered standard error: the plain one when every difference is its own cluster; wider
// when the differences of a cluster move together; no evidence from one cluster.
TEST(MeanSe, ClusteredStandardError) {
  const std::vector<double> d = {0.1, -0.2, 0.05, 0.3, -0.1, 0.0, 0.25, -0.05};
  std::vector<uint64_t> own(d.size());
  for (size_t i = 0; i < own.size(); ++i) own[i] = i;
  const MeanSe plain = mean_and_se(d), single = clustered_mean_and_se(d, own);
  EXPECT_DOUBLE_EQ(single.mean, plain.mean);
  EXPECT_NEAR(single.se, plain.se, 1e-12);
  EXPECT_DOUBLE_EQ(single.df, static_cast<double>(d.size() - 1));
  // Two clusters of identical values: n = 8 but two pieces of evidence.
  const std::vector<double> twins = {0.1, 0.1, 0.1, 0.1, 0.3, 0.3, 0.3, 0.3};
  const std::vector<uint64_t> two = {7, 7, 7, 7, 9, 9, 9, 9};
  const MeanSe c = clustered_mean_and_se(twins, two);
  EXPECT_DOUBLE_EQ(c.mean, 0.2);
  EXPECT_NEAR(c.se, 0.1, 1e-12);  // sqrt(2/1 * (0.4^2 + 0.4^2) / 64)
  EXPECT_GT(c.se, mean_and_se(twins).se);
  EXPECT_DOUBLE_EQ(c.df, 1.0);
  EXPECT_TRUE(std::isinf(clustered_mean_and_se(twins, std::vector<uint64_t>(8, 1)).se));
  EXPECT_THROW(clustered_mean_and_se(twins, std::span<const uint64_t>(two).subspan(0, 3)),
               std::invalid_argument);
}

TEST(MeanSe, SmallSampleFactorIsStudentsT) {
  // t(0.975, df) / z(0.975), the quantiles to ten significant figures (R's qt and qnorm).
  constexpr double kZ = 1.959963985;
  EXPECT_NEAR(small_sample_factor(1.0), 12.70620474 / kZ, 1e-7);
  EXPECT_NEAR(small_sample_factor(10.0), 2.228138852 / kZ, 1e-7);
  EXPECT_NEAR(small_sample_factor(30.0), 2.042272456 / kZ, 1e-7);
  EXPECT_NEAR(small_sample_factor(60.0), 2.000297822 / kZ, 1e-4);  // Cornish-Fisher beyond 30
  EXPECT_NEAR(small_sample_factor(120.0), 1.979930405 / kZ, 1e-4);
  EXPECT_DOUBLE_EQ(small_sample_factor(std::numeric_limits<double>::infinity()), 1.0);
  EXPECT_TRUE(std::isinf(small_sample_factor(0.0)));
  for (double df = 1.0; df < 200.0; df += 1.0) {
    EXPECT_GE(small_sample_factor(df), small_sample_factor(df + 1.0)) << df;  // shrinks with df
  }
}

TEST(HistoryStore, StrictEndTimeVisibility) {
  HistoryStore store;
  store.add_completion(make_job("1", "u", "s", 0, 100, 0.5));
  EXPECT_EQ(store.query("s", "u", 100, Resource::kMem).exact.count, 0);  // end == t: not yet
  EXPECT_EQ(store.query("s", "u", 99, Resource::kMem).level, Level::kNone);
  const HistoryView v = store.query("s", "u", 101, Resource::kMem);
  EXPECT_EQ(v.level, Level::kExactScript);
  EXPECT_EQ(v.exact.count, 1);
  EXPECT_DOUBLE_EQ(v.exact.age_last_s, 0.001);      // 1 ms, in seconds
  EXPECT_DOUBLE_EQ(v.exact.last_end_time, 0.1);     // epoch seconds
}

// peakcastd --history-days while it runs: the runs that ended before t go, and a key left with
// none goes too; what is kept answers as a store that only ever had the runs since t.
TEST(HistoryStore, ForgetsTheRunsThatEndedBeforeATime) {
  const Job jobs[] = {make_job("1", "old_user", "a", 0, 10 * kHour, 0.2),
                      make_job("2", "u", "a", 0, 30 * kHour, 0.4), make_job("3", "u", "b", 0, 5 * kHour, 0.6),
                      make_job("4", "u", "a", 0, 25 * kHour, 0.8)};
  HistoryStore store, recent_only;
  for (const Job& j : jobs) {
    store.add_completion(j);
    if (j.end_ms >= 20 * kHour) recent_only.add_completion(j);
  }
  EXPECT_EQ(store.key_count(), 4u);
  const HistoryStore::Forgotten f = store.forget_before(20 * kHour);
  EXPECT_EQ(f.keys, 2u);    // script b, user old_user
  EXPECT_EQ(f.labels, 4u);  // job 1 under a and old_user, job 3 under b and u
  EXPECT_EQ(store.key_count(), 2u);
  const int64_t t = 40 * kHour;
  const HistoryView a = store.query("a", "u", t, Resource::kMem);
  const HistoryView a_recent = recent_only.query("a", "u", t, Resource::kMem);
  EXPECT_EQ(a.exact.count, 2);  // jobs 4 and 2: old_user's run of script a is gone
  EXPECT_EQ(a.exact.expert, a_recent.exact.expert);
  EXPECT_DOUBLE_EQ(ex(a.exact, Expert::kMedian5), 0.6);  // {0.8, 0.4}, without job 1's 0.2
  EXPECT_EQ(a.exact.recent_err, a_recent.exact.recent_err);
  EXPECT_EQ(a.exact.err_n, a_recent.exact.err_n);
  EXPECT_EQ(a.user.count, 2);   // user u: script b's run is gone
  EXPECT_EQ(store.query("b", "old_user", t, Resource::kMem).level, Level::kNone);
  EXPECT_EQ(store.size(), 4u);  // completions added, not lowered
  const HistoryStore::Forgotten again = store.forget_before(20 * kHour);
  EXPECT_EQ(again.keys + again.labels, 0u);
}

// Under a watermark old labels are folded into batches; a batch goes once all of it ended
// before the horizon, and then the series is that of a store of the recent runs alone.
TEST(HistoryStore, ForgetsFoldedLabelsByTheBatch) {
  HistoryStore store, recent_only;
  for (int i = 0; i < 100; ++i) {  // one run an hour, all visible at the watermark
    const Job j = make_job(std::to_string(i), "u", "s", i * kHour, i * kHour + kHour / 2, 0.01 * i);
    store.add_completion(j);
    store.advance_watermark((i + 1) * kHour);
    if (j.end_ms >= 90 * kHour) recent_only.add_completion(j);
  }
  ASSERT_LT(store.retained_entries(), 2u * 100u);  // folded: fewer held than added (two keys)
  const int64_t t = 200 * kHour;
  // Up to hour 90 every folded label is older than the horizon and the kept entries are not.
  HistoryStore::Forgotten f = store.forget_before(90 * kHour);
  EXPECT_EQ(f.keys, 0u);
  EXPECT_EQ(f.labels, 2u * 90u);
  for (Level l : {Level::kExactScript, Level::kUser}) {
    const HistoryView got = store.query("s", "u", t, Resource::kMem), want = recent_only.query("s", "u", t, Resource::kMem);
    const KeyStats& g = l == Level::kExactScript ? got.exact : got.user;
    const KeyStats& w = l == Level::kExactScript ? want.exact : want.user;
    EXPECT_EQ(g.count, 10);
    EXPECT_EQ(g.expert, w.expert);  // the decay mean too: recomputed from the kept runs alone
    EXPECT_EQ(g.recent_err, w.recent_err);
  }
  f = store.forget_before(1000 * kHour);
  EXPECT_EQ(f.keys, 2u);
  EXPECT_EQ(f.labels, 2u * 10u);
  EXPECT_EQ(store.key_count(), 0u);
}

// Without the id set (the caller sends each job once) a job sent twice counts twice.
TEST(HistoryStore, WithoutIdsTheCallerDeduplicates) {
  HistoryStore tracked, untracked(/*track_ids=*/false);
  for (HistoryStore* s : {&tracked, &untracked}) {
    s->add_completion(make_job("1", "u", "a", 0, kHour, 0.2));
    s->add_completion(make_job("1", "u", "a", 0, kHour, 0.2));
  }
  EXPECT_EQ(tracked.size(), 1u);
  EXPECT_EQ(untracked.size(), 2u);
  EXPECT_EQ(untracked.query("a", "u", 2 * kHour, Resource::kMem).exact.count, 2);
  EXPECT_LT(untracked.memory_bytes(), tracked.memory_bytes());
}

TEST(HistoryStore, ExpertsOnASmallSeries) {
  HistoryStore store;
  // Added out of order; end-time order is 0.1, 0.9, 0.3, 0.7, 0.5, 0.2 (one hour apart).
  const std::vector<double> labels = {0.1, 0.9, 0.3, 0.7, 0.5, 0.2};
  for (int i : {3, 0, 5, 1, 4, 2}) {
    store.add_completion(make_job("j" + std::to_string(i), "u", "s", 0, (i + 1) * kHour,
                                  labels[static_cast<size_t>(i)], i == 1));
  }
  const KeyStats s = store.query("s", "u", 10 * kHour, Resource::kMem).exact;
  ASSERT_EQ(s.count, 6);
  EXPECT_DOUBLE_EQ(ex(s, Expert::kLast1), 0.2);
  EXPECT_DOUBLE_EQ(ex(s, Expert::kMedian3), 0.5);   // {0.7, 0.5, 0.2}
  EXPECT_DOUBLE_EQ(ex(s, Expert::kMedian5), 0.5);   // {0.9, 0.3, 0.7, 0.5, 0.2}
  double num = 0, den = 0;
  for (int i = 0; i < 6; ++i) {
    const double w = std::exp2(-static_cast<double>(10 * kHour - (i + 1) * kHour) /
                               kDecayHalfLifeMs);
    num += w * labels[static_cast<size_t>(i)];
    den += w;
  }
  EXPECT_NEAR(ex(s, Expert::kEwma), num / den, 1e-12);
  // Window median = (0.3 + 0.5) / 2 = 0.4; deviations 0.3 0.5 0.1 0.3 0.1 0.2 -> median 0.25.
  EXPECT_NEAR(s.mad, 0.25, 1e-12);
  EXPECT_NEAR(s.spread, ex(s, Expert::kMedian3) - ex(s, Expert::kLast1), 1e-12);
  EXPECT_EQ(s.censored_recent, 1);
  EXPECT_DOUBLE_EQ(s.age_last_s, 4.0 * 3600.0);  // seconds

  // At t = 3.5 h only the first three have ended.
  const KeyStats early = store.query("s", "u", 3 * kHour + 1800, Resource::kMem).exact;
  ASSERT_EQ(early.count, 3);
  EXPECT_DOUBLE_EQ(ex(early, Expert::kLast1), 0.3);
  EXPECT_DOUBLE_EQ(ex(early, Expert::kMedian5), 0.3);  // median of {0.1, 0.9, 0.3}
}

TEST(HistoryStore, HierarchyAndResourceValidity) {
  HistoryStore store;
  Job gpu = make_job("g", "alice", "train", 0, 10, 0.4);
  gpu.util[idx(Resource::kVram)] = 0.8;
  gpu.valid[idx(Resource::kVram)] = true;
  store.add_completion(gpu);
  store.add_completion(make_job("c", "alice", "prep", 0, 20, 0.6));

  const HistoryView exact = store.query("train", "alice", 100, Resource::kVram);
  EXPECT_EQ(exact.level, Level::kExactScript);
  EXPECT_DOUBLE_EQ(exact.estimate(Expert::kLast1, -1.0), 0.8);
  const HistoryView other = store.query("eval", "alice", 100, Resource::kVram);
  EXPECT_EQ(other.level, Level::kUser);  // only the GPU job counts for alice's VRAM
  EXPECT_EQ(other.user.count, 1);
  EXPECT_DOUBLE_EQ(other.estimate(Expert::kMedian3, -1.0), 0.8);
  EXPECT_EQ(store.query("prep", "alice", 100, Resource::kMem).user.count, 2);
  const HistoryView none = store.query("train", "bob", 5, Resource::kMem);
  EXPECT_EQ(none.level, Level::kNone);
  EXPECT_DOUBLE_EQ(none.estimate(Expert::kEwma, 0.33), 0.33);
  EXPECT_EQ(store.query("", "alice", 100, Resource::kMem).level, Level::kUser);
}

// An OOM-killed run's label is a lower bound (at the cap, 1.0 = its request): while it is the
// most recent run of the script, no expert of that script may fall below it -- the next estimate
// never lowers the request that failed. A completed run after it lifts the floor; another script
// of the same user is not floored.
TEST(HistoryStore, CensoredRunFloorsTheScriptsNextEstimate) {
  HistoryStore store;
  store.add_completion(make_job("1", "u", "s", 0, 1 * kHour, 0.30));
  store.add_completion(make_job("2", "u", "s", 0, 2 * kHour, 0.35));
  store.add_completion(make_job("3", "u", "s", 0, 3 * kHour, 0.40));
  const HistoryView before = store.query("s", "u", 4 * kHour, Resource::kMem);
  EXPECT_LT(before.estimate(Expert::kMedian5, 0.0), 0.5);
  store.add_completion(make_job("4", "u", "s", 0, 4 * kHour, 1.0, true));  // OOM
  const HistoryView after = store.query("s", "u", 5 * kHour, Resource::kMem);
  ASSERT_EQ(after.level, Level::kExactScript);
  for (Expert e : kEstimates) EXPECT_GE(after.estimate(e, 0.0), 1.0) << expert_name(e);
  EXPECT_EQ(after.exact.censored_recent, 1);
  // Same user, another script: the user's history is not floored.
  EXPECT_LT(ex(store.query("t", "u", 5 * kHour, Resource::kMem).user, Expert::kMedian3), 1.0);
  // The retry with more memory completes at 0.5 of its larger request: the floor is gone.
  store.add_completion(make_job("5", "u", "s", 4 * kHour, 6 * kHour, 0.5));
  const HistoryView later = store.query("s", "u", 7 * kHour, Resource::kMem);
  EXPECT_DOUBLE_EQ(later.estimate(Expert::kLast1, 0.0), 0.5);
}

// An OOM stays the floor until a run of the script COMPLETES with a known peak, as the
// recommendation's chain (docs/sizing.md, "Which OOM counts"): a cancelled, timed-out, failed or
// node-failed run in between shows nothing about what the script needs. Until 2026-12-05 the
// floor stopped at the first run that was not an OOM: after an OOM at 1.0 and a cancelled run at
// 0.2, Last-1 fell to 0.2.
TEST(HistoryStore, OomFloorHoldsUntilARunCompletes) {
  HistoryStore store;
  store.add_completion(make_job("1", "u", "s", 0, 1 * kHour, 0.30));
  store.add_completion(make_job("2", "u", "s", 0, 2 * kHour, 0.35));
  Job oom = make_job("3", "u", "s", 0, 3 * kHour, 1.0, true);
  oom.state = "OUT_OF_MEMORY";
  store.add_completion(oom);
  int64_t end = 3 * kHour;
  int id = 4;
  for (const char* state : {"CANCELLED", "TIMEOUT", "FAILED", "NODE_FAIL"}) {
    end += kHour;
    Job j = make_job(std::to_string(id++), "u", "s", end - kHour / 2, end, 0.2);
    j.state = state;
    store.add_completion(j);
    const HistoryView v = store.query("s", "u", end + 1, Resource::kMem);
    ASSERT_EQ(v.level, Level::kExactScript);
    for (Expert e : kEstimates) EXPECT_GE(v.estimate(e, 0.0), 1.0) << state << " " << expert_name(e);
  }
  // The run that completes with a peak lifts the floor.
  end += kHour;
  store.add_completion(make_job(std::to_string(id++), "u", "s", end - kHour / 2, end, 0.5));
  const HistoryView later = store.query("s", "u", end + 1, Resource::kMem);
  EXPECT_DOUBLE_EQ(later.estimate(Expert::kLast1, 0.0), 0.5);
  EXPECT_LT(later.estimate(Expert::kMedian3, 0.0), 1.0);
}

// A censored label's walk-forward error is one-sided: an expert above it made no known error.
TEST(HistoryStore, CensoredWalkForwardErrorIsOneSided) {
  HistoryStore store;
  store.add_completion(make_job("1", "u", "s", 0, 1 * kHour, 0.9));
  // Submitted after 1 ended: its experts were 0.9 (>= 0.8, censored: no error).
  store.add_completion(make_job("2", "u", "s", 2 * kHour, 3 * kHour, 0.8, true));
  store.add_completion(make_job("3", "u", "s", 4 * kHour, 5 * kHour, 0.7));
  const KeyStats s = store.query("s", "u", 6 * kHour, Resource::kMem).exact;
  ASSERT_EQ(s.err_n, 2);
  // Job 2: 0 for every expert; job 3: last1 was 0.8 -> |0.8 - 0.7| = 0.1.
  EXPECT_NEAR(s.recent_err[static_cast<int>(Expert::kLast1)], 0.05, 1e-6);
}

// The walk-forward errors do not depend on what the store folded. A run submitted after five runs
// of its script, still running while 40 more of them end: its error needs the five labels its
// submission saw. A replay (which folds all but the newest labels under its watermark) and a
// store that folds nothing (predict --history, a freshly rebuilt peakcastd) must agree; until
// 2026-12-05 the replay had folded them and left the long run without an error (err_n 9 vs 10).
TEST(HistoryReplay, WalkForwardErrorsDoNotDependOnFolding) {
  std::vector<Job> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back(make_job("a" + std::to_string(i), "u", "s", i * kHour, i * kHour + kHour / 2, 0.2));
  }
  jobs.push_back(make_job("long", "u", "s", 5 * kHour, 100 * kHour, 0.9));
  for (int i = 0; i < 40; ++i) {
    const int64_t at = (6 + 2 * i) * kHour;
    jobs.push_back(make_job("b" + std::to_string(i), "u", "s", at, at + kHour, 0.3 + 0.01 * i));
  }
  jobs.push_back(make_job("query", "u", "s", 101 * kHour, 102 * kHour, 0.5));
  std::vector<const Job*> order;
  for (const Job& j : jobs) order.push_back(&j);  // already in submit order

  HistoryStore replayed;
  KeyStats got;
  replay(order, replayed, [&](const Job& job, const HistoryStore& s) {
    if (job.job_id == "query") got = s.query(job, Resource::kMem).exact;
  });
  HistoryStore whole;
  for (const Job& j : jobs) whole.add_completion(j);
  const KeyStats want = whole.query(jobs.back(), Resource::kMem).exact;

  ASSERT_EQ(want.err_n, kErrorWindow);
  EXPECT_EQ(got.err_n, want.err_n);
  for (int k = 0; k < kNumExperts; ++k) {
    EXPECT_NEAR(got.recent_err[k], want.recent_err[k], 1e-6) << expert_name(kExperts[k]);
  }
}

// peakcastd adds completions as they arrive and keeps its watermark a tolerance behind its clock
// (--late-tolerance), with no promise about running jobs: a run that completes within the
// tolerance of its submission gets the walk-forward error a store that folds nothing gives it;
// a longer one gets it from the labels kept (the daemon's bound does not judge it either).
TEST(HistoryStore, ATrailingWatermarkKeepsTheErrorsOfRunsWithinItsTolerance) {
  std::vector<Job> jobs;
  for (int i = 0; i < 80; ++i) {
    const int64_t at = 2 * i * kHour;
    jobs.push_back(make_job("b" + std::to_string(i), "u", "s", at, at + kHour, 0.3 + 0.005 * i));
  }
  jobs.push_back(make_job("long", "u", "s", 70 * kHour, 160 * kHour, 0.9));  // a 90-hour run
  const Job query = make_job("query", "u", "s", 161 * kHour, 162 * kHour, 0.5);
  HistoryStore whole;
  for (const Job& j : jobs) whole.add_completion(j);
  const KeyStats want = whole.query(query, Resource::kMem).exact;
  ASSERT_EQ(want.err_n, kErrorWindow);

  auto live_stats = [&](int64_t tolerance) {
    std::vector<const Job*> by_end;
    for (const Job& j : jobs) by_end.push_back(&j);
    std::stable_sort(by_end.begin(), by_end.end(),
                     [](const Job* a, const Job* b) { return a->end_ms < b->end_ms; });
    HistoryStore live;
    for (const Job* j : by_end) {
      live.add_completion(*j);
      live.advance_watermark(j->end_ms - tolerance);  // the clock at the completion's end
    }
    return live.query(query, Resource::kMem).exact;
  };
  const KeyStats got = live_stats(96 * kHour);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.err_n, want.err_n);
  for (int k = 0; k < kNumExperts; ++k) {
    EXPECT_NEAR(got.recent_err[k], want.recent_err[k], 1e-6) << expert_name(kExperts[k]);
    EXPECT_NEAR(got.expert[k], want.expert[k], 1e-9) << expert_name(kExperts[k]);
  }
  // The fixture folds: with a tolerance shorter than the long run, the labels its submission saw
  // are folded before it completes, and its error is lost (the labels kept hold none before it).
  const KeyStats short_tolerance = live_stats(6 * kHour);
  EXPECT_EQ(short_tolerance.count, want.count);
  EXPECT_EQ(short_tolerance.err_n, want.err_n - 1);
}

TEST(HistoryStore, SameJobTwiceIsANoOp) {
  HistoryStore store;
  const Job j = make_job("42", "u", "s", 0, 10, 0.5);
  EXPECT_TRUE(store.add_completion(j));
  Job again = j;
  again.util[idx(Resource::kMem)] = 0.9;  // a re-sent completion, even with other data
  EXPECT_FALSE(store.add_completion(again));
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.key_count(), 2u);
  const KeyStats s = store.query("s", "u", 11, Resource::kMem).exact;
  EXPECT_EQ(s.count, 1);
  EXPECT_DOUBLE_EQ(ex(s, Expert::kLast1), 0.5);

  Job unlabelled = make_job("43", "u", "s", 0, 10, 0.5);
  unlabelled.valid = {false, false};
  EXPECT_FALSE(store.add_completion(unlabelled));
  EXPECT_EQ(store.size(), 1u);
}

// Slurm keeps the id of a job it requeues and resets its submit time: a later run is a run of its
// own (as peakcastd's store keys it), learned beside the first; the same run read twice is not.
TEST(HistoryStore, ARequeuedJobsLaterRunIsARunOfItsOwn) {
  HistoryStore store;
  const Job first = make_job("42", "u", "s", 0, 2 * kHour, 0.5);
  const Job requeued = make_job("42", "u", "s", 3 * kHour, 5 * kHour, 0.8);
  EXPECT_TRUE(store.add_completion(first));
  EXPECT_TRUE(store.add_completion(requeued));
  EXPECT_FALSE(store.add_completion(requeued));  // the same run read twice
  EXPECT_FALSE(store.add_completion(first));
  EXPECT_EQ(store.size(), 2u);
  const KeyStats s = store.query("s", "u", 6 * kHour, Resource::kMem).exact;
  EXPECT_EQ(s.count, 2);
  EXPECT_DOUBLE_EQ(ex(s, Expert::kLast1), 0.8);
  EXPECT_EQ(store.query("s", "u", 6 * kHour, Resource::kMem).user.count, 2);
}

TEST(HistoryStore, QueryBeforeWatermarkThrows) {
  HistoryStore store;
  store.advance_watermark(1000);
  store.advance_watermark(500);  // ignored: monotone
  EXPECT_EQ(store.watermark(), 1000);
  EXPECT_NO_THROW(store.query("s", "u", 1000, Resource::kMem));
  EXPECT_THROW(store.query("s", "u", 999, Resource::kMem), std::logic_error);
}

TEST(HistoryStore, DecayMeanStaysExactOverYears) {
  HistoryStore store;
  constexpr int64_t kDay = 24 * kHour;
  constexpr int kDays = 6 * 365;
  for (int d = 0; d < kDays; ++d) {
    store.add_completion(make_job(std::to_string(d), "u", "s", d * kDay, d * kDay + kHour,
                                  0.1 + 0.8 * ((d * 37) % 101) / 100.0));
    store.advance_watermark(d * kDay + 2 * kHour);
  }
  const int64_t t = kDays * kDay;
  long double num = 0, den = 0;
  for (int d = 0; d < kDays; ++d) {
    const long double w = std::exp2l(-static_cast<long double>(t - (d * kDay + kHour)) /
                                     static_cast<long double>(kDecayHalfLifeMs));
    num += w * (0.1L + 0.8L * ((d * 37) % 101) / 100.0L);
    den += w;
  }
  const KeyStats s = store.query("s", "u", t, Resource::kMem).exact;
  EXPECT_EQ(s.count, kDays);
  EXPECT_NEAR(ex(s, Expert::kEwma), static_cast<double>(num / den), 1e-12);
  EXPECT_LE(store.retained_entries(), 2u * (2 * kWindow + 1));
}

TEST(HistoryStore, FoldsOldLabelsAndAbsorbsVeryLateOnes) {
  HistoryStore store;
  std::vector<std::pair<int64_t, double>> all;  // (end, label)
  auto add = [&](int i, int64_t end) {
    const double x = (i % 7) / 7.0;
    ASSERT_TRUE(store.add_completion(make_job(std::to_string(i), "u", "s", 0, end, x)));
    all.emplace_back(end, x);
  };
  for (int i = 1; i <= 40; ++i) add(i, i * kHour);
  EXPECT_EQ(store.retained_entries(), 2u * 40);  // no watermark yet: nothing folded
  store.advance_watermark(41 * kHour);
  add(41, 41 * kHour);
  EXPECT_LT(store.retained_entries(), 2u * 41);  // folded down to the window
  add(0, kHour / 2);  // arrives long after it ended, older than everything kept
  const int64_t t = 50 * kHour;
  const KeyStats s = store.query("s", "u", t, Resource::kMem).exact;
  EXPECT_EQ(s.count, 42);
  EXPECT_DOUBLE_EQ(ex(s, Expert::kLast1), (41 % 7) / 7.0);
  double num = 0, den = 0;
  for (auto [end, x] : all) {
    const double w = std::exp2(-static_cast<double>(t - end) / kDecayHalfLifeMs);
    num += w * x;
    den += w;
  }
  EXPECT_NEAR(ex(s, Expert::kEwma), num / den, 1e-12);
  EXPECT_EQ(store.size(), 42u);
}

TEST(HistoryReplay, VisitsInSubmitOrderAndBoundsMemory) {
  std::vector<Job> jobs;
  for (int i = 0; i < 2000; ++i) {
    jobs.push_back(make_job(std::to_string(i), "u" + std::to_string(i % 3),
                            "s" + std::to_string(i % 7), i * 60, i * 60 + 600 + (i % 13) * 60,
                            (i % 10) / 10.0));
  }
  std::vector<const Job*> order;
  for (const Job& j : jobs) order.push_back(&j);
  HistoryStore store;
  int64_t last_submit = -1;
  int visited = 0;
  replay(order, store, [&](const Job& job, const HistoryStore& s) {
    EXPECT_GE(job.submit_ms, last_submit);
    last_submit = job.submit_ms;
    const HistoryView v = s.query(job, Resource::kMem);
    if (v.user.count > 0) {
      EXPECT_LT(v.user.last_end_time * 1000.0, static_cast<double>(job.submit_ms));
    }
    ++visited;
  });
  EXPECT_EQ(visited, 2000);
  // Every job ended before the last submission except the tail still running.
  EXPECT_GT(store.size(), 1900u);
  EXPECT_LE(store.retained_entries(), (7u + 3u) * (2 * kWindow + 1));
  EXPECT_GT(store.memory_bytes(), store.retained_entries() * sizeof(double));

  std::vector<const Job*> unsorted = {&jobs[5], &jobs[1]};
  HistoryStore other;
  EXPECT_THROW(replay(unsorted, other, [](const Job&, const HistoryStore&) {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace peakcast::history
