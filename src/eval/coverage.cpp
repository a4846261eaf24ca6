// Online conformal coverage of a method's bounds (peakcast/eval/coverage.h).
#include "peakcast/eval/coverage.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "peakcast/sizing/online_bound.h"

namespace peakcast::eval {
namespace {

bool walked_block(Block b) {
  return b == Block::kValidation || b == Block::kPurgedValidation || b == Block::kTest;
}

// Adds the figures of `from` (n > 0) to the sums in `to`.
template <class Figures>
void add_figures(const Figures& from, Figures& to) {
  for (size_t b = 0; b < kNumCoverageLevels; ++b) {
    to.coverage[b] += from.coverage[b];
    to.width[b] += from.width[b];
    to.capped[b] += from.capped[b];
  }
}

template <class Figures>
void divide_figures(Figures& f, size_t k) {
  for (size_t b = 0; b < kNumCoverageLevels && k > 0; ++b) {
    f.coverage[b] /= static_cast<double>(k);
    f.width[b] /= static_cast<double>(k);
    f.capped[b] /= static_cast<double>(k);
  }
}

// {"0.8": .., "0.9": .., "0.95": ..}
nlohmann::json per_nominal(const std::array<double, kNumCoverageLevels>& v) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t b = 0; b < kNumCoverageLevels; ++b) out[coverage_key(kCoverageLevels[b])] = v[b];
  return out;
}

}  // namespace

std::string coverage_key(double level) { return fmt::format("{}", level); }

std::vector<IssuedBound> online_bounds(std::span<const WalkedJob> jobs, Resource r, double util_cap,
                                      const sizing::OnlineBoundOptions& options) {
  std::vector<sizing::BoundStep> steps;
  steps.reserve(jobs.size());
  for (const WalkedJob& w : jobs) steps.push_back(sizing::bound_step(*w.job, r, w.level, w.point));
  sizing::OnlineBound bound(options);
  return sizing::walk_bounds(bound, steps, util_cap);
}

BoundCoverage online_coverage(std::span<const WalkedJob> jobs, Resource r, double util_cap,
                              const sizing::OnlineBoundOptions& base, std::vector<WalkRecord>* walk) {
  if (walk) {
    walk->clear();
    for (const WalkedJob& w : jobs) walk->push_back({w, {}});
  }
  BoundCoverage out;
  // The tally of each scored job's script.
  std::vector<size_t> tally_of(jobs.size(), 0);
  ScriptTallies by_script;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const WalkedJob& w = jobs[i];
    if (!w.scored) continue;
    if (censored_for(*w.job, r)) ++out.censored;
    ++out.n;
    ++out.by_level[static_cast<size_t>(w.level)].n;
    tally_of[i] = by_script.index(w.job->script_key);
    by_script.tallies[tally_of[i]].n += 1.0;
  }
  out.tallies = std::move(by_script.tallies);
  out.scripts = out.tallies.size();
  if (out.n == 0) return out;
  for (size_t b = 0; b < kNumCoverageLevels; ++b) {
    sizing::OnlineBoundOptions o = base;
    o.coverage = kCoverageLevels[b];
    const std::vector<IssuedBound> issued = online_bounds(jobs, r, util_cap, o);
    if (walk) {
      for (size_t i = 0; i < jobs.size(); ++i) (*walk)[i].issued[b] = issued[i];
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (!jobs[i].scored) continue;
      const double top = std::max(util_cap, jobs[i].point);
      // A censored label is the cap, so no bound here (at most the cap) covers a censored job.
      const double covered =
          sizing::bound_covers(jobs[i].job->label(r), issued[i].bound, censored_for(*jobs[i].job, r)) ? 1.0 : 0.0;
      const double capped = issued[i].bound >= top - 1e-12 ? 1.0 : 0.0;
      const double width = issued[i].bound - jobs[i].point;
      auto add = [&](auto& f) {
        f.coverage[b] += covered;
        f.width[b] += width;
        f.capped[b] += capped;
      };
      add(out);
      add(out.by_level[static_cast<size_t>(jobs[i].level)]);
      out.tallies[tally_of[i]].covered[b] += covered;
    }
  }
  divide_figures(out, out.n);
  for (LevelCoverage& l : out.by_level) divide_figures(l, l.n);
  return out;
}

BoundCoverage bound_coverage(const EvalData& data, const Method& method,
                             std::span<const JobContext* const> test,
                             std::span<const Prediction> test_points, Resource r,
                             std::vector<WalkRecord>* walk_out) {
  const int ri = idx(r);
  std::vector<const JobContext*> val;
  for (const JobContext& c : data.jobs) {
    if (c.block != Block::kTest && walked_block(c.block) && c.job->is_valid(r)) val.push_back(&c);
  }
  std::vector<Prediction> val_points(val.size());
  method.predict_batch(val, val_points);
  method.clear_caches();  // the next pass (timing) starts as the scoring pass did
  std::vector<WalkedJob> walk;
  walk.reserve(val.size() + test.size());
  auto add = [&](const JobContext& c, const Prediction& p, bool scored) {
    walk.push_back({c.job, c.view[ri].level, std::clamp(p.util[ri], 0.0, data.util_cap), scored});
  };
  for (size_t i = 0; i < val.size(); ++i) add(*val[i], val_points[i], false);
  for (size_t i = 0; i < test.size(); ++i) {
    if (test[i]->job->is_valid(r)) add(*test[i], test_points[i], true);
  }
  std::stable_sort(walk.begin(), walk.end(), [](const WalkedJob& a, const WalkedJob& b) {
    return a.job->submit_ms < b.job->submit_ms;
  });
  return online_coverage(walk, r, data.util_cap, coverage_bound_options(0.9), walk_out);
}

