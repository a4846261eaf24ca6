// Terminal table, markdown and CSV printers, and the reader summary.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "peakcast/eval/report.h"

namespace peakcast::eval {

namespace {

// The interval of the MAE difference the printers show: the day bootstrap's, or where it has a
// single submit day (one block to resample, so its "interval" is the point) the script
// bootstrap's, which still has blocks where the day has at least two scripts. nullptr for none.
const BootstrapInterval* shown_interval(const ResultRow& row) {
  if (!row.mae_diff_vs_baseline) return nullptr;
  if (row.mae_diff_vs_baseline->days >= 2) return &*row.mae_diff_vs_baseline;
  if (row.mae_diff_by_script && row.mae_diff_by_script->scripts >= 2) return &*row.mae_diff_by_script;
  return &*row.mae_diff_vs_baseline;
}

std::string diff_cell(const ResultRow& row, const std::string& baseline) {
  if (row.method == baseline) return "(baseline)";
  const BootstrapInterval* b = shown_interval(row);
  if (b == nullptr) return "-";
  if (b->scripts >= 2) return fmt::format("{:+.4f} [{:+.4f}, {:+.4f}] (by script)", b->point, b->lo, b->hi);
  // One submit day and at most one script: no block to draw, so no interval (the report's table
  // says the same); "[p, p]" would read as a certain difference.
  if (b->days < 2) {
    std::string none = fmt::format("{:+.4f} (no interval: {} submit day{}", b->point, b->days, b->days == 1 ? "" : "s");
    if (row.mae_diff_by_script) none += fmt::format(", {} script", row.mae_diff_by_script->scripts);
    return none + ")";
  }
  return fmt::format("{:+.4f} [{:+.4f}, {:+.4f}]", b->point, b->lo, b->hi);
}

std::string sub_cell(const Metrics& m) {
  if (m.n == 0) return "-";
  return fmt::format("{:.4f} ({})", m.mae, m.n);
}

struct Cells {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

bool any_seeds(const EvalReport& r) {
  return std::any_of(r.results.begin(), r.results.end(),
                     [](const ResultRow& row) { return row.seeds > 1; });
}

bool any_routing(const EvalReport& r) {
  return std::any_of(r.results.begin(), r.results.end(),
                     [](const ResultRow& row) { return row.routing.has_value(); });
}

// "0.1234" or, for a row behind several seeds, "0.1234 +- 0.0012".
std::string value_cell(double mean, double sd, size_t seeds, double scale, const char* unit,
                       int digits) {
  std::string v = fmt::format("{:.{}f}{}", scale * mean, digits, unit);
  if (seeds > 1) v += fmt::format(" +- {:.{}f}", scale * sd, digits);
  return v;
}

std::string routing_cell(const ResultRow& row) {
  if (!row.routing) return "-";
  const Routing& g = *row.routing;
  return fmt::format("{:.1f}/{:.1f}/{:.1f}/{:.1f}%", 100 * g.encoder_share, 100 * g.tree_share,
                     100 * g.bypass_share, 100 * g.cache_share);
}

Cells cells(const EvalReport& r) {
  Cells c;
  const bool routing = any_routing(r);
  c.header = {"method", "res", "n", "MAE", "MSE", "RMSE", "Acc@10%",
              fmt::format("dMAE vs {} [95% CI]", r.baseline),
              "MAE exact (n)", "MAE user (n)", "MAE none (n)", coverage_header(r.bootstrap > 0)};
  if (routing) c.header.push_back("enc/tree/bypass/cache");
  for (const ResultRow& row : r.results) {
    const Metrics& m = row.metrics;
    const Metrics& sd = row.metrics_sd;
    c.rows.push_back({row.method, std::string(resource_name(row.resource)),
                      std::to_string(m.n), value_cell(m.mae, sd.mae, row.seeds, 1, "", 4),
                      value_cell(m.mse, sd.mse, row.seeds, 1, "", 4),
                      value_cell(m.rmse, sd.rmse, row.seeds, 1, "", 4),
                      value_cell(m.acc10, sd.acc10, row.seeds, 100, "%", 2),
                      diff_cell(row, r.baseline), sub_cell(row.subgroups[0]),
                      sub_cell(row.subgroups[1]), sub_cell(row.subgroups[2]),
                      coverage_cell(row.bounds)});
    if (routing) c.rows.back().push_back(routing_cell(row));
  }
  return c;
}

// One line per method with timings: "latency (batch 1, µs): cascade bypass p50 12 p99 40 (n=..)".
std::string latency_lines(const EvalReport& r) {
  std::string out;
  std::vector<std::string> seen;
  for (const ResultRow& row : r.results) {
    if (row.latency_us.empty()) continue;
    if (std::find(seen.begin(), seen.end(), row.method) != seen.end()) continue;
    seen.push_back(row.method);
    std::vector<std::string> parts;
    for (const auto& [route, l] : row.latency_us) {
      parts.push_back(fmt::format("{} p50 {:.1f} p99 {:.1f} (n={})", route, l.p50_us, l.p99_us, l.n));
    }
    out += fmt::format("  {}: {}\n", row.method, fmt::join(parts, ", "));
  }
  if (!out.empty()) {
    out = fmt::format("latency per route (batch 1, µs, first {} test jobs):\n", r.latency_jobs) + out;
  }
  return out;
}

std::string split_line(const EvalReport& r) {
  const SplitCounts& s = r.split;
  return fmt::format(
      "split {} by submit time: {} jobs -> train {} (+{} purged), validation {} (+{} purged), "
      "test {}; scored test jobs: mem {}, vram {}",
      format_split(r.split_config), s.total, s.train, s.purged_train, s.validation,
      s.purged_validation, s.test, r.scored[0], r.scored[1]);
}

std::string fallback_line(const EvalReport& r) {
  return fmt::format("fallback (median of purged train): mem {:.4f} (n={}), vram {:.4f} (n={})",
                     r.fallback[0], r.fallback_n[0], r.fallback[1], r.fallback_n[1]);
}

std::string choices_lines(const EvalReport& r) {
  std::string out;
  for (const auto& [method, ch] : r.choices) {
    if (method.rfind("hier_", 0) == 0) continue;  // their expert is in their name
    std::vector<std::string> kv;
    for (const auto& [k, v] : ch) kv.push_back(k + "=" + v);
    out += fmt::format("{}: {}\n", method, fmt::join(kv, " "));
  }
  return out;
}

// The left-out methods, one line each.
std::string left_out_lines(const EvalReport& r, const char* prefix) {
  std::string out;
  for (const auto& [method, reason] : r.left_out) out += prefix + left_out_line(method, reason) + "\n";
  return out;
}

}  // namespace

std::string left_out_line(const std::string& method, const std::string& reason) {
  return fmt::format("{}: left out: it could not be trained on this trace's training blocks ({})", method, reason);
}

std::string render_table(const EvalReport& r) {
  const Cells c = cells(r);
  std::vector<size_t> width(c.header.size());
  for (size_t i = 0; i < width.size(); ++i) {
    width[i] = c.header[i].size();
    for (const auto& row : c.rows) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  if (!r.trace_path.empty()) out += fmt::format("trace {} ({})\n", r.trace_path, r.trace_format);
  out += split_line(r) + "\n" + fallback_line(r) + "\n";
  if (r.bootstrap > 0) {
    std::vector<std::string> days, scripts;
    for (Resource res : kResources) {
      for (const ResultRow& row : r.results) {
        if (row.resource == res && row.mae_diff_vs_baseline) {
          days.push_back(fmt::format("{} {}", resource_name(res), row.mae_diff_vs_baseline->days));
          break;
        }
      }
      // The baseline's own row has no script interval: the first row that shows one.
      for (const ResultRow& row : r.results) {
        const BootstrapInterval* b = row.resource == res ? shown_interval(row) : nullptr;
        if (b != nullptr && b->scripts > 0) {
          scripts.push_back(fmt::format("{} {}", resource_name(res), b->scripts));
          break;
        }
      }
    }
    std::string by_script;
    if (!scripts.empty()) {
      by_script = fmt::format("; where a test block is one submit day, over its scripts ({}), "
                              "marked \"(by script)\"",
                              fmt::join(scripts, ", "));
    }
    out += fmt::format(
        "intervals: paired day-block bootstrap over submit days ({}), {} resamples, seed {}{}\n",
        fmt::join(days, ", "), r.bootstrap, r.seed, by_script);
  }
  out += fmt::format(
      "threads {} (XGBoost, LibTorch): the figures repeat on the same CPU with the same thread "
      "count; another CPU's BLAS kernels can move the learned methods' last digits\n\n",
      r.threads);
  auto line = [&](const std::vector<std::string>& cols) {
    std::string l;
    for (size_t i = 0; i < cols.size(); ++i) {
      const bool left = i < 2;
      l += left ? fmt::format("{:<{}}", cols[i], width[i]) : fmt::format("{:>{}}", cols[i], width[i]);
      if (i + 1 < cols.size()) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  out += line(c.header);
  std::vector<std::string> rule;
  for (size_t w : width) rule.emplace_back(w, '-');
  out += line(rule);
  for (const auto& row : c.rows) out += line(row);
  out += left_out_lines(r, "");
  if (any_seeds(r)) {
    out += fmt::format("learned methods: mean +- s.d. over {} seeds ({}..{}); intervals on the "
                       "per-job error averaged over seeds\n",
                       r.seeds, r.seed, r.seed + r.seeds - 1);
  }
  out += "cov@0.9 (width): share of the test jobs under their online conformal 0.90 upper bound "
         "(updated with each completion, per history level) and its mean width\n";
  if (r.bootstrap > 0) {
    out += fmt::format("cov@0.9 [95% CI]: bootstrap over the test block's scripts ({} resamples; a "
                       "script's jobs are missed together, so a block of few scripts has a wide one)\n",
                       r.bootstrap);
  }
  if (any_routing(r)) {
    out += "enc/tree/bypass/cache: share of jobs that needed the code model / share whose Q came "
           "from the tree route (XGBoost; no code model) / share bypassed / share of the code-model "
           "jobs served from the exact cache\n";
  }
  const std::string lat = latency_lines(r);
  if (!lat.empty()) out += "\n" + lat;
  const std::string ch = choices_lines(r);
  if (!ch.empty()) out += "\n" + ch;
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  return out;
}

std::string render_markdown(const EvalReport& r) {
  const Cells c = cells(r);
  std::string out;
  if (!r.trace_path.empty()) out += fmt::format("Trace `{}` ({})\n\n", r.trace_path, r.trace_format);
  out += split_line(r) + ".  \n" + fallback_line(r) + ".\n\n";
  out += "| " + fmt::format("{}", fmt::join(c.header, " | ")) + " |\n|";
  for (size_t i = 0; i < c.header.size(); ++i) out += i < 2 ? "---|" : "---:|";
  out += "\n";
  for (const auto& row : c.rows) out += "| " + fmt::format("{}", fmt::join(row, " | ")) + " |\n";
  if (!r.left_out.empty()) out += "\n" + left_out_lines(r, "- ");
  return out;
}

std::string render_csv(const EvalReport& r) {
  std::string out =
      "method,resource,n,mae,mse,rmse,acc10,mae_diff_point,mae_diff_lo,mae_diff_hi,"
      "exact_script_n,exact_script_mae,user_only_n,user_only_mae,none_n,none_mae,seeds,mae_sd,"
      "acc10_sd,encoder_share,tree_share,bypass_share,cache_share,coverage_0.9,coverage_0.9_lo,"
      "coverage_0.9_hi,bound_width_0.9,bound_scripts,mae_diff_over,mae_diff_blocks\n";
  for (const ResultRow& row : r.results) {
    std::string diff = ",,";
    // What the interval resampled: "days" or, for a test block of one submit day, "scripts".
    std::string over = ",";
    if (const BootstrapInterval* b = shown_interval(row)) {
      diff = fmt::format("{:.6g},{:.6g},{:.6g}", b->point, b->lo, b->hi);
      over = b->scripts > 0 ? fmt::format("scripts,{}", b->scripts) : fmt::format("days,{}", b->days);
    }
    out += fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{}", row.method,
                       resource_name(row.resource), row.metrics.n, row.metrics.mae,
                       row.metrics.mse, row.metrics.rmse, row.metrics.acc10, diff);
    for (const Metrics& m : row.subgroups) {
      out += m.n == 0 ? std::string(",0,") : fmt::format(",{},{:.6g}", m.n, m.mae);  // empty: no score
    }
    out += fmt::format(",{},{:.6g},{:.6g}", row.seeds, row.metrics_sd.mae, row.metrics_sd.acc10);
    if (row.routing) {
      out += fmt::format(",{:.6g},{:.6g},{:.6g},{:.6g}", row.routing->encoder_share,
                         row.routing->tree_share, row.routing->bypass_share, row.routing->cache_share);
    } else {
      out += ",,,,";
    }
    const BoundCoverage& b = row.bounds;
    if (b.n == 0) {
      out += ",,,,,";
    } else {
      out += b.interval ? fmt::format(",{:.6g},{:.6g},{:.6g}", b.coverage[1], b.interval->lo[1], b.interval->hi[1])
                        : fmt::format(",{:.6g},,", b.coverage[1]);
      out += fmt::format(",{:.6g},{}", b.width[1], b.scripts);
    }
    out += "," + over + "\n";
  }
  return out;
}

std::string render_reader_summary(const ingest::Trace& t) {
  const ingest::ReadStats& s = t.stats;
  std::string out = fmt::format(
      "read {} ({}): {} jobs from {} records, {} skipped; labelled mem {}, vram {}; clipped to "
      "cap mem {}, vram {}; censored (OOM) {}\n",
      t.path, ingest::format_name(t.format), s.jobs, s.lines, s.skipped, s.labelled[0],
      s.labelled[1], s.clipped[0], s.clipped[1], s.censored);
  for (const std::string& why : s.reasons) out += "  skipped: " + why + "\n";
  if (s.skipped > s.reasons.size()) {
    out += fmt::format("  ... and {} more skipped\n", s.skipped - s.reasons.size());
  }
  for (const std::string& n : t.notes) out += "  note: " + n + "\n";
  return out;
}

}  // namespace peakcast::eval
