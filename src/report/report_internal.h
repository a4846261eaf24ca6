// Pieces shared by the report's source files.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/cascade/prediction.h"
#include "peakcast/report/report.h"
#include "peakcast/sizing/online_bound.h"
#include "peakcast/sizing/recommend.h"
#include "peakcast/sizing/workload_sizer.h"

#ifndef PEAKCAST_HAVE_REPORT_JS
#define PEAKCAST_HAVE_REPORT_JS 0
#endif

namespace peakcast::report {

// A JavaScript file inlined into the page: "name version" and its text.
struct Asset {
  std::string name;
  std::string_view text;
};
std::vector<Asset> plotting_library();
// The licence texts of the plotting library and the packages installed with it
// (cmake/ReportAssets.cmake), each once, headed by the packages that ship it.
std::string_view plotting_library_notices();

// Numbers as the page shows them to a person: the whole part in groups of three digits split by
// commas ("12,120", "20,191.6"), on every machine alike (no locale). What a program reads (the
// JSON inside the page, a cell's data-sort) keeps plain numbers. `decimals` places, as fmt's
// {:.Nf} rounds them.
std::string grouped(double v, int decimals = 0);
// `plain`, a number as fmt or std::to_string writes it, with its leading whole part grouped.
std::string group_thousands(std::string plain);
template <std::integral T>
std::string grouped(T n) {
  return group_thousands(std::to_string(n));
}
// A table cell showing `text`, which leads with a number as grouped() writes it. Where that number
// has a separator, the cell carries `sort_value` plain in data-sort: the page's sort reads a cell
// through parseFloat, which reads "12,120" as 12.
std::string number_cell(const std::string& text, double sort_value);
template <std::integral T>
std::string number_cell(T n) {
  return number_cell(grouped(n), static_cast<double>(n));
}

// Text safe inside HTML element content and attribute values.
std::string html_escape(std::string_view s);
// JSON or JavaScript safe inside a <script> element (no "</" that could close it).
std::string script_safe(std::string_view s);

// An evaluate result row's MAE s.d. over seeds; null when the row says it ran on fewer than two
// seeds (a deterministic method, or --seeds 1, has no spread: its 0 is not a measurement).
nlohmann::json seed_sd_mae(const nlohmann::json& row);

// Sortable HTML tables of the page, by section.
std::string methods_table(const nlohmann::json& eval);
std::string subgroups_table(const nlohmann::json& eval);
std::string coverage_table(const std::vector<PredictedJob>& predictions);
std::string usage_table(const std::vector<UsagePoint>& usage);
// Past `max_points` jobs, keeps those of the most recent whole days (UTC, by the day a job ended,
// as the usage plots sum them) that fit in max_points, in their order: a day cut in half would draw
// a false low first day. When the last day alone holds more, an even sample of max_points of its
// jobs. Returns the page's note saying which jobs were kept; nullopt when all were.
std::optional<std::string> keep_whole_usage_days(std::vector<UsagePoint>& usage, size_t max_points);
std::string sim_table(const SimResults& sim);
std::string partition_table(const std::vector<RecommendationOutcome::Partition>& partitions);

// Observed coverage of the upper bound per resource and route ("all" included), with a 95%
// bootstrap interval over the jobs' scripts (eval::coverage_interval, kCoverageResamples draws,
// seed kCoverageSeed): a script's jobs are missed together.
inline constexpr size_t kCoverageResamples = 2000;
inline constexpr uint64_t kCoverageSeed = 42;
struct CoverageRow {
  std::string resource, route;
  size_t n = 0;
  double observed = 0.0;  // share of jobs with actual <= upper
  double nominal = 0.0;   // mean stated coverage
  size_t scripts = 0;     // distinct scripts among the n jobs
  double lo = 0.0, hi = 0.0;  // the interval of `observed`
};
std::vector<CoverageRow> coverage_rows(const std::vector<PredictedJob>& predictions);

// What peakcastd would have answered for each test job (src/report/online.cpp), had it started
// at the first test submission. Its online bound (eval::online_bounds, the protocol `evaluate`
// measures) is walked in submit order over the warm-up completions `warm` -- the daemon rebuilds
// its bound at start from its most recent completions, each with the served model's prediction at
// its submission -- and then the test jobs, each completion observed before the next submission
// after it. A test job gets an upper bound where its level had evidence. Its memory
// recommendation is, as serve::SizingState gives it, its script's own policy's once the script has
// enough runs (the policies warmed at start from `stored`, the completions the daemon's store
// held then, as sizing::WarmRuns keeps them; then every completion of `warm` and `test` that ended
// later, in the order they ended), else the bound's (sizing::recommend_request with the job's
// request, partition and the script's trailing OOM request).
struct PredictedRun {
  const Job* job = nullptr;
  const cascade::JobPrediction* prediction = nullptr;
};
struct DaemonAnswer {
  std::array<std::optional<double>, kNumResources> upper;  // utilization; nullopt: no evidence
  std::optional<uint64_t> recommended_bytes;
  std::string rule;    // recommend_request's rule
  std::string source;  // "workload" (its own policy), "bound" or "" (none): serve::SizingState's
};
// The test jobs at their users' requests and at the recommendations (src/report/savings.cpp).
// nullopt when no test job can be run at both; then, with why_none, a note says why.
std::optional<RecommendationOutcome> recommendation_outcome(const std::vector<Job>& test,
                                                           const std::vector<DaemonAnswer>& answers,
                                                           std::vector<std::string>* why_none = nullptr);

struct ReplayOptions {
  double util_cap = 1.0;
  sizing::OnlineBoundOptions bound;
  sizing::RecommendConfig recommend;
  sizing::WorkloadSizerOptions workloads;  // the daemon's defaults; policy.recommend = recommend
};
// `all`: every job (for the script's trailing OOM runs, each known from its end time on).
// `stored`: the jobs that had ended by the first test submission (any order); a job of `warm` that
// ended by then is learned by the policies only if it is in `stored`.
std::vector<DaemonAnswer> replay_daemon(std::span<const PredictedRun> warm,
                                        std::span<const PredictedRun> test,
                                        const std::vector<Job>& all, const ReplayOptions& options,
                                        std::span<const Job* const> stored = {});

}  // namespace peakcast::report
