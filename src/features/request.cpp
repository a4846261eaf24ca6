#include "peakcast/features/request.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace peakcast::features {
namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kFormatVersion = 1;
}  // namespace

const std::array<std::string_view, kNumRequestFeatures>& request_feature_names() {
  static const std::array<std::string_view, kNumRequestFeatures> kNames = {
      "log1p_req_cpus",  "log1p_req_mem_gib",         "log1p_req_gpus", "log1p_req_time_h",
      "log1p_mem_per_core_gib", "log1p_gpu_mem_gib", "has_gpu",        "has_mem_request"};
  return kNames;
}

std::array<float, kNumRequestFeatures> raw_request_features(const Job& job) {
  std::array<float, kNumRequestFeatures> f{};
  double cpus = job.req_cpus && *job.req_cpus > 0 ? *job.req_cpus : 0.0;
  double mem_gib = job.req_mem_bytes ? static_cast<double>(*job.req_mem_bytes) / kGiB : 0.0;
  double gpus = job.req_gpus && *job.req_gpus > 0 ? *job.req_gpus : 0.0;
  double hours = job.req_time_s && *job.req_time_s > 0 ? static_cast<double>(*job.req_time_s) / 3600.0 : 0.0;
  double gpu_mem_gib = job.gpu_mem_bytes ? static_cast<double>(*job.gpu_mem_bytes) / kGiB : 0.0;
  f[0] = static_cast<float>(std::log1p(cpus));
  f[1] = static_cast<float>(std::log1p(mem_gib));
  f[2] = static_cast<float>(std::log1p(gpus));
  f[3] = static_cast<float>(std::log1p(hours));
  f[4] = static_cast<float>(std::log1p(cpus > 0 ? mem_gib / cpus : 0.0));
  f[5] = static_cast<float>(std::log1p(gpu_mem_gib));
  f[6] = gpus > 0 ? 1.0f : 0.0f;
  f[7] = mem_gib > 0 ? 1.0f : 0.0f;
  return f;
}

void RequestStandardizer::fit(const std::vector<const Job*>& train) {
  std::array<double, kNumRequestFeatures> sum{}, sum_sq{};
  size_t n = 0;
  for (const Job* job : train) {
    if (job == nullptr) continue;
    auto f = raw_request_features(*job);
    for (int k = 0; k < kNumRequestFeatures; ++k) {
      sum[k] += f[k];
      sum_sq[k] += static_cast<double>(f[k]) * f[k];
    }
    ++n;
  }
  for (int k = 0; k < kNumRequestFeatures; ++k) {
    if (n == 0) {
      mean_[k] = 0;
      std_[k] = 1;
      continue;
    }
    mean_[k] = sum[k] / static_cast<double>(n);
    double var = sum_sq[k] / static_cast<double>(n) - mean_[k] * mean_[k];
    double sd = var > 0 ? std::sqrt(var) : 0.0;
    std_[k] = sd > 1e-8 ? sd : 1.0;  // a constant feature stays centred, not blown up
  }
  fitted_ = true;
}

std::array<float, kNumRequestFeatures> RequestStandardizer::transform(const Job& job) const {
  auto f = raw_request_features(job);
  for (int k = 0; k < kNumRequestFeatures; ++k) {
    // Held within a million deviations: a double past float's range converts with undefined
    // behaviour (a file's mean of 1e300); no request the readers accept comes near.
    f[k] = static_cast<float>(std::clamp((f[k] - mean_[k]) / std_[k], -1e6, 1e6));
  }
  return f;
}

nlohmann::json RequestStandardizer::to_json() const {
  nlohmann::json j;
  j["format_version"] = kFormatVersion;
  auto names = nlohmann::json::array();
  for (auto n : request_feature_names()) names.push_back(std::string(n));
  j["features"] = names;
  j["mean"] = mean_;
  j["std"] = std_;
  return j;
}

Result<RequestStandardizer> RequestStandardizer::from_json(const nlohmann::json& j) {
  const std::string where = "request standardizer";
  if (!j.is_object()) return Status::invalid(where + ": not a JSON object");
  if (!j.contains("format_version") || !j["format_version"].is_number_integer()) {
    return Status::invalid(where + ": format_version: missing or not an integer");
  }
  // Read whole: get<int>() would wrap 4294967297 to 1.
  const int64_t version = j["format_version"].get<int64_t>();
  if (version > kFormatVersion) {
    return Status::unsupported(where + ": format_version: " + std::to_string(version) +
                               " is newer than this build reads (" +
                               std::to_string(kFormatVersion) + ")");
  }
  if (j.contains("features")) {
    const auto& names = j["features"];
    if (!names.is_array() || names.size() != kNumRequestFeatures) {
      return Status::invalid(where + ": features: expected " +
                             std::to_string(kNumRequestFeatures) + " names");
    }
    for (int k = 0; k < kNumRequestFeatures; ++k) {
      if (!names[k].is_string() || names[k].get<std::string>() != request_feature_names()[k]) {
        return Status::invalid(where + ": features[" + std::to_string(k) + "]: expected " +
                               std::string(request_feature_names()[k]));
      }
    }
  }
  RequestStandardizer s;
  for (const char* field : {"mean", "std"}) {
    if (!j.contains(field) || !j[field].is_array() || j[field].size() != kNumRequestFeatures) {
      return Status::invalid(where + ": " + field + ": expected an array of " +
                             std::to_string(kNumRequestFeatures) + " numbers");
    }
    auto& dst = std::string_view(field) == "mean" ? s.mean_ : s.std_;
    for (int k = 0; k < kNumRequestFeatures; ++k) {
      const auto& v = j[field][k];
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        return Status::invalid(where + ": " + field + "[" + std::to_string(k) + "]: not a finite number");
      }
      dst[k] = v.get<double>();
    }
  }
  for (int k = 0; k < kNumRequestFeatures; ++k) {
    if (!(s.std_[k] > 1e-8)) {  // fit() leaves every std above 1e-8
      return Status::invalid(where + ": std[" + std::to_string(k) + "]: must be > 1e-8");
    }
  }
  s.fitted_ = true;
  return s;
}

}  // namespace peakcast::features
