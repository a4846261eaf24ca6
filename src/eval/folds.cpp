#include "peakcast/eval/folds.h"
#include "peakcast/eval/report.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace peakcast::eval {
namespace {

// Every (method, resource) that any fold scored, in the requested method order, mem before
// vram: a pair can be absent from a fold (no valid test job for the resource in its block, e.g.
// GPU jobs only in later folds), and the first fold that ran need not have them all.
std::vector<std::pair<std::string, Resource>> summary_rows(const std::vector<std::string>& names,
                                                           const FoldsReport& out) {
  std::vector<std::pair<std::string, Resource>> rows;
  for (const EvalReport& f : out.folds) {
    for (const ResultRow& x : f.results) {
      const std::pair<std::string, Resource> key{x.method, x.resource};
      if (std::find(rows.begin(), rows.end(), key) == rows.end()) rows.push_back(key);
    }
  }
  const auto pos = [&](const std::string& m) { return std::find(names.begin(), names.end(), m) - names.begin(); };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    if (pos(a.first) != pos(b.first)) return pos(a.first) < pos(b.first);
    return idx(a.second) < idx(b.second);
  });
  return rows;
}

// The per-method summary over the folds: each fold's MAE, their mean and s.d. over the folds
// that scored the pair, the mean bound coverage with its script-bootstrap interval (each fold's
// scripts drawn on their own), and how many folds each method won per resource (a fold where
// the pair is absent is neither in its mean nor a win).
void summarize_folds(const EvalConfig& config, const std::vector<std::string>& names, FoldsReport& out) {
  // Fold k (0-based) -> its report, or null where it was skipped.
  std::vector<const EvalReport*> by_fold(out.config.folds, nullptr);
  for (size_t i = 0; i < out.folds.size(); ++i) by_fold[out.fold_numbers[i] - 1] = &out.folds[i];
  for (const auto& [method, resource] : summary_rows(names, out)) {
    FoldSummary s;
    s.method = method;
    s.resource = resource;
    std::vector<double> have;
    std::vector<BoundCoverage> bounds;
    for (const EvalReport* f : by_fold) {
      double v = std::numeric_limits<double>::quiet_NaN();
      for (size_t i = 0; f != nullptr && i < f->results.size(); ++i) {
        const ResultRow& x = f->results[i];
        if (x.method == method && x.resource == resource) {
          v = x.metrics.mae;
          bounds.push_back(x.bounds);
        }
      }
      s.mae.push_back(v);
      if (!std::isnan(v)) have.push_back(v);
    }
    s.folds_scored = have.size();
    if (!have.empty()) {
      double sum = 0.0;
      for (double v : have) sum += v;
      s.mean = sum / static_cast<double>(have.size());
      double sq = 0.0;
      for (double v : have) sq += (v - s.mean) * (v - s.mean);
      s.sd = have.size() > 1 ? std::sqrt(sq / static_cast<double>(have.size() - 1)) : 0.0;
    }
    s.bounds = mean_coverage(bounds);
    std::vector<std::vector<ScriptTally>> blocks;
    for (const BoundCoverage& b : bounds) {
      if (b.n > 0) blocks.push_back(b.tallies);
    }
    s.bounds.interval = coverage_interval(blocks, config.bootstrap,
                                          config.seed + static_cast<uint64_t>(idx(resource)));
    out.summary.push_back(std::move(s));
  }
  for (size_t k = 0; k < by_fold.size(); ++k) {
    for (Resource r : kResources) {
      // A tie is won by each tied method: a strict '<' gave every tied fold to the one listed
      // first, which only says which was asked for first.
      double best = std::numeric_limits<double>::infinity();
      for (const FoldSummary& s : out.summary) {
        if (s.resource == r && !std::isnan(s.mae[k])) best = std::min(best, s.mae[k]);
      }
      for (FoldSummary& s : out.summary) {
        if (s.resource == r && s.mae[k] == best) ++s.folds_won;
      }
    }
  }
}

