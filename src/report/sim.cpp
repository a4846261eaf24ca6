// SIM.json, the sizing simulator's outcome per policy (docs/report.md, "SIM.json"):
//   {"results": [{"policy": "requested", "waste_gbh": 1234.5, "failures": 0, "retries": 0,
//                 "jobs": 5000, "failed_jobs": 0}, ...], "notes": ["..."]}
// Other keys are ignored, so the simulator may say more than the report shows. Rows that share
// a policy (one per seed) are shown as their means.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "peakcast/sizing/seed_summary.h"
#include "report_internal.h"

namespace peakcast::report {
namespace {

using nlohmann::json;

Status need_count(const json& e, const char* key, const std::string& where, int64_t& out) {
  auto it = e.find(key);
  if (it == e.end()) return Status::invalid(where + "." + key + ": missing");
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return Status::invalid(where + "." + key + ": expected a count (a whole number >= 0)");
  }
  out = it->get<int64_t>();
  return Status::ok();
}

}  // namespace

Result<SimResults> parse_sim(const json& j, const std::string& source) {
  SimResults sim;
  sim.source = source;
  std::vector<std::pair<std::string, sizing::Tally>> rows;
  if (!j.is_object()) return Status::invalid(source + ": expected a JSON object with \"results\"");
  auto results = j.find("results");
  if (results == j.end() || !results->is_array()) {
    return Status::invalid(source + ": results: missing or not a list");
  }
  for (size_t i = 0; i < results->size(); ++i) {
    const json& e = (*results)[i];
    const std::string where = source + ": results[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::invalid(where + ": not an object");
    auto policy = e.find("policy");
    if (policy == e.end() || !policy->is_string() || policy->get<std::string>().empty()) {
      return Status::invalid(where + ".policy: missing or not a name");
    }
    auto waste = e.find("waste_gbh");
    if (waste == e.end() || !waste->is_number() || !std::isfinite(waste->get<double>()) ||
        waste->get<double>() < 0) {
      return Status::invalid(where + ".waste_gbh: missing or not a number >= 0");
    }
    sizing::Tally t;
    t.waste_gbh = waste->get<double>();
    int64_t failures = 0, retries = 0, jobs = 0, failed_jobs = 0;
    for (auto [key, out] : {std::pair{"failures", &failures}, std::pair{"retries", &retries},
                            std::pair{"jobs", &jobs}, std::pair{"failed_jobs", &failed_jobs}}) {
      if (Status s = need_count(e, key, where, *out); !s) return s;
    }
    if (failed_jobs > jobs) return Status::invalid(where + ".failed_jobs: more than jobs");
    t.failures = static_cast<size_t>(failures);
    t.retries = static_cast<size_t>(retries);
    t.jobs = static_cast<size_t>(jobs);
    t.failed_jobs = static_cast<size_t>(failed_jobs);
    rows.emplace_back(policy->get<std::string>(), t);
  }
  if (rows.empty()) return Status::invalid(source + ": results: empty");
  sim.results = sizing::summarize_seeds(rows);
  sim.comparison = sizing::compare_with_best_baseline(sim.results);
  if (auto notes = j.find("notes"); notes != j.end() && notes->is_array()) {
    for (const json& n : *notes) {
      if (n.is_string()) sim.notes.push_back(n.get<std::string>());
    }
  }
  return sim;
}

