#include "peakcast/tools/model_tools.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/learned.h"
#include "peakcast/core/io.h"
#include "peakcast/eval/split.h"
#include "peakcast/ingest/json_line.h"
#include "peakcast/ingest/jsonl.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/models/code/code_model.h"

namespace peakcast::eval {
namespace {

Result<cascade::CascadeConfig> cascade_config_of(const TrainOptions& o) {
  MethodOptions mo;
  mo.seed = o.seed;
  mo.threads = o.threads;
  mo.code_options = o.code_options;
  mo.cascade_options = o.cascade_options;
  return learned::cascade_config_for(o.encoder, mo, o.util_cap);
}

}  // namespace

Result<cascade::CascadeModel> train_cascade_on_jobs(const std::vector<Job>& jobs,
                                                    const TrainOptions& o, TrainSummary* summary,
                                                    const ProgressFn& progress) {
  if (!(o.validation_share > 0 && o.validation_share < 1)) {
    return Status::invalid("validation share must be in (0, 1)");
  }
  if (jobs.empty()) return Status::invalid("no job to train on");
  if (std::all_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.submit_ms == 0; })) {
    return Status::invalid("the jobs have no submit times; training needs them for the event-time "
                           "history and the chronological validation block");
  }
  std::vector<const Job*> order;
  for (const Job& j : jobs) order.push_back(&j);
  std::stable_sort(order.begin(), order.end(),
                   [](const Job* a, const Job* b) { return a->submit_ms < b->submit_ms; });
  const size_t n = order.size();
  const auto n_val = static_cast<size_t>(std::llround(o.validation_share * static_cast<double>(n)));
  if (n_val == 0 || n_val >= n) {
    return Status::invalid(fmt::format("{} jobs are too few for a train and a validation block", n));
  }
  const size_t first_val = n - n_val;
  const int64_t boundary = order[first_val]->submit_ms;
  std::vector<cascade::Role> roles(n, cascade::Role::kValidation);
  TrainSummary s;
  s.jobs = n;
  std::array<std::vector<double>, kNumResources> train_labels;
  std::array<size_t, kNumResources> measured{};  // exact labels (not an OOM's lower bound)
  for (size_t i = 0; i < first_val; ++i) {
    if (order[i]->end_ms >= boundary) {
      roles[i] = cascade::Role::kIgnore;
      ++s.purged;
      continue;
    }
    roles[i] = cascade::Role::kTrain;
    ++s.train;
    s.gpu_jobs += order[i]->req_gpus > 0 ? 1 : 0;
    for (Resource r : kResources) {
      if (order[i]->is_valid(r)) train_labels[idx(r)].push_back(order[i]->label(r));
      if (order[i]->is_valid(r) && !censored_for(*order[i], r)) ++measured[idx(r)];
    }
  }
  s.validation = n_val;
  if (s.train == 0) return Status::invalid("every train job ended after validation began (all purged)");
  for (Resource r : kResources) {
    s.fallback[idx(r)] = median(train_labels[idx(r)]);
    s.labelled[idx(r)] = measured[idx(r)];
  }
  if (std::all_of(s.labelled.begin(), s.labelled.end(), [](size_t n) { return n == 0; })) {
    return Status::invalid(fmt::format(
        "none of the {} train jobs has a label (a recorded peak and a request; a job killed for "
        "memory gives only a lower bound) for mem or vram: nothing to learn from",
        s.train));
  }

  Result<cascade::CascadeConfig> cfg = cascade_config_of(o);
  if (!cfg) return cfg.status();
  models::code::set_torch_threads(resolve_threads(o.threads));

  cascade::TrainingInput in;
  in.jobs = cascade::with_history_views(order, roles);
  in.fallback = s.fallback;
  in.util_cap = o.util_cap;
  in.trained_on = o.trained_on;
  if (summary) *summary = s;
  return cascade::CascadeModel::train(in, *cfg, progress);
}

