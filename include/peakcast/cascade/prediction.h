// What a prediction says about one job: per resource the utilization, the bytes it means, how it
// was reached (route, expert, gamma, history used) and a one-line rationale. `peakcast predict
// --json` prints exactly to_json(); the service answers with the same object.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/job.h"

namespace peakcast::cascade {

// How a resource's value was reached:
//   bypass      history alone (the gate trusted it, or history alone at this level)
//   encoder     the code model ran on the script (fused with history, or Q alone)
//   cache       the code model's output for the same script text came from the exact cache
//   no_history  no history at all: the code model's Q (the history-only kind: its fallback)
//   tree        Q from the tree route (XGBoost on request and history features; q_source
//               tree_route), with or without history: the code model did not run for it
enum class Route { kBypass, kEncoder, kCache, kNoHistory, kTree };
inline constexpr std::array<Route, 5> kRoutes = {Route::kBypass, Route::kEncoder, Route::kCache,
                                                 Route::kNoHistory, Route::kTree};
std::string_view route_name(Route r);  // "bypass", "encoder", "cache", "no_history", "tree"

// Where the Q a resource's value used came from: none (history alone, the history-only kind, a
// resource not learned), a code-model run for this answer, the exact cache, or the tree route.
// The route says as much except under no_history, which a run or the cache may serve; /metrics
// counts code-model calls and cache hits by it. Not part of the JSON answer.
enum class QOrigin { kNone, kCodeModel, kCache, kTreeRoute };

struct ResourcePrediction {
  double util = 0.0;                 // predicted peak / request, in [0, cap]
  std::optional<uint64_t> bytes;     // util x capacity, when the capacity is known
  Route route = Route::kNoHistory;
  QOrigin q_origin = QOrigin::kNone;
  std::string expert;                // history expert used ("last1", ...), empty when none
  std::optional<double> gamma;       // fusion weight on the code model, when fused
  int history_n = 0;                 // eligible history jobs at the answering level
  std::string history_level;         // "exact_script", "user", "none"
  // Upper bound with stated coverage and a recommended request (docs/method.md §10), when the model
  // was calibrated for them.
  std::optional<double> upper_util;
  std::optional<double> upper_coverage;
  std::optional<uint64_t> recommended_bytes;
  std::string rationale;             // one line, for humans
};

struct JobPrediction {
  std::string job_id;
  ResourcePrediction mem;
  std::optional<ResourcePrediction> vram;  // null for CPU-only jobs
  bool scripts_absent = false;             // the code model read identity text, not a script

  // The prediction for resource r: &mem, or &*vram (nullptr for a CPU-only job).
  const ResourcePrediction* of(Resource r) const {
    return r == Resource::kMem ? &mem : (vram ? &*vram : nullptr);
  }
  ResourcePrediction* of(Resource r) { return const_cast<ResourcePrediction*>(std::as_const(*this).of(r)); }
};

nlohmann::json to_json(const ResourcePrediction& p);
// {"job_id": ..., "predictions": {"mem": {...}, "vram": {...} | null}}
nlohmann::json to_json(const JobPrediction& p);

}  // namespace peakcast::cascade