// Each fold that ran scored every method but those that refused it (EvalReport::left_out). With
// `leave_out` (EvalConfig::leave_out_refusals), a method refused by every such fold is left out
// of the folds, with the first one's refusal. A fold refused by any other method is skipped for
// every method, as a fold that failed is, so that the means stay over the same blocks.
void settle_refusals(bool leave_out, FoldsReport& out) {
  const auto refused_by = [](const EvalReport& f, const std::string& method) -> const std::string* {
    for (const auto& [m, why] : f.left_out) {
      if (m == method) return &why;
    }
    return nullptr;
  };
  const auto left_out = [&](const std::string& method) {
    return std::any_of(out.left_out.begin(), out.left_out.end(), [&](const auto& l) { return l.first == method; });
  };
  for (const EvalReport& f : out.folds) {
    for (const auto& refusal : f.left_out) {
      const std::string& method = refusal.first;
      if (!leave_out || left_out(method)) continue;
      const auto refuses = [&](const EvalReport& g) { return refused_by(g, method) != nullptr; };
      if (std::all_of(out.folds.begin(), out.folds.end(), refuses)) {
        out.left_out.emplace_back(method, fmt::format("fold {}/{}: {}", out.fold_numbers.front(), out.config.folds,
                                                      *refused_by(out.folds.front(), method)));
      }
    }
  }
  std::vector<EvalReport> kept;
  std::vector<size_t> kept_numbers;
  for (size_t i = 0; i < out.folds.size(); ++i) {
    const auto refusal = std::find_if(out.folds[i].left_out.begin(), out.folds[i].left_out.end(),
                                      [&](const auto& l) { return !left_out(l.first); });
    if (refusal != out.folds[i].left_out.end()) {
      out.skipped.push_back({out.fold_numbers[i], refusal->second, refusal->first});
      continue;
    }
    kept.push_back(std::move(out.folds[i]));
    kept_numbers.push_back(out.fold_numbers[i]);
  }
  out.folds = std::move(kept);
  out.fold_numbers = std::move(kept_numbers);
  std::stable_sort(out.skipped.begin(), out.skipped.end(),
                   [](const SkippedFold& a, const SkippedFold& b) { return a.fold < b.fold; });
}

// The first job of the folds' tail: the last test_share of `n` jobs in submit order, cut as the
// split cuts its blocks.
size_t tail_begin(size_t n, const FoldsConfig& fc) { return share_position(n, 1.0 - fc.test_share); }
}  // namespace

Status check_folds(size_t n, const FoldsConfig& fc) {
  if (fc.folds < 2) return Status::invalid("--folds: needs at least 2 folds (0: no folds)");
  if (!(fc.test_share > 0.0 && fc.test_share < 1.0)) {
    return Status::invalid("folds test share: must be in (0, 1)");
  }
  const size_t first = tail_begin(n, fc);
  if (n - first < fc.folds || first < 4) {
    return Status::invalid(fmt::format("--folds: {} jobs are too few for {} folds over the last {:.0f}%",
                                       n, fc.folds, 100.0 * fc.test_share));
  }
  return Status::ok();
}

Result<FoldsReport> evaluate_folds(const std::vector<Job>& jobs, const MethodRegistry& registry,
                                   const EvalConfig& config, const FoldsConfig& fc,
                                   const ProgressFn& progress) {
  if (Status s = check_folds(jobs.size(), fc); !s) return s;
  std::vector<const Job*> order;
  order.reserve(jobs.size());
  for (const Job& j : jobs) order.push_back(&j);
  std::stable_sort(order.begin(), order.end(),
                   [](const Job* a, const Job* b) { return a->submit_ms < b->submit_ms; });
  const size_t n = order.size();
  const size_t first = tail_begin(n, fc);
  const size_t tail = n - first;
  const double fit_share = config.split.train + config.split.validation;
  FoldsReport out;
  out.config = fc;
  for (size_t k = 0; k < fc.folds; ++k) {
    const size_t begin = first + tail * k / fc.folds;
    const size_t end = first + tail * (k + 1) / fc.folds;
    std::vector<Job> prefix;
    prefix.reserve(end);
    for (size_t i = 0; i < end; ++i) prefix.push_back(*order[i]);
    EvalConfig c = config;
    const double before = static_cast<double>(begin), len = static_cast<double>(end - begin);
    c.split.train = before * config.split.train / fit_share;
    c.split.validation = before * config.split.validation / fit_share;
    // A hair less than the block, so the floor in make_split puts exactly [begin, end) in test.
    c.split.test = len - 1e-6;
    c.bootstrap = 0;
    c.latency_jobs = 0;
    c.on_bound_walk = nullptr;  // --bound-walk writes the split's walk only
    // A refusing method is named in the fold's report (settle_refusals decides what it leaves out).
    c.leave_out_refusals = true;
    const std::string label = fmt::format("fold {}/{}", k + 1, fc.folds);
    Result<EvalReport> r = evaluate_jobs(prefix, registry, c, progress);
    if (progress) progress("folds", k + 1, fc.folds);
    if (!r) {
      // A block that cannot be evaluated (the purge emptied one, or the baseline refused it) says
      // nothing about the other folds: leave this one out for every method. Anything else is a
      // real error. A method's refusal is in the report (settle_refusals).
      if (r.status().kind() != ErrorKind::kInvalidInput) return r.status().with_context(label);
      out.skipped.push_back({k + 1, r.status().message(), ""});
      continue;
    }
    out.folds.push_back(std::move(r).value());
    out.fold_numbers.push_back(k + 1);
  }
  settle_refusals(config.leave_out_refusals, out);
  if (out.folds.empty()) {
    return Status::invalid(fmt::format("every one of the {} folds was skipped; fold 1/{}: {}", fc.folds,
                                       fc.folds, out.skipped.front().reason));
  }
  summarize_folds(config, requested_methods(config, registry), out);
  return out;
}

