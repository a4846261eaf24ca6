// What peakcastd's recommended requests would have saved and cost on the report's test block,
// accounted as `peakcast simulate` accounts a policy (sizing::run_task): over-allocation x run
// time of the attempt that held, the whole allocation x run time of each that ran out of memory.
#include <cstddef>
#include <memory>

#include <fmt/format.h>

#include "peakcast/sizing/policy.h"
#include "peakcast/sizing/simulate.h"
#include "report_internal.h"

namespace peakcast::report {
namespace {

// Allocates what was recorded for the task at hand; after an out-of-memory attempt, the user's
// own request (the daemon answers a resubmission above the failed request and never above the
// user's; run_task doubles a retry that is not above the failed attempt).
class Recorded final : public sizing::SizingPolicy {
 public:
  double allocation = 0.0;
  double first(const sizing::TaskInfo&) override { return allocation; }
  double retry(const sizing::TaskInfo& task, double, int) override { return task.request_bytes; }
  void observe(const sizing::SimTask&) override {}
};

}  // namespace

std::optional<SimResults> recommendation_outcome(const std::vector<Job>& test,
                                                 const std::vector<DaemonAnswer>& answers) {
  Result<std::unique_ptr<sizing::SizingPolicy>> presets = sizing::make_policy("presets", {});
  if (!presets) return std::nullopt;
  Recorded daemon;
  sizing::Tally asked, answered;
  size_t recommended = 0, lower = 0;
  for (size_t i = 0; i < test.size() && i < answers.size(); ++i) {
    const std::optional<sizing::SimTask> task = sizing::sim_task(test[i], false);
    if (!task || task->info.request_bytes <= 0.0 || task->runtime_ms <= 0.0) continue;
    sizing::run_task(**presets, *task, asked);
    const std::optional<uint64_t>& r = answers[i].recommended_bytes;
    daemon.allocation = r ? static_cast<double>(*r) : task->info.request_bytes;
    recommended += r ? 1 : 0;
    lower += r && static_cast<double>(*r) < task->info.request_bytes ? 1 : 0;
    sizing::run_task(daemon, *task, answered);
  }
  if (asked.jobs == 0) return std::nullopt;
  SimResults out;
  out.source = "the test block";
  out.results = sizing::summarize_seeds({{"users' requests", asked}, {"peakcastd's", answered}});
  out.notes.push_back(fmt::format(
      "peakcastd's requests would have wasted {:.1f} GB·h ({:.1f} reserved unused, {:.1f} in {} "
      "out-of-memory attempts of {} jobs) against {:.1f} GB·h and {} failed attempts at the users' "
      "own requests",
      answered.waste_gbh, answered.over_gbh, answered.failed_gbh, answered.failures,
      answered.failed_jobs, asked.waste_gbh, asked.failures));
  out.notes.push_back(fmt::format(
      "{} test jobs with a memory request, a peak and a run time; {} of them had a recommendation "
      "({} below the request), the others run at their request",
      asked.jobs, recommended, lower));
  return out;
}

}  // namespace peakcast::report
