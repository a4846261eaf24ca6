// What peakcastd would have answered for each test job: its online bound and its recommended
// request (report_internal.h, replay_daemon).
#include <algorithm>
#include <limits>
#include <unordered_map>

#include "peakcast/eval/coverage.h"
#include "peakcast/sizing/recommend.h"
#include "peakcast/sizing/sim_task.h"
#include "peakcast/sizing/warm_runs.h"
#include "report_internal.h"

namespace peakcast::report {
namespace {

// The script's trailing OOM request for a job (sizing::trailing_oom_request), from its runs
// that had ended before the job's submission.
class TrailingOom {
 public:
  explicit TrailingOom(const std::vector<Job>& all) {
    for (const Job& j : all) {
      if (!j.script_key.empty()) by_script_[j.script_key].push_back(&j);
    }
    for (auto& [key, runs] : by_script_) {  // newest first
      std::stable_sort(runs.begin(), runs.end(),
                       [](const Job* a, const Job* b) { return a->end_ms > b->end_ms; });
    }
  }
  std::optional<uint64_t> operator()(const Job& job) const {
    auto it = by_script_.find(job.script_key);
    if (job.script_key.empty() || it == by_script_.end()) return std::nullopt;
    const std::vector<const Job*>& runs = it->second;
    auto known = std::partition_point(runs.begin(), runs.end(),
                                      [&](const Job* j) { return j->end_ms >= job.submit_ms; });
    return sizing::trailing_oom_request(std::span<const Job* const>(known, runs.end()));
  }

 private:
  std::unordered_map<std::string, std::vector<const Job*>> by_script_;
};

constexpr size_t kWarmUp = std::numeric_limits<size_t>::max();  // a walked job that is not a test job
constexpr int64_t kSweepMs = 3'600'000;  // peakcastd's --history-days / --sizing-days sweep: hourly

}  // namespace

std::vector<DaemonAnswer> replay_daemon(std::span<const PredictedRun> warm,
                                        std::span<const PredictedRun> test,
                                        const std::vector<Job>& all, const ReplayOptions& o,
                                        std::span<const Job* const> stored) {
  std::vector<DaemonAnswer> out(test.size());
  for (Resource r : kResources) {
    // The walk: warm-up completions (never scored) and the test jobs, in submit order.
    std::vector<eval::WalkedJob> walk;
    std::vector<size_t> test_index;  // walk position -> test position, or kWarmUp
    auto add = [&](const PredictedRun& run, size_t ti) {
      const cascade::ResourcePrediction* rp = run.prediction->of(r);
      if (!rp || !run.job->is_valid(r)) return;
      walk.push_back({run.job, history::level_from_name(rp->history_level),
                      std::clamp(rp->util, 0.0, o.util_cap), ti != kWarmUp});
      test_index.push_back(ti);
    };
    for (const PredictedRun& run : warm) add(run, kWarmUp);
    for (size_t i = 0; i < test.size(); ++i) add(test[i], i);
    std::vector<size_t> order(walk.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return walk[a].job->submit_ms < walk[b].job->submit_ms;
    });
    std::vector<eval::WalkedJob> sorted;
    sorted.reserve(walk.size());
    for (size_t i : order) sorted.push_back(walk[i]);
    const std::vector<eval::IssuedBound> issued = eval::online_bounds(sorted, r, o.util_cap, o.bound);
    for (size_t k = 0; k < sorted.size(); ++k) {
      const size_t ti = test_index[order[k]];
      if (ti == kWarmUp || !issued[k].evidence) continue;
      out[ti].upper[idx(r)] = issued[k].bound;
    }
  }
  // Memory, as peakcastd answers: the workload's own policy once it has enough completed runs
  // (serve::SizingState: warmed at start from the store, then each later completion, learned in
  // the order they ended, each before the submissions after it), else the online bound.
  const TrailingOom trailing_oom(all);
  sizing::WorkloadSizerOptions wo = o.workloads;
  wo.policy.recommend = o.recommend;
  sizing::WorkloadSizer sizer(wo);
  int64_t start = std::numeric_limits<int64_t>::max();
  for (const PredictedRun& run : test) start = std::min(start, run.job->submit_ms);
  if (wo.max_workloads > 0) {
    std::vector<const Job*> by_end(stored.begin(), stored.end());
    std::stable_sort(by_end.begin(), by_end.end(), [](const Job* a, const Job* b) { return a->end_ms < b->end_ms; });
    sizing::WarmRuns warm_runs(wo, start);
    for (const Job* j : by_end) {
      if (std::optional<sizing::SimTask> t = sizing::learned_run(*j)) warm_runs.add(*t);
    }
    warm_runs.replay(sizer);
  }
  std::vector<const Job*> ended;
  for (const PredictedRun& run : warm) {
    if (run.job->end_ms >= start) ended.push_back(run.job);  // still running at the start
  }
  for (const PredictedRun& run : test) ended.push_back(run.job);
  std::stable_sort(ended.begin(), ended.end(), [](const Job* a, const Job* b) { return a->end_ms < b->end_ms; });
  std::vector<size_t> by_submit(test.size());
  for (size_t i = 0; i < by_submit.size(); ++i) by_submit[i] = i;
  std::stable_sort(by_submit.begin(), by_submit.end(),
                   [&](size_t a, size_t b) { return test[a].job->submit_ms < test[b].job->submit_ms; });
  size_t next_end = 0;
  int64_t last_sweep_ms = start;
  for (size_t i : by_submit) {
    const Job& job = *test[i].job;
    while (next_end < ended.size() && ended[next_end]->end_ms < job.submit_ms) {
      const Job& done = *ended[next_end++];
      if (wo.max_workloads == 0) continue;
      if (std::optional<sizing::SimTask> t = sizing::learned_run(done)) sizer.observe(*t);
    }
    // peakcastd's hourly sweep under --sizing-days (SizingState::age_workloads).
    if (wo.max_age_ms > 0 && job.submit_ms - last_sweep_ms >= kSweepMs) {
      last_sweep_ms = job.submit_ms;
      sizer.age(job.submit_ms);
    }
    const std::optional<double> cap = capacity_bytes(job, Resource::kMem);
    if (!cap || wo.max_workloads == 0) continue;
    sizing::TaskInfo t = sizing::task_info(job, /*sizey=*/false);
    t.workload = sizing::script_workload_of(job);
    t.failed_request_bytes = trailing_oom(job);
    if (std::optional<sizing::WorkloadSizer::Answer> own = sizer.first(t)) {
      out[i].recommended_bytes = own->bytes;
      out[i].rule = std::move(own->rule);
      out[i].source = "workload";
    }
  }
  for (size_t i = 0; i < test.size(); ++i) {
    if (!out[i].source.empty()) continue;  // the workload's own
    const Job& job = *test[i].job;
    const std::optional<double> upper = out[i].upper[idx(Resource::kMem)];
    const std::optional<double> cap = capacity_bytes(job, Resource::kMem);
    if (!upper || !cap) continue;
    sizing::RecommendInput in;
    in.upper_bytes = *upper * *cap;
    in.request_bytes = job.req_mem_bytes;
    in.partition = job.partition;
    in.failed_request_bytes = trailing_oom(job);
    const sizing::Recommendation rec = sizing::recommend_request(in, o.recommend);
    out[i].recommended_bytes = rec.bytes;
    out[i].rule = rec.rule;
    out[i].source = "bound";
  }
  return out;
}

}  // namespace peakcast::report
