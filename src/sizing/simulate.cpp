// The replay loop and the two protocols (see the header and docs/sizing.md).
#include "peakcast/sizing/simulate.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "peakcast/core/stats.h"

namespace peakcast::sizing {
namespace {

constexpr double kGbh = 1e-9 / 3.6e6;  // byte x ms -> GB x h
constexpr double kMinRetryBytes = 1024.0 * 1024.0;

using PolicyPtr = std::unique_ptr<SizingPolicy>;

// Task steps done over every replay of a run, reported every 500, in order, from whichever
// replay's thread makes the step.
class StepCount {
 public:
  StepCount(const std::function<void(size_t, size_t)>& report, size_t total) : report_(report), total_(total) {}
  void step() {
    std::lock_guard<std::mutex> lock(mu_);
    if (++done_ % 500 == 0 && report_) report_(done_, total_);
  }

 private:
  const std::function<void(size_t, size_t)>& report_;
  const size_t total_;
  size_t done_ = 0;
  std::mutex mu_;
};

// The event order of the chrono protocol, the same for every replay: the tasks by submission
// and by end (stable: ties keep the trace's order), and where the scored block (the last
// test_fraction by submission) begins in the former.
struct ChronoOrder {
  std::vector<size_t> by_submit, by_end;
  size_t first_test = 0;
};

ChronoOrder chrono_order(const std::vector<SimTask>& tasks, double test_fraction) {
  ChronoOrder c;
  c.by_submit.resize(tasks.size());
  c.by_end.resize(tasks.size());
  std::iota(c.by_submit.begin(), c.by_submit.end(), 0);
  std::iota(c.by_end.begin(), c.by_end.end(), 0);
  std::stable_sort(c.by_submit.begin(), c.by_submit.end(),
                   [&](size_t a, size_t b) { return tasks[a].info.submit_ms < tasks[b].info.submit_ms; });
  std::stable_sort(c.by_end.begin(), c.by_end.end(),
                   [&](size_t a, size_t b) { return tasks[a].end_ms < tasks[b].end_ms; });
  c.first_test = share_position(tasks.size(), 1.0 - test_fraction);  // as the evaluation's folds cut
  return c;
}

Result<PolicyPtr> fresh(const std::string& name, const SimulateOptions& o) {
  return make_policy(name, o.policy);
}

// Sizey's protocol for one policy: per task type, a fresh policy warmed on ~30% of the tasks
// (the split's history, in its order), then the rest online in the permutation's order.
Result<PolicyResult> run_sizey(const std::vector<TaskType>& types, const std::string& name,
                               SimulateOptions o, StepCount& steps) {
  if (o.policy.failure_price <= 0) {
    std::vector<SimTask> known;
    for (const TaskType& tt : types) {
      for (size_t i : sizey_split(o.seed, tt.tasks.size()).warm) known.push_back(tt.tasks[i]);
    }
    o.policy.failure_price = mean_memory_time(known);
  }
  PolicyResult r;
  r.policy = name;
  r.seed = o.seed;
  // Sizey's evaluation code keeps Witt-LR's relative errors in one list (a class attribute)
  // shared by every task type of a run and by both variants, run type by type in the trace's
  // order, STD before STDUNDER. Both variants' raw predictions are the same regression, so they
  // add the same errors E_k on type k: STD starts type k from E_1, E_1, ..., E_k-1, E_k-1, and
  // STDUNDER from those and E_k. Replayed so, Witt-LR's figures are Sizey's (the notes' table).
  const bool under_only = name == "witt_lr_stdunder";
  const bool witt_lr = under_only || name == "witt_lr_std";
  std::vector<double> shared_errors;
  for (const TaskType& tt : types) {
    const SizeySplit split = sizey_split(o.seed, tt.tasks.size());
    Result<PolicyPtr> policy = PolicyPtr();
    if (witt_lr) {
      const std::vector<double> own = witt_lr_errors(tt, split);
      std::vector<double> start = shared_errors;
      if (under_only) start.insert(start.end(), own.begin(), own.end());
      policy = make_witt_lr(under_only, std::move(start));
      shared_errors.insert(shared_errors.end(), own.begin(), own.end());  // STD's
      shared_errors.insert(shared_errors.end(), own.begin(), own.end());  // STDUNDER's
    } else {
      policy = fresh(name, o);
    }
    if (!policy) return policy.status();
    for (size_t i : split.warm) (*policy)->observe(tt.tasks[i]);
    Tally tally;
    tally.workload = tt.workload;
    for (size_t i : split.online) {
      run_task(**policy, tt.tasks[i], tally);
      (*policy)->observe(tt.tasks[i]);
      steps.step();
    }
    r.total.add(tally);
    r.per_workload.push_back(std::move(tally));
  }
  r.total.workload = "total";
  return r;
}

// Event time: tasks in submit order; the last chrono_test_fraction are scored; before each
// scored task, every task that completed before its submission has been observed by its
// type's policy (a type first seen gets a fresh policy).
Result<PolicyResult> run_chrono(const std::vector<SimTask>& tasks, const ChronoOrder& order,
                                const std::string& name, SimulateOptions o, StepCount& steps) {
  const std::vector<size_t>& by_submit = order.by_submit;
  const std::vector<size_t>& by_end = order.by_end;
  const size_t first_test = order.first_test;
  if (o.policy.failure_price <= 0 && first_test < by_submit.size()) {
    std::vector<SimTask> known;  // completed before the first scored submission
    for (const SimTask& t : tasks) {
      if (!t.censored && t.end_ms < tasks[by_submit[first_test]].info.submit_ms) known.push_back(t);
    }
    o.policy.failure_price = mean_memory_time(known);
  }
  std::map<std::string, PolicyPtr> policies;
  std::map<std::string, Tally> tallies;
  auto policy_for = [&](const std::string& w) -> Result<SizingPolicy*> {
    auto it = policies.find(w);
    if (it != policies.end()) return it->second.get();
    auto p = fresh(name, o);
    if (!p) return p.status();
    return policies.emplace(w, std::move(*p)).first->second.get();
  };
  size_t next_end = 0;
  for (size_t k = first_test; k < by_submit.size(); ++k) {
    const SimTask& t = tasks[by_submit[k]];
    const bool scored = !t.censored;  // no allocation can be judged against an unknown peak
    while (next_end < by_end.size() && tasks[by_end[next_end]].end_ms < t.info.submit_ms) {
      const SimTask& done_task = tasks[by_end[next_end++]];
      if (done_task.censored) continue;  // its peak is not known: nothing to learn as a value
      auto p = policy_for(done_task.info.workload);
      if (!p) return p.status();
      (*p)->observe(done_task);
    }
    steps.step();
    if (!scored) continue;
    auto p = policy_for(t.info.workload);
    if (!p) return p.status();
    Tally& tally = tallies[t.info.workload];
    tally.workload = t.info.workload;
    run_task(**p, t, tally);
  }
  PolicyResult r;
  r.policy = name;
  r.seed = o.seed;
  for (auto& [w, tally] : tallies) {
    r.total.add(tally);
    r.per_workload.push_back(tally);
  }
  r.total.workload = "total";
  return r;
}

}  // namespace

Result<Protocol> parse_protocol(const std::string& name) {
  if (name == "sizey") return Protocol::kSizey;
  if (name == "chrono") return Protocol::kChrono;
  return Status::invalid("--protocol: '" + name + "' is not a protocol (sizey, chrono)");
}

Status check_seeds(Protocol protocol, uint32_t seeds, uint32_t first_seed) {
  if (seeds == 0) return Status::invalid("--seeds: must be at least 1");
  if (seeds > kMaxSeeds) {
    return Status::invalid(fmt::format("--seeds: at most {} (each seed replays every policy)", kMaxSeeds));
  }
  if (first_seed > std::numeric_limits<uint32_t>::max() - (seeds - 1)) {
    return Status::invalid(fmt::format("--seed {} --seeds {}: the last seed would pass {}", first_seed,
                                       seeds, std::numeric_limits<uint32_t>::max()));
  }
  if (protocol == Protocol::kChrono && seeds > 1) {
    return Status::invalid("--seeds: the chrono protocol replays in event time, with no random "
                           "order: every seed gives the same run (use --protocol sizey)");
  }
  return Status::ok();
}

double mean_memory_time(const std::vector<SimTask>& tasks) {
  if (tasks.empty()) return 0.0;
  double sum = 0.0;
  for (const SimTask& t : tasks) sum += t.peak_bytes * t.runtime_ms;
  return sum / static_cast<double>(tasks.size());
}

void Tally::add(const Tally& o) {
  waste_gbh += o.waste_gbh;
  over_gbh += o.over_gbh;
  failed_gbh += o.failed_gbh;
  usage_gbh += o.usage_gbh;
  failures += o.failures;
  retries += o.retries;
  jobs += o.jobs;
  failed_jobs += o.failed_jobs;
  unschedulable += o.unschedulable;
}

void run_task(SizingPolicy& policy, const SimTask& task, Tally& tally) {
  const double y = task.peak_bytes, t = task.runtime_ms;
  const double ceiling = policy.ceiling(task.info);
  double a = std::min(policy.first(task.info), ceiling);
  if (!std::isfinite(a)) a = 0.0;
  ++tally.jobs;
  tally.usage_gbh += y * t * kGbh;
  int attempt = 0;
  while (a < y && attempt < kMaxAttempts) {
    tally.failed_gbh += a * t * kGbh;
    tally.waste_gbh += a * t * kGbh;
    ++tally.failures;
    if (attempt == 0) ++tally.failed_jobs;
    ++attempt;
    ++tally.retries;
    const double failed = a;
    if (failed >= ceiling) {  // nothing larger may be allocated: the task cannot be held
      ++tally.unschedulable;
      return;
    }
    a = std::min(policy.retry(task.info, failed, attempt), ceiling);
    // A retry that does not grow (doubling nothing) would repeat the failure: double it instead,
    // up to the policy's ceiling.
    if (!std::isfinite(a) || a <= failed) a = std::min(std::max(2.0 * failed, kMinRetryBytes), ceiling);
  }
  if (a >= y) {
    tally.over_gbh += (a - y) * t * kGbh;
    tally.waste_gbh += (a - y) * t * kGbh;
  }
}

namespace {

class FixedThenRequest final : public SizingPolicy {
 public:
  explicit FixedThenRequest(double allocation) : allocation_(allocation) {}
  double first(const TaskInfo&) override { return allocation_; }
  double retry(const TaskInfo& task, double, int) override { return task.request_bytes; }
  void observe(const SimTask&) override {}

