// The per-job part of a report: the cascade trained on the earlier jobs predicts each later job
// with the history that had ended before the job's submission (no leakage), and every job's
// requested and used memory for the usage plots.
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "peakcast/cascade/prediction.h"
#include "peakcast/tools/model_tools.h"
#include "report_internal.h"

namespace peakcast::report {
namespace {

constexpr double kGB = 1e9;

// The one place the report reads a job's clock (Job's time unit may change).
int64_t end_seconds(const Job& j) { return j.end_ms / kMsPerSecond; }

void add_predictions(const Job& job, const cascade::JobPrediction& p, std::vector<PredictedJob>& out) {
  for (Resource r : kResources) {
    if (!job.is_valid(r)) continue;
    const cascade::ResourcePrediction* rp = r == Resource::kMem ? &p.mem : (p.vram ? &*p.vram : nullptr);
    if (!rp) continue;
    PredictedJob pj;
    pj.job_id = job.job_id;
    pj.resource = r;
    pj.actual = job.label(r);
    pj.predicted = rp->util;
    pj.route = std::string(cascade::route_name(rp->route));
    pj.level = rp->history_level;
    pj.upper = rp->upper_util;
    pj.nominal = rp->upper_coverage;
    pj.censored = job.censored;
    out.push_back(std::move(pj));
  }
}

}  // namespace

Result<Detail> build_detail(const std::vector<Job>& all, const DetailOptions& o,
                            const ProgressFn& progress) {
  if (!(o.test_share > 0.0 && o.test_share < 1.0)) {
    return Status::invalid("report: the test share must be in (0, 1)");
  }
  std::vector<Job> jobs = all;
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.submit_ms < b.submit_ms; });
  if (jobs.size() < 20) {
    return Status::invalid(fmt::format("report: {} jobs are too few to train and test on", jobs.size()));
  }
  const size_t cut = static_cast<size_t>(static_cast<double>(jobs.size()) * (1.0 - o.test_share));
  const int64_t first_test_submit = jobs[cut].submit_ms;
  std::vector<Job> fit, test;
  for (const Job& j : jobs) (j.submit_ms < first_test_submit ? fit : test).push_back(j);
  if (fit.empty() || test.empty()) {
    return Status::invalid("report: every job has the same submit time; no test block");
  }
  eval::TrainOptions to;
  to.seed = o.seed;
  to.threads = o.threads;
  to.util_cap = o.util_cap;
  to.code_options = o.code_options;
  to.trained_on = "peakcast report";
  auto model = eval::train_cascade_on_jobs(fit, to, nullptr, progress);
  if (!model) return model.status().with_context("report: training the cascade on the earlier jobs");
  const std::vector<cascade::JobPrediction> preds = eval::predict_jobs(*model, test, &jobs);
  Detail d;
  for (size_t i = 0; i < test.size() && i < preds.size(); ++i) {
    add_predictions(test[i], preds[i], d.predictions);
  }
  // Usage: every job with a memory request and peak; test jobs with the recommended request.
  std::unordered_map<std::string, uint64_t> recommended;
  for (const cascade::JobPrediction& p : preds) {
    if (p.mem.recommended_bytes) recommended[p.job_id] = *p.mem.recommended_bytes;
  }
  for (const Job& j : jobs) {
    if (!j.req_mem_bytes || !j.peak_mem_bytes) continue;
    UsagePoint u{j.user, j.account, j.partition, end_seconds(j),
                 static_cast<double>(*j.req_mem_bytes) / kGB,
                 static_cast<double>(*j.peak_mem_bytes) / kGB, std::nullopt};
    if (auto it = recommended.find(j.job_id); it != recommended.end()) {
      u.recommended_gb = static_cast<double>(it->second) / kGB;
    }
    d.usage.push_back(std::move(u));
  }
  if (d.usage.size() > o.max_usage_points) {
    d.notes.push_back(fmt::format("usage plots show the newest {} of {} jobs", o.max_usage_points,
                                  d.usage.size()));
    d.usage.erase(d.usage.begin(), d.usage.end() - static_cast<std::ptrdiff_t>(o.max_usage_points));
  }
  d.notes.push_back(fmt::format(
      "per-job plots: the cascade trained on the {} jobs submitted before the last {:.0f}% and "
      "predicted the {} after, each with the history that had ended before its submission",
      fit.size(), 100 * o.test_share, test.size()));
  return d;
}

}  // namespace peakcast::report
