// The per-job part of a report: the cascade trained on the earlier jobs predicts each later job
// with the history that had ended before the job's submission (no leakage), and every job's
// requested and used memory for the usage plots.
#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "peakcast/cascade/prediction.h"
#include "peakcast/eval/coverage.h"
#include "peakcast/tools/model_tools.h"
#include "report_internal.h"

namespace peakcast::report {
namespace {

constexpr double kGB = 1e9;

// The one place the report reads a job's clock (Job's time unit may change).
int64_t end_seconds(const Job& j) { return j.end_ms / kMsPerSecond; }

void add_predictions(const Job& job, const cascade::JobPrediction& p, const DaemonAnswer& a,
                     double coverage, std::vector<PredictedJob>& out) {
  for (Resource r : kResources) {
    if (!job.is_valid(r)) continue;
    const cascade::ResourcePrediction* rp = p.of(r);
    if (!rp) continue;
    PredictedJob pj;
    pj.job_id = job.job_id;
    pj.resource = r;
    pj.actual = job.label(r);
    pj.predicted = rp->util;
    pj.route = std::string(cascade::route_name(rp->route));
    pj.level = rp->history_level;
    pj.upper = a.upper[idx(r)];
    if (pj.upper) pj.nominal = coverage;
    pj.censored = job.censored;
    pj.script = job.script_key;
    out.push_back(std::move(pj));
  }
}

// The jobs whose completions a daemon started at the first test submission replays into its
// bound: every earlier submission still running then (its completion observed as it arrives),
// then the `n` most recent of those that had ended by then (`ended`).
std::vector<Job> warm_up_jobs(const std::vector<Job>& ended, std::vector<Job> running, size_t n) {
  std::vector<const Job*> by_end;
  for (const Job& j : ended) by_end.push_back(&j);
  std::stable_sort(by_end.begin(), by_end.end(),
                   [](const Job* a, const Job* b) { return a->end_ms < b->end_ms; });
  const size_t skip = by_end.size() > n ? by_end.size() - n : 0;
  for (size_t i = skip; i < by_end.size(); ++i) running.push_back(*by_end[i]);
  return running;
}

std::vector<PredictedRun> runs_of(const std::vector<Job>& jobs,
                                  const std::vector<cascade::JobPrediction>& preds) {
  std::vector<PredictedRun> out;
  for (size_t i = 0; i < jobs.size() && i < preds.size(); ++i) out.push_back({&jobs[i], &preds[i]});
  return out;
}

// Every job's requested and used memory, with the request recommended for it where there is one
// (keyed by run: Slurm keeps the id of a job it requeues and resets its submit time, so an id alone
// put a later run's recommendation on the earlier runs too, until 2026-12-06).
void add_usage(const std::vector<Job>& jobs,
               const std::map<std::pair<std::string, int64_t>, uint64_t>& recommended,
               size_t max_points, Detail& d) {
  for (const Job& j : jobs) {
    if (!j.req_mem_bytes || !j.peak_mem_bytes) continue;
    UsagePoint u{j.user, j.account, j.partition, end_seconds(j),
                 static_cast<double>(*j.req_mem_bytes) / kGB,
                 static_cast<double>(*j.peak_mem_bytes) / kGB, std::nullopt};
    if (auto it = recommended.find({j.job_id, j.submit_ms}); it != recommended.end()) {
      u.recommended_gb = static_cast<double>(it->second) / kGB;
    }
    d.usage.push_back(std::move(u));
  }
  if (d.usage.empty() && !jobs.empty()) {
    // No section, and nothing on the page said why (a VRAM trace's: GPUMemNet records no memory peak).
    const bool vram = std::any_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.peak_vram_bytes.has_value(); }) &&
                      std::none_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.peak_mem_bytes.has_value(); });
    d.notes.push_back(fmt::format(
        "no usage section: none of the {} jobs has both a memory request and a recorded memory peak{}",
        grouped(jobs.size()), vram ? " (this trace records VRAM only; the usage section is of host memory)" : ""));
  }
  if (auto note = keep_whole_usage_days(d.usage, max_points)) d.notes.push_back(std::move(*note));
}

