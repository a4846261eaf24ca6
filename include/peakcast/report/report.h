// `peakcast report`: one self-contained HTML file (docs/report.md) with Vega-Lite plots, sortable
// tables and tooltips, made from what an evaluation measured and, when a trace or the daemon's
// database is at hand, from each test job's prediction.
//
// Sections, each present only when its data is:
//   accuracy   predicted vs actual utilization per resource          (detail)
//   methods    MAE by method and resource, by subgroup and method     (eval JSON)
//   coverage   the upper bound's coverage against its nominal level  (detail)
//   routing    routing shares and batch-1 latency per route           (eval JSON)
//   usage      requested vs used memory over time per user, account,
//              partition                                              (detail)
//   sizing     waste (GB·h) and failures per sizing policy            (SIM.json)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/core/job.h"
#include "peakcast/core/log.h"
#include "peakcast/core/status.h"
#include "peakcast/sizing/recommend.h"
#include "peakcast/sizing/seed_summary.h"
#include "peakcast/sizing/workload_sizer.h"

namespace peakcast::report {

// One test job's prediction for one resource.
struct PredictedJob {
  std::string job_id;
  Resource resource = Resource::kMem;
  double actual = 0.0;     // label (peak / request)
  double predicted = 0.0;  // cascade utilization
  std::string route;       // bypass / encoder / cache / no_history / tree
  std::string level;       // history level that answered: exact_script / user / none
  std::optional<double> upper;     // upper bound utilization, when calibrated
  std::optional<double> nominal;   // its stated coverage
  bool censored = false;
  std::string script;              // script key (empty: a script of its own), for the interval
};

// One finished job's memory, for the usage-over-time plots.
struct UsagePoint {
  std::string user, account, partition;
  int64_t end_time_s = 0;        // epoch seconds
  double requested_gb = 0.0;     // ReqMem
  double used_gb = 0.0;          // peak
  std::optional<double> recommended_gb;  // the cascade's recommended request (test jobs)
};

// A sizing simulation's outcome per policy (docs/report.md, "SIM.json"). Rows of one policy
// (one per seed, as `peakcast simulate --seeds N` writes them) become one: the means over the
// seeds, with their range (sizing::summarize_seeds).
struct SimResults {
  std::string source;  // where it came from (a path)
  std::vector<sizing::SeedSummary> results;
  std::vector<std::string> notes;
  // "peakcast" against the baseline of least mean waste, when both are among the results.
  std::optional<sizing::BaselineComparison> comparison;
};

// peakcastd's recommended requests against its users' own on the report's test block, each job
// run at both through `peakcast simulate`'s accounting (sizing::run_task).
struct RecommendationOutcome {
  SimResults totals;  // rows "users' requests" and "peakcastd's", and the page's notes
  struct Partition {
    std::string name;  // "" = no partition; past kPartitionRows the rest as one "other (N)" row
    sizing::Tally asked, answered;
  };
  std::vector<Partition> partitions;  // largest waste at the users' requests first
};
inline constexpr size_t kPartitionRows = 20;

// Points of a predicted-vs-actual plot, per resource: past it the test jobs are sampled evenly in
// submit order (the plot's title says so), so that a trace of a million jobs still gives a page
// a browser opens. The coverage figures count every job.
inline constexpr size_t kAccuracyPoints = 5000;

struct ReportInput {
  std::string title = "peakcast report";
  std::string source;                       // trace / database / JSON path, for the header
  std::optional<nlohmann::json> eval;       // `peakcast evaluate --json` output
  std::vector<PredictedJob> predictions;    // empty: no accuracy/coverage sections
  std::vector<UsagePoint> usage;            // empty: no usage section
  // peakcastd's recommended requests against its users' own on the test block (build_detail).
  std::optional<RecommendationOutcome> recommendations;
  std::optional<SimResults> sim;
  std::vector<std::string> notes;           // shown at the top (what is missing and why)
};

// The per-job part of a report from jobs (a trace or the daemon's database): the cascade is
// trained on the jobs that had ended by the first submission of the last `test_share` (one still
// running then is left out: a daemon started then could not have learned it), then each later
// job is predicted with the history of the jobs that had ended before its submission.
struct DetailOptions {
  double test_share = 0.2;
  uint64_t seed = 42;
  int threads = 0;
  double util_cap = 1.0;
  std::vector<std::pair<std::string, std::string>> code_options;
  std::vector<std::pair<std::string, std::string>> cascade_options;  // `--cascade-option KEY=VALUE`
  std::string encoder = "bag";  // the cascade's script encoder (`--code-option encoder=NAME`)
  size_t max_usage_points = 20000;  // usage plots and table: past it, the last whole days (UTC, by end) that fit
  // Upper bounds and recommended requests are peakcastd's, with its settings: the online bound's
  // coverage (`--bound-coverage`), the completions it is rebuilt from at start
  // (`--bound-rebuild-jobs`), the recommendation settings (`--sizing-config`) and the scripts'
  // own sizing policies (`--sizing-workloads`, `--sizing-history`, `--sizing-memory`, and the runs
  // they are rebuilt from at start, `--sizing-rebuild-runs`; policy.recommend unused: the replay
  // sets it from `recommend`).
  double bound_coverage = 0.9;
  size_t bound_warm_jobs = 5000;
  sizing::RecommendConfig recommend;
  sizing::WorkloadSizerOptions workloads;
};
struct Detail {
  std::vector<PredictedJob> predictions;
  std::vector<UsagePoint> usage;
  // nullopt when no test job has a memory request, a peak and a run time.
  std::optional<RecommendationOutcome> recommendations;
  std::vector<std::string> notes;
  // Set when the cascade could not be trained on these jobs (a young history: too few jobs, or
  // too few that had ended before later ones were submitted): predictions and recommendations are
  // then empty and `usage` is every job's. The sentence the page and stderr show: which sections
  // are missing, why, and what history they need.
  std::optional<std::string> no_model;
};
// Errors: a test share outside (0, 1), or a training failure other than the jobs' refusal as
// input (a young history is not an error: see Detail::no_model).
Result<Detail> build_detail(const std::vector<Job>& jobs, const DetailOptions& options,
                            const ProgressFn& progress = {});

// Reads SIM.json; errors name the file and the field.
Result<SimResults> parse_sim(const nlohmann::json& j, const std::string& source);

// Checks that an EVAL.json looks like `peakcast evaluate --json` output (a results list whose
// entries have method, resource and mae); errors name the field.
Status check_eval_json(const nlohmann::json& j, const std::string& source);

// The Vega-Lite specs of the page, by plot id (for tests and the page).
struct Plot {
  std::string id;
  std::string section;
  std::string title;
  nlohmann::json spec;
};
std::vector<Plot> make_plots(const ReportInput& in);

// The whole page. Errors: the plotting library was not built in (see docs/report.md).
Result<std::string> render_html(const ReportInput& in);

// Whether this build carries the plotting library (Vega, Vega-Lite, vega-embed).
bool have_plotting_library();

}  // namespace peakcast::report
