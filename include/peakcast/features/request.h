// Request metadata features (METHOD.md §4): log requested CPUs, memory, GPUs, walltime, memory
// per core, GPU capacity; standardized with statistics fitted on the training block only.
#pragma once

#include <array>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::features {

inline constexpr int kNumRequestFeatures = 8;
// log1p(cpus), log1p(mem GiB), log1p(gpus), log1p(walltime h), log1p(mem per core GiB),
// log1p(gpu mem GiB), has_gpu, has_mem_request. Missing values are 0 before standardization.
std::array<float, kNumRequestFeatures> raw_request_features(const Job& job);

class RequestStandardizer {
 public:
  void fit(const std::vector<const Job*>& train);
  std::array<float, kNumRequestFeatures> transform(const Job& job) const;
  nlohmann::json to_json() const;
  static Result<RequestStandardizer> from_json(const nlohmann::json& j);

 private:
  std::array<double, kNumRequestFeatures> mean_{};
  std::array<double, kNumRequestFeatures> std_{};
};

}  // namespace peakcast::features