std::vector<Plot> sim_plots(const SimResults& sim, const std::string& section) {
  json rows = json::array();
  for (const sizing::SeedSummary& p : sim.results) {
    rows.push_back({{"policy", p.policy}, {"waste_gbh", p.waste_gbh.mean}, {"failures", p.failures.mean},
                    {"retries", p.retries.mean}, {"jobs", p.jobs.mean}, {"failed_jobs", p.failed_jobs.mean},
                    {"seeds", p.seeds}});
  }
  json tooltip = json::array({{{"field", "policy"}, {"type", "nominal"}},
                              {{"field", "waste_gbh"}, {"type", "quantitative"}, {"title", "waste (GB·h)"}, {"format", ",.1f"}},
                              // Means over seeds may be fractional; a single run's are whole.
                              {{"field", "failures"}, {"type", "quantitative"}, {"format", ",.1~f"}},
                              {{"field", "retries"}, {"type", "quantitative"}, {"format", ",.1~f"}},
                              {{"field", "failed_jobs"}, {"type", "quantitative"}, {"title", "failed jobs"}, {"format", ",.1~f"}},
                              {{"field", "jobs"}, {"type", "quantitative"}, {"format", ",.1~f"}},
                              {{"field", "seeds"}, {"type", "quantitative"}, {"title", "seeds (means over them)"}, {"format", ",d"}}});
  // Both sections draw these two plots: the description (the plot's aria-label) says whose.
  const std::string who = section == "recommendations"
                              ? "peakcastd's requests against the users' own: "
                              : "sizing policies (SIM.json): ";
  auto bar = [&](const char* y, const char* title, const char* color) {
    return json{{"width", "container"},
                {"height", 220},
                {"title", title},
                {"description", who + title},
                {"data", {{"values", rows}}},
                {"mark", {{"type", "bar"}, {"color", color}}},
                {"encoding",
                 {{"x", {{"field", "policy"}, {"type", "nominal"}, {"sort", nullptr}, {"title", "sizing policy"}}},
                  {"y", {{"field", y}, {"type", "quantitative"}, {"title", title}}},
                  {"tooltip", tooltip}}},
                {"config", {{"view", {{"stroke", nullptr}}}, {"font", "system-ui, sans-serif"}}}};
  };
  return {{section + "-waste", section, "Waste per policy", bar("waste_gbh", "memory reserved but unused (GB·h)", "#4c78a8")},
          {section + "-failures", section, "Failures per policy", bar("failures", "out-of-memory failures", "#e45756")}};
}

std::string sim_table(const SimResults& sim) {
  const double base = sim.results.front().waste_gbh.mean;
  const bool seeded = std::any_of(sim.results.begin(), sim.results.end(),
                                  [](const sizing::SeedSummary& p) { return p.seeds > 1; });
  // Means over seeds are fractional; a single run's counts are whole.
  const auto count = [&](double v) { return number_cell(grouped(v, seeded ? 1 : 0), v); };
  const auto gbh = [](double v) { return number_cell(grouped(v, 1), v); };
  std::string t;
  if (const auto& c = sim.comparison; c && std::isfinite(c->waste_ratio)) {
    t += fmt::format("<p class=\"explain\"><b>{} against the best baseline</b> ({}, the least waste{}): "
                     "{:.2f}× its waste ({} against {} GB·h), {} failed attempts against {}.</p>\n",
                     html_escape(c->policy), html_escape(c->best_baseline),
                     c->seeds > 1 ? fmt::format(", means over {} seeds", grouped(c->seeds)) : std::string(),
                     c->waste_ratio, grouped(c->waste_gbh, 1), grouped(c->baseline_waste_gbh, 1),
                     grouped(c->failures, 1), grouped(c->baseline_failures, 1));
  }
  t += "<table class=\"sortable\"><thead><tr><th>policy</th>";
  t += seeded ? "<th>seeds</th><th>mean waste (GB·h)</th><th>waste range (GB·h)</th>" : "<th>waste (GB·h)</th>";
  t += "<th>saved vs " + html_escape(sim.results.front().policy) + " (GB·h)</th><th>failures</th>"
       "<th>retries</th><th>failed jobs</th><th>jobs</th></tr></thead><tbody>\n";
  for (const sizing::SeedSummary& p : sim.results) {
    t += "<tr><td>" + html_escape(p.policy) + "</td>";
    if (seeded) {
      // A range sorts by its low end.
      t += number_cell(p.seeds) + gbh(p.waste_gbh.mean) +
           number_cell(grouped(p.waste_gbh.min, 1) + " – " + grouped(p.waste_gbh.max, 1), p.waste_gbh.min);
    } else {
      t += gbh(p.waste_gbh.mean);
    }
    const double jobs = p.jobs.mean;
    t += gbh(base - p.waste_gbh.mean) + count(p.failures.mean) + count(p.retries.mean) +
         count(p.failed_jobs.mean) + number_cell(grouped(jobs, jobs == std::floor(jobs) ? 0 : 1), jobs) +
         "</tr>\n";
  }
  return t + "</tbody></table>\n";
}

}  // namespace peakcast::report
