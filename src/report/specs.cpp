// The report's Vega-Lite specs: data inline, tooltips on every mark, SVG rendering (the page
// test checks that each plot drew marks).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report_internal.h"

namespace peakcast::report {
namespace {

using nlohmann::json;

json base(const std::string& title, json data) {
  return {{"title", title},
          {"width", "container"},
          {"height", 260},
          {"data", {{"values", std::move(data)}}},
          {"config", {{"view", {{"stroke", nullptr}}}, {"font", "system-ui, sans-serif"}}}};
}

json field(const std::string& name, const std::string& type, const std::string& title) {
  return {{"field", name}, {"type", type}, {"title", title}};
}

json tooltip_num(const std::string& name, const std::string& title, const std::string& fmt) {
  return {{"field", name}, {"type", "quantitative"}, {"title", title}, {"format", fmt}};
}

std::vector<Plot> accuracy_plots(const std::vector<PredictedJob>& preds) {
  std::vector<Plot> out;
  for (Resource r : kResources) {
    std::vector<const PredictedJob*> of_r;
    for (const PredictedJob& p : preds) {
      if (p.resource == r) of_r.push_back(&p);
    }
    if (of_r.empty()) continue;
    // Past kAccuracyPoints, evenly spaced in submit order, the first and the last among them.
    const size_t n = of_r.size(), shown = std::min(n, kAccuracyPoints);
    json rows = json::array();
    for (size_t k = 0; k < shown; ++k) {
      const size_t i = shown < 2 ? 0 : k * (n - 1) / (shown - 1);
      const PredictedJob& p = *of_r[i];
      rows.push_back({{"job", p.job_id}, {"actual", p.actual}, {"predicted", p.predicted},
                      {"route", p.route}, {"level", p.level}, {"censored", p.censored}});
    }
    const std::string res(resource_name(r));
    // Slurm's words for the resource, and what its utilization is a share of (docs/formats.md).
    const std::string said = r == Resource::kVram ? "VRAM" : "memory";
    const std::string actual = r == Resource::kVram ? "actual utilization (peak / the requested GPUs' memory)"
                                                    : "actual utilization (peak / requested memory)";
    json points = {
        {"mark", {{"type", "point"}, {"filled", true}, {"opacity", 0.45}, {"size", 18}}},
        {"encoding",
         {{"x", field("predicted", "quantitative", "predicted utilization")},
          {"y", field("actual", "quantitative", actual)},
          {"color", field("route", "nominal", "route")},
          {"tooltip", json::array({field("job", "nominal", "job"),
                                   tooltip_num("actual", "actual", ".3f"),
                                   tooltip_num("predicted", "predicted", ".3f"),
                                   field("route", "nominal", "route"),
                                   field("level", "nominal", "history"),
                                   field("censored", "nominal", "OOM (censored)")})}}}};
    json diagonal = {
        {"data", {{"values", json::array({{{"v", 0.0}}, {{"v", 1.0}}})}}},
        {"mark", {{"type", "line"}, {"color", "#888"}, {"strokeDash", {4, 4}}}},
        {"encoding", {{"x", field("v", "quantitative", "predicted utilization")},
                      {"y", field("v", "quantitative", actual)}}}};
    json spec = base("Predicted vs actual " + said + " utilization (test jobs)", rows);
    if (shown < n) {
      spec["title"] = {{"text", spec["title"]},
                       {"subtitle", fmt::format("{} of {} test jobs, evenly spaced in submit order; "
                                                "the coverage below counts them all", grouped(shown), grouped(n))}};
    }
    spec["height"] = 320;
    spec["layer"] = json::array({points, diagonal});
    out.push_back({"accuracy-" + res, "accuracy", "Predicted vs actual: " + said, spec});
  }
  return out;
}

json eval_rows(const json& eval) {
  json rows = json::array();
  for (const json& e : eval.at("results")) {
    json row = {{"method", e.at("method")}, {"resource", e.at("resource")}, {"mae", e.at("mae")},
                {"n", e.value("n", int64_t{0})}, {"acc10", e.value("acc10", 0.0)}};
    if (const json sd = seed_sd_mae(e); sd.is_number()) row["mae_sd"] = sd;
    rows.push_back(row);
  }
  return rows;
}

Plot methods_plot(const json& eval) {
  json spec = base("MAE of utilization by method (test block; lower is better)", eval_rows(eval));
  spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
  spec["encoding"] = {
      {"x", {{"field", "method"}, {"type", "nominal"}, {"title", "method"}, {"sort", nullptr}}},
      {"xOffset", field("resource", "nominal", "resource")},
      {"y", field("mae", "quantitative", "MAE")},
      {"color", field("resource", "nominal", "resource")},
      {"tooltip", json::array({field("method", "nominal", "method"),
                               field("resource", "nominal", "resource"),
                               tooltip_num("mae", "MAE", ".4f"),
                               tooltip_num("mae_sd", "s.d. over seeds", ".4f"),
                               tooltip_num("acc10", "Acc@10%", ".1%"),
                               tooltip_num("n", "scored jobs", ",d")})}};
  return {"methods", "methods", "Error by method", spec};
}

std::vector<Plot> subgroup_plots(const json& eval) {
  std::map<std::string, json> by_resource;
  for (const json& e : eval.at("results")) {
    if (!e.contains("subgroups") || !e["subgroups"].is_object()) continue;
    for (auto it = e["subgroups"].begin(); it != e["subgroups"].end(); ++it) {
      if (it->value("n", int64_t{0}) == 0) continue;
      by_resource[e.at("resource").get<std::string>()].push_back(
          {{"method", e.at("method")}, {"subgroup", it.key()}, {"mae", it->value("mae", 0.0)},
           {"n", it->value("n", int64_t{0})}, {"acc10", it->value("acc10", 0.0)}});
    }
  }
  std::vector<Plot> out;
  for (auto& [res, rows] : by_resource) {
    const std::string said = res == "vram" ? "VRAM" : res == "mem" ? "memory" : res;
    json spec = base("MAE by history at submission and method: " + said, rows);
    spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
    spec["encoding"] = {
        {"x", {{"field", "method"}, {"type", "nominal"}, {"title", "method"}, {"sort", nullptr}}},
        {"xOffset", field("subgroup", "nominal", "subgroup")},
        {"y", field("mae", "quantitative", "MAE")},
        {"color", {{"field", "subgroup"}, {"type", "nominal"}, {"title", "history at submission"},
                   {"sort", {"exact_script", "user_only", "none"}}}},
        {"tooltip", json::array({field("method", "nominal", "method"),
                                 field("subgroup", "nominal", "subgroup"),
                                 tooltip_num("mae", "MAE", ".4f"),
                                 tooltip_num("acc10", "Acc@10%", ".1%"),
                                 tooltip_num("n", "jobs", ",d")})}};
    out.push_back({"subgroups-" + res, "methods", "Error by subgroup: " + said, spec});
  }
  return out;
}

std::vector<Plot> coverage_plots(const std::vector<PredictedJob>& preds) {
  json rows = json::array();
  for (const CoverageRow& c : coverage_rows(preds)) {
    rows.push_back({{"resource", c.resource}, {"route", c.route}, {"n", c.n},
                    {"observed", c.observed}, {"nominal", c.nominal}, {"scripts", c.scripts},
                    {"lo", c.lo}, {"hi", c.hi}});
  }
  if (rows.empty()) return {};
  json bars = {{"mark", {{"type", "bar"}}},
               {"encoding",
                {{"x", {{"field", "route"}, {"type", "nominal"}, {"title", "route"}}},
                 {"xOffset", field("resource", "nominal", "resource")},
                 {"y", {{"field", "observed"}, {"type", "quantitative"},
                        {"title", "share of jobs at or under the bound"},
                        {"scale", {{"domain", {0, 1}}}}}},
                 {"color", field("resource", "nominal", "resource")},
                 {"tooltip", json::array({field("resource", "nominal", "resource"),
                                          field("route", "nominal", "route"),
                                          tooltip_num("observed", "observed coverage", ".1%"),
                                          tooltip_num("nominal", "nominal coverage", ".1%"),
                                          tooltip_num("lo", "95% interval from", ".1%"),
                                          tooltip_num("hi", "95% interval to", ".1%"),
                                          tooltip_num("n", "jobs", ",d"),
                                          tooltip_num("scripts", "scripts", ",d")})}}}};
  // The script-bootstrap interval of the observed share.
  json whiskers = {{"mark", {{"type", "rule"}, {"color", "#444"}}},
                   {"encoding",
                    {{"x", {{"field", "route"}, {"type", "nominal"}}},
                     {"xOffset", field("resource", "nominal", "resource")},
                     {"y", {{"field", "lo"}, {"type", "quantitative"}}},
                     {"y2", {{"field", "hi"}}}}}};
  json ticks = {{"mark", {{"type", "tick"}, {"color", "black"}, {"thickness", 2}}},
                {"encoding",
                 {{"x", {{"field", "route"}, {"type", "nominal"}}},
                  {"xOffset", field("resource", "nominal", "resource")},
                  {"y", {{"field", "nominal"}, {"type", "quantitative"}}},
                  {"tooltip", json::array({tooltip_num("nominal", "nominal coverage", ".1%")})}}}};
  json spec = base("Upper bound: observed coverage (bars, with its 95% interval over scripts) "
                   "against nominal (ticks)", rows);
  spec["layer"] = json::array({bars, whiskers, ticks});
  return {{"coverage", "coverage", "Bound coverage", spec}};
}

std::vector<Plot> routing_plots(const json& eval) {
  json shares = json::array(), latency = json::array();
  std::set<std::string> timed;
  for (const json& e : eval.at("results")) {
    const std::string who = e.at("method").get<std::string>() + " · " + e.at("resource").get<std::string>();
    if (e.contains("routes") && e["routes"].is_object()) {
      for (auto it = e["routes"].begin(); it != e["routes"].end(); ++it) {
        shares.push_back({{"row", who}, {"route", it.key()}, {"jobs", it->get<double>()}});
      }
    }
    const std::string method = e.at("method").get<std::string>();
    if (e.contains("latency_us") && e["latency_us"].is_object() && timed.insert(method).second) {
      for (auto it = e["latency_us"].begin(); it != e["latency_us"].end(); ++it) {
        latency.push_back({{"method", method}, {"route", it.key()}, {"n", it->value("n", int64_t{0})},
                           {"p50", it->value("p50", 0.0)}, {"p99", it->value("p99", 0.0)}});
      }
    }
  }
  std::vector<Plot> out;
  if (!shares.empty()) {
    json spec = base("Routing: share of scored test jobs per route", shares);
    std::set<std::string> rows;
    for (const json& r : shares) rows.insert(r.at("row").get<std::string>());
    spec["height"] = 18 * static_cast<int>(rows.size());  // a step height cannot fit the container
    spec["mark"] = {{"type", "bar"}};
    spec["transform"] = json::array({{{"joinaggregate", json::array({{{"op", "sum"}, {"field", "jobs"}, {"as", "total"}}})},
                                      {"groupby", json::array({"row"})}},
                                     {{"calculate", "datum.jobs / datum.total"}, {"as", "share"}}});
    spec["encoding"] = {
        {"y", {{"field", "row"}, {"type", "nominal"}, {"title", nullptr}, {"sort", nullptr}}},
        {"x", {{"field", "share"}, {"type", "quantitative"}, {"title", "share of jobs"},
               {"stack", "zero"}, {"axis", {{"format", "%"}}}}},
        {"color", field("route", "nominal", "route")},
        {"tooltip", json::array({field("row", "nominal", "method · resource"),
                                 field("route", "nominal", "route"),
                                 tooltip_num("jobs", "jobs", ",d"),
                                 tooltip_num("share", "share", ".1%")})}};
    out.push_back({"routing", "routing", "Routing shares", spec});
  }
  if (!latency.empty()) {
    json spec = base("Batch-1 latency per route (p99, symmetric log scale; tooltip has p50)", latency);
    spec["mark"] = {{"type", "bar"}};
    spec["encoding"] = {
        {"x", {{"field", "route"}, {"type", "nominal"}, {"title", "route"}}},
        {"xOffset", field("method", "nominal", "method")},
        {"y", {{"field", "p99"}, {"type", "quantitative"}, {"title", "p99 latency (µs)"},
               {"scale", {{"type", "symlog"}}}}},
        {"color", field("method", "nominal", "method")},
        {"tooltip", json::array({field("method", "nominal", "method"),
                                 field("route", "nominal", "route"),
                                 tooltip_num("p50", "p50 (µs)", ",.1f"),
                                 tooltip_num("p99", "p99 (µs)", ",.1f"),
                                 tooltip_num("n", "timed jobs", ",d")})}};
    out.push_back({"latency", "routing", "Latency per route", spec});
  }
  return out;
}

}  // namespace

std::vector<Plot> usage_plots(const std::vector<UsagePoint>& usage);  // usage.cpp
// Waste and failures per policy; plot ids SECTION-waste and SECTION-failures.
std::vector<Plot> sim_plots(const SimResults& sim, const std::string& section);  // sim.cpp

std::vector<Plot> make_plots(const ReportInput& in) {
  std::vector<Plot> out;
  auto append = [&out](std::vector<Plot> more) {
    for (Plot& p : more) out.push_back(std::move(p));
  };
  append(accuracy_plots(in.predictions));
  if (in.eval) {
    out.push_back(methods_plot(*in.eval));
    append(subgroup_plots(*in.eval));
  }
  append(coverage_plots(in.predictions));
  if (in.eval) append(routing_plots(*in.eval));
  append(usage_plots(in.usage));
  if (in.recommendations) append(sim_plots(in.recommendations->totals, "recommendations"));
  if (in.sim) append(sim_plots(*in.sim, "sizing"));
  // Vega labels a plot's container with its description (aria-label), else "Vega visualization"
  // for every plot alike: the title (and subtitle) tell a screen reader which plot it is.
  for (Plot& p : out) {
    if (p.spec.contains("description")) continue;
    const json& t = p.spec.at("title");
    p.spec["description"] = t.is_string() ? t.get<std::string>()
                                           : t.at("text").get<std::string>() + ": " +
                                                 t.value("subtitle", std::string());
  }
  return out;
}

}  // namespace peakcast::report
