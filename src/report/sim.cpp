// SIM.json, the sizing simulator's outcome per policy (docs/report.md, "SIM.json"):
//   {"results": [{"policy": "requested", "waste_gbh": 1234.5, "failures": 0, "retries": 0,
//                 "jobs": 5000, "failed_jobs": 0}, ...], "notes": ["..."]}
// Other keys are ignored, so the simulator may say more than the report shows.
#include <cmath>

#include <fmt/format.h>

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
  if (!j.is_object()) return Status::invalid(source + ": expected a JSON object with \"results\"");
  auto results = j.find("results");
  if (results == j.end() || !results->is_array()) {
    return Status::invalid(source + ": results: missing or not a list");
  }
  for (size_t i = 0; i < results->size(); ++i) {
    const json& e = (*results)[i];
    const std::string where = source + ": results[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::invalid(where + ": not an object");
    SimPolicy p;
    auto policy = e.find("policy");
    if (policy == e.end() || !policy->is_string() || policy->get<std::string>().empty()) {
      return Status::invalid(where + ".policy: missing or not a name");
    }
    p.policy = policy->get<std::string>();
    auto waste = e.find("waste_gbh");
    if (waste == e.end() || !waste->is_number() || !std::isfinite(waste->get<double>()) ||
        waste->get<double>() < 0) {
      return Status::invalid(where + ".waste_gbh: missing or not a number >= 0");
    }
    p.waste_gbh = waste->get<double>();
    for (auto [key, out] : {std::pair{"failures", &p.failures}, std::pair{"retries", &p.retries},
                            std::pair{"jobs", &p.jobs}, std::pair{"failed_jobs", &p.failed_jobs}}) {
      if (Status s = need_count(e, key, where, *out); !s) return s;
    }
    if (p.failed_jobs > p.jobs) return Status::invalid(where + ".failed_jobs: more than jobs");
    sim.results.push_back(std::move(p));
  }
  if (sim.results.empty()) return Status::invalid(source + ": results: empty");
  if (auto notes = j.find("notes"); notes != j.end() && notes->is_array()) {
    for (const json& n : *notes) {
      if (n.is_string()) sim.notes.push_back(n.get<std::string>());
    }
  }
  return sim;
}

std::vector<Plot> sim_plots(const SimResults& sim) {
  json rows = json::array();
  for (const SimPolicy& p : sim.results) {
    rows.push_back({{"policy", p.policy}, {"waste_gbh", p.waste_gbh}, {"failures", p.failures},
                    {"retries", p.retries}, {"jobs", p.jobs}, {"failed_jobs", p.failed_jobs}});
  }
  json tooltip = json::array({{{"field", "policy"}, {"type", "nominal"}},
                              {{"field", "waste_gbh"}, {"type", "quantitative"}, {"title", "waste (GB·h)"}, {"format", ",.1f"}},
                              {{"field", "failures"}, {"type", "quantitative"}},
                              {{"field", "retries"}, {"type", "quantitative"}},
                              {{"field", "failed_jobs"}, {"type", "quantitative"}, {"title", "failed jobs"}},
                              {{"field", "jobs"}, {"type", "quantitative"}}});
  auto bar = [&](const char* y, const char* title, const char* color) {
    return json{{"width", "container"},
                {"height", 220},
                {"title", title},
                {"data", {{"values", rows}}},
                {"mark", {{"type", "bar"}, {"color", color}}},
                {"encoding",
                 {{"x", {{"field", "policy"}, {"type", "nominal"}, {"sort", nullptr}, {"title", "sizing policy"}}},
                  {"y", {{"field", y}, {"type", "quantitative"}, {"title", title}}},
                  {"tooltip", tooltip}}},
                {"config", {{"view", {{"stroke", nullptr}}}, {"font", "system-ui, sans-serif"}}}};
  };
  return {{"sizing-waste", "sizing", "Waste per policy", bar("waste_gbh", "memory reserved but unused (GB·h)", "#4c78a8")},
          {"sizing-failures", "sizing", "Failures per policy", bar("failures", "out-of-memory failures", "#e45756")}};
}

std::string sim_table(const SimResults& sim) {
  const double base = sim.results.front().waste_gbh;
  std::string t =
      "<table class=\"sortable\"><thead><tr><th>policy</th><th>waste (GB·h)</th>"
      "<th>saved vs " + html_escape(sim.results.front().policy) + " (GB·h)</th><th>failures</th>"
      "<th>retries</th><th>failed jobs</th><th>jobs</th></tr></thead><tbody>\n";
  for (const SimPolicy& p : sim.results) {
    t += fmt::format("<tr><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td></tr>\n",
                     html_escape(p.policy), p.waste_gbh, base - p.waste_gbh, p.failures, p.retries,
                     p.failed_jobs, p.jobs);
  }
  return t + "</tbody></table>\n";
}

}  // namespace peakcast::report
