// Request metadata features (docs/method.md §4): log requested CPUs, memory, GPUs, walltime, memory
// per core, GPU capacity; standardized with statistics fitted on the training block only.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::features {

inline constexpr int kNumRequestFeatures = 8;
// log1p(cpus), log1p(mem GiB), log1p(gpus), log1p(walltime h), log1p(mem per core GiB),
// log1p(gpu mem GiB), has_gpu, has_mem_request. Missing values are 0 before standardization.
// req_cpus <= 0, req_gpus <= 0, req_time_s <= 0 count as missing. mem per core needs both.
std::array<float, kNumRequestFeatures> raw_request_features(const Job& job);

// Names in feature order ("log1p_req_cpus", ...), as written to JSON and shown in rationales.
const std::array<std::string_view, kNumRequestFeatures>& request_feature_names();

// (x - mean) / std per feature, mean and std (population) from the training block only; a
// constant feature gets std 1. Before fit() it is the identity. Immutable after fit: transform()
// is const and thread-safe. JSON: {"format_version": 1, "features": [...], "mean": [...],
// "std": [...]}; doubles round-trip exactly; a newer format_version is refused (kUnsupported).
class RequestStandardizer {
 public:
  void fit(const std::vector<const Job*>& train);  // null pointers are skipped
  bool fitted() const { return fitted_; }
  std::array<float, kNumRequestFeatures> transform(const Job& job) const;
  nlohmann::json to_json() const;
  static Result<RequestStandardizer> from_json(const nlohmann::json& j);

 private:
  std::array<double, kNumRequestFeatures> mean_{0, 0, 0, 0, 0, 0, 0, 0};
  std::array<double, kNumRequestFeatures> std_{1, 1, 1, 1, 1, 1, 1, 1};
  bool fitted_ = false;
};

}  // namespace peakcast::features