Status check_cascade_options(const TrainOptions& o) {
  Result<cascade::CascadeConfig> cfg = cascade_config_of(o);
  if (!cfg) return cfg.status();
  // The encoder's own options (qwen2's base=DIR and the files in it): training would find them
  // wrong only after the jobs were read.
  return models::code::check_encoder_options(cfg->code);
}

Result<std::vector<Job>> parse_request_records(std::string_view text, const std::string& name,
                                               double util_cap) {
  ingest::Trace t;
  ingest::JobParseOptions po;
  po.require_outcome = false;
  size_t line_no = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_no;
    if (trim(line).empty()) continue;
    // Why a line is not JSON, and where on it, as the trace readers say it.
    Result<nlohmann::json> obj = ingest::parse_json_line(line);
    if (!obj) return obj.status().with_context(fmt::format("{}:{}", name, line_no));
    if (!obj->is_object()) {
      return Status::invalid(fmt::format("{}:{}: not a JSON object (one canonical job record per "
                                         "line expected)", name, line_no));
    }
    Result<Job> job = ingest::job_from_json(*obj, po);
    if (!job) return job.status().with_context(fmt::format("{}:{}", name, line_no));
    t.jobs.push_back(std::move(*job));
  }
  if (t.jobs.empty()) return Status::invalid(name + ": no job record");
  ingest::finalize_trace(t, util_cap);
  return std::move(t.jobs);
}

std::vector<cascade::JobPrediction> predict_jobs(const cascade::Predictor& predictor,
                                                 const std::vector<Job>& jobs,
                                                 const std::vector<Job>* history) {
  history::HistoryStore store;
  int64_t last_end = 0;
  if (history) {
    for (const Job& h : *history) {
      store.add_completion(h);
      last_end = std::max(last_end, h.end_ms);
    }
  }
  std::vector<cascade::JobPrediction> out;
  out.reserve(jobs.size());
  for (const Job& j : jobs) {
    if (j.submit_ms != 0) {
      out.push_back(predictor.predict(j, store));
      continue;
    }
    Job at = j;
    at.submit_ms = last_end + 1;
    out.push_back(predictor.predict(at, store));
  }
  return out;
}

namespace {

std::string bytes_text(const std::optional<uint64_t>& b) {
  if (!b) return "-";
  const double gib = static_cast<double>(*b) / (1024.0 * 1024.0 * 1024.0);
  return fmt::format("{:.2f} GiB", gib);
}

std::string resource_lines(std::string_view name, const cascade::ResourcePrediction& p) {
  std::string out = fmt::format(
      "  {:<4} util {:.3f}  bytes {}  route {}  expert {}  gamma {}  history {} ({})\n", name,
      p.util, bytes_text(p.bytes), cascade::route_name(p.route), p.expert.empty() ? "-" : p.expert,
      p.gamma ? fmt::format("{:.2f}", *p.gamma) : "-", p.history_n,
      p.history_level.empty() ? "none" : p.history_level);
  if (p.upper_util) {
    out += fmt::format("       model's own upper {:.3f} at {:.0f}% (split-conformal, fitted at training), "
                       "request at it {}\n",
                       *p.upper_util, 100.0 * p.upper_coverage.value_or(0.0),
                       bytes_text(p.recommended_bytes));
  }
  out += "       " + p.rationale + "\n";
  return out;
}

}  // namespace

std::string render_prediction(const cascade::JobPrediction& p) {
  std::string out = fmt::format("job {}{}\n", p.job_id.empty() ? "(no id)" : p.job_id,
                                p.scripts_absent ? " (no script: the code model reads identity text)" : "");
  out += resource_lines("mem", p.mem);
  if (p.vram) {
    out += resource_lines("vram", *p.vram);
  } else {
    out += "  vram -    (no GPU count: req_gpus is absent or 0)\n";
  }
  return out;
}

}  // namespace peakcast::eval
