// peakcast train TRACE -o MODEL_DIR: trains the cascade (code model, gates, fusions, policy) on a
// whole trace and writes the versioned model directory.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "common.h"
#include "db_jobs.h"
#include "peakcast/tools/model_tools.h"

namespace peakcast::app {
namespace {

struct TrainArgs {
  std::string trace;
  std::string db;
  ReaderArgs reader;
  std::string out;
  eval::TrainOptions options;
  std::vector<std::string> code_options;
  std::vector<std::string> cascade_options;
  std::string encoder;  // --encoder; empty: --code-option encoder=, else bag
};

Result<std::vector<Job>> load_jobs(const TrainArgs& a) {
  // Relabelled at --util-cap (the store keeps labels clipped at the daemon's cap).
  if (!a.db.empty()) return load_db_jobs(a.db, a.reader.util_cap);
  Result<ingest::Trace> trace = load_trace(a.trace, a.reader);
  if (!trace) return trace.status();
  if (!trace->has_submit_times) {
    return Status::invalid(a.trace + ": this trace has no submit times; training needs them");
  }
  return std::move(trace->jobs);
}

// The model directory is written after training (minutes on a large trace): it must be a
// directory we can write, or one we can create (its nearest existing ancestor a writable
// directory). A typo then costs nothing.
Status check_model_dir(const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(out, ec);
  if (ec) p = out;
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) {
      return Status::invalid(fmt::format("--output: {} exists and is not a directory (the model is a directory)", out));
    }
    if (::access(p.c_str(), W_OK) != 0) {
      return Status::invalid(fmt::format("--output: cannot write {}: {}", out, std::strerror(errno)));
    }
    return Status::ok();
  }
  for (fs::path up = p.parent_path(); !up.empty(); up = up.parent_path()) {
    if (!fs::exists(up, ec)) {
      if (up == up.parent_path()) break;
      continue;
    }
    if (!fs::is_directory(up, ec)) {
      return Status::invalid(fmt::format("--output: cannot create {}: {} is not a directory", out, up.string()));
    }
    if (::access(up.c_str(), W_OK) != 0) {
      return Status::invalid(fmt::format("--output: cannot create {} in {}: {}", out, up.string(), std::strerror(errno)));
    }
    return Status::ok();
  }
  return Status::ok();
}

// Fewer policy-set jobs than this for a resource: train warns that the choices rest on few jobs.
constexpr size_t kFewPolicyJobs = 100;

