// The library side of `peakcast train` and `peakcast predict`: train a cascade on a whole trace
// (no test block: a model for use, not for scoring), and predict request records with an
// optional history trace. The commands only parse arguments and print.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "peakcast/cascade/cascade_model.h"
#include "peakcast/cascade/predictor.h"
#include "peakcast/core/job.h"
#include "peakcast/core/log.h"
#include "peakcast/core/status.h"

namespace peakcast::eval {

struct TrainOptions {
  // The last validation_share of the jobs by submit time form the validation block (the
  // cascade fits gate/fusion and chooses its policy there); the rest is the train block, whose
  // jobs ending at or after the first validation submission are purged (their label was not
  // known yet; they stay history). In (0, 1).
  double validation_share = 0.2;
  std::string encoder = "bag";
  uint64_t seed = 42;
  int threads = 0;  // XGBoost and LibTorch threads; 0 = all cores
  double util_cap = 1.0;
  std::vector<std::pair<std::string, std::string>> code_options;  // set_code_option overrides
  std::vector<std::pair<std::string, std::string>> cascade_options;  // set_cascade_option overrides
  std::string trained_on;  // free text for the manifest (e.g. the trace path)
};

struct TrainSummary {
  size_t jobs = 0, train = 0, validation = 0, purged = 0;
  std::array<double, kNumResources> fallback{};  // median train label (no-history answer)
  std::array<size_t, kNumResources> labelled{};  // train jobs with an exact label (a peak and a request; not OOM)
  size_t gpu_jobs = 0;                           // train jobs that asked for GPUs
};

// Trains the cascade on `jobs` (labels and script_key filled; any order). Errors: no submit
// times (all 0), an empty block, no train job with a label for either resource, invalid options,
// the cascade's own errors.
Result<cascade::CascadeModel> train_cascade_on_jobs(const std::vector<Job>& jobs,
                                                    const TrainOptions& options,
                                                    TrainSummary* summary = nullptr,
                                                    const ProgressFn& progress = {});

// Whether the options (encoder, code and cascade options, util cap, threads, seed) make a valid
// cascade configuration: the check train_cascade_on_jobs makes before it trains, without jobs, so
// that a bad option fails before a long read and a refusal of the jobs later is about the jobs.
// The encoder checks its own options too (models::code::check_encoder_options: qwen2 needs
// base=DIR holding its files), without loading anything.
Status check_cascade_options(const TrainOptions& options);

// Canonical JSONL request records (one per non-blank line; outcome fields optional) -> jobs with
// script_key filled as the readers compute it. Errors name "name:line".
Result<std::vector<Job>> parse_request_records(std::string_view text, const std::string& name,
                                               double util_cap);

// Predicts each job; with `history`, the completions in it that ended before the job's submit
// time form its history (event time, as in evaluation). A job without a submit time (0) is
// predicted after every completion of the history.
std::vector<cascade::JobPrediction> predict_jobs(const cascade::Predictor& predictor,
                                                 const std::vector<Job>& jobs,
                                                 const std::vector<Job>* history);

// Human-readable lines for one job: per resource the utilization, bytes, route, expert, gamma,
// history used and the rationale.
std::string render_prediction(const cascade::JobPrediction& p);

}  // namespace peakcast::eval
