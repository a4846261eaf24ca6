// The one in-memory job record every stage shares, and the utilization labels derived from it
// (docs/method.md §1). A Job holds what the trace said; labels are filled by compute_labels().
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace peakcast {

enum class Resource : int { kMem = 0, kVram = 1 };
inline constexpr int kNumResources = 2;
inline constexpr std::array<Resource, kNumResources> kResources = {Resource::kMem, Resource::kVram};

// "mem" / "vram": the names used in every output and option.
std::string_view resource_name(Resource r);
std::optional<Resource> parse_resource(std::string_view name);

inline constexpr size_t idx(Resource r) { return static_cast<size_t>(r); }

// Event times are int64 epoch milliseconds throughout (Job, history, the service's store).
inline constexpr int64_t kMsPerSecond = 1000;
inline constexpr int64_t kMsPerDay = 86400 * kMsPerSecond;
// Epoch seconds (possibly fractional, as in canonical JSONL) -> ms, rounded to the nearest ms.
int64_t ms_from_seconds(double epoch_s);
inline double seconds_from_ms(int64_t ms) { return static_cast<double>(ms) / 1000.0; }

struct Job {
  // Identity and timeline, in epoch milliseconds: traces that record sub-second times (Nextflow)
  // keep them, so "ended before this submission" is decided on the times the trace recorded.
  // end_ms is when the label became known.
  std::string job_id;
  std::string user;
  int64_t submit_ms = 0;
  std::optional<int64_t> start_ms;
  int64_t end_ms = 0;
  // Slurm state name, normalized: "COMPLETED", "FAILED", "CANCELLED" (the "by UID" suffix dropped),
  // "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", ... Default COMPLETED.
  std::string state = "COMPLETED";

  // The request.
  std::optional<double> req_cpus;
  std::optional<uint64_t> req_mem_bytes;   // whole-job host memory
  std::optional<int> req_gpus;
  std::optional<int64_t> req_time_s;       // walltime limit
  // The memory limit the job ran under, where it was lower than the request its user submitted
  // (peakcastd's Slurm hook lowered --mem to the recommendation; Slurm then records the lowered
  // value). req_mem_bytes then holds the user's request: utilization is a share of what the user
  // asks for, and a job learned at its lowered limit would teach the next answer that its user's
  // jobs use more of their request than they do. Set by peakcastd only (serve/sizing_state.h).
  std::optional<uint64_t> ran_mem_bytes;
  std::optional<uint64_t> gpu_mem_bytes;   // capacity of ONE allocated GPU

  // What identifies "the same script".
  std::optional<std::string> script;       // full text, when the trace has it
  std::optional<std::string> workload;     // identity when there is no script (SWF exe, NF process)
  std::string job_name;
  std::string partition;
  std::string account;
  std::optional<uint64_t> input_bytes;

  // The outcome (absent when not measured).
  std::optional<uint64_t> peak_mem_bytes;
  std::optional<uint64_t> peak_vram_bytes;  // summed over the job's GPUs
  // Nextflow measurements the sizing simulator replays (Sizey's protocol): resident set `rss`,
  // bytes read `rchar` (measured during the run: not known at submission) and the task's own
  // run time `realtime`.
  std::optional<uint64_t> rss_bytes;
  std::optional<uint64_t> read_bytes;
  std::optional<int64_t> realtime_ms;

  // The id of the answer peakcastd gave at this job's submission (/v1/predict's "answer_id"; the
  // Slurm hook writes the answer into the job's comment, slurm-sync reads it back): the daemon
  // matches the completion to that answer by it. "" = unknown. Not a feature of the job.
  std::string answer_id;

  // ---- derived by ingest (compute_labels / script_key) ----
  // SHA-256 hex of the redacted script, else of "workload:" + workload; empty when neither exists.
  std::string script_key;
  std::array<double, kNumResources> util{0.0, 0.0};        // label in [0, cap] where valid
  std::array<bool, kNumResources> valid{false, false};     // resource scored / contributes loss
  std::array<bool, kNumResources> clipped{false, false};   // raw util exceeded cap
  bool censored = false;                                   // OUT_OF_MEMORY: true peak >= request

  bool is_valid(Resource r) const { return valid[idx(r)]; }
  bool any_valid() const { return valid[0] || valid[1]; }  // a label for some resource
  double label(Resource r) const { return util[idx(r)]; }
};

// The capacity behind a utilization, in bytes: the requested memory, or the allocated GPUs'
// memory (req_gpus x gpu_mem_bytes); nullopt when the request does not say it (or it is 0).
std::optional<double> capacity_bytes(const Job& job, Resource r);

// The raw utilization peak / capacity, or nullopt when the resource is not measurable for this
// job (no GPUs, no measurement, no or zero request).
std::optional<double> raw_util(const Job& job, Resource r);

// Whether `job`'s label for `r` is censored (a lower bound): the resource whose limit killed an
// OUT_OF_MEMORY job -- host memory, or VRAM for a trace that records only a GPU peak for it.
bool censored_for(const Job& job, Resource r);

// Whether `job`'s (clipped) label for `r` is its exact value. A censored job ran into its limit,
// the capacity: its utilization was at least 1, so with labels clipped at a cap <= 1 its label,
// the cap, is exact after all; with a cap above 1 it is only a lower bound.
bool label_exact(const Job& job, Resource r, double util_cap);

// The error a prediction of a label is scored by, wherever one is (the cascade's policy, eval's
// history_policy and its MAE). An exact label (label_exact()) scores |pred - y|; a censored one
// that is only a lower bound (an OOM whose request was lowered, or any OOM when util_cap > 1)
// scores max(0, y - pred): under-predicting a job that needed at least y is an error, predicting
// more is not.
inline double scored_error(double pred, double y, bool exact) {
  return exact ? std::abs(pred - y) : std::max(0.0, y - pred);
}

// Fills util/valid/clipped/censored from the request and peaks. cap > 0 (default 1.0).
// OUT_OF_MEMORY jobs are censored: their memory label is set to the cap (a lower bound) when
// the request is known, even if no peak was recorded.
void compute_labels(Job& job, double util_cap = 1.0);

// Normalizes a Slurm state string: upper-cases, drops " by <uid>", maps common aliases
// ("CD" -> COMPLETED, "OOM" -> OUT_OF_MEMORY, "CA" -> CANCELLED, ...).
std::string normalize_state(std::string_view state);

// Whether a normalized state is one of Slurm's job states (22.05: the base states, and the flags
// squeue prints instead), the names normalize_state maps the short codes to.
bool is_slurm_state(std::string_view normalized);
// Those names, ", "-separated, for a message that lists what is accepted.
std::string slurm_state_names();

}  // namespace peakcast
