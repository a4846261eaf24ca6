// peakcast's sizing policy per workload as peakcastd keeps it (workload_sizer.h): each workload
// answers as its own `peakcast` policy fed the same runs would (what `peakcast simulate`
// replays), only from kPeakcastMinHistory runs on and with a request; the least recently used
// workload goes first; a long history is rebuilt from its most recent runs; a failure is priced
// at the site's mean run. And what a restarted daemon warms the policies with (warm_runs.h).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <cmath>
#include <malloc.h>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "peakcast/sizing/policy.h"
#include "peakcast/sizing/warm_runs.h"
#include "peakcast/sizing/workload_sizer.h"

namespace peakcast::sizing {
namespace {

constexpr double kGiB = 1073741824.0;

SimTask run(const std::string& workload, double peak_gib, double input_gib, double request_gib,
            double minutes, int64_t at_ms) {
  SimTask t;
  t.info.workload = workload;
  t.info.input_bytes = input_gib * kGiB;
  t.info.request_bytes = request_gib * kGiB;
  t.info.submit_ms = at_ms;
  t.peak_bytes = peak_gib * kGiB;
  t.runtime_ms = minutes * 60'000.0;
  t.end_ms = at_ms + static_cast<int64_t>(t.runtime_ms);
  return t;
}

// Runs of three workloads, interleaved: one whose peak follows its input, one steady, one
// spread wide.
std::vector<SimTask> stream(unsigned seed, int n) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, 2);
  std::uniform_real_distribution<double> input(1.0, 40.0), u(0.0, 1.0);
  std::vector<SimTask> out;
  for (int i = 0; i < n; ++i) {
    const int k = pick(rng);
    const double x = input(rng);
    const double peak = k == 0 ? 0.5 + 0.2 * x * (0.9 + 0.2 * u(rng))
                        : k == 1 ? 3.0 * (0.98 + 0.02 * u(rng))
                                 : 1.0 + 6.0 * u(rng) * u(rng);
    out.push_back(run("wf" + std::to_string(k), peak, x, 16.0, 5.0 + 50.0 * u(rng), i * 60'000));
  }
  return out;
}

WorkloadSizerOptions fixed_price(double gbh) {
  WorkloadSizerOptions o;
  o.policy.failure_price = gbh * 1e9 * 3.6e6;  // byte x ms
  return o;
}

TEST(WorkloadSizer, AnswersAsEachWorkloadsOwnPolicyFedTheSameRuns) {
  for (unsigned seed : {1u, 2u}) {
    const WorkloadSizerOptions o = fixed_price(0.5);
    WorkloadSizer sizer(o);
    std::map<std::string, std::unique_ptr<SizingPolicy>> own;
    std::map<std::string, size_t> completed;
    size_t answered = 0;
    for (const SimTask& t : stream(seed, 300)) {
      auto& policy = own[t.info.workload];
      if (!policy) policy = make_peakcast(o.policy, true);
      const std::optional<WorkloadSizer::Answer> a = sizer.first(t.info);
      if (completed[t.info.workload] < kPeakcastMinHistory) {
        EXPECT_FALSE(a) << "seed " << seed << ": an answer after " << completed[t.info.workload] << " runs";
      } else {
        ASSERT_TRUE(a) << "seed " << seed;
        EXPECT_EQ(static_cast<double>(a->bytes), policy->first(t.info)) << "seed " << seed;
        EXPECT_EQ(a->rule, policy->explain().rule);
        EXPECT_EQ(a->basis, policy->explain().basis);
        EXPECT_FALSE(a->basis.empty());
        EXPECT_EQ(a->runs, completed[t.info.workload]);
        ++answered;
      }
      sizer.observe(t);
      policy->observe(t);
      ++completed[t.info.workload];
    }
    EXPECT_GT(answered, 250u) << "seed " << seed;  // not a comparison of empty answers
    EXPECT_EQ(sizer.workloads(), 3u);
  }
}

// peakcastd answers submissions between completions, for other runs than the next to complete:
// what a completion teaches does not depend on what was answered before it.
TEST(WorkloadSizer, AnAnswerToAnotherSubmissionDoesNotChangeWhatACompletionTeaches) {
  WorkloadSizer asked(fixed_price(0.5)), quiet(fixed_price(0.5));
  const std::vector<SimTask> runs = stream(7, 300);
  size_t compared = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    TaskInfo other = runs[(i * 7 + 3) % runs.size()].info;  // another run's input and request
    other.workload = runs[i].info.workload;
    other.request_bytes *= 1.5;
    (void)asked.first(other);
    asked.observe(runs[i]);
    quiet.observe(runs[i]);
    const TaskInfo next = runs[(i + 1) % runs.size()].info;
    const std::optional<WorkloadSizer::Answer> a = asked.first(next), b = quiet.first(next);
    ASSERT_EQ(a.has_value(), b.has_value()) << i;
    if (!a) continue;
    EXPECT_EQ(a->bytes, b->bytes) << "after " << i + 1 << " runs";
    EXPECT_EQ(a->basis, b->basis) << "after " << i + 1 << " runs";
    ++compared;
  }
  EXPECT_GT(compared, 250u);
}

TEST(WorkloadSizer, NoAnswerWithoutARequest) {
  WorkloadSizer sizer(fixed_price(0.5));
  for (int i = 0; i < 20; ++i) sizer.observe(run("a", 2.0, 1.0, 8.0, 10.0, i * 60'000));
  TaskInfo t;
  t.workload = "a";
  EXPECT_FALSE(sizer.first(t));  // no request: no capacity to cap it at, as the daemon's bound
  t.request_bytes = 8.0 * kGiB;
  ASSERT_TRUE(sizer.first(t));
  EXPECT_LE(sizer.first(t)->bytes, static_cast<uint64_t>(8.0 * kGiB));  // never above the request
}

TEST(WorkloadSizer, TheLeastRecentlyUsedWorkloadGoesFirst) {
  WorkloadSizerOptions o = fixed_price(0.5);
  o.max_workloads = 2;
  WorkloadSizer sizer(o);
  for (int i = 0; i < 12; ++i) sizer.observe(run("a", 2.0, 1.0, 8.0, 10.0, i));
  for (int i = 0; i < 12; ++i) sizer.observe(run("b", 3.0, 1.0, 8.0, 10.0, i));
  TaskInfo a;
  a.workload = "a";
  a.request_bytes = 8.0 * kGiB;
  ASSERT_TRUE(sizer.first(a));  // "a" is now the most recently used
  sizer.observe(run("c", 1.0, 1.0, 8.0, 10.0, 99));
  EXPECT_EQ(sizer.workloads(), 2u);
  EXPECT_EQ(sizer.runs("a"), 12u);
  EXPECT_EQ(sizer.runs("b"), 0u);  // forgotten: it starts over if it comes back
  EXPECT_EQ(sizer.runs("c"), 1u);
  TaskInfo b = a;
  b.workload = "b";
  EXPECT_FALSE(sizer.first(b));
}

// The memory budget: past it the least recently used workloads go, whatever their count; the
// one just used stays.
TEST(WorkloadSizer, PastTheMemoryBudgetTheLeastRecentlyUsedGo) {
  WorkloadSizerOptions o = fixed_price(0.5);
  WorkloadSizer probe(o);
  for (int i = 0; i < 12; ++i) probe.observe(run("a", 2.0, 1.0 + i, 8.0, 10.0, i));
  const size_t one = probe.memory_bytes();  // a workload of 12 runs
  ASSERT_GT(one, 0u);
  o.max_bytes = 3 * one + one / 2;  // room for three such workloads
  WorkloadSizer sizer(o);
  for (const char* w : {"a", "b", "c"}) {
    for (int i = 0; i < 12; ++i) sizer.observe(run(w, 2.0, 1.0 + i, 8.0, 10.0, i));
  }
  EXPECT_EQ(sizer.workloads(), 3u);
  TaskInfo a;
  a.workload = "a";
  a.request_bytes = 8.0 * kGiB;
  ASSERT_TRUE(sizer.first(a));  // "a" is now the most recently used: "b" is the least
  for (int i = 0; i < 12; ++i) sizer.observe(run("d", 2.0, 1.0 + i, 8.0, 10.0, i));
  EXPECT_EQ(sizer.workloads(), 3u);
  EXPECT_LE(sizer.memory_bytes(), o.max_bytes);
  EXPECT_EQ(sizer.runs("b"), 0u);  // forgotten
  EXPECT_EQ(sizer.runs("a"), 12u);
  EXPECT_EQ(sizer.runs("c"), 12u);
  EXPECT_EQ(sizer.runs("d"), 12u);
  // A budget smaller than one workload keeps the one in use, alone.
  o.max_bytes = one / 2;
  WorkloadSizer tight(o);
  for (const char* w : {"a", "b"}) {
    for (int i = 0; i < 12; ++i) tight.observe(run(w, 2.0, 1.0 + i, 8.0, 10.0, i));
  }
  EXPECT_EQ(tight.workloads(), 1u);
  EXPECT_EQ(tight.runs("b"), 12u);
}

// GCC says __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang 14 only answers __has_feature (its
// ASan build ran this test and failed it with a heap of 0).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PEAKCAST_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PEAKCAST_SANITIZER_ALLOCATOR 1
#endif
#endif
// What the budget counts is what the workloads hold: the policies' estimate against the heap
// glibc reports allocated (its chunk headers and rounding included) for 40 workloads of 10, 100
// and 1,000 runs.
TEST(WorkloadSizer, ItsMemoryEstimateIsTheHeapItHolds) {
#ifdef PEAKCAST_SANITIZER_ALLOCATOR
  // AddressSanitizer's and ThreadSanitizer's allocators replace glibc's: mallinfo2 counts nothing.
  GTEST_SKIP() << "mallinfo2 reads glibc's heap, which the sanitizer's allocator replaces";
#endif
  for (int runs : {10, 100, 1000}) {
    const int workloads = runs == 1000 ? 4 : 40;
    std::vector<SimTask> tasks;
    std::mt19937 rng(static_cast<unsigned>(runs));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int w = 0; w < workloads; ++w) {
      for (int i = 0; i < runs; ++i) {
        tasks.push_back(run("w" + std::to_string(w), 1.0 + u(rng), 1.0 + 9.0 * u(rng), 8.0, 10.0, i));
      }
    }
    const size_t before = mallinfo2().uordblks;
    auto sizer = std::make_unique<WorkloadSizer>(fixed_price(0.5));
    for (const SimTask& t : tasks) sizer->observe(t);
    const auto held = static_cast<double>(mallinfo2().uordblks - before);
    const auto estimate = static_cast<double>(sizer->memory_bytes());
    EXPECT_GT(estimate, 0.8 * held) << runs << " runs: estimate " << estimate << ", heap " << held;
    EXPECT_LT(estimate, 1.25 * held) << runs << " runs: estimate " << estimate << ", heap " << held;
  }
}

// Each answer is that of a policy fed only the workload's most recent runs: all of them below
// 2 x max_history, and from there the last max_history to 2 x max_history - 1 (at 40 runs the
// last 20, at 59 the last 39, at 60 the last 20 again).
TEST(WorkloadSizer, ALongHistoryIsRebuiltFromItsMostRecentRuns) {
  WorkloadSizerOptions o = fixed_price(0.5);
  o.max_history = 20;
  WorkloadSizer sizer(o);
  std::vector<SimTask> runs;
  for (const SimTask& t : stream(3, 400)) {
    if (t.info.workload == "wf2") runs.push_back(t);
  }
  ASSERT_GE(runs.size(), 70u);
  runs.resize(70);
  const std::map<size_t, size_t> kept = {{10, 10}, {39, 39}, {40, 20}, {41, 21}, {59, 39}, {60, 20}, {70, 30}};
  for (size_t n = 1; n <= runs.size(); ++n) {
    sizer.observe(runs[n - 1]);
    const auto want = kept.find(n);
    if (want == kept.end()) continue;
    EXPECT_EQ(sizer.runs("wf2"), want->second) << n;
    const std::unique_ptr<SizingPolicy> fresh = make_peakcast(o.policy, true);
    for (size_t i = n - want->second; i < n; ++i) fresh->observe(runs[i]);
    const TaskInfo next = runs[n % runs.size()].info;
    const std::optional<WorkloadSizer::Answer> a = sizer.first(next);
    ASSERT_TRUE(a) << n;
    EXPECT_EQ(static_cast<double>(a->bytes), fresh->first(next)) << "after " << n << " runs";
    EXPECT_EQ(a->basis, fresh->explain().basis) << "after " << n << " runs";
    EXPECT_EQ(a->runs, want->second);
  }
}

TEST(WorkloadSizer, AFailureIsPricedAtTheSitesMeanRun) {
  WorkloadSizer sizer;  // no price set
  EXPECT_EQ(sizer.site_price(), 0.0);
  sizer.observe(run("a", 2.0, 1.0, 8.0, 10.0, 0));  // 2 GiB x 10 min
  sizer.observe(run("b", 4.0, 1.0, 8.0, 30.0, 1));  // 4 GiB x 30 min
  EXPECT_DOUBLE_EQ(sizer.site_price(), (2.0 * kGiB * 600'000.0 + 4.0 * kGiB * 1'800'000.0) / 2.0);
  sizer.observe(run("a", 0.0, 1.0, 8.0, 10.0, 2));  // no peak: not a run it learns from
  EXPECT_EQ(sizer.runs("a"), 1u);
  EXPECT_DOUBLE_EQ(sizer.site_price(), (2.0 * kGiB * 600'000.0 + 4.0 * kGiB * 1'800'000.0) / 2.0);
  EXPECT_DOUBLE_EQ(WorkloadSizer(fixed_price(0.5)).site_price(), 0.5 * 1e9 * 3.6e6);
}

// The site's price as it stands is the price the policy weighs: a workload sized by the sizer
// answers as its own policy would with that price set before each of its steps, and not as one
// left to price a failure at its own mean run (here the site's runs are far dearer).
TEST(WorkloadSizer, ThePriceFollowsTheSiteAsItsRunsComplete) {
  WorkloadSizer sizer;
  const std::unique_ptr<SizingPolicy> own = make_peakcast(PolicyOptions{}, true);
  const std::unique_ptr<SizingPolicy> unpriced = make_peakcast(PolicyOptions{}, true);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double usage = 0.0, n = 0.0;
  size_t answered = 0, differ = 0;
  for (int i = 0; i < 400; ++i) {
    const bool mine = i % 3 != 0;
    const SimTask t = mine ? run("small", 1.0 + 6.0 * u(rng) * u(rng), 1.0, 16.0, 5.0 + 20.0 * u(rng), i)
                           : run("big", 100.0 + 20.0 * u(rng), 1.0, 128.0, 600.0, i);
    if (mine) {
      if (const std::optional<WorkloadSizer::Answer> a = sizer.first(t.info)) {
        own->set_failure_price(usage / n);
        EXPECT_EQ(static_cast<double>(a->bytes), own->first(t.info)) << "run " << i;
        differ += static_cast<double>(a->bytes) != unpriced->first(t.info) ? 1 : 0;
        ++answered;
      }
    }
    sizer.observe(t);
    usage += t.peak_bytes * t.runtime_ms;
    n += 1;
    if (mine) {
      own->set_failure_price(usage / n);
      own->observe(t);
      unpriced->observe(t);
    }
  }
  EXPECT_GT(answered, 200u);
  EXPECT_GT(differ, 0u);  // the price changes answers here: the comparison above can fail
}

// peakcastd's --history-days sweep: a workload whose last run ended before the horizon goes, with
// the memory it held; one that ran since stays.
TEST(WorkloadSizer, ForgetsTheWorkloadsWhoseLastRunEndedBeforeATime) {
  WorkloadSizer sizer;
  for (int i = 0; i < 12; ++i) {
    sizer.observe(run("old", 2.0, 1.0, 8.0, 10.0, i * 60'000));
    sizer.observe(run("steady", 3.0, 1.0, 8.0, 10.0, i * 60'000));
  }
  sizer.observe(run("steady", 3.0, 1.0, 8.0, 10.0, 10'000'000));  // ends at 10,600,000 ms
  const size_t both = sizer.memory_bytes();
  EXPECT_EQ(sizer.forget_ended_before(0), 0u);  // every run ended after it
  EXPECT_EQ(sizer.forget_ended_before(5'000'000), 1u);
  EXPECT_EQ(sizer.workloads(), 1u);
  EXPECT_EQ(sizer.runs("old"), 0u);
  EXPECT_EQ(sizer.runs("steady"), 13u);
  EXPECT_LT(sizer.memory_bytes(), both);
  EXPECT_GT(sizer.memory_bytes(), 0u);
  TaskInfo t = run("old", 2.0, 1.0, 8.0, 10.0, 0).info;
  EXPECT_FALSE(sizer.first(t));  // it starts over
  t.workload = "steady";
  EXPECT_TRUE(sizer.first(t));
  EXPECT_EQ(sizer.forget_ended_before(10'600'001), 1u);
  EXPECT_EQ(sizer.memory_bytes(), 0u);
}

// peakcastd's --sizing-days: once the first run a policy learned is max_age older than the
// latest, a second policy learns from the next run on and takes over when its own first run is
// max_age old, at a run or at age(). A script that ran once a day with max_age 10 days: after the
// run of day 20 the policy holds days 0-20, after day 21 days 11-21 (the second policy, started at
// day 11), after day 32 days 22-32. Each answer is that of a policy fed those runs alone (here a
// script whose peaks fell from 8 GiB to 2 GiB at day 15).
TEST(WorkloadSizer, UnderAnAgeLimitAPolicyAnswersFromItsRecentRunsOnly) {
  constexpr int64_t kDay = 86'400'000;
  WorkloadSizerOptions o = fixed_price(0.5);
  o.max_age_ms = 10 * kDay;
  WorkloadSizer sizer(o);
  WorkloadSizer unlimited(fixed_price(0.5));
  std::vector<SimTask> runs;
  for (int day = 0; day <= 40; ++day) {
    const double peak = (day < 15 ? 8.0 : 2.0) + 0.01 * (day % 7);
    runs.push_back(run("wf", peak, 1.0, 16.0, 5.0, day * kDay));
  }
  // Day of the last run -> first day of the runs the answering policy learned.
  const std::map<int, int> held = {{9, 0}, {20, 0}, {21, 11}, {31, 11}, {32, 22}, {40, 22}};
  for (int day = 0; day <= 40; ++day) {
    sizer.observe(runs[day]);
    unlimited.observe(runs[day]);
    const auto want = held.find(day);
    if (want == held.end()) continue;
    EXPECT_EQ(sizer.runs("wf"), static_cast<size_t>(day - want->second + 1)) << "after day " << day;
    const std::unique_ptr<SizingPolicy> fresh = make_peakcast(o.policy, true);
    for (int d = want->second; d <= day; ++d) fresh->observe(runs[d]);
    const TaskInfo next = runs[day].info;
    const std::optional<WorkloadSizer::Answer> a = sizer.first(next);
    ASSERT_TRUE(a) << day;
    EXPECT_EQ(static_cast<double>(a->bytes), fresh->first(next)) << "after day " << day;
    EXPECT_EQ(a->basis, fresh->explain().basis) << "after day " << day;
  }
  // Days 22-40 peaked at 2-2.06 GiB: the policy that learned only them asks for little more.
  EXPECT_LT(static_cast<double>(sizer.first(runs[40].info)->bytes), 2.5 * kGiB);
  // A run older than max_age before the latest is priced, not learned (a restart would not read it).
  sizer.observe(run("wf", 9.0, 1.0, 16.0, 5.0, 5 * kDay));
  EXPECT_EQ(sizer.runs("wf"), 19u);
  // Without a new run: the second policy (started at day 33) takes over at age() once its first
  // run is max_age old; the workload goes once its last run is.
  EXPECT_EQ(sizer.age(runs[40].end_ms).handed_over, 0u);
  const WorkloadSizer::Aged handed = sizer.age(runs[33].end_ms + 10 * kDay);
  EXPECT_EQ(handed.handed_over, 1u);
  EXPECT_EQ(handed.forgotten, 0u);
  EXPECT_EQ(sizer.runs("wf"), 8u);  // days 33-40
  const WorkloadSizer::Aged gone = sizer.age(runs[40].end_ms + 10 * kDay + 1);
  EXPECT_EQ(gone.forgotten, 1u);
  EXPECT_EQ(sizer.workloads(), 0u);
  EXPECT_EQ(sizer.memory_bytes(), 0u);
  // No age limit, no ageing.
  EXPECT_EQ(unlimited.age(runs[40].end_ms + 1000 * kDay).forgotten, 0u);
  EXPECT_EQ(unlimited.runs("wf"), 41u);
}

// Replays `warm` into a fresh sizer: the runs workloads a, b and c learned, and the site's price.
std::pair<std::array<size_t, 3>, double> replayed(const WarmRuns& warm) {
  WorkloadSizer sizer;
  warm.replay(sizer);
  return {{sizer.runs("a"), sizer.runs("b"), sizer.runs("c")}, sizer.site_price()};
}

// A restart's warm-up: each workload's most recent runs, the most recently active workloads
// within the budget (the least recently active go whole), replayed in the order they ended; every
// run counts in the site's price, kept or not.
TEST(WarmRuns, KeepsTheMostRecentRunsOfTheMostRecentlyActiveWorkloads) {
  WarmRuns warm(/*per_workload=*/3, /*max_runs=*/5);
  // a b a a a c c: a keeps its last three; at the seventh run six are kept, and b, whose one run
  // ended before a's and c's last, goes.
  const std::vector<SimTask> fed = {run("a", 1.0, 1.0, 8.0, 10.0, 0), run("b", 2.0, 1.0, 8.0, 20.0, 1),
                                    run("a", 3.0, 1.0, 8.0, 30.0, 2), run("a", 4.0, 1.0, 8.0, 40.0, 3),
                                    run("a", 5.0, 1.0, 8.0, 50.0, 4), run("c", 6.0, 1.0, 8.0, 60.0, 5),
                                    run("c", 7.0, 1.0, 8.0, 70.0, 6)};
  double usage = 0.0;
  for (const SimTask& t : fed) {
    warm.add(t);
    usage += t.peak_bytes * t.runtime_ms;
  }
  EXPECT_EQ(warm.seen(), 7u);
  EXPECT_EQ(warm.runs(), 5u);
  EXPECT_EQ(warm.workloads(), 2u);
  const auto [kept, price] = replayed(warm);
  EXPECT_EQ(kept, (std::array<size_t, 3>{3, 0, 2}));
  EXPECT_NEAR(price, usage / 7.0, 1e-12 * usage);

  // One workload alone over the budget keeps its most recent runs; no budget keeps none.
  WarmRuns one(/*per_workload=*/10, /*max_runs=*/2);
  for (const SimTask& t : fed) {
    SimTask same = t;
    same.info.workload = "w";
    one.add(same);
  }
  EXPECT_EQ(one.runs(), 2u);
  WarmRuns none(10, 0);
  for (const SimTask& t : fed) none.add(t);
  EXPECT_EQ(none.runs(), 0u);
  EXPECT_EQ(none.workloads(), 0u);
  EXPECT_EQ(replayed(none).first, (std::array<size_t, 3>{0, 0, 0}));
  EXPECT_NEAR(replayed(none).second, usage / 7.0, 1e-12 * usage);

  // With an age limit (peakcastd's --sizing-days at start) a run that ended before it is priced,
  // not kept: here the first three (ended by 1,800,002 ms).
  WarmRuns recent(10, 100, /*since_ms=*/1'800'004);
  for (const SimTask& t : fed) recent.add(t);
  EXPECT_EQ(recent.seen(), 7u);
  EXPECT_EQ(recent.runs(), 4u);
  EXPECT_EQ(replayed(recent).first, (std::array<size_t, 3>{2, 0, 2}));
  EXPECT_NEAR(replayed(recent).second, usage / 7.0, 1e-12 * usage);
}

// Replayed, a workload whose runs were all kept answers as one that learned them one by one, and
// one with more as the sizer's own handover leaves it (its max_history most recent runs): here
// wf0 at 40 runs (2 x max_history, the handover just made) and wf1 at 15, interleaved.
TEST(WarmRuns, AReplayedPolicyAnswersAsTheSizerThatLearnedTheRuns) {
  WorkloadSizerOptions o = fixed_price(0.5);  // the price each run was learned at is the same
  o.max_history = 20;
  std::vector<SimTask> fed;
  size_t n0 = 0, n1 = 0;
  for (const SimTask& t : stream(11, 400)) {
    size_t& n = t.info.workload == "wf0" ? n0 : n1;
    if (t.info.workload == "wf2" || n == (t.info.workload == "wf0" ? 40u : 15u)) continue;
    ++n;
    fed.push_back(t);
  }
  ASSERT_EQ(n0, 40u);
  ASSERT_EQ(n1, 15u);
  WorkloadSizer learned(o);
  WarmRuns warm(o.max_history, 1000);
  for (const SimTask& t : fed) {
    learned.observe(t);
    warm.add(t);
  }
  EXPECT_EQ(warm.runs(), 35u);
  WorkloadSizer warmed(o);
  warm.replay(warmed);
  for (const char* w : {"wf0", "wf1"}) {
    EXPECT_EQ(warmed.runs(w), learned.runs(w)) << w;
    for (const SimTask& t : stream(12, 30)) {
      TaskInfo next = t.info;
      next.workload = w;
      const std::optional<WorkloadSizer::Answer> a = learned.first(next), b = warmed.first(next);
      ASSERT_TRUE(a && b) << w;
      EXPECT_EQ(b->bytes, a->bytes) << w;
      EXPECT_EQ(b->basis, a->basis) << w;
      EXPECT_EQ(b->runs, a->runs) << w;
    }
  }
}

// The age limit's contract on random streams: a few scripts, runs whose ends arrive with random
// gaps and now and then late (out of order), sweeps (age) at random times, random max_age and
// max_history. A plain model of the rule keeps, per script, the runs of the answering policy and
// of the second one; at every step each script's answer must be that of a fresh policy fed the
// model's runs for it, in the order learned, and runs() their count.
RC_GTEST_PROP(WorkloadSizerProperty, UnderAnAgeLimitEachAnswerIsThatOfAPolicyFedTheRunsTheRuleKeeps, ()) {
  constexpr int64_t kDay = 86'400'000;
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  WorkloadSizerOptions o = fixed_price(0.5);
  o.max_bytes = 0;  // no eviction: the model has none
  o.max_history = std::uniform_int_distribution<size_t>(10, 30)(rng);
  o.max_age_ms = static_cast<int64_t>(uniform(2.0, 10.0) * kDay);
  WorkloadSizer sizer(o);
  struct Model {
    std::vector<SimTask> policy, next;
    int64_t last = std::numeric_limits<int64_t>::min();
  };
  std::map<std::string, Model> model;
  int64_t latest = std::numeric_limits<int64_t>::min();
  const auto first_end = [](const std::vector<SimTask>& v) {
    int64_t t = std::numeric_limits<int64_t>::max();
    for (const SimTask& r : v) t = std::min(t, r.end_ms);
    return t;
  };
  const auto hand_over_if_due = [&](Model& m, int64_t now) {
    if (m.next.empty()) return;
    if (m.next.size() >= o.max_history || first_end(m.next) <= now - o.max_age_ms) {
      m.policy = std::move(m.next);
      m.next.clear();
    }
  };
  const int scripts = std::uniform_int_distribution<int>(1, 3)(rng);
  const int n = std::uniform_int_distribution<int>(20, 150)(rng);
  int64_t clock = 1'700'000'000'000;
  size_t answered = 0, handed_over = 0;
  for (int i = 0; i < n; ++i) {
    clock += static_cast<int64_t>(uniform(0.0, 0.5) * kDay);
    const std::string w = "s" + std::to_string(std::uniform_int_distribution<int>(0, scripts - 1)(rng));
    const int64_t late = uniform(0.0, 1.0) < 0.1 ? static_cast<int64_t>(uniform(0.0, 12.0) * kDay) : 0;
    SimTask t = run(w, uniform(1.0, 9.0), uniform(1.0, 40.0), 16.0, uniform(1.0, 60.0), clock - late);
    sizer.observe(t);
    latest = std::max(latest, t.end_ms);
    if (t.end_ms >= latest - o.max_age_ms) {  // else priced, not learned
      Model& m = model[w];
      m.policy.push_back(t);
      m.last = std::max(m.last, t.end_ms);
      if (!m.next.empty() || m.policy.size() > o.max_history || first_end(m.policy) < m.last - o.max_age_ms) {
        m.next.push_back(t);
        hand_over_if_due(m, m.last);
      }
    }
    if (uniform(0.0, 1.0) < 0.2) {  // the hourly sweep, at some time after the latest end
      const int64_t now = latest + static_cast<int64_t>(uniform(0.0, 3.0) * kDay);
      handed_over += sizer.age(now).handed_over;
      for (auto it = model.begin(); it != model.end();) {
        if (it->second.last < now - o.max_age_ms) {
          it = model.erase(it);
          continue;
        }
        hand_over_if_due(it->second, now);
        ++it;
      }
    }
    RC_ASSERT(sizer.workloads() == model.size());
    for (const auto& [name, m] : model) {
      RC_ASSERT(sizer.runs(name) == m.policy.size());
      const TaskInfo ask = run(name, 1.0, uniform(1.0, 40.0), 16.0, 1.0, clock).info;
      const std::optional<WorkloadSizer::Answer> a = sizer.first(ask);
      RC_ASSERT(a.has_value() == (m.policy.size() >= kPeakcastMinHistory));
      if (!a) continue;
      ++answered;
      const std::unique_ptr<SizingPolicy> fresh = make_peakcast(o.policy, true);
      for (const SimTask& r : m.policy) fresh->observe(r);
      RC_ASSERT(static_cast<double>(a->bytes) == fresh->first(ask));
    }
  }
  RC_CLASSIFY(answered > 0, "answered");
  RC_CLASSIFY(handed_over > 0, "handed over at a sweep");
}

}  // namespace
}  // namespace peakcast::sizing
