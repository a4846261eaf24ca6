// The report's tables (sorted in the page by clicking a header: html.cpp's script reads each
// cell's data-sort, else its text) and the checks and sums behind them.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "peakcast/core/json_count.h"
#include "peakcast/eval/coverage.h"
#include "report_internal.h"

namespace peakcast::report {
namespace {

using nlohmann::json;

std::string num(const json& v, const char* f) {
  return v.is_number() ? fmt::format(fmt::runtime(f), v.get<double>()) : std::string("–");
}

std::string cell(const std::string& text) { return "<td>" + text + "</td>"; }

// A count the page reads from EVAL.json (check_eval_json: a whole number, or absent).
std::string count_cell(const json& v) {
  if (!v.is_number()) return cell("–");
  return number_cell(grouped(v.get<double>()), v.get<double>());
}

std::string pct_cell(const json& v) {
  if (!v.is_number()) return cell("–");
  return fmt::format("<td data-sort=\"{}\">{:.1f}%</td>", v.get<double>(), 100 * v.get<double>());
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string script_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  // "</script" would end the element; "<\/script" means the same inside a JS or JSON string.
  for (size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] != '<' || i + 7 >= s.size() || s[i + 1] != '/') continue;
    std::string next(s.substr(i + 2, 6));
    for (char& c : next) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (next == "script") out += "\\";
  }
  return out;
}

namespace {

// `key` of `o`, where the page reads it, is a number (absent is fine: the page shows "–" or 0).
Status number_if_present(const json& o, const char* key, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end() || it->is_number()) return Status::ok();
  return Status::invalid(where + "." + key + ": not a number");
}

// `key` of `o` is a count (a whole number from 0 to 2^53), or absent. The page reads it as an
// integer: nlohmann converts a float with a cast, undefined out of the type's range (1e10).
Status count_if_present(const json& o, const char* key, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end() || json_count(*it)) return Status::ok();
  return Status::invalid(where + "." + key + ": not a count (a whole number from 0 to 2^53)");
}

// `key` of `o` is an object, or absent or null (the page leaves its part out).
Status object_if_present(const json& o, const std::string& key, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null() || it->is_object()) return Status::ok();
  return Status::invalid(where + "." + key + ": not an object");
}

}  // namespace

