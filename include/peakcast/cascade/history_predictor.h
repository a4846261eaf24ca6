// The history-only predictor (model kind "history"): per resource one frozen expert and a
// fallback utilization, answered hierarchically exact script -> same user -> fallback
// (docs/method.md §3; with expert last1 this is "Hierarchical Same-Script Last-1").
//
// Route: "bypass" when exact-script history answered (the cascade would skip the encoder there),
// else "no_history" (this kind has no code model). bytes = util x capacity: host memory
// capacity is req_mem_bytes; VRAM capacity is req_gpus x gpu_mem_bytes. A job without GPUs gets
// no VRAM prediction.
//
// Model directory: manifest.json
//   {"format_version": 1, "kind": "history",
//    "util_cap": 1.0,                                   (optional, > 0)
//    "experts": {"mem": "last1", "vram": "last1"},      (optional; last1|median3|median5|ewma)
//    "fallback": {"mem": 0.5, "vram": 0.5},             (optional, in [0, util_cap])
//    "trained_on": "free text"}                          (optional)
// Unknown keys are errors.
#pragma once

#include <array>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/cascade/predictor.h"
#include "peakcast/history/history.h"

namespace peakcast::cascade {

inline constexpr int kHistoryFormatVersion = 1;

struct HistoryPredictorConfig {
  double util_cap = 1.0;
  std::array<history::Expert, kNumResources> expert{history::Expert::kLast1,
                                                    history::Expert::kLast1};
  std::array<double, kNumResources> fallback{0.5, 0.5};
  std::string trained_on;
};

// Reads the config from a parsed manifest (kind "history"); errors name the key.
Result<HistoryPredictorConfig> history_config_from_manifest(const nlohmann::json& manifest);

class HistoryPredictor final : public Predictor {
 public:
  explicit HistoryPredictor(HistoryPredictorConfig config);
  JobPrediction predict(const Job& job, const history::HistoryStore& history) const override;
  std::string describe() const override;
  double util_cap() const override { return config_.util_cap; }
  const HistoryPredictorConfig& config() const { return config_; }

 private:
  ResourcePrediction predict_one(const Job& job, Resource r,
                                 const history::HistoryStore& history) const;
  HistoryPredictorConfig config_;
};

}  // namespace peakcast::cascade