nlohmann::json walk_record_json(const std::string& method, Resource r, const WalkRecord& w) {
  const Job& job = *w.walked.job;
  nlohmann::json bounds = nlohmann::json::object();
  for (size_t b = 0; b < kNumCoverageLevels; ++b) {
    bounds[coverage_key(kCoverageLevels[b])] = {{"bound", w.issued[b].bound},
                                                {"evidence", w.issued[b].evidence},
                                                {"alpha_t", w.issued[b].alpha_t}};
  }
  return {{"method", method},
          {"resource", std::string(resource_name(r))},
          {"job_id", job.job_id},
          {"block", w.walked.scored ? "test" : "validation"},
          {"submit_time", static_cast<double>(job.submit_ms) / 1000.0},
          {"end_time", static_cast<double>(job.end_ms) / 1000.0},
          {"level", std::string(history::level_name(w.walked.level))},
          {"script_sha256", job.script_key},
          {"point", w.walked.point},
          {"label", job.label(r)},
          {"censored", censored_for(job, r)},
          {"bounds", std::move(bounds)}};
}

void add_coverage_json(const BoundCoverage& c, nlohmann::json& row) {
  const bool any = c.n > 0;
  row["coverage"] = any ? per_nominal(c.coverage) : nlohmann::json(nullptr);
  row["bound_width"] = any ? per_nominal(c.width) : nlohmann::json(nullptr);
  row["bound_capped"] = any ? per_nominal(c.capped) : nlohmann::json(nullptr);
  if (c.interval) {
    nlohmann::json ci = nlohmann::json::object();
    for (size_t b = 0; b < kNumCoverageLevels; ++b) {
      ci[coverage_key(kCoverageLevels[b])] = {c.interval->lo[b], c.interval->hi[b]};
    }
    row["coverage_interval"] = std::move(ci);
  } else {
    row["coverage_interval"] = nullptr;
  }
  row["bound_n"] = c.n;
  row["bound_censored"] = c.censored;
  row["bound_scripts"] = c.scripts;
  nlohmann::json levels = nlohmann::json::object();
  for (history::Level l : {history::Level::kExactScript, history::Level::kUser, history::Level::kNone}) {
    const LevelCoverage& f = c.by_level[static_cast<size_t>(l)];
    levels[std::string(history::level_name(l))] =
        f.n == 0 ? nlohmann::json(nullptr)
                 : nlohmann::json{{"n", f.n},
                                  {"coverage", per_nominal(f.coverage)},
                                  {"bound_width", per_nominal(f.width)},
                                  {"bound_capped", per_nominal(f.capped)}};
  }
  row["bound_by_level"] = std::move(levels);
}

std::string coverage_cell(const BoundCoverage& c) {
  if (c.n == 0) return "-";
  if (!c.interval) return fmt::format("{:.3f} ({:.3f})", c.coverage[1], c.width[1]);
  return fmt::format("{:.3f} [{:.3f}, {:.3f}] ({:.3f})", c.coverage[1], c.interval->lo[1],
                     c.interval->hi[1], c.width[1]);
}

std::string coverage_header(bool with_interval) {
  return with_interval ? "cov@0.9 [95% CI] (width)" : "cov@0.9 (width)";
}

BoundCoverage mean_coverage(std::span<const BoundCoverage> runs) {
  BoundCoverage out;
  size_t k = 0, n = 0, censored = 0, scripts = 0;
  std::array<size_t, sizing::kNumLevels> level_runs{}, level_n{};
  for (const BoundCoverage& c : runs) {
    if (c.n == 0) continue;
    add_figures(c, out);
    n += c.n;
    censored += c.censored;
    scripts += c.scripts;
    ++k;
    for (size_t l = 0; l < c.by_level.size(); ++l) {
      if (c.by_level[l].n == 0) continue;
      add_figures(c.by_level[l], out.by_level[l]);
      level_n[l] += c.by_level[l].n;
      ++level_runs[l];
    }
  }
  if (k == 0) return out;
  divide_figures(out, k);
  out.n = n / k;
  out.censored = censored / k;
  out.scripts = scripts / k;
  for (size_t l = 0; l < out.by_level.size(); ++l) {
    if (level_runs[l] == 0) continue;
    divide_figures(out.by_level[l], level_runs[l]);
    out.by_level[l].n = level_n[l] / level_runs[l];
  }
  return out;
}

}  // namespace peakcast::eval
