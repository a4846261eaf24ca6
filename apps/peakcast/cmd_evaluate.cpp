// peakcast evaluate TRACE: the history baselines (and later the cascade) under the event-time
// protocol; a table on stdout, machine-readable results to files.
#include <algorithm>
#include <iostream>
#include <optional>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.h"
#include "peakcast/eval/evaluate.h"
#include "peakcast/eval/folds.h"
#include "peakcast/eval/report.h"
#include "peakcast/tools/learned_methods.h"
#include "peakcast/tools/model_tools.h"

namespace peakcast::app {
namespace {

struct EvaluateArgs {
  std::string trace;
  ReaderArgs reader;
  std::string methods = "all";
  std::string json, markdown, csv, bound_walk;
  uint64_t seed = 42;
  size_t bootstrap = 10000;
  std::string split = "60/20/20";
  size_t seeds = 1;
  int threads = 0;
  std::vector<std::string> code_options;
  std::vector<std::string> cascade_options;
  std::string encoder;
  size_t latency_jobs = 2000;
  size_t folds = 0;
  double folds_share = 0.5;
};

// Every requested method was left out: the error names each with its reason.
Status none_scored(const eval::EvalReport& report) {
  std::vector<std::string> why;
  for (const auto& [method, reason] : report.left_out) why.push_back(eval::left_out_line(method, reason));
  return Status::invalid(fmt::format("{}: no requested method could be scored: {}", report.trace_path,
                                     fmt::join(why, "; ")));
}

// The code-model and cascade settings of the run's learned methods, checked without jobs: with
// the encoder that code_only and the cascade use where one of them runs (the others have their
// own encoder, whose options are the declared ones).
Status check_code_models(const eval::EvalConfig& cfg, const eval::MethodRegistry& registry) {
  const auto any_reads = [&](bool eval::MethodReads::*option) {
    return std::any_of(cfg.methods.begin(), cfg.methods.end(),
                       [&](const std::string& m) { return registry.reads(m).*option; });
  };
  if (!any_reads(&eval::MethodReads::code_options)) return Status::ok();
  eval::TrainOptions check;
  check.util_cap = cfg.util_cap;
  check.threads = cfg.threads;
  check.seed = cfg.seed;
  check.code_options = cfg.code_options;
  if (any_reads(&eval::MethodReads::encoder) && !cfg.encoder.empty()) check.encoder = cfg.encoder;
  if (any_reads(&eval::MethodReads::cascade_options)) check.cascade_options = cfg.cascade_options;
  return eval::check_cascade_options(check);
}

int run_evaluate(const EvaluateArgs& a, const eval::MethodRegistry& registry) {
  eval::EvalConfig cfg;
  // A method that cannot be trained on this trace's blocks (the cascade on a young history) is
  // left out and said; the others are scored. A script over many traces gets their figures.
  cfg.leave_out_refusals = true;
  Result<eval::SplitConfig> split = eval::parse_split(a.split);
  if (!split) return fail(split.status());
  cfg.split = *split;
  Result<std::vector<std::string>> methods = registry.resolve(a.methods);
  if (!methods) return fail(methods.status().with_context("--methods"));
  cfg.methods = *methods;
  Result<std::vector<std::pair<std::string, std::string>>> cascade = parse_cascade_options(a.cascade_options);
  if (!cascade) return fail(cascade.status());
  cfg.cascade_options = std::move(*cascade);
  // An option that no method of the run reads changes nothing: say so rather than ignore it.
  const auto unread = [&](bool eval::MethodReads::*option, bool given) {
    if (!given) return false;
    for (const std::string& m : cfg.methods) {
      if (registry.reads(m).*option) return false;
    }
    return true;
  };
  const auto note_unread = [&](bool eval::MethodReads::*option, bool given, const char* flag) {
    if (!unread(option, given)) return;
    std::cerr << fmt::format("peakcast evaluate: note: {} sets the code model of {}; --methods has "
                             "none of them, so it changes nothing\n",
                             flag, fmt::join(registry.reading(option), ", "));
  };
  note_unread(&eval::MethodReads::code_options, !a.code_options.empty(), "--code-option");
  note_unread(&eval::MethodReads::encoder, !a.encoder.empty(), "--encoder");
  if (unread(&eval::MethodReads::cascade_options, !a.cascade_options.empty())) {
    std::cerr << "peakcast evaluate: note: --cascade-option sets the cascade's own settings; "
                 "--methods has no cascade, so it changes nothing\n";
  }
  cfg.seed = a.seed;
  cfg.bootstrap = a.bootstrap;
  cfg.util_cap = a.reader.util_cap;
  cfg.seeds = a.seeds;
  cfg.threads = a.threads;
  cfg.latency_jobs = a.latency_jobs;
  Result<CodeSettings> code = parse_code_options(a.code_options, a.encoder);
  if (!code) return fail(code.status());
  cfg.code_options = code->options;
  cfg.encoder = code->encoder;

  if (Status s = check_outputs({{"--json", a.json}, {"--markdown", a.markdown}, {"--csv", a.csv},
                                 {"--bound-walk", a.bound_walk}});
      !s) {
    return fail(s);
  }
  // Before reading the trace (minutes for a large one): the settings of the code models the run
  // trains, the encoder's own among them (qwen2 needs base=DIR), as `train` checks them. Found
  // at training instead, such a mistake left the method out as if the trace were too young.
  if (Status s = check_code_models(cfg, registry); !s) return fail(s);
  // Before reading the trace: one fold is no rolling origin.
  if (a.folds == 1) return fail(Status::invalid("--folds: needs at least 2 folds (0: no folds), got 1"));
  Result<ingest::Trace> trace = load_trace(a.trace, a.reader);
  if (!trace) return fail(trace.status());
  eval::FoldsConfig fc;
  fc.folds = a.folds;
  fc.test_share = a.folds_share;
  // Before the split's run: a wrong --folds used to end a long run with nothing written.
  if (a.folds > 0) {
    if (Status s = eval::check_folds(trace->jobs.size(), fc); !s) return fail(s);
  }
  // The walk is written once the run, folds included, has succeeded (atomically, as the other
  // outputs): a failed run leaves an earlier file of that name as it was.
  std::string walk_text;
  size_t walk_lines = 0;
  if (!a.bound_walk.empty()) {
    cfg.on_bound_walk = [&](const std::string& method, Resource r, std::span<const eval::WalkRecord> walk) {
      for (const eval::WalkRecord& w : walk) walk_text += eval::walk_record_json(method, r, w).dump() + "\n";
      walk_lines += walk.size();
    };
  }
  Result<eval::EvalReport> report = eval::evaluate(*trace, registry, cfg, stderr_progress());
  if (!report) return fail(report.status());
  if (report->results.empty()) return fail(none_scored(*report));
  for (const auto& [method, reason] : report->left_out) {
    std::cerr << "peakcast evaluate: " << eval::left_out_line(method, reason) << "\n";
  }
  std::ostream& out = human_output({a.json, a.markdown, a.csv, a.bound_walk});
  out << eval::render_table(*report);
  out.flush();
  std::optional<eval::FoldsReport> folds;
  if (a.folds > 0) {
    Result<eval::FoldsReport> f = eval::evaluate_folds(trace->jobs, registry, cfg, fc, stderr_progress());
    if (!f) return fail(f.status().with_context(a.trace));
    folds = std::move(f).value();
    for (const auto& [method, reason] : folds->left_out) {
      std::cerr << "peakcast evaluate: " << eval::folds_left_out_line(method, reason) << "\n";
    }
    out << "\n" << eval::render_folds_table(*folds);
    out.flush();
  }
  // Every output once the whole run, --folds included, has succeeded: a failed run leaves earlier
  // files of these names as they were (until 2026-12-07 the walk was written before the folds ran).
  if (!a.bound_walk.empty()) {
    if (Status s = write_output(a.bound_walk, walk_text); !s) return fail(s.with_context("--bound-walk"));
    std::string().swap(walk_text);
    if (a.bound_walk != "-") std::cerr << "wrote " << a.bound_walk << " (" << walk_lines << " walked jobs)\n";
  }
  if (!a.json.empty()) {
    nlohmann::json j = to_json(*report);
    if (folds) j["rolling_origin"] = to_json(*folds);
    if (Status s = write_output(a.json, j.dump(2) + "\n"); !s) return fail(s);
    if (a.json != "-") std::cerr << "wrote " << a.json << "\n";
  }
  struct Output {
    const std::string& path;
    std::string (*render)(const eval::EvalReport&);
  };
  const Output outputs[] = {
      {a.markdown, eval::render_markdown},
      {a.csv, eval::render_csv},
  };
  for (const Output& o : outputs) {
    if (o.path.empty()) continue;
    if (Status s = write_output(o.path, o.render(*report)); !s) return fail(s);
    if (o.path != "-") std::cerr << "wrote " << o.path << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_evaluate_command(CLI::App& app, int& exit_code) {
  auto registry = std::make_shared<eval::MethodRegistry>();
  eval::register_builtins(*registry);
  eval::register_learned(*registry);
  auto a = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate", "Evaluate predictors on a job trace under the event-time protocol");
  cmd->footer(
      "Evaluates predictors on a job trace: chronological train/validation/test split by submit "
      "time with completion-boundary purge, event-time history (a job sees only jobs that ended "
      "before its submission), MAE/MSE/RMSE/Acc@10% per resource on valid test jobs, a paired "
      "day-block bootstrap interval of each method's MAE difference to hier_last1, and rows by "
      "history level (exact script / user only / none). Every method also gets an online "
      "conformal upper bound: its coverage at 0.8/0.9/0.95 on the test block, its width, and a "
      "bootstrap interval of the coverage over the block's scripts (a script's jobs are missed "
      "together). Prints a table; --json/--markdown/--csv "
      "write machine-readable results. Learned methods (xgboost, code_only, textcnn, bilstm, "
      "cascade) train on the train block and choose on validation; --seeds N trains each N "
      "times and reports mean +- s.d., the interval then on each job's error averaged over seeds. "
      "Routing shares (encoder/bypass/cache) and batch-1 latency per route are reported for the "
      "cascade. A method that cannot be trained on the trace's blocks (the cascade on a history too "
      "young for it) is left out, with its reason on stderr, under the table and in the JSON's "
      "left_out, and the others are scored.\nExit codes: 0 ok (at least one requested method "
      "scored), 2 usage or input error (e.g. a trace without submit times, or no requested method "
      "could be scored: each one's reason is given), 1 other failures.");
  cmd->add_option("TRACE", a->trace, "Job trace (SWF, Nextflow trace, sacct -P, canonical JSONL; "
                                     "gzip accepted; '-' = stdin)")
      ->required();
  add_reader_options(*cmd, a->reader);
  std::string method_help = "Comma-separated methods, or 'all':";
  for (const std::string& n : registry->names()) {
    method_help += fmt::format("\n  {:<15} {}", n, registry->description(n));
  }
  cmd->add_option("--methods", a->methods, method_help)->default_str("all");
  cmd->add_option("--json", a->json, "Write the results as JSON to FILE ('-' = stdout)");
  cmd->add_option("--markdown", a->markdown, "Write the results as a markdown table to FILE");
  cmd->add_option("--csv", a->csv, "Write the results as CSV to FILE");
  cmd->add_option("--bound-walk", a->bound_walk,
                  "Write the walk behind the coverage figures to FILE (JSON Lines, the split only): "
                  "per method, resource and walked job (validation and test, submit order) its "
                  "times, level, script, point, label and, at 0.8/0.9/0.95, the bound issued, "
                  "whether its level had evidence and the level's alpha_t");
  cmd->add_option("--seed", a->seed, "Seed for the bootstrap and for methods that draw")
      ->check(seed_number())
      ->default_str("42");
  cmd->add_option("--bootstrap", a->bootstrap,
                  "Bootstrap resamples of the intervals: MAE difference (over submit days) and "
                  "bound coverage (over scripts); 0 turns both off; at most 1,000,000")
      ->check(CLI::Range(0, 1'000'000))
      ->default_str("10000");
  cmd->add_option("--split", a->split,
                  "Train/validation/test shares by submit order, adding up to 100 or 1: e.g. 60/20/20 "
                  "or 0.7/0.15/0.15")
      ->default_str("60/20/20");
  cmd->add_option("--seeds", a->seeds,
                  "Train each learned method this many times (seeds SEED..SEED+N-1) and report "
                  "mean +- s.d.; the study uses 5; at most 1,000")
      ->check(positive_number())
      ->check(CLI::Range(1, 1000))
      ->default_str("1");
  add_learning_options(*cmd, a->threads, a->code_options);
  add_cascade_options(*cmd, a->cascade_options);
  cmd->add_option("--folds", a->folds,
                  "Also run K rolling-origin folds: the last --folds-share of the jobs in K equal "
                  "consecutive test blocks, each fit on every job before it (train/validation in "
                  "the --split proportions, same purge); prints each method's MAE mean +- s.d. "
                  "over folds and how many folds it won (JSON: rolling_origin). A fold a method cannot "
                  "learn from (its blocks purged too small) is skipped for every method and said. "
                  "K >= 2; 0 = off")
      ->default_str("0");
  cmd->add_option("--folds-share", a->folds_share,
                  "Share of the jobs (the most recent) the rolling-origin folds cover")
      ->check(finite_range(0.05, 0.95))
      ->default_str("0.5");
  cmd->add_option("--encoder", a->encoder,
                  "Script encoder of code_only and cascade (default bag; qwen2 needs "
                  "--code-option base=DIR, docs/qwen2.md)")
      ->check(CLI::IsMember({"bag", "textcnn", "bilstm", "qwen2"}));
  cmd->add_option("--latency-jobs", a->latency_jobs,
                  "Batch-1 timing pass over the first N test jobs per method (0 = off)")
      ->default_str("2000");
  cmd->callback([a, registry, &exit_code] { exit_code = run_evaluate(*a, *registry); });
}

}  // namespace peakcast::app