// Every field the tables and plots read, with the type they read it as: a wrongly typed one is an
// input error naming it, not a type_error while drawing. The nulls evaluate writes (an empty
// subgroup's scores, no interval, no routing, an s.d. over one seed) pass.
Status check_eval_json(const json& j, const std::string& source) {
  if (!j.is_object()) return Status::invalid(source + ": expected `peakcast evaluate --json` output (an object)");
  std::string baseline = "hier_last1";
  if (auto c = j.find("config"); c != j.end() && c->is_object()) {
    if (auto b = c->find("baseline"); b != c->end()) {
      if (!b->is_string()) return Status::invalid(source + ": config.baseline: not text");
      baseline = b->get<std::string>();
    }
  }
  // The methods evaluate left out, each said on the page (`peakcast report --from-json`).
  if (auto l = j.find("left_out"); l != j.end()) {
    if (!l->is_array()) return Status::invalid(source + ": left_out: not a list");
    for (size_t i = 0; i < l->size(); ++i) {
      const json& e = (*l)[i];
      for (const char* key : {"method", "reason"}) {
        if (!e.is_object() || !e.contains(key) || !e[key].is_string()) {
          return Status::invalid(source + ": left_out[" + std::to_string(i) + "]." + key + ": missing or not text");
        }
      }
    }
  }
  auto results = j.find("results");
  if (results == j.end() || !results->is_array()) return Status::invalid(source + ": results: missing or not a list");
  for (size_t i = 0; i < results->size(); ++i) {
    const json& e = (*results)[i];
    const std::string where = source + ": results[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::invalid(where + ": not an object");
    for (const char* key : {"method", "resource"}) {
      if (!e.contains(key) || !e[key].is_string()) return Status::invalid(where + "." + key + ": missing or not text");
    }
    if (!e.contains("mae") || !e["mae"].is_number()) return Status::invalid(where + ".mae: missing or not a number");
    if (Status s = count_if_present(e, "n", where); !s) return s;
    if (Status s = number_if_present(e, "acc10", where); !s) return s;
    const std::string diff_key = "mae_diff_vs_" + baseline;
    for (const std::string& key : std::vector<std::string>{"subgroups", "routes", "latency_us", "routing",
                                                           diff_key, diff_key + "_by_script"}) {
      if (Status s = object_if_present(e, key, where); !s) return s;
    }
    // The day bootstrap's interval and, since 2026-12-07, the script bootstrap's (older files
    // lack it).
    for (const auto& [key, blocks] : {std::pair{diff_key, "days"}, std::pair{diff_key + "_by_script", "scripts"}}) {
      if (auto d = e.find(key); d != e.end() && d->is_object()) {
        for (const char* number : {"point", "lo", "hi"}) {
          if (Status s = number_if_present(*d, number, where + "." + key); !s) return s;
        }
        if (Status s = count_if_present(*d, blocks, where + "." + key); !s) return s;
      }
    }
    if (auto r = e.find("routing"); r != e.end() && r->is_object()) {
      for (const char* key : {"encoder_share", "tree_share", "bypass_share", "cache_share"}) {
        if (Status s = number_if_present(*r, key, where + ".routing"); !s) return s;
      }
    }
    if (auto g = e.find("subgroups"); g != e.end() && g->is_object()) {
      for (auto it = g->begin(); it != g->end(); ++it) {
        const std::string at = where + ".subgroups." + it.key();
        if (!it->is_object()) return Status::invalid(at + ": not an object");
        if (Status s = count_if_present(*it, "n", at); !s) return s;
        // An empty subgroup (n 0) has null scores; the page shows none.
        const json n = it->value("n", json(0));
        if (n.get<double>() == 0) continue;
        for (const char* key : {"mae", "acc10"}) {
          if (Status s = number_if_present(*it, key, at); !s) return s;
        }
      }
    }
    if (auto r = e.find("routes"); r != e.end() && r->is_object()) {
      for (auto it = r->begin(); it != r->end(); ++it) {
        if (!it->is_number()) return Status::invalid(where + ".routes." + it.key() + ": not a number");
      }
    }
    if (auto l = e.find("latency_us"); l != e.end() && l->is_object()) {
      for (auto it = l->begin(); it != l->end(); ++it) {
        const std::string at = where + ".latency_us." + it.key();
        if (!it->is_object()) return Status::invalid(at + ": not an object");
        if (Status s = count_if_present(*it, "n", at); !s) return s;
        for (const char* key : {"p50", "p99"}) {
          if (Status s = number_if_present(*it, key, at); !s) return s;
        }
      }
    }
  }
  return Status::ok();
}

json seed_sd_mae(const json& row) {
  const json seeds = row.value("seeds", json());
  if (seeds.is_number() && seeds.get<double>() < 2) return json();
  if (!row.contains("sd") || !row["sd"].is_object()) return json();
  return row["sd"].value("mae", json());
}

// A row's script-bootstrap interval of the MAE difference where it has one over two or more
// scripts; null otherwise (an older EVAL.json, the bootstrap off, or a block of one script).
const json& by_script(const json& row, const std::string& diff_key) {
  static const json none;
  const auto s = row.find(diff_key + "_by_script");
  if (s == row.end() || !s->is_object()) return none;
  const json scripts = s->value("scripts", json());
  return scripts.is_number() && scripts.get<double>() >= 2 ? *s : none;
}