int run_train(TrainArgs& a) {
  if (a.trace.empty() == a.db.empty()) {
    return fail(Status::invalid("train: give a TRACE or --db FILE (one of the two)"));
  }
  if (Status s = check_model_dir(a.out); !s) return fail(s);
  Result<CodeSettings> code = parse_code_options(a.code_options, a.encoder);
  if (!code) return fail(code.status());
  a.options.encoder = code->encoder.empty() ? "bag" : code->encoder;
  a.options.code_options = code->options;
  Result<std::vector<std::pair<std::string, std::string>>> cascade = parse_cascade_options(a.cascade_options);
  if (!cascade) return fail(cascade.status());
  a.options.cascade_options = std::move(*cascade);
  a.options.util_cap = a.reader.util_cap;
  // Before the trace is read (minutes for a large one): a bad --code-option is the command line's
  // error, not the trace's.
  if (Status s = eval::check_cascade_options(a.options); !s) return fail(s);
  const std::string source = a.db.empty() ? a.trace : a.db;
  a.options.trained_on = source;
  Result<std::vector<Job>> jobs = load_jobs(a);
  if (!jobs) return fail(jobs.status());
  eval::TrainSummary summary;
  Result<cascade::CascadeModel> model =
      eval::train_cascade_on_jobs(*jobs, a.options, &summary, stderr_progress());
  if (!model) return fail(model.status().with_context(source));
  if (Status s = model->save(a.out); !s) return fail(s);
  std::cerr << fmt::format(
      "trained on {} jobs: train {} (+{} purged), validation {}; fallback mem {:.3f}, vram {:.3f}\n",
      summary.jobs, summary.train, summary.purged, summary.validation, summary.fallback[0],
      summary.fallback[1]);
  for (Resource r : kResources) {
    // A CPU-only site has no VRAM to learn: said only where jobs asked for GPUs.
    if (summary.labelled[idx(r)] > 0 || (r == Resource::kVram && summary.gpu_jobs == 0)) continue;
    std::cerr << fmt::format(
        "warning: no train job has a {0} label (a recorded peak and a {0} request, not killed for memory): this model's "
        "{0} answers are not learned from any job; use it for the other resource only\n",
        resource_name(r));
  }
  if (model->code_model().trained_without_scripts()) {
    std::cerr << "note: no scripts; the code model read identity text (executable, process, "
                 "job name)\n";
  }
  for (Resource r : kResources) {
    const cascade::ResourcePolicy& p = model->policy()[idx(r)];
    if (p.policy_n == 0) continue;
    std::cerr << fmt::format(
        "{}: expert {}, tau {:.2f}, history alone at exact_script {} / user {} ({}), "
        "validation MAE {:.4f} (history alone {:.4f}, n={}), encoder share {:.1f}%\n",
        resource_name(r), history::expert_name(p.expert), p.tau, p.history_only[0] ? "yes" : "no",
        p.history_only[1] ? "yes" : "no", history::expert_name(p.history_expert), p.policy_mae,
        p.policy_history_mae, p.policy_n, 100.0 * p.policy_encoder_share);
    // On a short history a dozen jobs decide Q's source and the policy for every job after them
    // (docs/evaluation.md, "Traces nothing here was designed on": a 215-task trace).
    if (p.policy_n < kFewPolicyJobs) {
      const std::string check =
          a.db.empty() ? "peakcast evaluate " + a.trace + " --methods hier_last1,cascade --seeds 5 --folds 5"
                       : "peakcast report --db " + a.db + " --methods hier_last1,cascade -o report.html";
      std::cerr << fmt::format(
          "warning: {0}'s policy was chosen on {1} validation job{4} (fewer than {2}): on so short a history the "
          "cascade's choices rest on a few jobs and may lose to history alone; check it with `{3}` before "
          "serving it, or train on a longer history\n",
          resource_name(r), p.policy_n, kFewPolicyJobs, check, p.policy_n == 1 ? "" : "s");
    }
  }
  for (const std::string& note : model->training_notes()) std::cerr << "note: " << note << "\n";
  std::cout << model->describe() << "\n";
  std::cerr << "wrote " << a.out << "\n";
  return kExitOk;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train the cascade on a job trace and save it");
  cmd->footer(fmt::format(
      "Trains the reliability-gated cascade on a whole trace: the last --validation share of the "
      "jobs by submit time is the validation block (gate and fusion fit on its first half, the "
      "policy is chosen on the rest), the earlier jobs train the code model (train jobs that ended "
      "after validation began are purged). Writes MODEL_DIR: manifest (format version, config, "
      "feature statistics, policy), XGBoost models, Torch weights. `peakcast predict --model "
      "MODEL_DIR` uses it. It warns where a resource's policy was chosen on fewer than {} "
      "validation jobs: on so short a history compare the cascade with hier_last1 (`peakcast "
      "evaluate`, or `peakcast report --db`) before serving it. Notes say where a choice kept its default for want "
      "of jobs: gate and fusion fit on fewer than min_component_examples validation jobs (constants then), or Q's "
      "source left at the code model for want of labelled jobs to compare it and the tree route on.\n--db FILE trains on the completions peakcastd stored in its "
      "database instead of a trace (read-only; safe while the daemon runs): the scripts when the "
      "daemon ran with --store-scripts, otherwise the identity text (job name), so a site "
      "retrains on its own cluster without exporting anything.\nExit codes: 0 ok, 2 usage or input error, 1 other failures.",
      kFewPolicyJobs));
  cmd->add_option("TRACE", a->trace, "Job trace (any supported format with submit times)");
  cmd->add_option("--db", a->db, "Train on peakcastd's database (its --db FILE) instead of a trace");
  cmd->add_option("-o,--output", a->out, "Model directory to write")->required();
  add_reader_options(*cmd, a->reader);
  cmd->add_option("--encoder", a->encoder, "Script encoder of the code model (the same as --code-option encoder=NAME)")
      ->check(CLI::IsMember({"bag", "textcnn", "bilstm", "qwen2"}))
      ->default_str("bag");
  cmd->add_option("--seed", a->options.seed, "Seed for the code model and the boosters")
      ->check(seed_number())
      ->default_str("42");
  cmd->add_option("--validation", a->options.validation_share,
                  "Share of the jobs (latest by submit time) in the validation block")
      ->check(finite_range(0.01, 0.9))
      ->default_str("0.2");
  add_learning_options(*cmd, a->options.threads, a->code_options);
  add_cascade_options(*cmd, a->cascade_options);
  cmd->callback([a, &exit_code] { exit_code = run_train(*a); });
}

}  // namespace peakcast::app
