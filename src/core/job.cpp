#include "peakcast/core/job.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace peakcast {

std::string_view resource_name(Resource r) { return r == Resource::kMem ? "mem" : "vram"; }

std::optional<Resource> parse_resource(std::string_view name) {
  if (name == "mem" || name == "memory") return Resource::kMem;
  if (name == "vram" || name == "gpu_mem") return Resource::kVram;
  return std::nullopt;
}

int64_t ms_from_seconds(double epoch_s) {
  return static_cast<int64_t>(std::floor(epoch_s * 1000.0 + 0.5));
}

std::optional<double> capacity_bytes(const Job& job, Resource r) {
  if (r == Resource::kMem) {
    if (job.req_mem_bytes && *job.req_mem_bytes > 0) return static_cast<double>(*job.req_mem_bytes);
    return std::nullopt;
  }
  if (job.req_gpus && *job.req_gpus > 0 && job.gpu_mem_bytes && *job.gpu_mem_bytes > 0) {
    return static_cast<double>(*job.req_gpus) * static_cast<double>(*job.gpu_mem_bytes);
  }
  return std::nullopt;
}

std::optional<double> raw_util(const Job& job, Resource r) {
  const std::optional<uint64_t>& peak = r == Resource::kMem ? job.peak_mem_bytes : job.peak_vram_bytes;
  const std::optional<double> cap = capacity_bytes(job, r);
  if (!peak || !cap) return std::nullopt;
  return static_cast<double>(*peak) / *cap;
}

bool censored_for(const Job& job, Resource r) {
  if (!job.censored) return false;
  // Which limit was hit: Slurm's OUT_OF_MEMORY is the host-memory cgroup; a trace that records
  // only a GPU peak for an OOM job (GPUMemNet's runs at the card's limit) ran out of VRAM. Only
  // the exhausted resource is censored at the cap; the other keeps its measurement, if any.
  const bool vram_oom = job.peak_vram_bytes && !job.peak_mem_bytes;
  return r == (vram_oom ? Resource::kVram : Resource::kMem);
}

bool label_exact(const Job& job, Resource r, double util_cap) {
  // Killed at a limit below its request (Job::ran_mem_bytes): the label is that limit's share of
  // the request, below the cap, and only a lower bound.
  if (censored_for(job, r) && r == Resource::kMem && job.ran_mem_bytes) return false;
  return !censored_for(job, r) || util_cap <= 1.0;
}

void compute_labels(Job& job, double util_cap) {
  job.censored = job.state == "OUT_OF_MEMORY";
  for (Resource r : kResources) {
    const int i = idx(r);
    job.valid[i] = false;
    job.clipped[i] = false;
    job.util[i] = 0.0;
    const bool censored_here = censored_for(job, r);
    std::optional<double> u = raw_util(job, r);
    // An OOM-killed job hit its memory limit: its label is at least the request. Use the cap as
    // the (censored) label even when no peak was recorded, as long as the request is known. One
    // killed at a limit below its request (Job::ran_mem_bytes) is at least that limit's share.
    std::optional<double> floor;
    if (censored_here && r == Resource::kMem && job.req_mem_bytes && *job.req_mem_bytes > 0) {
      floor = job.ran_mem_bytes ? static_cast<double>(*job.ran_mem_bytes) / static_cast<double>(*job.req_mem_bytes)
                                : util_cap;
      if (!u) u = floor;
    }
    if (!u || !(*u >= 0.0)) continue;  // rejects NaN too
    double v = *u;
    if (censored_here) v = std::max(v, floor.value_or(util_cap));
    if (v > util_cap) {
      job.clipped[i] = true;
      v = util_cap;
    }
    job.util[i] = v;
    job.valid[i] = true;
  }
}

namespace {
// Slurm's job states with squeue's and sacct's short codes (22.05's job_state_string and
// job_state_string_compact): the base states, then the flags printed in their place.
constexpr std::pair<std::string_view, std::string_view> kSlurmStates[] = {
    {"CD", "COMPLETED"},    {"F", "FAILED"},         {"OOM", "OUT_OF_MEMORY"}, {"CA", "CANCELLED"},
    {"TO", "TIMEOUT"},      {"NF", "NODE_FAIL"},     {"PR", "PREEMPTED"},      {"BF", "BOOT_FAIL"},
    {"DL", "DEADLINE"},     {"PD", "PENDING"},       {"R", "RUNNING"},         {"S", "SUSPENDED"},
    {"CG", "COMPLETING"},   {"CF", "CONFIGURING"},   {"SO", "STAGE_OUT"},      {"RS", "RESIZING"},
    {"RQ", "REQUEUED"},     {"RF", "REQUEUE_FED"},   {"RH", "REQUEUE_HOLD"},   {"SE", "SPECIAL_EXIT"},
    {"ST", "STOPPED"},      {"RV", "REVOKED"},       {"RD", "RESV_DEL_HOLD"},  {"SI", "SIGNALING"}};
}  // namespace

bool is_slurm_state(std::string_view normalized) {
  return std::any_of(std::begin(kSlurmStates), std::end(kSlurmStates),
                     [&](const auto& s) { return s.second == normalized; });
}

std::string slurm_state_names() {
  std::string out;
  for (const auto& s : kSlurmStates) out.append(out.empty() ? "" : ", ").append(s.second);
  return out;
}

std::string normalize_state(std::string_view state) {
  std::string s;
  for (char c : state) s.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  while (!s.empty() && (s.back() == ' ' || s.back() == '+')) s.pop_back();
  if (auto p = s.find(" BY "); p != std::string::npos) s.resize(p);
  if (s.empty()) return "COMPLETED";
  for (const auto& [code, name] : kSlurmStates) {
    if (s == code) return std::string(name);
  }
  if (s == "CANCELED") return "CANCELLED";  // the American spelling
  return s;
}

}  // namespace peakcast
