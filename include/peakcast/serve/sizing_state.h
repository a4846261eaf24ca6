// The daemon's calibrated upper bound and recommended request (docs/bounds.md).
//
// Upper bound. One sizing::OnlineBound per resource (adaptive online conformal, per history
// level), in utilization units. It learns from every completion the daemon learns (POST
// /v1/complete or slurm-sync): the point prediction the served model gives for the completed job
// at its own submission (the history then held only jobs that had ended before it), its label and
// whether it was censored (OOM). Durability: the bound is not stored; at start the daemon
// rebuilds it from the completion store, replaying the `rebuild_jobs` most recent completions
// (by end time) through the same model before serving. So it is as durable as the store.
// Before a level (or the pooled window) has any score the model's own upper bound, if it has
// one, is kept and the answer says so (upper_source "model"; else "online").
//
// Recommended request (memory only). sizing::recommend_request from the upper bound in bytes
// (upper_util x the request), the user's request, the job's partition and -- while the script's
// most recent runs ended OUT_OF_MEMORY -- the largest of their requests; per-partition settings
// from `peakcastd --sizing-config FILE` (sizing/recommend.h). The answer carries the rule that
// set the value. By default the recommendation never exceeds the user's request.
//
// Thread safety: every method may be called concurrently (one internal mutex).
#pragma once

#include <array>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/cascade/prediction.h"
#include "peakcast/core/job.h"
#include "peakcast/history/history.h"
#include "peakcast/sizing/online_bound.h"
#include "peakcast/sizing/recommend.h"

namespace peakcast::serve {

// The bound's defaults: coverage 0.9 with the settings `peakcast evaluate` measures
// (sizing::served_bound_options; docs/bounds.md).
inline sizing::OnlineBoundOptions default_bound_options() { return sizing::served_bound_options(0.9); }

struct SizingOptions {
  sizing::OnlineBoundOptions bound = default_bound_options();
  sizing::RecommendConfig recommend;  // defaults unless --sizing-config
  std::string config_source = "built-in defaults";  // the file, for /healthz and logs
  size_t rebuild_jobs = 5000;         // completions replayed into the bound at start
  double util_cap = 1.0;              // labels' cap: bounds are clipped to it (the Service sets it)
};

class SizingState {
 public:
  explicit SizingState(SizingOptions options = {});

  // A completed job: `p` is the served model's prediction for it at its submission.
  void observe(const Job& job, const cascade::JobPrediction& p);

  // Replaces the upper bound of `p` by the online one (where it has evidence) and sets the
  // memory recommendation. `failed_request` is the largest request among the script's trailing
  // OUT_OF_MEMORY runs (nullopt when the most recent run did not end so).
  struct Applied {
    std::array<std::string, kNumResources> upper_source;  // "online", "model" or "" (none)
    std::string rule;                                     // recommend_request's rule; "" = none
  };
  Applied apply(const Job& job, std::optional<uint64_t> failed_request,
                cascade::JobPrediction& p) const;

  // Adds "upper_source" to each resource's prediction and "recommendation_rule" to memory's.
  static void annotate(const Applied& a, nlohmann::json& answer);

  const SizingOptions& options() const { return options_; }
  nlohmann::json to_json() const;  // for /healthz: coverage, updates per level, config source

 private:
  void apply_bound(Resource r, const std::string& script_key, cascade::ResourcePrediction& rp,
                   Applied& a) const;

  SizingOptions options_;
  mutable std::mutex mu_;
  std::array<sizing::OnlineBound, kNumResources> bounds_;
};

}  // namespace peakcast::serve