// A young history (a site's first day): the sections that need the trained cascade are left out,
// with why and what history they need; the usage, which needs no model, is every job's.
Detail without_model(const std::vector<Job>& jobs, const DetailOptions& o, const std::string& why) {
  Detail d;
  add_usage(jobs, {}, o.max_usage_points, d);
  std::string history;
  if (jobs.size() >= 2) {
    std::vector<int64_t> runs;
    for (const Job& j : jobs) runs.push_back(j.end_ms - j.submit_ms);
    std::nth_element(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(runs.size() / 2), runs.end());
    const double ms_per_h = 3.6e6;
    history = fmt::format(
        " (the {} jobs were submitted over {} h and ran {} h at the median)", grouped(jobs.size()),
        grouped(static_cast<double>(jobs.back().submit_ms - jobs.front().submit_ms) / ms_per_h, 1),
        grouped(static_cast<double>(runs[runs.size() / 2]) / ms_per_h, 1));
  }
  d.no_model = fmt::format(
      "predicted vs actual, bound coverage and recommended requests: not drawn: the cascade could "
      "not be trained on these jobs ({}). They need more history: at least 20 jobs, most of those "
      "submitted before the last {:.0f}% ended before its first submission, that is submissions "
      "spanning several times the jobs' run times{}",
      why, 100 * o.test_share, history);
  d.notes.push_back(*d.no_model);
  return d;
}

