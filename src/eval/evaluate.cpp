#include "peakcast/eval/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
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
    c.view = s.query_views(job);
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
  // Per resource: index into the test jobs of each valid one.
  std::array<std::vector<size_t>, kNumResources> jobs;
  std::array<std::vector<int64_t>, kNumResources> day;
  std::array<std::vector<std::string>, kNumResources> script;  // script_key ("" for none)
};

// What one method's seeds produced, per resource, before it becomes result rows.
struct SeedResults {
  std::array<std::vector<Metrics>, kNumResources> metrics;
  std::array<std::array<std::vector<Metrics>, 3>, kNumResources> sub;
  std::array<std::vector<std::optional<Routing>>, kNumResources> routing;
  std::array<std::map<std::string, size_t>, kNumResources> first_routes;
  std::map<std::string, LatencyStats> latency;
  std::vector<std::pair<std::string, std::string>> first_choices;
  std::vector<std::vector<std::pair<std::string, std::string>>> later_choices;  // seeds 2.. (requested)
  std::array<std::vector<BoundCoverage>, kNumResources> bounds;  // requested methods (coverage.h)
  // The first seed's bound walk per scored resource (EvalConfig::on_bound_walk), held until
  // every seed is scored: a method a later seed refuses is left out, and so is its walk.
  std::vector<std::pair<Resource, std::vector<WalkRecord>>> walks;
  size_t seeds = 1;
};

// Scores one seed's predictions of the test jobs: metrics, subgroups and routes per resource;
// each scored job's error is added to abs_err (divided by the seed count later). The error is
// scored_error's, as the cascade's policy scores it: one-sided for a censored label that is only
// a lower bound (label_exact false), so rows, subgroups and the bootstrap read the same number.
void score_seed(const std::vector<const JobContext*>& test, const std::vector<Prediction>& preds,
                const Scored& scored, double util_cap, bool first_seed, SeedResults& out,
                std::array<std::vector<double>, kNumResources>& abs_err) {
  for (Resource r : kResources) {
    const auto ri = idx(r);
    if (scored.jobs[ri].empty()) continue;
    MetricsAccumulator all;
    std::array<MetricsAccumulator, 3> sub;
    std::map<std::string, size_t> routes;
    abs_err[ri].resize(scored.jobs[ri].size(), 0.0);
    for (size_t s = 0; s < scored.jobs[ri].size(); ++s) {
      const size_t t = scored.jobs[ri][s];
      const JobContext& c = *test[t];
      const double pred = std::clamp(preds[t].util[ri], 0.0, util_cap);
      const double err = scored_error(pred, c.job->label(r), label_exact(*c.job, r, util_cap));
      all.add_error(err);
      sub[static_cast<int>(c.view[ri].level)].add_error(err);
      abs_err[ri][s] += err;
      ++routes[preds[t].route[ri].empty() ? "unknown" : preds[t].route[ri]];
    }
    out.metrics[ri].push_back(all.finish());
    for (int g = 0; g < 3; ++g) out.sub[ri][g].push_back(sub[g].finish());
    out.routing[ri].push_back(routing_shares(routes));
    if (first_seed) out.first_routes[ri] = std::move(routes);
  }
}

// What every method's run shares.
struct MethodRun {
  const MethodRegistry& registry;
  const EvalConfig& config;
  const EvalData& data;
  const std::vector<const JobContext*>& test;
  const Scored& scored;
  size_t latency_jobs;
  const ProgressFn& progress;
};

// With several seeds the choices shown are the first seed's. A choice that is a name (Q's source,
// an expert; not a number such as an MAE, which differs by seed anyway) and that the seeds did not
// all make alike gets KEY.seeds = "VALUE:COUNT,..." over every seed, most often first: on a short
// history one seed's choice can decide the test block (docs/evaluation.md, "Traces nothing here
// was designed on"), and the first seed's alone hides that.
void add_seed_counts(std::vector<std::pair<std::string, std::string>>& first,
                     const std::vector<std::vector<std::pair<std::string, std::string>>>& later) {
  const auto is_number = [](const std::string& v) {
    if (v.empty()) return false;
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    return end == v.c_str() + v.size();
  };
  std::vector<std::pair<std::string, std::string>> counts;
  for (const auto& [key, value] : first) {
    if (is_number(value)) continue;
    std::map<std::string, size_t> made{{value, 1}};
    for (const auto& seed : later) {
      for (const auto& [k, v] : seed) {
        if (k == key) ++made[v];
      }
    }
    if (made.size() < 2) continue;
    std::vector<std::pair<std::string, size_t>> order(made.begin(), made.end());
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string text;
    for (const auto& [v, n] : order) text += (text.empty() ? "" : ",") + v + ":" + std::to_string(n);
    counts.emplace_back(key + ".seeds", text);
  }
  first.insert(first.end(), counts.begin(), counts.end());
}

