// peakcast report: one self-contained HTML page (docs/report.md) from a trace, the daemon's
// database, or earlier `evaluate --json` output, with an optional SIM.json.
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.h"
#include "db_jobs.h"
#include "peakcast/core/io.h"
#include "peakcast/eval/evaluate.h"
#include "peakcast/eval/report.h"
#include "peakcast/report/report.h"
#include "peakcast/sizing/recommend.h"
#include "peakcast/sizing/workload_sizer.h"
#include "peakcast/tools/learned_methods.h"
#include "peakcast/tools/model_tools.h"

namespace peakcast::app {
namespace {

struct ReportArgs {
  std::string trace;
  std::string db;
  std::vector<std::string> from_json;  // EVAL.json [SIM.json]
  std::string sim;
  std::string out;
  std::string title = "peakcast report";
  ReaderArgs reader;
  std::string methods = "hier_last1,hier_median3,history_policy,xgboost,cascade";
  uint64_t seed = 42;
  size_t bootstrap = 1000;
  size_t latency_jobs = 500;
  std::string sizing_config;  // peakcastd's --sizing-config
  double bound_coverage = 0.9;
  size_t bound_rebuild_jobs = 5000;
  size_t sizing_workloads = sizing::WorkloadSizerOptions{}.max_workloads;  // peakcastd's
  size_t sizing_history = sizing::WorkloadSizerOptions{}.max_history;
  size_t sizing_rebuild_runs = sizing::WorkloadSizerOptions{}.rebuild_runs;
  size_t sizing_memory_mib = sizing::WorkloadSizerOptions{}.max_bytes >> 20;
  int64_t sizing_days = 0;
  int threads = 0;
  std::vector<std::string> code_options;
  std::vector<std::string> cascade_options;
  std::string encoder;  // --encoder; empty: --code-option encoder=, else bag
};

Result<nlohmann::json> read_json(const std::string& path) {
  Result<std::string> text = read_file(path);
  if (!text) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return Status::invalid(path + ": not valid JSON");
  return j;
}

// --code-option / --encoder and --cascade-option, parsed once for the evaluation and the
// per-job detail.
struct Learning {
  CodeSettings code;
  std::vector<std::pair<std::string, std::string>> cascade;
};

// A section the page goes without, and why: on the page's notes and, one line, on stderr.
void missing(report::ReportInput& in, std::string note) {
  std::cerr << "report: " << note << "\n";
  in.notes.push_back(std::move(note));
}

// Evaluation + per-job detail over jobs from a trace or the database.
Status measure(const ReportArgs& a, const Learning& learning, const sizing::RecommendConfig& recommend,
               const std::vector<Job>& jobs, const eval::EvalReport* from_trace,
               report::ReportInput& in) {
  if (from_trace) {
    in.eval = eval::to_json(*from_trace);
  }
  report::DetailOptions d;
  d.seed = a.seed;
  d.threads = a.threads;
  d.util_cap = a.reader.util_cap;
  d.code_options = learning.code.options;
  d.cascade_options = learning.cascade;
  if (!learning.code.encoder.empty()) d.encoder = learning.code.encoder;
  d.bound_coverage = a.bound_coverage;
  d.bound_warm_jobs = a.bound_rebuild_jobs;
  d.recommend = recommend;
  d.workloads.max_workloads = a.sizing_workloads;
  d.workloads.max_history = a.sizing_history;
  d.workloads.rebuild_runs = a.sizing_rebuild_runs;
  d.workloads.max_bytes = a.sizing_memory_mib << 20;
  d.workloads.max_age_ms = a.sizing_days * kMsPerDay;
  // Said as an attempt: on a young history the cascade cannot be trained, and the line after
  // says so (Detail::no_model).
  std::cerr << "report: trying to train the cascade for the per-job plots\n";
  Result<report::Detail> detail = report::build_detail(jobs, d, stderr_progress());
  if (!detail) return detail.status();
  // A young history: the page goes without the model's sections (their note is among the notes).
  if (detail->no_model) std::cerr << "report: " << *detail->no_model << "\n";
  in.predictions = std::move(detail->predictions);
  in.usage = std::move(detail->usage);
  in.recommendations = std::move(detail->recommendations);
  for (std::string& n : detail->notes) in.notes.push_back(std::move(n));
  return Status::ok();
}

// A method the evaluation left out (EvalReport::left_out, evaluate --json's left_out).
std::string left_out_note(const std::string& method, const std::string& why) {
  return fmt::format("{}: left out of the methods, subgroups and routing: it could not be trained on "
                     "these jobs ({})",
                     method, why);
}

eval::MethodRegistry method_registry() {
  eval::MethodRegistry registry;
  eval::register_builtins(registry);
  eval::register_learned(registry);
  return registry;
}

// The evaluation section. A young history is no error (docs/report.md): a method that cannot
// learn from these jobs is left out of it, and when no method can be scored (the split's purge
// emptied a block) the page goes without it; each said on the page and on stderr.
Status run_eval(const ReportArgs& a, const Learning& learning, const std::vector<Job>& jobs,
                const ingest::Trace* trace, std::optional<eval::EvalReport>& out, report::ReportInput& in) {
  const eval::MethodRegistry registry = method_registry();
  eval::EvalConfig cfg;
  Result<std::vector<std::string>> methods = registry.resolve(a.methods);
  if (!methods) return methods.status().with_context("--methods");
  cfg.methods = *methods;
  cfg.leave_out_refusals = true;
  cfg.seed = a.seed;
  cfg.bootstrap = a.bootstrap;
  cfg.util_cap = a.reader.util_cap;
  cfg.threads = a.threads;
  cfg.latency_jobs = a.latency_jobs;
  cfg.code_options = learning.code.options;
  cfg.cascade_options = learning.cascade;
  cfg.encoder = learning.code.encoder;
  std::cerr << "report: evaluating " << a.methods << "\n";
  Result<eval::EvalReport> r = trace ? eval::evaluate(*trace, registry, cfg, stderr_progress())
                                     : eval::evaluate_jobs(jobs, registry, cfg, stderr_progress());
  // A trace without submit times stays an error: no section could be measured on it.
  if (!r && (r.status().kind() != ErrorKind::kInvalidInput || (trace && !trace->has_submit_times))) {
    return r.status();
  }
  if (!r) {
    missing(in, "methods, subgroups and routing: not drawn: these jobs cannot be evaluated (" +
                    r.status().message() +
                    "); they need more history, in which earlier jobs had ended before later ones "
                    "were submitted");
    return Status::ok();
  }
  for (const auto& [method, why] : r->left_out) missing(in, left_out_note(method, why));
  if (r->results.empty()) {  // every requested method left out (above): no table to draw
    missing(in, "methods, subgroups and routing: not drawn: no requested method could be scored on "
                "these jobs (each one's reason above)");
    return Status::ok();
  }
  out = std::move(r).value();
  return Status::ok();
}

Status gather(const ReportArgs& a, std::vector<std::pair<std::string, std::string>> cascade,
              const sizing::RecommendConfig& recommend, report::ReportInput& in) {
  if (!a.from_json.empty()) {
    in.source = a.from_json[0];
    Result<nlohmann::json> e = read_json(a.from_json[0]);
    if (!e) return e.status();
    if (Status s = report::check_eval_json(*e, a.from_json[0]); !s) return s;
    // Checked by check_eval_json: a list of {method, reason} where present (evaluate writes it).
    for (const nlohmann::json& l : e->value("left_out", nlohmann::json::array())) {
      missing(in, left_out_note(l.at("method").get<std::string>(), l.at("reason").get<std::string>()));
    }
    in.eval = std::move(e.value());
    in.notes.push_back("from " + a.from_json[0] + ": the per-job plots (predicted vs actual, bound "
                       "coverage, memory over time) need the jobs: `peakcast report TRACE` or "
                       "`--db FILE` draws them");
    return Status::ok();
  }
  // Before the jobs are read (the database or a trace: minutes for a large one): a bad option
  // fails here, so that a refusal later is about the jobs (a young history, drawn without them).
  Result<CodeSettings> code = parse_code_options(a.code_options, a.encoder);
  if (!code) return code.status();
  if (Result<std::vector<std::string>> m = method_registry().resolve(a.methods); !m) {
    return m.status().with_context("--methods");
  }
  const Learning learning{std::move(*code), std::move(cascade)};
  eval::TrainOptions check;
  check.util_cap = a.reader.util_cap;
  check.threads = a.threads;
  check.code_options = learning.code.options;
  check.cascade_options = learning.cascade;
  if (!learning.code.encoder.empty()) check.encoder = learning.code.encoder;
  if (Status s = eval::check_cascade_options(check); !s) return s;
  if (!a.db.empty()) {
    in.source = a.db + " (peakcastd database)";
    // Relabelled at --util-cap (the store keeps labels clipped at the daemon's cap).
    Result<std::vector<Job>> jobs = load_db_jobs(a.db, a.reader.util_cap);
    if (!jobs) return jobs.status();
    std::optional<eval::EvalReport> r;
    if (Status s = run_eval(a, learning, *jobs, nullptr, r, in); !s) return s;
    if (Status s = measure(a, learning, recommend, *jobs, r ? &*r : nullptr, in); !s) return s;
    // Jobs the hook ran at a lowered --mem: stored at their user's request (docs/bounds.md).
    size_t lowered = 0, killed = 0;
    for (const Job& j : *jobs) {
      lowered += j.ran_mem_bytes ? 1 : 0;
      killed += j.ran_mem_bytes && j.censored ? 1 : 0;
    }
    if (lowered > 0) {
      in.notes.push_back(fmt::format(
          "{} of the {} stored completions ran at a memory limit below their user's request (the "
          "hook's LOWER_MEM_TO_RECOMMENDATION), {} of them killed for memory there; their "
          "utilization is a share of the user's request, as peakcastd learned them",
          fmt::group_digits(lowered), fmt::group_digits(jobs->size()), fmt::group_digits(killed)));
    }
    return Status::ok();
  }
  in.source = a.trace;
  Result<ingest::Trace> trace = load_trace(a.trace, a.reader);
  if (!trace) return trace.status();
  std::optional<eval::EvalReport> r;
  if (Status s = run_eval(a, learning, trace->jobs, &*trace, r, in); !s) return s;
  return measure(a, learning, recommend, trace->jobs, r ? &*r : nullptr, in);
}

int run_report(const ReportArgs& a) {
  const int modes = !a.trace.empty() + !a.db.empty() + !a.from_json.empty();
  if (modes != 1) {
    return fail(Status::invalid("report: give one of TRACE, --db FILE or --from-json EVAL.json"));
  }
  if (a.from_json.size() > 2) return fail(Status::invalid("--from-json: EVAL.json [SIM.json]"));
  if (Status s = check_outputs({{"--output", a.out}}); !s) return fail(s);
  // A mistyped --cascade-option fails before a trace is read.
  Result<std::vector<std::pair<std::string, std::string>>> cascade = parse_cascade_options(a.cascade_options);
  if (!cascade) return fail(cascade.status());
  if (!report::have_plotting_library()) {
    return fail(Status::internal("this peakcast was built without the plotting library (npm was "
                                 "missing at configure time; see docs/report.md)"));
  }
  report::ReportInput in;
  in.title = a.title;
  // SIM.json first: a bad one should fail before any training.
  const std::string sim_path = a.from_json.size() == 2 ? a.from_json[1] : a.sim;
  if (!sim_path.empty()) {
    Result<nlohmann::json> s = read_json(sim_path);
    if (!s) return fail(s.status());
    Result<report::SimResults> sim = report::parse_sim(*s, sim_path);
    if (!sim) return fail(sim.status());
    in.sim = std::move(sim.value());
  }
  // Likewise the recommendation settings.
  sizing::RecommendConfig recommend;
  if (!a.sizing_config.empty()) {
    Result<sizing::RecommendConfig> cfg = sizing::load_recommend_config(a.sizing_config);
    if (!cfg) return fail(cfg.status());
    recommend = std::move(*cfg);
  }
  if (Status s = gather(a, std::move(*cascade), recommend, in); !s) return fail(s);
  // A history too small for any section (a job or two, none with a label): no page.
  if (!in.eval && in.predictions.empty() && in.usage.empty() && !in.recommendations && !in.sim) {
    return fail(Status::invalid(fmt::format("report: {}: no section can be drawn from these jobs "
                                            "(the lines above say why each section is missing)",
                                            in.source)));
  }
  Result<std::string> page = report::render_html(in);
  if (!page) return fail(page.status());
  if (Status s = write_output(a.out, *page); !s) return fail(s);
  std::cerr << fmt::format("wrote {} ({} plots, {:.1f} MB)\n", a.out, report::make_plots(in).size(),
                           static_cast<double>(page->size()) / 1e6);
  // The figure the page leads with, for whoever ran it from a shell.
  if (in.recommendations && !in.recommendations->totals.notes.empty()) {
    std::cerr << "report: " << in.recommendations->totals.notes.front() << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Write an HTML report with plots (opens offline)");
  cmd->footer(
      "Writes one self-contained HTML file (plots by Vega-Lite, inlined: it opens without a "
      "network): predicted vs actual utilization per resource, error by method and by history "
      "subgroup, the coverage of the upper bound peakcastd would have served against nominal, routing shares and latency per route, "
      "requested vs used memory over time per user, account and partition, what the requests "
      "peakcastd would have recommended would have wasted (GB·h) and cost (out-of-memory attempts) "
      "against the users' own, and with a SIM.json "
      "what each sizing policy would have wasted (GB·h) and cost (failures). Tables sort by "
      "clicking a header; plots have tooltips. On a history too young to train the cascade on (a "
      "site's first day) the page goes without the sections that need it and says why, and what "
      "history they need.\n"
      "  peakcast report TRACE -o report.html        evaluates TRACE (--methods) and trains the "
      "cascade on its first 80% to predict the rest\n"
      "  peakcast report --db FILE -o report.html    the same on peakcastd's stored completions\n"
      "  peakcast report --from-json EVAL.json [SIM.json] -o report.html   reuses `peakcast "
      "evaluate --json` output (no per-job plots)\n"
      "SIM.json: {\"results\": [{\"policy\", \"waste_gbh\", \"failures\", \"retries\", \"jobs\", "
      "\"failed_jobs\"}, ...]} (docs/report.md).\nExit codes: 0 ok, 2 usage or input error, 1 other "
      "failures.");
  cmd->add_option("TRACE", a->trace, "Job trace (any supported format with submit times)");
  cmd->add_option("-o,--output", a->out, "HTML file to write")->required();
  cmd->add_option("--db", a->db, "peakcastd's database (its --db FILE) instead of a trace");
  cmd->add_option("--from-json", a->from_json, "EVAL.json from `peakcast evaluate --json`, and optionally SIM.json")
      ->expected(1, 2);
  cmd->add_option("--sim", a->sim, "SIM.json from the sizing simulator (with TRACE or --db)");
  cmd->add_option("--title", a->title, "Page title")->default_str("peakcast report");
  add_reader_options(*cmd, a->reader);
  cmd->add_option("--methods", a->methods, "Methods to evaluate (as in `peakcast evaluate`)")
      ->default_str(a->methods);
  cmd->add_option("--seed", a->seed, "Seed for the bootstrap and the learned methods")
      ->check(seed_number())
      ->default_str("42");
  cmd->add_option("--bootstrap", a->bootstrap, "Day-block bootstrap resamples (0 = off; at most 1,000,000)")
      ->check(CLI::Range(0, 1'000'000))
      ->default_str("1000");
  cmd->add_option("--latency-jobs", a->latency_jobs, "Batch-1 timing pass over the first N test jobs")
      ->default_str("500");
  // The per-job upper bounds and recommended requests are peakcastd's; the same settings.
  cmd->add_option("--sizing-config", a->sizing_config,
                  "peakcastd's recommended-request settings (its --sizing-config JSON, per partition; "
                  "docs/bounds.md) for the recommended requests shown (default: the daemon's defaults)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--bound-coverage", a->bound_coverage,
                  "Nominal coverage of the online upper bound (peakcastd's --bound-coverage)")
      ->capture_default_str()->check(finite_range(0.5, 0.999));
  cmd->add_option("--bound-rebuild-jobs", a->bound_rebuild_jobs,
                  "Completions before the test block replayed into the online bound first, as "
                  "peakcastd does at start (its --bound-rebuild-jobs)")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{10000000}));
  cmd->add_option("--sizing-workloads", a->sizing_workloads,
                  "Scripts kept with their own sizing policy, which recommends once 10 of a script's "
                  "runs have completed (peakcastd's --sizing-workloads; 0 = every recommendation from "
                  "the bound)")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{100000}));
  cmd->add_option("--sizing-history", a->sizing_history,
                  "Completed runs a script's policy learns from (peakcastd's --sizing-history)")
      ->capture_default_str()->check(CLI::Range(size_t{10}, size_t{100000}));
  cmd->add_option("--sizing-memory", a->sizing_memory_mib,
                  "MiB the scripts' sizing policies may hold, the least recently used going first "
                  "(peakcastd's --sizing-memory; 0 = no budget)")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{1} << 20));
  cmd->add_option("--sizing-rebuild-runs", a->sizing_rebuild_runs,
                  "Runs that ended before the test block replayed into the scripts' sizing policies "
                  "first, each script's --sizing-history most recent, as peakcastd does at start (its "
                  "--sizing-rebuild-runs; 0 = the policies start with the test block)")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{100000000}));
  cmd->add_option("--sizing-days", a->sizing_days,
                  "As peakcastd's --sizing-days: each script's sizing policy answers from its runs "
                  "of about the last DAYS to 2 x DAYS days (0 = no limit): what the setting would "
                  "have changed in the requests recommended and their waste and failures")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{100} * 365));
  add_learning_options(*cmd, a->threads, a->code_options);
  add_cascade_options(*cmd, a->cascade_options);
  // As train and evaluate (docs/qwen2.md): the same setting as --code-option encoder=NAME.
  cmd->add_option("--encoder", a->encoder,
                  "Script encoder of code_only and cascade (default bag; qwen2 needs "
                  "--code-option base=DIR, docs/qwen2.md)")
      ->check(CLI::IsMember({"bag", "textcnn", "bilstm", "qwen2"}));
  cmd->callback([a, &exit_code] { exit_code = run_report(*a); });
}

}  // namespace peakcast::app
