// JSON form of a prediction: the object `peakcast predict --json` prints and peakcastd answers.
// Every field of ResourcePrediction but q_origin (accounting for /metrics) is always present
// (absent optionals are null), so consumers (the Slurm hook, scripts) see one stable shape.
#include "peakcast/cascade/prediction.h"

#include <nlohmann/json.hpp>

namespace peakcast::cascade {

std::string_view route_name(Route r) {
  switch (r) {
    case Route::kBypass: return "bypass";
    case Route::kEncoder: return "encoder";
    case Route::kCache: return "cache";
    case Route::kNoHistory: return "no_history";
    case Route::kTree: return "tree";
  }
  return "?";
}

namespace {
template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json to_json(const ResourcePrediction& p) {
  nlohmann::json j = nlohmann::json::object();
  j["util"] = p.util;
  j["bytes"] = or_null(p.bytes);
  j["route"] = std::string(route_name(p.route));
  j["expert"] = p.expert.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.expert);
  j["gamma"] = or_null(p.gamma);
  j["history_n"] = p.history_n;
  j["history_level"] = p.history_level;
  j["upper_util"] = or_null(p.upper_util);
  j["upper_coverage"] = or_null(p.upper_coverage);
  j["recommended_bytes"] = or_null(p.recommended_bytes);
  j["rationale"] = p.rationale;
  return j;
}

nlohmann::json to_json(const JobPrediction& p) {
  nlohmann::json preds = nlohmann::json::object();
  preds["mem"] = to_json(p.mem);
  preds["vram"] = p.vram ? to_json(*p.vram) : nlohmann::json(nullptr);
  nlohmann::json j = nlohmann::json::object();
  j["job_id"] = p.job_id;
  j["predictions"] = std::move(preds);
  return j;
}

}  // namespace peakcast::cascade