// Fits and scores one method once per seed (once for a method that does not draw); the first
// seed also gives its choices and, for a requested method, the latency pass.
Status run_seeds(const MethodRun& ctx, const std::string& name, bool requested, SeedResults& res,
                 std::array<std::vector<double>, kNumResources>& abs_err) {
  const EvalConfig& config = ctx.config;
  for (size_t k = 0; k < res.seeds; ++k) {
    MethodOptions mopts;
    mopts.seed = config.seed + k;
    mopts.threads = config.threads;
    mopts.code_options = config.code_options;
    mopts.encoder = config.encoder;
    mopts.cascade_options = config.cascade_options;
    Result<std::unique_ptr<Method>> method = ctx.registry.create(name, mopts);
    if (!method) return method.status();
    if (k == 0 && (*method)->seeded()) res.seeds = config.seeds;
    const std::string label = res.seeds > 1 ? fmt::format("{} (seed {})", name, mopts.seed) : name;
    if (Status s = (*method)->fit(ctx.data, ctx.progress); !s) {
      return s.with_context("fitting " + label);
    }
    (*method)->clear_caches();
    std::vector<Prediction> preds(ctx.test.size());
    (*method)->predict_batch(ctx.test, preds);
    if (ctx.progress) ctx.progress("predict " + label, ctx.test.size(), ctx.test.size());
    score_seed(ctx.test, preds, ctx.scored, config.util_cap, k == 0, res, abs_err);
    for (Resource r : kResources) {
      if (!requested || ctx.scored.jobs[idx(r)].empty()) continue;
      const bool dump = k == 0 && config.on_bound_walk != nullptr;
      std::vector<WalkRecord> walk;
      res.bounds[idx(r)].push_back(bound_coverage(ctx.data, **method, ctx.test, preds, r, dump ? &walk : nullptr));
      if (dump) res.walks.emplace_back(r, std::move(walk));
    }
    if (k == 0 && requested) {
      res.first_choices = (*method)->choices();
      if (ctx.latency_jobs > 0) res.latency = time_predictions(**method, ctx.test, ctx.latency_jobs);
    } else if (requested) {
      res.later_choices.push_back((*method)->choices());
    }
    if (ctx.progress && res.seeds > 1) ctx.progress("seeds " + name, k + 1, res.seeds);
  }
  return Status::ok();
}

// One result row per scored resource of a requested method: mean and s.d. over its seeds; the
// bound's coverage with its script-bootstrap interval (on the per-script counts averaged over
// the seeds, so every seed sees the same drawn scripts).
void add_rows(const std::string& name, const Scored& scored, const EvalConfig& config,
              SeedResults& res, std::vector<ResultRow>& rows) {
  for (Resource r : kResources) {
    const auto ri = idx(r);
    if (scored.jobs[ri].empty()) continue;
    ResultRow row;
    row.method = name;
    row.resource = r;
    const SeedSummary summary = summarize_seeds(res.metrics[ri]);
    row.metrics = summary.mean;
    row.metrics_sd = summary.sd;
    row.seeds = res.seeds;
    for (int g = 0; g < 3; ++g) row.subgroups[g] = summarize_seeds(res.sub[ri][g]).mean;
    row.routes = std::move(res.first_routes[ri]);
    row.routing = mean_routing(res.routing[ri]);
    row.latency_us = res.latency;
    row.bounds = mean_coverage(res.bounds[ri]);
    row.bounds.tallies = mean_script_tallies(res.bounds[ri]);
    row.bounds.interval = coverage_interval({&row.bounds.tallies, 1}, config.bootstrap,
                                            config.seed + static_cast<uint64_t>(ri));
    rows.push_back(std::move(row));
  }
}

// Paired day-block and script bootstraps against the baseline (run[0]); same seed per resource,
// so every method is compared on the same resampled days, and on the same resampled scripts.
void add_intervals(const std::vector<std::string>& run, const Scored& scored,
                   const std::vector<std::array<std::vector<double>, kNumResources>>& abs_err,
                   const EvalConfig& config, std::vector<ResultRow>& rows) {
  for (ResultRow& row : rows) {
    const auto ri = idx(row.resource);
    const size_t m = static_cast<size_t>(
        std::find(run.begin(), run.end(), row.method) - run.begin());
    const uint64_t seed = config.seed + static_cast<uint64_t>(ri);
    row.mae_diff_vs_baseline =
        paired_day_bootstrap(scored.day[ri], abs_err[m][ri], abs_err[0][ri], config.bootstrap, seed);
    if (m == 0) continue;  // the baseline against itself: no script interval to show
    row.mae_diff_by_script = paired_script_bootstrap(scored.script[ri], abs_err[m][ri],
                                                     abs_err[0][ri], config.bootstrap, seed);
  }
}

