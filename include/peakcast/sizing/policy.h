// Sizing policies: the allocation a task gets first, after a failed attempt, and what the
// policy learns when a task completes. One instance sizes ONE task type (Sizey's unit: a
// Nextflow process); the simulator makes a fresh instance per type (policy_names()).
//
// No leakage by construction: first() and retry() see TaskInfo only; observe() gets the
// outcome after the task has completed.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "peakcast/core/status.h"
#include "peakcast/sizing/recommend.h"
#include "peakcast/sizing/sim_task.h"

namespace peakcast::sizing {

class SizingPolicy {
 public:
  virtual ~SizingPolicy() = default;
  // Bytes to allocate for the first attempt (Witt-LR may answer a negative number, as in
  // Sizey's code; the simulator charges it as it is).
  virtual double first(const TaskInfo& task) = 0;
  // Bytes for the next attempt after the attempt with `failed_bytes` ran out of memory;
  // `attempt` = 1 for the first retry.
  virtual double retry(const TaskInfo& task, double failed_bytes, int attempt) = 0;
  // The task completed (the simulator calls it for warm-start tasks too).
  virtual void observe(const SimTask& task) = 0;

  // What set the last first() answer, for the rationale peakcastd gives with it: the rule
  // (recommend_request's, e.g. "default: capped at request") and the allocation it started from
  // (e.g. "largest peak + 3 %"). Empty where a policy does not say.
  struct Explanation {
    std::string rule;
    std::string basis;
  };
  virtual Explanation explain() const { return {}; }
  // The price of one failed attempt (byte x ms) from now on, for a policy that weighs one
  // against waste (peakcast); the others ignore it. peakcastd passes the site's mean task as
  // its completions move it.
  virtual void set_failure_price(double /*byte_ms*/) {}
  // Approximate heap and object bytes the policy holds (peakcastd's --sizing-memory budget
  // counts them); 0 where a policy does not say.
  virtual size_t memory_bytes() const { return 0; }
  // The most this policy may allocate to `task` (peakcast: its partition's limit_bytes in the
  // recommendation rule's config); +infinity where a policy sets none. The simulator never
  // allocates above it: a task whose peak is above it cannot be held.
  virtual double ceiling(const TaskInfo& /*task*/) const { return std::numeric_limits<double>::infinity(); }
};

// peakcast answers a type's request until this many of its tasks have completed (in event time
// the first to complete are the quick ones, which tend to be the small ones).
inline constexpr size_t kPeakcastMinHistory = 10;

struct PolicyOptions {
  RecommendConfig recommend = simulate_recommend_config();
  // peakcast's price of one failed attempt, byte x ms, weighed against waste when it chooses
  // among its candidates and its retry. simulate sets it to the site's mean memory x time per
  // task (site_failure_price); 0 = the type's own mean over its completed tasks.
  double failure_price = 0.0;
  // peakcast keeps each completed task's nearest-input jackknife ratios until a later completion
  // reaches its neighbourhood. false walks every neighbourhood again at each answer: the same
  // answers, slower; the reference the kept ones are tested against.
  bool keep_neighbourhoods = true;
  // The default settings of the recommendation rule in replay: no margin (the coverage is
  // chosen on the history), 1 MiB granularity, no floor, capped at the preset request.
  static RecommendConfig simulate_recommend_config();
};

// The names simulate knows, in the order it reports them: presets first (the baseline
// `peakcast report` compares the others with), witt_p95, witt_lr_std, witt_lr_stdunder, tovar,
// max_so_far, vpa, peakcast, and peakcast variants (peakcast_fixed90: the median expert and the
// 0.90 bound, no choice).
const std::vector<std::string>& policy_names();
const std::vector<std::string>& default_policy_names();  // the ones run without --policies
// The field's policies peakcast is measured against: the names above before peakcast's own.
bool is_baseline(const std::string& policy);
Result<std::unique_ptr<SizingPolicy>> make_policy(const std::string& name,
                                                  const PolicyOptions& options = {});

// Baseline factories (policies_baseline.cpp) and peakcast's (policy_peakcast.cpp).
std::unique_ptr<SizingPolicy> make_presets();
std::unique_ptr<SizingPolicy> make_witt_percentile(double q = 0.95);
// `carried_errors`: relative errors the offset starts from (Sizey's shared list, below).
std::unique_ptr<SizingPolicy> make_witt_lr(bool under_only, std::vector<double> carried_errors = {});
// The relative errors (y - prediction) / y that Witt-LR's online predictions make on one task
// type of Sizey's protocol (warm start, then online in the split's order). They do not depend
// on the offset, so STD and STDUNDER make the same ones.
std::vector<double> witt_lr_errors(const TaskType& type, const SizeySplit& split);
std::unique_ptr<SizingPolicy> make_tovar();
std::unique_ptr<SizingPolicy> make_max_so_far();
std::unique_ptr<SizingPolicy> make_vpa();
std::unique_ptr<SizingPolicy> make_peakcast(const PolicyOptions& options, bool choose);
// How peakcast ranks one of its candidate allocation rules on a type's history (lower is
// better). `waste` and `failures` are its prequential record over `scored` tasks (byte x ms, and
// failed attempts, charged as the simulator charges them); each failed attempt costs `price`
// more. A bound that states a coverage (`coverage` > 0) is also charged for the misses that
// coverage promises, (1 - coverage) x scored, beyond the ones its history showed, each at what a
// failed attempt costs: `failure_cost` (a mean task's memory x time) + price. Among a hundred
// candidates on a short history, the one with the fewest misses so far is often one that was
// lucky; this charges it for the luck.
struct CandidateRecord {
  double waste = 0.0;
  double failures = 0.0;
  double coverage = 0.0;  // 0: the rule states none (the largest peak, the request, ...)
};
double candidate_score(const CandidateRecord& r, double scored, double price, double failure_cost);

// numpy.percentile's default ('linear'): q in [0, 100]. Empty -> 0.
double numpy_percentile(std::vector<double> values, double q);

}  // namespace peakcast::sizing