 private:
  double allocation_;
};

}  // namespace

void run_at(double allocation, const SimTask& task, Tally& tally) {
  FixedThenRequest policy(allocation);
  run_task(policy, task, tally);
}

Result<SimulateOutput> simulate(const std::vector<SimTask>& tasks, const SimulateOptions& o) {
  SimulateOutput out;
  const std::vector<std::string>& names = o.policies.empty() ? default_policy_names() : o.policies;
  for (const auto& n : names) {
    if (auto p = make_policy(n, o.policy); !p) return p.status();
  }
  if (Status s = check_seeds(o.protocol, o.seeds, o.seed); !s) return s;
  const bool sizey = o.protocol == Protocol::kSizey;
  std::vector<TaskType> types;
  ChronoOrder order;
  size_t steps_per_replay = 0;
  if (sizey) {
    types = sizey_task_types(tasks, o.sizey_min_tasks, &out.notes);
    for (const auto& tt : types) steps_per_replay += static_cast<size_t>(std::ceil(0.7 * static_cast<double>(tt.tasks.size())));
    if (types.empty()) return Status::invalid("no task type has the " + std::to_string(o.sizey_min_tasks) +
                                              " tasks with rss > 0 and realtime > 0 that Sizey's protocol (the default, for "
                                              "Nextflow traces) needs; --protocol chrono replays any trace "
                                              "with submit times in event order");
  } else {
    if (tasks.empty()) return Status::invalid("no task has a recorded peak memory to replay");
    order = chrono_order(tasks, o.chrono_test_fraction);
    steps_per_replay = tasks.size() - order.first_test;
    size_t killed = 0;  // of the scored block
    for (size_t k = order.first_test; k < order.by_submit.size(); ++k) killed += tasks[order.by_submit[k]].censored ? 1 : 0;
    if (killed > 0) {
      out.notes.push_back(fmt::format(
          "{} of the {} tasks of the scored block were killed for memory: their peak is not known, "
          "only that it was above the memory they held, so they are not scored and no policy learns "
          "a peak from them",
          killed, steps_per_replay));
    }
  }
  // One replay per (seed, policy), seed by seed, each policy in the order asked. Each replay has
  // its own policies and reads only `tasks`, so they run at once on o.threads threads and the
  // results do not depend on how many.
  const size_t replays = static_cast<size_t>(o.seeds) * names.size();
  StepCount steps(o.progress, steps_per_replay * replays);
  std::vector<std::optional<Result<PolicyResult>>> results(replays);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next++) < replays;) {
      SimulateOptions one = o;
      one.seed = o.seed + static_cast<uint32_t>(k / names.size());
      const std::string& name = names[k % names.size()];
      results[k] = sizey ? run_sizey(types, name, one, steps) : run_chrono(tasks, order, name, one, steps);
    }
  };
  const size_t workers = std::min(replays, static_cast<size_t>(std::max(o.threads, 1)));
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (auto& r : results) {
    if (!*r) return r->status();
    out.results.push_back(std::move(**r));
  }
  return out;
}

}  // namespace peakcast::sizing