// How many test jobs peakcastd would have given a memory recommendation, and by which rule; where
// none, why (a recommendation needs a memory request and a memory bound).
std::string recommendations_said(const std::vector<Job>& test, const std::vector<DaemonAnswer>& answers,
                                 size_t stored, const sizing::WorkloadSizerOptions& w) {
  const size_t n = std::min(test.size(), answers.size());
  size_t with_rec = 0, own_rec = 0, requested = 0, labelled = 0;
  for (size_t i = 0; i < n; ++i) {
    with_rec += answers[i].recommended_bytes ? 1 : 0;
    own_rec += answers[i].recommended_bytes && answers[i].source == "workload" ? 1 : 0;
    requested += test[i].req_mem_bytes ? 1 : 0;
    labelled += test[i].is_valid(Resource::kMem) ? 1 : 0;
  }
  if (with_rec == 0) {
    const char* why = requested == 0 ? "none has a memory request: a recommendation lowers one"
                      : labelled == 0  ? "none has a memory peak: no memory bound to recommend from"
                                       : "none for a new script before the bound has evidence";
    return fmt::format("no memory recommendation for any of the {} test jobs ({})", grouped(n), why);
  }
  return fmt::format(
      "memory recommendations for {} of the {} test jobs, {} of them by their workload's own sizing "
      "policy (once {} of its runs had completed; the policies warmed up on each script's most recent "
      "runs among the {} earlier completions, at most {} in all{}), the others from the bound (none "
      "for a new script before the bound has evidence, nor without a memory request)",
      grouped(with_rec), grouped(n), grouped(own_rec), sizing::kPeakcastMinHistory, grouped(stored),
      grouped(w.rebuild_runs),
      w.max_age_ms > 0 ? fmt::format("; --sizing-days {:g}: each answers from its script's runs of about the "
                                     "last {:g} to {:g} days",
                                     w.max_age_days(), w.max_age_days(), 2 * w.max_age_days())
                       : std::string());
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
    return without_model(jobs, o, fmt::format("{} jobs are too few to train and test on", grouped(jobs.size())));
  }
  const size_t cut = static_cast<size_t>(static_cast<double>(jobs.size()) * (1.0 - o.test_share));
  const int64_t first_test_submit = jobs[cut].submit_ms;
  // What a daemon started at the first test submission could have learned from: the jobs that had
  // ended by then. One still running then is neither trained on nor tested (its label becomes
  // history once it ends, as it would for the daemon), so no label of the future shapes the model.
  std::vector<Job> fit, running, test;
  for (const Job& j : jobs) {
    if (j.submit_ms >= first_test_submit) {
      test.push_back(j);
    } else {
      (j.end_ms < first_test_submit ? fit : running).push_back(j);
    }
  }
  if (test.empty()) return without_model(jobs, o, "every job has the same submit time; no test block");
  if (fit.empty()) {
    return without_model(jobs, o, fmt::format(
        "none of the {} jobs submitted before the last {:.0f}% had ended by the first one after; "
        "nothing to train on",
        grouped(running.size()), 100 * o.test_share));
  }
  eval::TrainOptions to;
  to.seed = o.seed;
  to.threads = o.threads;
  to.util_cap = o.util_cap;
  to.code_options = o.code_options;
  to.cascade_options = o.cascade_options;
  to.encoder = o.encoder;
  to.trained_on = "peakcast report";
  auto model = eval::train_cascade_on_jobs(fit, to, nullptr, progress);
  if (!model) {
    // The options were checked before the jobs were read (check_cascade_options): a refusal of
    // the input here is the jobs', a history too young to learn from.
    if (model.status().kind() == ErrorKind::kInvalidInput) return without_model(jobs, o, model.status().message());
    return model.status().with_context("report: training the cascade on the earlier jobs");
  }
  const std::vector<cascade::JobPrediction> preds = eval::predict_jobs(*model, test, &jobs);
  // The daemon's bound: the earlier jobs' most recent completions warm it up, each predicted at
  // its submission as peakcastd replays them at start (those still running then complete during
  // the walk); the test jobs then walk it.
  const size_t still_running = running.size();
  const std::vector<Job> warm = warm_up_jobs(fit, std::move(running), o.bound_warm_jobs);
  const std::vector<cascade::JobPrediction> warm_preds = eval::predict_jobs(*model, warm, &jobs);
  ReplayOptions ro;
  ro.util_cap = o.util_cap;
  ro.bound = eval::coverage_bound_options(o.bound_coverage);
  ro.recommend = o.recommend;
  ro.workloads = o.workloads;
  std::vector<const Job*> stored;  // what the daemon's store held at the first test submission
  for (const Job& j : fit) stored.push_back(&j);
  const std::vector<DaemonAnswer> answers =
      replay_daemon(runs_of(warm, warm_preds), runs_of(test, preds), jobs, ro, stored);
  Detail d;
  // No section, and with it would go its notes: the reason goes to the page's own notes.
  d.recommendations = recommendation_outcome(test, answers, &d.notes);
  for (size_t i = 0; i < test.size() && i < preds.size(); ++i) {
    add_predictions(test[i], preds[i], answers[i], o.bound_coverage, d.predictions);
  }
  // Usage: every job with a memory request and peak; test jobs with the recommended request.
  std::map<std::pair<std::string, int64_t>, uint64_t> recommended;
  for (size_t i = 0; i < test.size() && i < answers.size(); ++i) {
    if (answers[i].recommended_bytes) recommended[{test[i].job_id, test[i].submit_ms}] = *answers[i].recommended_bytes;
  }
  add_usage(jobs, recommended, o.max_usage_points, d);
  d.notes.push_back(fmt::format(
      "per-job plots: the cascade trained on the {} jobs that had ended by the first submission of "
      "the last {:.0f}% ({} still running then left out) and predicted the {} after, each with the "
      "history that had ended before its submission",
      grouped(fit.size()), 100 * o.test_share, grouped(still_running), grouped(test.size())));
  // Per resource: the test jobs it was measured for, and how many of them had a bound.
  std::string bounds;
  for (Resource r : kResources) {
    size_t valid = 0, with_bound = 0;
    for (size_t i = 0; i < test.size() && i < answers.size(); ++i) {
      if (!test[i].is_valid(r)) continue;
      ++valid;
      with_bound += answers[i].upper[idx(r)] ? 1 : 0;
    }
    if (valid == 0) continue;
    bounds += fmt::format("{}{}: {} of {} test jobs had a bound", bounds.empty() ? "" : "; ",
                          resource_name(r), grouped(with_bound), grouped(valid));
  }
  d.notes.push_back(fmt::format(
      "upper bounds and recommended requests: what peakcastd would have answered (its online {:.0f}% "
      "bound, warmed up on the completions of {} earlier jobs, then updated with each completion); "
      "{}; {}",
      100 * o.bound_coverage, grouped(warm.size()), bounds.empty() ? "no test job had a label" : bounds,
      recommendations_said(test, answers, stored.size(), o.workloads)));
  return d;
}

}  // namespace peakcast::report