std::string methods_table(const json& eval) {
  std::string baseline = "hier_last1";
  if (eval.contains("config") && eval["config"].is_object()) baseline = eval["config"].value("baseline", baseline);
  const std::string diff_key = "mae_diff_vs_" + baseline;
  // Where a row shows a script interval (below), the header says so beside the day-block one.
  const bool any_by_script = std::any_of(eval.at("results").begin(), eval.at("results").end(), [&](const json& e) {
    const json days = e.contains(diff_key) && e[diff_key].is_object() ? e[diff_key].value("days", json()) : json();
    return days.is_number() && days.get<double>() < 2 && !by_script(e, diff_key).is_null();
  });
  // How many resamples the interval drew (report's default 1,000, evaluate's 10,000: the same
  // trace's interval ends differ in the last digit).
  std::string resamples = any_by_script ? "; by script where marked" : "";
  if (eval.contains("config") && eval["config"].is_object()) {
    if (const json b = eval["config"].value("bootstrap", json()); b.is_number_integer() && b.get<int64_t>() > 0) {
      resamples = any_by_script ? fmt::format(", {} resamples of the days, or of the scripts where marked",
                                              grouped(b.get<int64_t>()))
                                : fmt::format(", {} day-block resamples", grouped(b.get<int64_t>()));
    }
  }
  std::string t = "<table class=\"sortable\"><thead><tr><th>method</th><th>resource</th>"
                  "<th>scored jobs</th><th>MAE</th><th>s.d.</th><th>Acc@10%</th>"
                  "<th>ΔMAE vs " + html_escape(baseline) + " [95% CI" + resamples + "]</th>"
                  "<th>encoder / tree / bypass / cache</th></tr></thead><tbody>\n";
  for (const json& e : eval.at("results")) {
    std::string row = "<tr>" + cell(html_escape(e.at("method").get<std::string>())) +
                      cell(html_escape(e.at("resource").get<std::string>())) +
                      count_cell(e.value("n", json())) + cell(num(e.at("mae"), "{:.4f}"));
    const json sd = seed_sd_mae(e);
    row += cell(sd.is_number() ? num(sd, "{:.4f}") : "–");
    row += pct_cell(e.value("acc10", json()));
    if (e.at("method") == baseline) {
      row += cell("(baseline)");  // against itself: 0 [0, 0], which reads as a measurement
    } else if (e.contains(diff_key) && e[diff_key].is_object()) {
      const json& d = e[diff_key];
      // A day-block bootstrap over one submit day resamples that day alone: its "interval" is the
      // point (a test block within a day: the Nextflow traces), not a certain difference. There
      // the bootstrap over the block's scripts still has blocks to draw: its interval, marked.
      const json days = d.value("days", json());
      const json& s = by_script(e, diff_key);
      if (days.is_number() && days.get<double>() < 2 && !s.is_null()) {
        row += fmt::format("<td data-sort=\"{}\">{} [{}, {}] (by script)</td>", s.value("point", 0.0),
                           num(s.value("point", json()), "{:+.4f}"), num(s.value("lo", json()), "{:+.4f}"),
                           num(s.value("hi", json()), "{:+.4f}"));
      } else if (days.is_number() && days.get<double>() < 2) {
        const int64_t n = days.get<int64_t>();
        row += fmt::format("<td data-sort=\"{}\">{} (no interval: {} submit day{})</td>", d.value("point", 0.0),
                           num(d.value("point", json()), "{:+.4f}"), n, n == 1 ? "" : "s");
      } else {
        row += fmt::format("<td data-sort=\"{}\">{} [{}, {}]</td>", d.value("point", 0.0),
                           num(d.value("point", json()), "{:+.4f}"), num(d.value("lo", json()), "{:+.4f}"),
                           num(d.value("hi", json()), "{:+.4f}"));
      }
    } else {
      row += cell("–");
    }
    if (e.contains("routing") && e["routing"].is_object()) {
      const json& r = e["routing"];
      row += cell(fmt::format("{:.1f} / {:.1f} / {:.1f} / {:.1f}%", 100 * r.value("encoder_share", 0.0),
                              100 * r.value("tree_share", 0.0), 100 * r.value("bypass_share", 0.0),
                              100 * r.value("cache_share", 0.0)));
    } else {
      row += cell("–");
    }
    t += row + "</tr>\n";
  }
  return t + "</tbody></table>\n";
}

