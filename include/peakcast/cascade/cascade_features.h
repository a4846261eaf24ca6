// The features the gate C_{r,e} and the fusion G_{r,e} read (docs/method.md §5–6). Gate features are
// all known before the encoder runs: the candidate expert's value, the four experts, their recent
// walk-forward errors and the statistics of the exact-script and same-user histories, agreement
// between experts and levels,
// the request, whether the job has script text. Fusion adds Q, Q - H and |Q - H|.
// Missing statistics (a level with no history) are NaN, which XGBoost treats as missing.
#pragma once

#include <array>
#include <string_view>

#include "peakcast/core/job.h"
#include "peakcast/history/history.h"

namespace peakcast::cascade {

using history::HistoryViews;

inline constexpr int kGateFeatures = 41;
inline constexpr int kFusionFeatures = kGateFeatures + 3;
using GateFeatures = std::array<float, kGateFeatures>;
using FusionFeatures = std::array<float, kFusionFeatures>;

const std::array<std::string_view, kGateFeatures>& gate_feature_names();
const std::array<std::string_view, kFusionFeatures>& fusion_feature_names();

// `priors` matter only for e = kCombined (the combined estimate's shrinkage targets).
GateFeatures gate_features(const Job& job, const history::HistoryView& view, history::Expert e,
                           double fallback, const history::ExpertPriors& priors = {});
FusionFeatures fusion_features(const GateFeatures& gate, double h, double q);

// The resources the cascade predicts for a job: memory always, VRAM when GPUs are requested.
bool relevant(const Job& job, Resource r);

}  // namespace peakcast::cascade
