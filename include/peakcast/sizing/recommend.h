// The recommended request: what to ask the scheduler for, from an upper bound on the peak.
//
// bytes = upper * (1 + margin_fraction) + margin_bytes, rounded UP to granularity_bytes, then
//   - raised to floor_bytes;
//   - lowered to the user's own request unless allow_above_request (when the request is known),
//     or unless that request (or a larger one) has run out of memory: it is then known to be too
//     small, and capping at it would discard the bound;
//   - after an OOM (a censored run that failed at `failed_request_bytes`), raised above the
//     failed request: when at or below it, or when the user's own request is the one that
//     failed, to max(bytes, failed * oom_factor) rounded up -- a censored history never gives a
//     recommendation at or below the request that failed, whatever the user asked for;
//   - lowered to the partition's limit_bytes (when set): never above it, even after an OOM (the
//     only case where the answer can be at or below a failed request; the rule says so).
// `rule` names the last step that set the value, prefixed by the settings that applied:
// "default: upper+margin", "partition gpu: floor", "default: capped at request",
// "partition gpu: oom: above failed request", "partition gpu: capped at partition limit",
// "partitions gpu,cpu (strictest): floor".
//
// The partition: RecommendInput::partition is the job's, as Slurm's --partition takes it: one
// name, or a comma-separated list of those the job may run in ("gpu,cpu"; blanks around a name
// and empty entries are ignored, repeats count once). A list takes the strictest settings of its
// partitions, as the job may land in any of them: the largest floor_bytes, the smallest
// limit_bytes (of those that set one), allow_above_request only when every one allows it, and the
// largest margin_fraction, margin_bytes, oom_factor and granularity_bytes (the most cautious
// margins; sizes are powers of two in practice, so a multiple of the coarsest granularity is a
// multiple of each). A partition without settings of its own counts with the "default" ones. An
// empty partition (a client that does not resolve Slurm's default partition) is
// "default_partition" when the file names one, else the "default" settings.
//
// Settings: per-partition, from a JSON file:
//   {"default":    {"margin_fraction": 0.05, "margin_bytes": 0, "granularity_bytes": 268435456,
//                   "floor_bytes": 536870912, "allow_above_request": false, "limit_bytes": null,
//                   "oom_factor": 1.2},
//    "partitions": {"gpu": {"floor_bytes": 4294967296, "limit_bytes": 549755813888}},
//    "default_partition": "cpu"}
// Every key is optional; a partition's settings start from "default" and override it. Sizes are
// bytes (numbers) or strings with a unit ("512M", "4G"; binary multiples, as Slurm's --mem).
// "default_partition" names slurm.conf's Default=YES partition (one name, no comma).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::sizing {

struct RecommendSettings {
  double margin_fraction = 0.05;
  uint64_t margin_bytes = 0;
  uint64_t granularity_bytes = 256ull << 20;  // 256 MiB
  uint64_t floor_bytes = 512ull << 20;        // 512 MiB
  bool allow_above_request = false;
  std::optional<uint64_t> limit_bytes;        // the partition's largest allocation
  double oom_factor = 1.2;                    // after an OOM: at least failed * oom_factor
};

struct RecommendConfig {
  RecommendSettings defaults;
  std::map<std::string, RecommendSettings> partitions;
  // The partition of a job that names none ("" = none known: the defaults).
  std::string default_partition;

  struct Resolved {
    RecommendSettings settings;
    std::string prefix;  // of the rule: "default", "partition gpu", "partitions gpu,cpu (strictest)"
  };
  // The settings for `partition`: one name, a comma-separated list (the strictest of each
  // setting) or "" (default_partition, else the defaults); see the top of this file.
  Resolved for_partition(std::string_view partition) const;
};

// The names in a --partition value ("gpu, cpu,,gpu" -> {"gpu", "cpu"}): split at commas, blanks
// trimmed, empty entries dropped, repeats kept once, in order.
std::vector<std::string> partition_names(std::string_view partition);

// Parses the JSON text of a config; errors name `source` and the field ("sizing.json: partitions.gpu.floor_bytes: ...").
Result<RecommendConfig> parse_recommend_config(const std::string& json_text, const std::string& source);
Result<RecommendConfig> load_recommend_config(const std::string& path);

struct RecommendInput {
  double upper_bytes = 0.0;                      // the upper bound on the peak
  std::optional<uint64_t> request_bytes;         // the user's own request
  std::string partition;
  std::optional<uint64_t> failed_request_bytes;  // largest request that ended OUT_OF_MEMORY
  // Those runs were killed at a limit below their user's request (the Slurm hook had lowered
  // --mem; Job::ran_mem_bytes): the answer is the user's request itself, until a run completes.
  bool failed_at_lowered_limit = false;
};

struct Recommendation {
  uint64_t bytes = 0;
  std::string rule;
};

Recommendation recommend_request(const RecommendInput& in, const RecommendConfig& config);

// RecommendInput::failed_request_bytes for a job: from its script's runs that had ended before its
// submission, newest first, the largest memory limit among the runs that ended OUT_OF_MEMORY since
// the newest run that COMPLETED with a known peak (the limit a run was killed at: Job::ran_mem_bytes
// where the hook had lowered its request, else its request; nullopt when there is none). Only such
// a completed run shows the script can succeed below a failed limit: a CANCELLED, TIMEOUT, FAILED
// (...) run after an OOM is skipped, not taken as the end of the chain, so an OOM keeps the next
// recommendation above its limit until the script completes. peakcastd and `peakcast report` both
// use it.
std::optional<uint64_t> trailing_oom_request(std::span<const Job* const> newest_first);
// RecommendInput::failed_at_lowered_limit: whether one of those OOM runs was killed at a lowered
// limit.
bool trailing_oom_lowered(std::span<const Job* const> newest_first);

// The same rule as an object, for callers that keep one config.
class RecommendRule {
 public:
  explicit RecommendRule(RecommendConfig config = {}) : config_(std::move(config)) {}
  Recommendation operator()(const RecommendInput& in) const { return recommend_request(in, config_); }
  const RecommendConfig& config() const { return config_; }

 private:
  RecommendConfig config_;
};

// Rounds up to a multiple of granularity (granularity 0 or 1: ceil to whole bytes).
uint64_t round_up(double bytes, uint64_t granularity);

}  // namespace peakcast::sizing
