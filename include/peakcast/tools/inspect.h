// What a trace holds (`peakcast inspect`): sizes, label coverage, history coverage at submission,
// utilization distribution, final states. Works on traces without submit times (sacct dumps);
// then the history share is not computed.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/job.h"
#include "peakcast/core/log.h"
#include "peakcast/eval/metrics.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::eval {

struct UtilQuantiles {
  size_t n = 0;
  double mean = 0, min = 0, p10 = 0, p25 = 0, p50 = 0, p75 = 0, p90 = 0, p99 = 0, max = 0;
};

struct TraceSummary {
  size_t jobs = 0;
  size_t users = 0;
  size_t identities = 0;            // distinct script keys
  size_t jobs_with_identity = 0;    // jobs with a script key
  std::array<size_t, kNumResources> labelled{0, 0};
  std::array<size_t, kNumResources> clipped{0, 0};
  std::array<size_t, kNumResources> censored{0, 0};  // labelled and OOM-censored for this resource (censored_for)
  // Share of labelled jobs (per resource) whose exact script had eligible history at their
  // submission; nullopt without submit times.
  std::optional<std::array<double, kNumResources>> exact_history_share;
  std::optional<std::array<double, kNumResources>> user_history_share;  // user level or better
  std::array<UtilQuantiles, kNumResources> util;
  std::vector<std::pair<std::string, size_t>> states;  // most frequent first
  size_t oom = 0;
  size_t preempted = 0;
  bool has_submit_times = true;
  bool has_scripts = false;
  std::optional<int64_t> first_submit, last_submit, last_end;  // epoch ms
};

TraceSummary summarize_trace(const ingest::Trace& trace, const ProgressFn& progress = {});
std::string render_summary(const TraceSummary& summary, const ingest::Trace& trace);
nlohmann::json to_json(const TraceSummary& summary);

// quantile_sorted: eval/metrics.h.

}  // namespace peakcast::eval