std::string subgroups_table(const json& eval) {
  std::string t = "<table class=\"sortable\"><thead><tr><th>method</th><th>resource</th>"
                  "<th>history at submission</th><th>jobs</th><th>MAE</th><th>Acc@10%</th>"
                  "</tr></thead><tbody>\n";
  for (const json& e : eval.at("results")) {
    if (!e.contains("subgroups") || !e["subgroups"].is_object()) continue;
    for (auto it = e["subgroups"].begin(); it != e["subgroups"].end(); ++it) {
      t += "<tr>" + cell(html_escape(e.at("method").get<std::string>())) +
           cell(html_escape(e.at("resource").get<std::string>())) + cell(html_escape(it.key())) +
           count_cell(it->value("n", json())) + cell(num(it->value("mae", json()), "{:.4f}")) +
           pct_cell(it->value("acc10", json())) + "</tr>\n";
    }
  }
  return t + "</tbody></table>\n";
}

std::vector<CoverageRow> coverage_rows(const std::vector<PredictedJob>& preds) {
  struct Acc {
    size_t n = 0, covered = 0;
    double nominal = 0.0;
    eval::ScriptTallies scripts;  // the same count at every nominal level
  };
  std::map<std::pair<std::string, std::string>, Acc> acc;
  for (const PredictedJob& p : preds) {
    if (!p.upper || !p.nominal) continue;
    const std::string res(resource_name(p.resource));
    const bool covered = sizing::bound_covers(p.actual, *p.upper, p.censored);
    for (const std::string& route : {std::string("all"), p.route}) {
      Acc& a = acc[{res, route}];
      ++a.n;
      a.covered += covered ? 1 : 0;
      a.nominal += *p.nominal;
      eval::ScriptTally& t = a.scripts.tallies[a.scripts.index(p.script)];
      t.n += 1.0;
      for (double& c : t.covered) c += covered ? 1.0 : 0.0;
    }
  }
  std::vector<CoverageRow> rows;
  for (auto& [key, a] : acc) {
    const double n = static_cast<double>(a.n);
    CoverageRow row{key.first, key.second, a.n, static_cast<double>(a.covered) / n, a.nominal / n};
    row.scripts = a.scripts.tallies.size();
    const std::vector<std::vector<eval::ScriptTally>> block = {std::move(a.scripts.tallies)};
    const auto ci = eval::coverage_interval(block, kCoverageResamples, kCoverageSeed);
    row.lo = ci ? ci->lo[0] : row.observed;
    row.hi = ci ? ci->hi[0] : row.observed;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string coverage_table(const std::vector<PredictedJob>& preds) {
  std::string t = "<table class=\"sortable\"><thead><tr><th>resource</th><th>route</th>"
                  "<th>jobs with a bound</th><th>scripts</th><th>observed coverage</th>"
                  "<th>95% interval (scripts resampled)</th><th>nominal</th>"
                  "<th>observed − nominal</th></tr></thead><tbody>\n";
  for (const CoverageRow& c : coverage_rows(preds)) {
    t += fmt::format("<tr><td>{}</td><td>{}</td>{}{}<td data-sort=\"{}\">{:.1f}%</td>"
                     "<td data-sort=\"{}\">{:.1f}–{:.1f}%</td>"
                     "<td data-sort=\"{}\">{:.1f}%</td><td data-sort=\"{}\">{:+.1f} pp</td></tr>\n",
                     c.resource, html_escape(c.route), number_cell(c.n), number_cell(c.scripts),
                     c.observed, 100 * c.observed,
                     c.lo, 100 * c.lo, 100 * c.hi, c.nominal, 100 * c.nominal,
                     c.observed - c.nominal, 100 * (c.observed - c.nominal));
  }
  return t + "</tbody></table>\n";
}

}  // namespace peakcast::report