void add_bootstrap_notes(const Scored& scored, const EvalConfig& config, EvalReport& report) {
  for (Resource r : kResources) {
    const auto& d = scored.day[idx(r)];
    if (config.bootstrap == 0 || d.empty()) continue;
    const size_t days = std::set<int64_t>(d.begin(), d.end()).size();
    if (days < 2) {
      const auto& keys = scored.script[idx(r)];
      ScriptIndex scripts;
      for (const std::string& k : keys) scripts.index(k);
      const std::string instead =
          scripts.size() < 2 ? std::string("; its one script gives no other")
                             : fmt::format("; the tables give the bootstrap's over the block's {} "
                                           "scripts instead, marked \"(by script)\"",
                                           scripts.size());
      report.notes.push_back(fmt::format(
          "{}: the test block spans only {} submit day, so the day-block bootstrap has one block "
          "and its interval is the point{}",
          resource_name(r), days, instead));
    } else if (days < 5) {
      report.notes.push_back(fmt::format(
          "{}: the test block spans only {} submit day(s), so the day-block bootstrap interval "
          "is (nearly) a point and says little about uncertainty",
          resource_name(r), days));
    }
  }
}

// The test block's jobs in submit order.
std::vector<const JobContext*> test_jobs(const EvalData& data) {
  std::vector<const JobContext*> test;
  for (const JobContext& c : data.jobs) {
    if (c.block == Block::kTest) test.push_back(&c);
  }
  return test;
}

// Per resource, the test jobs with a label, their submit days and their scripts.
Scored scored_jobs(const std::vector<const JobContext*>& test) {
  Scored scored;
  for (size_t t = 0; t < test.size(); ++t) {
    for (Resource r : kResources) {
      if (test[t]->job->is_valid(r)) {
        scored.jobs[idx(r)].push_back(t);
        scored.day[idx(r)].push_back(utc_day(test[t]->job->submit_ms));
        scored.script[idx(r)].push_back(test[t]->job->script_key);
      }
    }
  }
  return scored;
}

// Requested order, mem before vram within a method.
void sort_rows(const std::vector<std::string>& names, std::vector<ResultRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [&](const ResultRow& a, const ResultRow& b) {
    const auto pa = std::find(names.begin(), names.end(), a.method) - names.begin();
    const auto pb = std::find(names.begin(), names.end(), b.method) - names.begin();
    if (pa != pb) return pa < pb;
    return idx(a.resource) < idx(b.resource);
  });
}

}  // namespace

std::vector<std::string> requested_methods(const EvalConfig& config, const MethodRegistry& registry) {
  return config.methods.empty() ? registry.names() : config.methods;
}

Result<EvalReport> evaluate_jobs(const std::vector<Job>& jobs, const MethodRegistry& registry,
                                 const EvalConfig& config, const ProgressFn& progress) {
  if (!(config.util_cap > 0)) return Status::invalid("util cap must be positive");
  std::vector<std::string> names = requested_methods(config, registry);
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
  report.threads = resolve_threads(config.threads);
  const std::vector<const JobContext*> test = test_jobs(data);
  const Scored scored = scored_jobs(test);
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
  const MethodRun ctx{registry, config, data, test, scored, report.latency_jobs, progress};
  for (size_t m = 0; m < run.size(); ++m) {
    const bool requested = std::find(names.begin(), names.end(), run[m]) != names.end();
    SeedResults res;
    if (Status s = run_seeds(ctx, run[m], requested, res, abs_err[m]); !s) {
      if (!config.leave_out_refusals || m == 0 || s.kind() != ErrorKind::kInvalidInput) return s;
      report.left_out.emplace_back(run[m], s.message());
      continue;
    }
    for (Resource r : kResources) {
      const auto ri = idx(r);
      if (scored.jobs[ri].empty()) continue;
      for (double& e : abs_err[m][ri]) e /= static_cast<double>(res.seeds);
    }
    for (const auto& [r, walk] : res.walks) config.on_bound_walk(run[m], r, walk);
    if (!requested) continue;
    add_rows(run[m], scored, config, res, rows);
    if (!res.first_choices.empty()) {
      if (res.seeds > 1) {
        add_seed_counts(res.first_choices, res.later_choices);
        res.first_choices.emplace_back("choices_from_seed", std::to_string(config.seed));
      }
      report.choices.emplace_back(run[m], std::move(res.first_choices));
    }
  }
  add_intervals(run, scored, abs_err, config, rows);
  if (progress && config.bootstrap > 0) progress("bootstrap", rows.size(), rows.size());
  add_bootstrap_notes(scored, config, report);
  sort_rows(names, rows);
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
        "labels. Use `peakcast inspect` for this file, or {}.",
        trace.path, ingest::format_name(trace.format), ingest::submit_times_remedy(trace.format)));
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
