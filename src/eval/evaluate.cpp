#include "peakcast/eval/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace peakcast::eval {

EvalData build_eval_data(const Split& split, double util_cap, const ProgressFn& progress) {
  EvalData data;
  data.split = &split;
  data.fallback = split.fallback;
  data.util_cap = util_cap;
  data.jobs.resize(split.order.size());
  history::HistoryStore store;
  size_t i = 0;
  const size_t total = split.order.size();
  const size_t step = std::max<size_t>(1, total / 100);
  // Event time over every job, whatever its block: a query at submit t sees ends < t only.
  history::replay(split.order, store, [&](const Job& job, const history::HistoryStore& s) {
    JobContext& c = data.jobs[i];
    c.job = &job;
    c.block = split.block[i];
    for (Resource r : kResources) c.view[idx(r)] = s.query(job, r);
    ++i;
    if (progress && (i % step == 0 || i == total)) progress("replay", i, total);
  });
  return data;
}

namespace {

// Batch-1 timing pass over the first `count` test jobs in submit order: caches cleared first (as
// before scoring), steady_clock around each predict() call, grouped by the job's route.
std::map<std::string, LatencyStats> time_predictions(const Method& method,
                                                     const std::vector<const JobContext*>& test,
                                                     size_t count) {
  using Clock = std::chrono::steady_clock;
  method.clear_caches();
  std::map<std::string, std::vector<double>> micros;
  for (size_t t = 0; t < count && t < test.size(); ++t) {
    const auto t0 = Clock::now();
    const Prediction p = method.predict(*test[t]->job, test[t]->view);
    const auto t1 = Clock::now();
    const Job& job = *test[t]->job;
    micros[job_route(p, {job.is_valid(Resource::kMem), job.is_valid(Resource::kVram)})].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  method.clear_caches();
  std::map<std::string, LatencyStats> out;
  for (auto& [route, v] : micros) out[route] = latency_stats(std::move(v));
  return out;
}

struct Scored {
  // Per resource: index into data.jobs of each valid test job.
  std::array<std::vector<size_t>, kNumResources> jobs;
  std::array<std::vector<int64_t>, kNumResources> day;
};

}  // namespace

Result<EvalReport> evaluate_jobs(const std::vector<Job>& jobs, const MethodRegistry& registry,
                                 const EvalConfig& config, const ProgressFn& progress) {
  if (!(config.util_cap > 0)) return Status::invalid("util cap must be positive");
  std::vector<std::string> names = config.methods.empty() ? registry.names() : config.methods;
  for (const std::string& n : names) {
    if (!registry.contains(n)) {
      return registry.create(n, {}).status();  // the error that lists the valid names
    }
  }
  if (!registry.contains(kBaselineMethod)) {
    return Status::internal("the baseline method hier_last1 is not registered");
  }

  Result<Split> split = make_split(jobs, config.split);
  if (!split) return split.status();
  EvalData data = build_eval_data(*split, config.util_cap, progress);

  EvalReport report;
  report.split_config = config.split;
  report.split = split->counts;
  report.fallback = split->fallback;
  report.fallback_n = split->fallback_n;
  report.seed = config.seed;
  report.bootstrap = config.bootstrap;
  report.util_cap = config.util_cap;
  Scored scored;
  std::vector<const JobContext*> test;
  std::vector<size_t> test_pos;  // index into data.jobs
  for (size_t i = 0; i < data.jobs.size(); ++i) {
    if (data.jobs[i].block != Block::kTest) continue;
    test_pos.push_back(i);
    test.push_back(&data.jobs[i]);
  }
  for (size_t t = 0; t < test.size(); ++t) {
    for (Resource r : kResources) {
      if (test[t]->job->is_valid(r)) {
        scored.jobs[idx(r)].push_back(t);
        scored.day[idx(r)].push_back(utc_day(test[t]->job->submit_ms));
      }
    }
  }
  for (Resource r : kResources) {
    report.scored[idx(r)] = scored.jobs[idx(r)].size();
    if (report.scored[idx(r)] > 0 && split->fallback_n[idx(r)] == 0) {
      report.notes.push_back(fmt::format(
          "{}: no valid label in the training block; the fallback for jobs without history is 0",
          resource_name(r)));
    }
  }
  if (report.scored[0] == 0 && report.scored[1] == 0) {
    return Status::invalid(fmt::format(
        "no test job has a label for any resource ({} test jobs); nothing to score",
        test.size()));
  }

  // The baseline first, then the requested methods (the baseline only once).
  std::vector<std::string> run = {std::string(kBaselineMethod)};
  for (const std::string& n : names) {
    if (n != kBaselineMethod) run.push_back(n);
  }
  if (config.seeds < 1) return Status::invalid("seeds must be at least 1");
  report.seeds = config.seeds;
  report.latency_jobs = std::min(config.latency_jobs, test.size());
  // [method][resource][scored job] absolute errors (mean over seeds), for the paired bootstrap.
  std::vector<std::array<std::vector<double>, kNumResources>> abs_err(run.size());
  std::vector<ResultRow> rows;
  for (size_t m = 0; m < run.size(); ++m) {
    const bool requested = std::find(names.begin(), names.end(), run[m]) != names.end();
    std::array<std::vector<Metrics>, kNumResources> seed_metrics;
    std::array<std::array<std::vector<Metrics>, 3>, kNumResources> seed_sub;
    std::array<std::vector<std::optional<Routing>>, kNumResources> seed_routing;
    std::array<std::vector<BoundCoverage>, kNumResources> seed_bounds;  // coverage.h
    std::array<std::map<std::string, size_t>, kNumResources> first_routes;
    std::map<std::string, LatencyStats> latency;
    std::vector<std::pair<std::string, std::string>> first_choices;
    size_t seeds = 1;
    for (size_t k = 0; k < seeds; ++k) {
      MethodOptions mopts;
      mopts.seed = config.seed + k;
      mopts.model_dir = config.model_dir;
      mopts.threads = config.threads;
      mopts.code_options = config.code_options;
      mopts.encoder = config.encoder;
      Result<std::unique_ptr<Method>> method = registry.create(run[m], mopts);
      if (!method) return method.status();
      if (k == 0 && (*method)->seeded()) seeds = config.seeds;
      const std::string label = seeds > 1 ? fmt::format("{} (seed {})", run[m], mopts.seed) : run[m];
      if (Status s = (*method)->fit(data, progress); !s) {
        return s.with_context("fitting " + label);
      }
      (*method)->clear_caches();
      std::vector<Prediction> preds(test.size());
      (*method)->predict_batch(test, preds);
      if (progress) progress("predict " + label, test.size(), test.size());
      for (Resource r : kResources) {
        const int ri = idx(r);
        if (scored.jobs[ri].empty()) continue;
        MetricsAccumulator all;
        std::array<MetricsAccumulator, 3> sub;
        std::map<std::string, size_t> routes;
        abs_err[m][ri].resize(scored.jobs[ri].size(), 0.0);
        for (size_t s = 0; s < scored.jobs[ri].size(); ++s) {
          const size_t t = scored.jobs[ri][s];
          const JobContext& c = *test[t];
          const double pred = std::clamp(preds[t].util[ri], 0.0, config.util_cap);
          const double label_value = c.job->label(r);
          all.add(pred, label_value);
          sub[static_cast<int>(c.view[ri].level)].add(pred, label_value);
          abs_err[m][ri][s] += std::fabs(pred - label_value);
          ++routes[preds[t].route[ri].empty() ? "unknown" : preds[t].route[ri]];
        }
        seed_metrics[ri].push_back(all.finish());
        for (int g = 0; g < 3; ++g) seed_sub[ri][g].push_back(sub[g].finish());
        seed_routing[ri].push_back(routing_shares(routes));
        if (k == 0) first_routes[ri] = std::move(routes);
        if (requested) seed_bounds[ri].push_back(bound_coverage(data, **method, test, preds, r));
      }
      if (k == 0 && requested) {
        first_choices = (*method)->choices();
        if (report.latency_jobs > 0) latency = time_predictions(**method, test, report.latency_jobs);
      }
      if (progress && seeds > 1) progress("seeds " + run[m], k + 1, seeds);
    }
    for (Resource r : kResources) {
      const int ri = idx(r);
      if (scored.jobs[ri].empty()) continue;
      for (double& e : abs_err[m][ri]) e /= static_cast<double>(seeds);
      if (!requested) continue;
      ResultRow row;
      row.method = run[m];
      row.resource = r;
      const SeedSummary summary = summarize_seeds(seed_metrics[ri]);
      row.metrics = summary.mean;
      row.metrics_sd = summary.sd;
      row.seeds = seeds;
      for (int g = 0; g < 3; ++g) row.subgroups[g] = summarize_seeds(seed_sub[ri][g]).mean;
      row.routes = std::move(first_routes[ri]);
      row.routing = mean_routing(seed_routing[ri]);
      row.latency_us = latency;
      row.bounds = mean_coverage(seed_bounds[ri]);
      rows.push_back(std::move(row));
    }
    if (requested && !first_choices.empty()) {
      if (seeds > 1) first_choices.emplace_back("choices_from_seed", std::to_string(config.seed));
      report.choices.emplace_back(run[m], std::move(first_choices));
    }
  }

  // Paired day-block bootstrap against the baseline (run[0]); same seed per resource, so every
  // method is compared on the same resampled days.
  for (ResultRow& row : rows) {
    const int ri = idx(row.resource);
    const size_t m = static_cast<size_t>(
        std::find(run.begin(), run.end(), row.method) - run.begin());
    row.mae_diff_vs_baseline =
        paired_day_bootstrap(scored.day[ri], abs_err[m][ri], abs_err[0][ri], config.bootstrap,
                             config.seed + static_cast<uint64_t>(ri));
  }
  if (progress && config.bootstrap > 0) progress("bootstrap", rows.size(), rows.size());
  for (Resource r : kResources) {
    const auto& d = scored.day[idx(r)];
    if (config.bootstrap == 0 || d.empty()) continue;
    const size_t days = std::set<int64_t>(d.begin(), d.end()).size();
    if (days < 5) {
      report.notes.push_back(fmt::format(
          "{}: the test block spans only {} submit day(s), so the day-block bootstrap interval "
          "is (nearly) a point and says little about uncertainty",
          resource_name(r), days));
    }
  }
  // Requested order, mem before vram within a method.
  std::stable_sort(rows.begin(), rows.end(), [&](const ResultRow& a, const ResultRow& b) {
    const auto pa = std::find(names.begin(), names.end(), a.method) - names.begin();
    const auto pb = std::find(names.begin(), names.end(), b.method) - names.begin();
    if (pa != pb) return pa < pb;
    return idx(a.resource) < idx(b.resource);
  });
  report.results = std::move(rows);
  return report;
}

Result<EvalReport> evaluate(const ingest::Trace& trace, const MethodRegistry& registry,
                            const EvalConfig& config, const ProgressFn& progress) {
  if (!trace.has_submit_times) {
    return Status::invalid(fmt::format(
        "{}: this {} trace has no submit times, so its jobs cannot be put in submission order; "
        "the event-time protocol (history = jobs that ended before each submission, chronological "
        "train/validation/test split) needs them, and inventing a timeline would leak future "
        "labels. Use `peakcast inspect` for this file, or export sacct with the Submit, Start and "
        "End fields.",
        trace.path, ingest::format_name(trace.format)));
  }
  Result<EvalReport> report = evaluate_jobs(trace.jobs, registry, config, progress);
  if (!report) return report.status().with_context(trace.path);
  report->trace_path = trace.path;
  report->trace_format = std::string(ingest::format_name(trace.format));
  report->reader = trace.stats;
  report->reader_notes = trace.notes;
  return report;
}

}  // namespace peakcast::eval