std::string render_folds_table(const FoldsReport& r) {
  std::string s = fmt::format("rolling origin: {} expanding-window folds over the last {:.0f}% of "
                              "the jobs (fit on everything before each fold)\n",
                              r.config.folds, 100.0 * r.config.test_share);
  const bool intervals = std::any_of(r.summary.begin(), r.summary.end(),
                                     [](const FoldSummary& f) { return f.bounds.interval.has_value(); });
  // Cells first, then each column as wide as its widest cell: fixed widths drifted from the
  // cells' real ones (a 19-character mean under an 18-character header, a 6-character '-').
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"method", "res", "MAE mean +- s.d.", "folds", "won", coverage_header(intervals)});
  for (size_t k = 0; k < r.config.folds; ++k) rows[0].push_back(fmt::format("fold {}", k + 1));
  for (const FoldSummary& f : r.summary) {
    std::vector<std::string> row = {f.method, std::string(resource_name(f.resource)),
                                    fmt::format("{:.4f} +- {:.4f}", f.mean, f.sd),
                                    std::to_string(f.folds_scored), std::to_string(f.folds_won),
                                    coverage_cell(f.bounds)};
    for (double v : f.mae) row.push_back(std::isnan(v) ? "-" : fmt::format("{:.4f}", v));
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += i < 2 ? fmt::format("{:<{}}", row[i], width[i]) : fmt::format("{:>{}}", row[i], width[i]);
      if (i + 1 < row.size()) line += "  ";
    }
    s += line + "\n";
  }
  for (const SkippedFold& f : r.skipped) {
    s += fmt::format("fold {}/{} skipped (left out of every mean): {}\n", f.fold, r.config.folds, f.reason);
  }
  for (const auto& [method, reason] : r.left_out) s += folds_left_out_line(method, reason) + "\n";
  s += "folds: the folds that scored the method on the resource (the mean, s.d. and wins are over "
       "them; a fold without a valid test job for the resource, or skipped, is left out)\n"
       "won: folds where the method's MAE on the resource was the lowest; a tie counts as won by "
       "each tied method\n";
  if (intervals) {
    s += "cov@0.9 [95% CI]: mean over the folds; the interval from a bootstrap of each fold's "
         "scripts, drawn fold by fold\n";
  }
  return s;
}

std::string folds_left_out_line(const std::string& method, const std::string& reason) {
  return fmt::format("{}: left out of the folds: it could not be trained on any fold's training blocks ({})",
                     method, reason);
}

nlohmann::json to_json(const FoldsReport& r) {
  nlohmann::json j;
  j["folds"] = r.config.folds;
  j["test_share"] = r.config.test_share;
  nlohmann::json rows = nlohmann::json::array();
  for (const FoldSummary& f : r.summary) {
    nlohmann::json mae = nlohmann::json::array();
    for (double v : f.mae) mae.push_back(std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v));
    nlohmann::json row = {{"method", f.method}, {"resource", std::string(resource_name(f.resource))},
                          {"mae", mae}, {"folds_scored", f.folds_scored}, {"mae_mean", f.mean}, {"mae_sd", f.sd},
                          {"folds_won", f.folds_won}};
    add_coverage_json(f.bounds, row);  // means over the folds
    rows.push_back(std::move(row));
  }
  j["summary"] = rows;
  nlohmann::json sizes = nlohmann::json::array();
  for (size_t i = 0; i < r.folds.size(); ++i) {
    const EvalReport& f = r.folds[i];
    sizes.push_back({{"fold", r.fold_numbers[i]}, {"train", f.split.train}, {"validation", f.split.validation}, {"test", f.split.test},
                     {"scored", f.scored}, {"choices", choices_json(f)}});  // a choice that flips between folds is one tuned to its block
  }
  j["fold_blocks"] = sizes;
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedFold& f : r.skipped) {
    skipped.push_back({{"fold", f.fold},
                       {"method", f.method.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.method)},
                       {"reason", f.reason}});
  }
  j["skipped_folds"] = skipped;
  j["left_out"] = left_out_json(r.left_out);
  return j;
}

}  // namespace peakcast::eval
