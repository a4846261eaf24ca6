// Replays tasks with sizing policies as a scheduler would (docs/sizing.md).
//
// Each task gets the policy's first allocation; while the allocation is below the task's peak
// the attempt fails (out of memory) and is retried with the policy's retry rule. Waste, in
// GB x h (GB = 1e9 bytes, h = 3.6e6 ms): over-allocation x run time of the successful attempt,
// plus the whole allocation x run time of every failed one (a failure is detected at the end).
// failures = failed attempts (as Sizey counts them) = retries; failed_jobs = tasks that failed
// at least once. A retry that is not above the failed allocation (or not a number) is replaced
// by double the failed one (at least 1 MiB), so every task ends.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "peakcast/core/status.h"
#include "peakcast/sizing/policy.h"
#include "peakcast/sizing/sim_task.h"

namespace peakcast::sizing {

enum class Protocol { kSizey, kChrono };
Result<Protocol> parse_protocol(const std::string& name);  // "sizey" | "chrono"
// --seeds for a protocol: 1 to kMaxSeeds, 1 under chrono (event time has no random order), and
// first_seed + seeds - 1 within uint32. simulate() checks it; a program may check it before
// reading a trace.
inline constexpr uint32_t kMaxSeeds = 10'000;
Status check_seeds(Protocol protocol, uint32_t seeds, uint32_t first_seed = 0);

struct Tally {
  std::string workload;
  double waste_gbh = 0.0;
  double over_gbh = 0.0;     // over-allocation of successful attempts
  double failed_gbh = 0.0;   // allocations of failed attempts
  double usage_gbh = 0.0;    // peak x run time
  size_t failures = 0, retries = 0, jobs = 0, failed_jobs = 0;
  // Tasks whose peak was above every allocation the policy may make (SizingPolicy::ceiling: a
  // partition's limit_bytes): their attempts failed until the policy could not grow; no attempt held.
  size_t unschedulable = 0;
  void add(const Tally& o);
};

struct PolicyResult {
  std::string policy;
  uint32_t seed = 0;
  Tally total;
  std::vector<Tally> per_workload;
};

// One task through one policy: the attempts and their charge, added to `tally`. Attempts are
// capped at kMaxAttempts (a policy that never reaches the peak counts every attempt as failed).
inline constexpr int kMaxAttempts = 64;
void run_task(SizingPolicy& policy, const SimTask& task, Tally& tally);

// One task at a fixed first allocation, retried at its own request (task.info.request_bytes;
// doubled, as run_task does, where that is not above the failed attempt): a job sized by
// peakcastd's recommendation and resubmitted as its user asked after running out of memory.
// At the request itself it is `presets` (a job above its request fails and doubles).
void run_at(double allocation, const SimTask& task, Tally& tally);

struct SimulateOptions {
  Protocol protocol = Protocol::kSizey;
  uint32_t seed = 1996;
  uint32_t seeds = 1;   // sizey: seeds seed .. seed + seeds - 1 (chrono has no random order: 1)
  int threads = 1;      // replays (one per seed and policy) run at once; the results are the same for any count
  std::vector<std::string> policies;   // empty: default_policy_names()
  PolicyOptions policy;
  double chrono_test_fraction = 0.2;   // chrono: the last share of tasks by submit time
  size_t sizey_min_tasks = 34;
  // Progress: (done, total) task steps over every replay; may be empty. Called from the replays'
  // threads, one call at a time.
  std::function<void(size_t, size_t)> progress;
};

struct SimulateOutput {
  std::vector<PolicyResult> results;   // seed by seed, one per policy in the order asked
  std::vector<std::string> notes;      // task types left out and why, protocol facts
};

// The mean memory x time (peak x run time, byte x ms) of `tasks`; 0 for none. simulate prices
// peakcast's failed attempts at this mean over the tasks known before the replay starts (Sizey:
// every type's warm-start tasks; chrono: those completed before the first scored submission)
// unless options.policy.failure_price is set: a failure costs the site an average task.
double mean_memory_time(const std::vector<SimTask>& tasks);

// `tasks` from tasks_from_jobs(jobs, protocol == kSizey).
Result<SimulateOutput> simulate(const std::vector<SimTask>& tasks, const SimulateOptions& options);

}  // namespace peakcast::sizing
