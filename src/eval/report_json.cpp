#include <optional>

#include <nlohmann/json.hpp>

#include "peakcast/eval/report.h"

namespace peakcast::eval {

namespace {

// No job (an empty subgroup): null, not the 0.0 an empty sum leaves, which reads as a perfect score.
nlohmann::json metrics_json(const Metrics& m) {
  if (m.n == 0) return {{"n", 0}, {"mae", nullptr}, {"mse", nullptr}, {"rmse", nullptr}, {"acc10", nullptr}};
  return {{"n", m.n}, {"mae", m.mae}, {"mse", m.mse}, {"rmse", m.rmse}, {"acc10", m.acc10}};
}

// A bootstrap interval of the MAE difference, or null; with "days" or "scripts" by what it resampled.
nlohmann::json interval_json(const std::optional<BootstrapInterval>& b, bool by_script) {
  if (!b) return nullptr;
  nlohmann::json j = {{"point", b->point}, {"mean", b->mean}, {"lo", b->lo}, {"hi", b->hi},
                      {"resamples", b->resamples}};
  if (by_script) {
    j["scripts"] = b->scripts;
  } else {
    j["days"] = b->days;
  }
  return j;
}

nlohmann::json per_resource(const std::array<size_t, kNumResources>& v) {
  return {{"mem", v[0]}, {"vram", v[1]}};
}

}  // namespace

nlohmann::json to_json(const ingest::ReadStats& s) {
  return {{"lines", s.lines},
          {"jobs", s.jobs},
          {"skipped", s.skipped},
          {"labelled", per_resource(s.labelled)},
          {"clipped", per_resource(s.clipped)},
          {"censored", s.censored},
          {"reasons", s.reasons}};
}

nlohmann::json choices_json(const EvalReport& r) {
  nlohmann::json choices = nlohmann::json::object();
  for (const auto& [method, ch] : r.choices) {
    nlohmann::json c = nlohmann::json::object();
    for (const auto& [k, v] : ch) c[k] = v;
    choices[method] = std::move(c);
  }
  return choices;
}

nlohmann::json left_out_json(const std::vector<std::pair<std::string, std::string>>& left_out) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [method, reason] : left_out) out.push_back({{"method", method}, {"reason", reason}});
  return out;
}

nlohmann::json to_json(const EvalReport& r) {
  nlohmann::json j;
  j["trace"] = {{"path", r.trace_path}, {"format", r.trace_format}};
  j["config"] = {{"split", format_split(r.split_config)},
                 {"seed", r.seed},
                 {"seeds", r.seeds},
                 {"latency_jobs", r.latency_jobs},
                 {"bootstrap", r.bootstrap},
                 {"util_cap", r.util_cap},
                 {"baseline", r.baseline}};
  j["split"] = {{"total", r.split.total},
                {"train", r.split.train},
                {"validation", r.split.validation},
                {"test", r.split.test},
                {"purged_train", r.split.purged_train},
                {"purged_validation", r.split.purged_validation},
                {"first_validation_submit", seconds_from_ms(r.split.first_validation_submit)},
                {"first_test_submit", seconds_from_ms(r.split.first_test_submit)},
                {"scored", per_resource(r.scored)}};
  j["reader"] = to_json(r.reader);
  j["reader"]["notes"] = r.reader_notes;
  j["fallback"] = {{"mem", {{"value", r.fallback[0]}, {"train_n", r.fallback_n[0]}}},
                   {"vram", {{"value", r.fallback[1]}, {"train_n", r.fallback_n[1]}}}};
  nlohmann::json results = nlohmann::json::array();
  const std::string diff_key = "mae_diff_vs_" + r.baseline;
  for (const ResultRow& row : r.results) {
    nlohmann::json e = metrics_json(row.metrics);
    e["method"] = row.method;
    e["resource"] = std::string(resource_name(row.resource));
    e[diff_key] = interval_json(row.mae_diff_vs_baseline, false);
    e[diff_key + "_by_script"] = interval_json(row.mae_diff_by_script, true);
    nlohmann::json sub;
    for (size_t g = 0; g < kSubgroupNames.size(); ++g) {
      sub[std::string(kSubgroupNames[g])] = metrics_json(row.subgroups[g]);
    }
    e["subgroups"] = std::move(sub);
    e["routes"] = row.routes;
    e["seeds"] = row.seeds;
    e["sd"] = {{"mae", row.metrics_sd.mae},
               {"mse", row.metrics_sd.mse},
               {"rmse", row.metrics_sd.rmse},
               {"acc10", row.metrics_sd.acc10}};
    if (row.routing) {
      e["routing"] = {{"n", row.routing->n},
                      {"routed", row.routing->routed},
                      {"encoder_share", row.routing->encoder_share},
                      {"tree_share", row.routing->tree_share},
                      {"bypass_share", row.routing->bypass_share},
                      {"cache_share", row.routing->cache_share}};
    } else {
      e["routing"] = nullptr;
    }
    nlohmann::json lat = nlohmann::json::object();
    for (const auto& [route, l] : row.latency_us) {
      lat[route] = {{"n", l.n}, {"p50", l.p50_us}, {"p99", l.p99_us}};
    }
    e["latency_us"] = std::move(lat);
    add_coverage_json(row.bounds, e);
    results.push_back(std::move(e));
  }
  j["results"] = std::move(results);
  j["choices"] = choices_json(r);
  j["notes"] = r.notes;
  // Always a list, so that a script over many traces can read it without checking for it.
  j["left_out"] = left_out_json(r.left_out);
  return j;
}

}  // namespace peakcast::eval
