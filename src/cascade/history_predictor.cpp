// History-only predictor: hierarchical exact -> user -> fallback with one frozen expert.
#include "peakcast/cascade/history_predictor.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "peakcast/core/units.h"

namespace peakcast::cascade {
namespace {

std::string format_util(double u) { return fmt::format("{:.3f}", u); }

Result<double> number_in(const nlohmann::json& v, const std::string& key, double lo, double hi) {
  if (!v.is_number()) return Status::invalid(key + ": expected a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return Status::invalid(key + ": out of range [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "] (" + v.dump() + ")");
  }
  return d;
}

}  // namespace

Result<HistoryPredictorConfig> history_config_from_manifest(const nlohmann::json& m) {
  if (!m.is_object()) return Status::invalid("manifest: expected a JSON object");
  HistoryPredictorConfig c;
  if (auto it = m.find("util_cap"); it != m.end()) {
    auto d = number_in(*it, "util_cap", 1e-6, 1e6);
    if (!d) return d.status();
    c.util_cap = *d;
  }
  for (auto it = m.begin(); it != m.end(); ++it) {
    const std::string& key = it.key();
    if (key == "format_version" || key == "kind" || key == "util_cap") continue;
    if (key == "trained_on") {
      if (!it->is_string()) return Status::invalid("trained_on: expected a string");
      c.trained_on = it->get<std::string>();
    } else if (key == "experts" || key == "fallback") {
      if (!it->is_object()) return Status::invalid(key + ": expected an object {\"mem\": .., \"vram\": ..}");
      for (auto r = it->begin(); r != it->end(); ++r) {
        const std::string field = key + "." + r.key();
        auto res = parse_resource(r.key());
        if (!res) return Status::invalid(field + ": unknown resource (valid: mem, vram)");
        if (key == "experts") {
          auto e = r->is_string() ? history::parse_expert(r->get<std::string>()) : std::nullopt;
          if (!e) return Status::invalid(field + ": unknown expert (valid: last1, median3, median5, ewma)");
          c.expert[idx(*res)] = *e;
        } else {
          auto d = number_in(*r, field, 0.0, c.util_cap);
          if (!d) return d.status();
          c.fallback[idx(*res)] = *d;
        }
      }
    } else {
      return Status::invalid(key + ": unknown manifest key for kind \"history\" (valid: "
                             "format_version, kind, util_cap, experts, fallback, trained_on)");
    }
  }
  return c;
}

HistoryPredictor::HistoryPredictor(HistoryPredictorConfig config) : config_(std::move(config)) {}

ResourcePrediction HistoryPredictor::predict_one(const Job& job, Resource r,
                                                 const history::HistoryStore& history) const {
  const history::HistoryView view = history.query(job, r);
  const history::Expert e = config_.expert[idx(r)];
  ResourcePrediction p;
  const double raw = view.estimate(e, config_.fallback[idx(r)]);
  p.util = std::clamp(raw, 0.0, config_.util_cap);
  if (auto cap = capacity_bytes(job, r)) p.bytes = bytes_from_double(p.util * *cap);
  p.history_level = std::string(history::level_name(view.level));
  const std::string res(resource_name(r));
  if (view.level == history::Level::kNone) {
    p.route = Route::kNoHistory;
    p.history_n = 0;
    p.rationale = res + ": no history for this script or user; fallback " + format_util(p.util);
    return p;
  }
  p.expert = std::string(history::expert_name(e));
  p.history_n = view.answering().count;
  if (view.level == history::Level::kExactScript) {
    p.route = Route::kBypass;
    p.rationale = res + ": " + p.expert + " of " + std::to_string(p.history_n) +
                  " earlier run(s) of the same script = " + format_util(p.util);
  } else {
    p.route = Route::kNoHistory;
    p.rationale = res + ": no run of this script yet; " + p.expert + " of " +
                  std::to_string(p.history_n) + " job(s) of the same user = " + format_util(p.util);
  }
  return p;
}

JobPrediction HistoryPredictor::predict(const Job& job, const history::HistoryStore& history) const {
  JobPrediction out;
  out.job_id = job.job_id;
  out.mem = predict_one(job, Resource::kMem, history);
  if (job.req_gpus && *job.req_gpus > 0) out.vram = predict_one(job, Resource::kVram, history);
  out.scripts_absent = !job.script || job.script->empty();
  return out;
}

std::string HistoryPredictor::describe() const {
  std::string s = "history (format " + std::to_string(kHistoryFormatVersion) + "): mem " +
                  std::string(history::expert_name(config_.expert[0])) + ", vram " +
                  std::string(history::expert_name(config_.expert[1])) + ", fallback " +
                  format_util(config_.fallback[0]) + "/" + format_util(config_.fallback[1]) +
                  ", cap " + format_util(config_.util_cap);
  if (!config_.trained_on.empty()) s += ", trained on " + config_.trained_on;
  return s;
}

}  // namespace peakcast::cascade
