// The simulator's accounting on a hand-computed toy trace, the numpy-compatible split, each
// baseline's rule on a small hand case, determinism.
#include <algorithm>
#include <cmath>
#include <memory>

#include <gtest/gtest.h>

#include "peakcast/core/stats.h"
#include "peakcast/sizing/simulate.h"

namespace peakcast::sizing {
namespace {

constexpr double kHourMs = 3.6e6;

SimTask task(const std::string& w, double peak, double runtime_ms, double input = 0, double request = 0) {
  SimTask t;
  t.info.workload = w;
  t.info.input_bytes = input;
  t.info.request_bytes = request;
  t.peak_bytes = peak;
  t.runtime_ms = runtime_ms;
  return t;
}

// Always 2 GB first; doubles on failure.
class FixedTwoGb final : public SizingPolicy {
 public:
  double first(const TaskInfo&) override { return 2e9; }
  double retry(const TaskInfo&, double failed, int) override { return 2 * failed; }
  void observe(const SimTask&) override {}
};

TEST(RunTask, ToyTraceAccountingByHand) {
  FixedTwoGb p;
  Tally t;
  run_task(p, task("a", 1e9, kHourMs), t);        // over 1 GB x 1 h = 1
  run_task(p, task("a", 3e9, kHourMs / 2), t);    // fail 2 x 0.5 = 1; then 4 GB: over 1 x 0.5
  run_task(p, task("a", 5e9, kHourMs), t);        // fail 2, fail 4, then 8: over 3 -> 9
  EXPECT_NEAR(t.waste_gbh, 1 + 1.5 + 9, 1e-9);
  EXPECT_NEAR(t.failed_gbh, 1 + 2 + 4, 1e-9);
  EXPECT_NEAR(t.over_gbh, 1 + 0.5 + 3, 1e-9);
  EXPECT_NEAR(t.usage_gbh, 1 + 1.5 + 5, 1e-9);
  EXPECT_EQ(t.failures, 3u);
  EXPECT_EQ(t.retries, 3u);
  EXPECT_EQ(t.jobs, 3u);
  EXPECT_EQ(t.failed_jobs, 2u);
}

// A policy with a ceiling (a partition's limit): nothing above it is allocated, and a task whose
// peak is above it fails at the ceiling once and is counted unschedulable. Before, the simulator
// doubled a retry that could not grow, past the limit, and the task "held" at twice it.
class CappedAtThreeGb final : public SizingPolicy {
 public:
  double first(const TaskInfo&) override { return 2e9; }
  double retry(const TaskInfo&, double failed, int) override { return std::min(2 * failed, 3e9); }
  void observe(const SimTask&) override {}
  double ceiling(const TaskInfo&) const override { return 3e9; }
};

TEST(RunTask, NothingAboveThePolicysCeilingAndATaskAboveItIsUnschedulable) {
  CappedAtThreeGb p;
  Tally t;
  run_task(p, task("a", 2.5e9, kHourMs), t);  // fail 2; 3 holds: over 0.5
  run_task(p, task("a", 5e9, kHourMs), t);    // fail 2, fail 3: cannot grow
  EXPECT_NEAR(t.failed_gbh, 2 + 2 + 3, 1e-9);
  EXPECT_NEAR(t.over_gbh, 0.5, 1e-9);
  EXPECT_NEAR(t.waste_gbh, 7.5, 1e-9);
  EXPECT_EQ(t.failures, 3u);
  EXPECT_EQ(t.failed_jobs, 2u);
  EXPECT_EQ(t.unschedulable, 1u);
  Tally sum;
  sum.add(t);
  sum.add(t);
  EXPECT_EQ(sum.unschedulable, 2u);
}

// n copies of `t` in event time: the i-th submitted at 1000 i ms and done 500 ms later.
std::vector<SimTask> one_after_another(SimTask t, int n) {
  std::vector<SimTask> tasks;
  for (int i = 0; i < n; ++i) {
    t.info.submit_ms = 1000 * i;
    t.end_ms = 1000 * i + 500;
    tasks.push_back(t);
  }
  return tasks;
}

TEST(Simulate, PeakcastNeverAllocatesAboveItsPartitionsLimit) {
  SimTask like = task("w", 10.0 * (1ull << 30), kHourMs, 0, 16.0 * (1ull << 30));
  like.info.partition = "p";
  const std::vector<SimTask> tasks = one_after_another(like, 30);
  SimulateOptions o;
  o.protocol = Protocol::kChrono;
  o.policies = {"peakcast"};
  auto cfg = parse_recommend_config(R"({"partitions": {"p": {"limit_bytes": 8589934592}}})", "test");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  o.policy.recommend = *cfg;
  auto r = simulate(tasks, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Tally& t = r->results[0].total;
  EXPECT_EQ(t.jobs, 6u);
  EXPECT_EQ(t.unschedulable, 6u);
  EXPECT_EQ(t.failures, 6u);  // one attempt each, at the limit
  EXPECT_NEAR(t.failed_gbh, 6 * 8.0 * (1ull << 30) * 1e-9, 1e-9);
  EXPECT_NEAR(t.over_gbh, 0.0, 1e-12);
}

// The scored block starts where the evaluation's share_position puts it: (1 - 0.9) x 10 is
// 0.999... in floating point, and a bare floor scored all 10 tasks instead of the last 9.
TEST(Simulate, ChronoScoresTheLastShareCutAsTheEvaluationCutsIt) {
  const std::vector<SimTask> tasks = one_after_another(task("w", 1e9, kHourMs, 0, 2e9), 10);
  SimulateOptions o;
  o.protocol = Protocol::kChrono;
  o.policies = {"presets"};
  o.chrono_test_fraction = 0.9;
  auto r = simulate(tasks, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->results[0].total.jobs, tasks.size() - share_position(tasks.size(), 1.0 - 0.9));
  EXPECT_EQ(r->results[0].total.jobs, 9u);
}

// A recommendation, and after an out-of-memory attempt the user's own request.
TEST(RunAt, AFixedAllocationThenTheUsersRequest) {
  Tally t;
  run_at(4e9, task("a", 1e9, kHourMs, 0, 8e9), t);   // holds: over 3
  run_at(4e9, task("a", 6e9, kHourMs, 0, 8e9), t);   // fails (4), then 8 holds: over 2
  run_at(4e9, task("a", 9e9, kHourMs, 0, 8e9), t);   // fails (4), 8 fails (8), then 16: over 7
  run_at(4e9, task("a", 5e9, kHourMs, 0, 4e9), t);   // the request is no higher: 4 fails, 8 holds (3)
  EXPECT_NEAR(t.waste_gbh, 3 + (4 + 2) + (4 + 8 + 7) + (4 + 3), 1e-9);
  EXPECT_EQ(t.failures, 4u);
  EXPECT_EQ(t.failed_jobs, 3u);
  EXPECT_EQ(t.jobs, 4u);
}

// At the request itself it is `presets`, task for task.
TEST(RunAt, AtTheRequestItIsPresets) {
  Result<std::unique_ptr<SizingPolicy>> presets = make_policy("presets", {});
  ASSERT_TRUE(presets);
  for (const SimTask& x : {task("a", 1e9, kHourMs, 0, 8e9), task("a", 9e9, kHourMs, 0, 8e9),
                           task("a", 40e9, 2 * kHourMs, 0, 3e9), task("a", 3e9, kHourMs, 0, 3e9)}) {
    Tally at, by;
    run_at(x.info.request_bytes, x, at);
    run_task(**presets, x, by);
    EXPECT_DOUBLE_EQ(at.waste_gbh, by.waste_gbh) << x.peak_bytes;
    EXPECT_EQ(at.failures, by.failures) << x.peak_bytes;
  }
}

TEST(NumpyPermutation, MatchesNumpyCheckValues) {
  EXPECT_EQ(numpy_permutation(0, 10), (std::vector<size_t>{2, 8, 4, 9, 1, 6, 7, 3, 0, 5}));
  EXPECT_EQ(numpy_permutation(42, 10), (std::vector<size_t>{8, 1, 5, 0, 7, 2, 9, 4, 3, 6}));
  const SizeySplit s = sizey_split(1996, 137);
  ASSERT_EQ(s.online.size(), 96u);  // ceil(0.7 * 137)
  EXPECT_EQ(s.warm.size(), 41u);
  EXPECT_EQ(std::vector<size_t>(s.online.begin(), s.online.begin() + 10),
            (std::vector<size_t>{97, 40, 64, 82, 51, 106, 32, 12, 112, 123}));
}

TEST(Baselines, WittPercentileIsNumpyLinearP95AndDoubles) {
  auto p = make_witt_percentile(0.95);
  for (double y : {1.0, 2.0, 3.0, 4.0, 5.0}) p->observe(task("a", y, 1));
  EXPECT_DOUBLE_EQ(p->first({}), 4.8);
  EXPECT_DOUBLE_EQ(p->retry({}, 4.8, 1), 9.6);
}

TEST(Baselines, TovarWasteModeByHand) {
  auto p = make_tovar();
  p->observe(task("a", 1, 10));
  p->observe(task("a", 2, 10));
  p->observe(task("a", 10, 1));
  // E(a) = a * 7 + 10 * E[t; y > a]: a=10 -> 70, a=2 -> 14 + 10/3, a=1 -> 7 + 110/3.
  EXPECT_DOUBLE_EQ(p->first({}), 2);
  EXPECT_DOUBLE_EQ(p->retry({}, 2, 1), 10);     // the largest peak seen
  EXPECT_DOUBLE_EQ(p->retry({}, 10, 2), 128e9);  // then a whole node
}

TEST(Baselines, WittLrRegressionAndItsOffsets) {
  auto std_p = make_witt_lr(false), under_p = make_witt_lr(true);
  for (auto* p : {std_p.get(), under_p.get()}) {
    for (double x : {1.0, 2.0, 3.0}) p->observe(task("a", 2 * x, 1, x));
    TaskInfo i4;
    i4.input_bytes = 4;
    EXPECT_NEAR(p->first(i4), 8, 1e-9);  // y = 2x, no errors yet: no offset
    p->observe(task("a", 10, 1, 4));     // error (10 - 8) / 10 = 0.2
    TaskInfo i5;
    i5.input_bytes = 5;
    EXPECT_NEAR(p->first(i5), 12, 1e-9);  // slope 13/5 through the mean (2.5, 5.5); s.d. of {0.2} = 0
    p->observe(task("a", 9, 1, 5));       // error (9 - 12) / 9 = -1/3
  }
  TaskInfo i6;
  i6.input_bytes = 6;
  // STD: s.d. of {0.2, -1/3} = 0.26667; STDUNDER: s.d. of {0.2} = 0. Same regression.
  EXPECT_NEAR(std_p->first(i6) / under_p->first(i6), 1.0 + (0.2 + 1.0 / 3) / 2, 1e-9);
  EXPECT_DOUBLE_EQ(std_p->retry({}, -5, 1), 10);  // negative request: the largest peak seen
  EXPECT_DOUBLE_EQ(std_p->retry({}, 5, 1), 10);
}

TEST(Baselines, MaxSoFarPresetsAndVpa) {
  auto m = make_max_so_far();
  TaskInfo req;
  req.request_bytes = 7e9;
  EXPECT_DOUBLE_EQ(m->first(req), 7e9);  // nothing seen: the request
  m->observe(task("a", 3e9, 1));
  m->observe(task("a", 1e9, 1));
  EXPECT_DOUBLE_EQ(m->first(req), 3e9);
  EXPECT_DOUBLE_EQ(m->retry(req, 3e9, 1), 6e9);
  auto pre = make_presets();
  EXPECT_DOUBLE_EQ(pre->first(req), 7e9);
  auto v = make_vpa();
  for (int i = 0; i < 100; ++i) v->observe(task("a", 1e9, 1));
  const double r = v->first({});
  EXPECT_GE(r, 1.15e9);            // the p90 bucket's upper edge, +15%
  EXPECT_LE(r, 1.15e9 * 1.0501);  // buckets grow 5%
  EXPECT_DOUBLE_EQ(v->retry({}, 2e9, 1), 2.4e9);                  // x1.2
  EXPECT_DOUBLE_EQ(v->retry({}, 1e8, 1), 1e8 + 100.0 * 1048576);  // +100 MiB
}

std::vector<SimTask> synthetic(unsigned seed) {
  std::mt19937 g(seed);
  std::lognormal_distribution<double> noise(0.0, 0.3);
  std::uniform_real_distribution<double> input(1e8, 1e10);
  std::vector<SimTask> out;
  for (int i = 0; i < 400; ++i) {
    const std::string w = i % 2 ? "ALIGN" : "SORT";
    const double x = input(g);
    SimTask t = task(w, (w == "ALIGN" ? 2e9 : 5e8) + 0.3 * x * noise(g), 60000.0 * (1 + i % 7), x, 32e9);
    t.info.submit_ms = i * 1000;
    t.end_ms = i * 1000 + 50000;
    out.push_back(t);
  }
  return out;
}

// --seeds and --threads: one replay per (seed, policy), seed by seed; each is independent, so
// the results are those of each seed replayed alone, on any number of threads, and the progress
// counts every replay's steps.
TEST(Simulate, SeedsOnThreadsAnswerAsEachSeedAlone) {
  const auto tasks = synthetic(3);
  SimulateOptions o;
  o.seed = 7;
  o.seeds = 3;
  o.policies = {"max_so_far", "peakcast", "witt_lr_std"};
  std::vector<size_t> calls;
  size_t total = 0;
  o.progress = [&](size_t done, size_t of) { calls.push_back(done), total = of; };
  for (int threads : {1, 2, 5}) {
    o.threads = threads;
    calls.clear();
    auto many = simulate(tasks, o);
    ASSERT_TRUE(many.ok()) << many.status().message();
    ASSERT_EQ(many->results.size(), 9u);
    EXPECT_EQ(total, 9u * 280u);  // ceil(0.7 * 200) steps per type, two types, per replay
    EXPECT_EQ(calls.size(), 9u * 280u / 500u);
    EXPECT_TRUE(std::is_sorted(calls.begin(), calls.end()));
    for (size_t k = 0; k < many->results.size(); ++k) {
      SimulateOptions one = o;
      one.seeds = 1;
      one.threads = 1;
      one.progress = nullptr;
      one.seed = o.seed + static_cast<uint32_t>(k / 3);
      one.policies = {o.policies[k % 3]};
      auto alone = simulate(tasks, one);
      ASSERT_TRUE(alone.ok());
      const PolicyResult& a = many->results[k];
      const PolicyResult& b = alone->results[0];
      EXPECT_EQ(a.policy, b.policy);
      EXPECT_EQ(a.seed, b.seed);
      EXPECT_EQ(a.total.waste_gbh, b.total.waste_gbh) << a.policy << " seed " << a.seed << " threads " << threads;
      EXPECT_EQ(a.total.failures, b.total.failures);
      ASSERT_EQ(a.per_workload.size(), b.per_workload.size());
      for (size_t w = 0; w < a.per_workload.size(); ++w) EXPECT_EQ(a.per_workload[w].waste_gbh, b.per_workload[w].waste_gbh);
    }
  }
  o.protocol = Protocol::kChrono;
  auto chrono = simulate(tasks, o);
  ASSERT_FALSE(chrono.ok());
  EXPECT_NE(chrono.status().message().find("no random order"), std::string::npos);
  o.protocol = Protocol::kSizey;
  o.seeds = 0;
  EXPECT_FALSE(simulate(tasks, o).ok());
}

TEST(Simulate, DeterministicForASeedAndTheSeedMatters) {
  const auto tasks = synthetic(3);
  SimulateOptions o;
  o.seed = 7;
  auto a = simulate(tasks, o), b = simulate(tasks, o);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->results.size(), policy_names().size());
  for (size_t k = 0; k < a->results.size(); ++k) {
    EXPECT_EQ(a->results[k].policy, policy_names()[k]);
    EXPECT_EQ(a->results[k].total.waste_gbh, b->results[k].total.waste_gbh);
    EXPECT_EQ(a->results[k].total.failures, b->results[k].total.failures);
    EXPECT_EQ(a->results[k].total.jobs, 280u);  // ceil(0.7 * 200) per type, two types
  }
  o.seed = 8;
  auto c = simulate(tasks, o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->results[0].total.waste_gbh, c->results[0].total.waste_gbh);
}

TEST(Simulate, PresetsNeverFailWhenRequestsHoldThePeak) {
  SimulateOptions o;
  o.policies = {"presets"};
  auto r = simulate(synthetic(1), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->results[0].total.failures, 0u);
  EXPECT_GT(r->results[0].total.waste_gbh, 0.0);
}

TEST(Simulate, ChronoScoresTheLastFifthAndLearnsOnlyFromCompletedTasks) {
  SimulateOptions o;
  o.protocol = Protocol::kChrono;
  o.policies = {"max_so_far", "peakcast"};
  auto r = simulate(synthetic(2), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->results[0].total.jobs, 80u);
  EXPECT_EQ(r->results[0].per_workload.size(), 2u);
}

// A task killed for memory recorded only a lower bound of its peak (synth writes it at the
// request): the chrono replay neither scores it nor lets a policy learn it as a peak, and says
// how many it left out. Before, presets "held" such a task at the very request it was killed
// at, and every policy learned the request as the task's peak.
TEST(Simulate, ChronoLeavesTasksKilledForMemoryOutOfScoreAndLearning) {
  auto trace = [](double killed_peak) {
    std::vector<SimTask> tasks;
    for (int i = 0; i < 50; ++i) {
      SimTask t = task(i % 2 ? "a" : "b", 1e9 + 1e7 * (i % 5), kHourMs, 0, 4e9);
      t.info.submit_ms = 1000 * i;
      t.end_ms = 1000 * i + 500;
      if (i % 7 == 3) {  // 7 of them, one (i = 45) in the scored last fifth
        t.censored = true;
        t.peak_bytes = killed_peak;
      }
      tasks.push_back(t);
    }
    return tasks;
  };
  SimulateOptions o;
  o.protocol = Protocol::kChrono;
  o.policies = default_policy_names();
  auto at_request = simulate(trace(4e9), o);
  auto far_above = simulate(trace(64e9), o);
  ASSERT_TRUE(at_request.ok() && far_above.ok());
  size_t killed_scored = 0;
  for (int i = 40; i < 50; ++i) killed_scored += i % 7 == 3 ? 1 : 0;
  ASSERT_EQ(killed_scored, 1u);  // i = 45
  ASSERT_EQ(at_request->results.size(), far_above->results.size());
  for (size_t k = 0; k < at_request->results.size(); ++k) {
    const Tally& a = at_request->results[k].total;
    const Tally& b = far_above->results[k].total;
    const std::string& name = at_request->results[k].policy;
    EXPECT_EQ(a.jobs, 10u - killed_scored) << name;
    EXPECT_EQ(a.failures, b.failures) << name << ": a killed task's recorded peak was used";
    EXPECT_DOUBLE_EQ(a.waste_gbh, b.waste_gbh) << name;
  }
  EXPECT_EQ(at_request->results[0].policy, "presets");
  EXPECT_EQ(at_request->results[0].total.failures, 0u);
  ASSERT_EQ(at_request->notes.size(), 1u);
  EXPECT_NE(at_request->notes[0].find("1 of the 10 tasks of the scored block were killed for memory"),
            std::string::npos) << at_request->notes[0];
}

// Sizey's code keeps Witt-LR's relative errors in one list shared by the task types of a run
// (in the trace's order) and by both variants, STD before STDUNDER on each type. The first type
// here is SORT (task 0): STD starts it with no errors, STDUNDER with SORT's own; on ALIGN, STD
// starts with SORT's errors twice, STDUNDER with those and ALIGN's. Each is replayed here by
// hand with run_task and must give the simulator's tally for that type exactly.
TEST(Simulate, SizeysWittLrSharesItsErrorsAcrossTypesAndVariants) {
  const auto tasks = synthetic(4);
  SimulateOptions o;
  o.seed = 11;
  o.policies = {"witt_lr_std", "witt_lr_stdunder"};
  auto r = simulate(tasks, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto types = sizey_task_types(tasks, o.sizey_min_tasks, nullptr);
  ASSERT_EQ(types.size(), 2u);
  ASSERT_EQ(types[0].workload, "SORT");
  std::vector<SizeySplit> splits;
  std::vector<std::vector<double>> errors;
  for (const auto& tt : types) {
    splits.push_back(sizey_split(o.seed, tt.tasks.size()));
    errors.push_back(witt_lr_errors(tt, splits.back()));
    EXPECT_EQ(errors.back().size(), splits.back().online.size());  // one per online prediction
  }
  auto cat = [](std::initializer_list<const std::vector<double>*> parts) {
    std::vector<double> v;
    for (const auto* p : parts) v.insert(v.end(), p->begin(), p->end());
    return v;
  };
  const std::vector<double> none;
  const std::vector<double> starts[2][2] = {
      {none, cat({&errors[0], &errors[0]})},                         // STD: SORT, ALIGN
      {errors[0], cat({&errors[0], &errors[0], &errors[1]})}};       // STDUNDER
  for (int variant = 0; variant < 2; ++variant) {
    for (size_t k = 0; k < types.size(); ++k) {
      auto p = make_witt_lr(variant == 1, starts[variant][k]);
      for (size_t i : splits[k].warm) p->observe(types[k].tasks[i]);
      Tally by_hand;
      for (size_t i : splits[k].online) {
        run_task(*p, types[k].tasks[i], by_hand);
        p->observe(types[k].tasks[i]);
      }
      const Tally& simulated = r->results[static_cast<size_t>(variant)].per_workload[k];
      EXPECT_EQ(simulated.workload, types[k].workload);
      EXPECT_DOUBLE_EQ(simulated.waste_gbh, by_hand.waste_gbh) << variant << " " << k;
      EXPECT_EQ(simulated.failures, by_hand.failures) << variant << " " << k;
    }
  }
  // The sharing matters: ALIGN replayed with no carried errors gives another figure.
  auto alone = make_witt_lr(false);
  for (size_t i : splits[1].warm) alone->observe(types[1].tasks[i]);
  Tally own;
  for (size_t i : splits[1].online) {
    run_task(*alone, types[1].tasks[i], own);
    alone->observe(types[1].tasks[i]);
  }
  EXPECT_NE(own.waste_gbh, r->results[0].per_workload[1].waste_gbh);
}

TEST(Simulate, UnknownPolicyAndTooFewTasksAreInputErrors) {
  SimulateOptions o;
  o.policies = {"oracle"};
  auto r = simulate(synthetic(1), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown sizing policy 'oracle'"), std::string::npos);
  o.policies = {"presets"};
  std::vector<SimTask> few(10, task("a", 1e9, 10));
  r = simulate(few, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("34"), std::string::npos);
}

// In event time a task's attempts are played at its submission, but what they teach (an OOM,
// its peak) is known only when it ends: tasks submitted while it runs are sized without it.
// Every policy, after sizing and failing a task whose peak is 1 GB in one run and 4 GB in the
// other, answers the next submission alike (VPA recorded its OOM bumps at the retry).
TEST(ChronoPolicies, ATasksFailedAttemptsTeachNothingBeforeItEnds) {
  for (const std::string& name : policy_names()) {
    auto low = make_policy(name), high = make_policy(name);
    ASSERT_TRUE(low && high) << name;
    for (int i = 0; i < 12; ++i) {
      const SimTask done = task("w", 1e9 + 1e7 * (i % 3), kHourMs, 1e8 * (i + 1), 8e9);
      (*low)->observe(done);
      (*high)->observe(done);
    }
    SimTask a = task("w", 1e9, kHourMs, 5e8, 8e9);
    a.info.submit_ms = 2000;
    Tally ta, tb;
    run_task(**low, a, ta);
    a.peak_bytes = 4e9;  // fails the first attempts of every policy but presets
    run_task(**high, a, tb);
    if (name != "presets") {
      EXPECT_GT(tb.failures, 0u) << name;
    }
    TaskInfo b = task("w", 1e9, kHourMs, 3e8, 8e9).info;
    b.submit_ms = 2001;
    EXPECT_EQ((*low)->first(b), (*high)->first(b)) << name << ": a running task's failures leaked";
  }
}

// A completion is paired with what was answered for it, not with the last task sized: sizing
// another task in between changes no later answer (Witt-LR's error list paired a task's peak
// with the prediction for whichever task was sized last).
TEST(ChronoPolicies, ACompletionIsPairedWithItsOwnAnswer) {
  for (const std::string& name : policy_names()) {
    auto asked = make_policy(name), quiet = make_policy(name);
    ASSERT_TRUE(asked && quiet) << name;
    size_t compared = 0;
    for (int i = 0; i < 40; ++i) {
      const double input = 1e8 * (1 + (i * 7) % 13);
      SimTask t = task("w", 5e8 + 2.0 * input + 3e7 * (i % 5), kHourMs, input, 16e9);
      t.info.submit_ms = 1000 * i;
      TaskInfo other = task("w", 0, 0, 9e8 - 0.5 * input, 12e9).info;  // sized while t runs
      other.submit_ms = 1000 * i + 1;
      (void)(*asked)->first(t.info);
      (void)(*quiet)->first(t.info);
      (void)(*asked)->first(other);
      (*asked)->observe(t);
      (*quiet)->observe(t);
      TaskInfo next = task("w", 0, 0, 1e8 * (1 + (i * 5) % 11), 16e9).info;
      next.submit_ms = 1000 * i + 500;
      EXPECT_EQ((*asked)->first(next), (*quiet)->first(next)) << name << " after " << i + 1;
      ++compared;
    }
    EXPECT_EQ(compared, 40u);
  }
}

}  // namespace
}  // namespace peakcast::sizing
