// peakcast simulate TRACE: replays a trace with sizing policies (docs/sizing.md).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.h"
#include "peakcast/core/units.h"
#include "peakcast/eval/method.h"
#include "peakcast/sizing/seed_summary.h"
#include "peakcast/sizing/simulate.h"

namespace peakcast::app {
namespace {

struct SimulateArgs {
  std::string trace;
  ReaderArgs reader;
  std::string json;
  std::string policies;
  std::string protocol = "sizey";
  std::string config;
  uint32_t seed = 1996;
  uint32_t seeds = 1;
  int threads = 0;
  double failure_price_gbh = 0.0;
  std::string def_mem_per_node;
  std::string def_mem_per_cpu;
  bool per_workload = false;
  std::string type_by = "workload";
};

// slurm.conf's notation: "4G", "4000M", "4096" (a bare number is MB, as there).
Result<double> parse_def_mem(const std::string& option, const std::string& text) {
  if (text.empty()) return 0.0;
  const auto bytes = parse_size(text, uint64_t{1} << 20);
  if (!bytes || *bytes == 0) {
    return Status::invalid(fmt::format("{}: not a memory size above 0: '{}' (e.g. 4G or 4000M; a "
                                       "bare number is MB, as in slurm.conf)", option, text));
  }
  return static_cast<double>(*bytes);
}

Result<std::vector<std::string>> parse_policies(const std::string& list) {
  std::vector<std::string> out;
  if (list.empty()) return out;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    if (auto p = sizing::make_policy(name); !p) return Status::invalid("--policies: " + p.status().message());
    out.push_back(name);
  }
  if (out.empty()) return Status::invalid("--policies: no policy named");
  return out;
}

nlohmann::json tally_json(const sizing::Tally& t) {
  return {{"waste_gbh", t.waste_gbh}, {"over_gbh", t.over_gbh}, {"failed_gbh", t.failed_gbh},
          {"usage_gbh", t.usage_gbh}, {"failures", t.failures}, {"retries", t.retries},
          {"jobs", t.jobs}, {"failed_jobs", t.failed_jobs}, {"unschedulable", t.unschedulable}};
}

// `seeded` is false under the chrono protocol, which has no random order: its rows show "-" and
// write a null seed rather than the --seed default it never used.
std::string table(const std::vector<sizing::PolicyResult>& results, bool seeded, bool per_workload) {
  std::string out = fmt::format("{:<18} {:>6} {:>12} {:>9} {:>8} {:>7} {:>11}\n", "policy", "seed",
                                "waste_GBh", "failures", "retries", "jobs", "failed_jobs");
  for (const auto& r : results) {
    const auto& t = r.total;
    out += fmt::format("{:<18} {:>6} {:>12.2f} {:>9} {:>8} {:>7} {:>11}\n", r.policy,
                       seeded ? std::to_string(r.seed) : std::string("-"), t.waste_gbh, t.failures,
                       t.retries, t.jobs, t.failed_jobs);
    if (!per_workload) continue;
    for (const auto& w : r.per_workload) {
      out += fmt::format("    {:<60} {:>10.2f} {:>6} {:>6} {:>6}\n", w.workload, w.waste_gbh,
                         w.failures, w.jobs, w.failed_jobs);
    }
  }
  return out;
}

nlohmann::json spread_json(const sizing::Spread& s) {
  return {{"mean", s.mean}, {"min", s.min}, {"max", s.max}};
}

// Each policy's mean over the seeds, with the range, when there is more than one seed.
std::string summary_table(const std::vector<sizing::SeedSummary>& summary, uint32_t first, uint32_t seeds) {
  std::string out = fmt::format("\nmean over {} seeds ({}-{}), [min - max]:\n", seeds, first, first + seeds - 1);
  out += fmt::format("{:<18} {:>12} {:>21} {:>9} {:>17} {:>11}\n", "policy", "waste_GBh", "[min - max]",
                     "failures", "[min - max]", "failed_jobs");
  for (const auto& s : summary) {
    out += fmt::format("{:<18} {:>12.2f} {:>21} {:>9.1f} {:>17} {:>11.1f}\n", s.policy, s.waste_gbh.mean,
                       fmt::format("[{:.2f} - {:.2f}]", s.waste_gbh.min, s.waste_gbh.max), s.failures.mean,
                       fmt::format("[{:.0f} - {:.0f}]", s.failures.min, s.failures.max), s.failed_jobs.mean);
  }
  return out;
}

// peakcast against the baseline of least (mean) waste, in one line.
std::string comparison_line(const sizing::BaselineComparison& c) {
  return fmt::format(
      "\n{} against the best baseline ({}, the least waste{}): waste {:.2f} / {:.2f} GB*h = {:.2f}x; "
      "failed attempts {:.1f} / {:.1f}\n",
      c.policy, c.best_baseline, c.seeds > 1 ? fmt::format(", means over {} seeds", c.seeds) : std::string(),
      c.waste_gbh, c.baseline_waste_gbh, c.waste_ratio, c.failures, c.baseline_failures);
}

nlohmann::json comparison_json(const std::optional<sizing::BaselineComparison>& c) {
  if (!c) return nullptr;
  return {{"policy", c->policy},           {"best_baseline", c->best_baseline},
          {"waste_gbh", c->waste_gbh},     {"baseline_waste_gbh", c->baseline_waste_gbh},
          {"waste_ratio", c->waste_ratio}, {"failures", c->failures},
          {"baseline_failures", c->baseline_failures}, {"seeds", c->seeds}};
}

int run_simulate(const SimulateArgs& a) {
  auto protocol = sizing::parse_protocol(a.protocol);
  if (!protocol) return fail(protocol.status());
  if (Status s = check_outputs({{"--json", a.json}}); !s) return fail(s);
  auto policies = parse_policies(a.policies);
  if (!policies) return fail(policies.status());
  if (Status s = sizing::check_seeds(*protocol, a.seeds, a.seed); !s) return fail(s);
  if (a.threads < 0) return fail(Status::invalid(fmt::format("--threads: must be 0 (all cores) or more, got {}", a.threads)));
  // Bounded so that price x failures stays a finite cost (inf x 0 would be NaN).
  if (!(a.failure_price_gbh >= 0.0 && a.failure_price_gbh <= 1e9))
    return fail(Status::invalid(fmt::format("--failure-price: must be a number of GBh from 0 to 1e9, got {}",
                                            a.failure_price_gbh)));
  if (!a.def_mem_per_node.empty() && !a.def_mem_per_cpu.empty()) {
    return fail(Status::invalid("--def-mem-per-node excludes --def-mem-per-cpu: give one, as "
                                "slurm.conf sets DefMemPerNode or DefMemPerCPU"));
  }
  sizing::DefaultMemory def_mem;
  if (auto b = parse_def_mem("--def-mem-per-node", a.def_mem_per_node)) def_mem.per_node_bytes = *b;
  else return fail(b.status());
  if (auto b = parse_def_mem("--def-mem-per-cpu", a.def_mem_per_cpu)) def_mem.per_cpu_bytes = *b;
  else return fail(b.status());
  sizing::SimulateOptions o;
  o.protocol = *protocol;
  o.policies = *policies;
  o.policy.failure_price = a.failure_price_gbh * 1e9 * 3.6e6;  // GB x h -> byte x ms
  if (!a.config.empty()) {
    auto cfg = sizing::load_recommend_config(a.config);
    if (!cfg) return fail(cfg.status());
    o.policy.recommend = std::move(*cfg);
  }
  // Sizey's protocol reads a Nextflow trace as Sizey's main.py does (ReadOptions::sizey_rows).
  Result<ingest::Trace> trace = load_trace(a.trace, a.reader, o.protocol == sizing::Protocol::kSizey);
  if (!trace) return fail(trace.status());
  // Only the Nextflow reader reads rss and realtime, which Sizey's protocol replays: on another
  // trace it would find no task type, after reading it all.
  if (o.protocol == sizing::Protocol::kSizey && trace->format != ingest::Format::kNextflow) {
    return fail(Status::invalid(fmt::format(
        "{}: this is a {} trace; Sizey's protocol (the default) reads Nextflow traces (each task's "
        "rss and realtime, per process); use --protocol chrono, which replays any trace with "
        "submit times in event order (peak = peak_rss or the trace's peak memory)",
        trace->path, ingest::format_name(trace->format))));
  }
  if (o.protocol == sizing::Protocol::kChrono && !trace->has_submit_times) {
    // Without submit times there is no event order, and no run time either (sacct's Elapsed is
    // placed from Start): every allocation would cost 0 GB*h.
    return fail(Status::invalid(fmt::format(
        "{}: this {} trace has no submit times, so the chrono protocol cannot replay it in event "
        "time (a policy may only learn from tasks that ended before each submission). Either {}, "
        "or use --protocol sizey{}.",
        trace->path, ingest::format_name(trace->format), ingest::submit_times_remedy(trace->format),
        trace->format == ingest::Format::kNextflow ? "" : " on a Nextflow trace")));
  }
  auto tasks = sizing::tasks_from_jobs(trace->jobs, o.protocol == sizing::Protocol::kSizey);
  if (a.type_by == "script") {  // as peakcastd sizes a script with its own runs
    for (sizing::SimTask& t : tasks) t.info.workload = sizing::script_workload_of(trace->jobs[t.row]);
  }
  // Lines for stderr (after "peakcast simulate: ") and for the JSON's notes, which
  // `peakcast report --sim` shows at the top of the page: each must read on its own.
  std::vector<std::string> notes;
  auto say = [&notes](std::string line, std::string_view stderr_prefix) {
    std::cerr << "peakcast simulate: " << stderr_prefix << line << "\n";
    notes.push_back(std::move(line));
  };
  if (const size_t given = sizing::give_default_request(tasks, trace->jobs, def_mem); given > 0) {
    const bool per_cpu = def_mem.per_cpu_bytes > 0;
    say(fmt::format("{} of {} tasks have no memory request; each is given {}, as Slurm gives a job "
                    "submitted without --mem its {}.",
                    given, tasks.size(),
                    per_cpu ? fmt::format("{} per CPU (--def-mem-per-cpu)", a.def_mem_per_cpu)
                            : fmt::format("{} (--def-mem-per-node)", a.def_mem_per_node),
                    per_cpu ? "DefMemPerCPU" : "DefMemPerNode"),
        "note: ");
  } else if (const auto unrequested = static_cast<size_t>(std::count_if(
                 tasks.begin(), tasks.end(), [](const sizing::SimTask& t) { return !(t.info.request_bytes > 0); }));
             unrequested > 0) {
    say(fmt::format("{} of {} tasks have no memory request. presets gives such a task the largest "
                    "peak its type has shown; a policy that knows nothing of the type yet (presets "
                    "included) gives it 0 bytes, and the attempt is retried from 1 MiB. "
                    "--def-mem-per-node or --def-mem-per-cpu gives them what the site's scheduler would.",
                    unrequested, tasks.size()),
        "note: ");
  }
  o.seed = a.seed;
  o.seeds = a.seeds;
  o.threads = eval::resolve_threads(a.threads);
  auto progress = stderr_progress();
  const std::string label = o.protocol == sizing::Protocol::kChrono ? std::string("simulate chrono")
                            : a.seeds == 1 ? fmt::format("simulate seed {}", a.seed)
                                           : fmt::format("simulate seeds {}-{}", a.seed, a.seed + a.seeds - 1);
  o.progress = [&](size_t done, size_t total) { progress(label, done, total); };
  auto simulated = sizing::simulate(tasks, o);
  if (!simulated) return fail(simulated.status().with_context(a.trace));
  std::vector<sizing::PolicyResult> all = std::move(simulated->results);
  const std::vector<std::string>& left_out = simulated->notes;
  for (const auto& n : left_out) say(o.protocol == sizing::Protocol::kSizey ? "left out of Sizey's protocol: " + n : n, "");
  const bool seeded = o.protocol == sizing::Protocol::kSizey;
  for (const auto& r : all) {
    if (r.total.unschedulable == 0) continue;
    say(fmt::format("{}{}: {} of its {} tasks peaked above their partition's limit_bytes (--config): "
                    "they failed at the limit and could not be held; counted in failures and "
                    "failed_jobs, and as \"unschedulable\" in the JSON",
                    r.policy, seeded ? fmt::format(" (seed {})", r.seed) : std::string(),
                    r.total.unschedulable, r.total.jobs),
        "note: ");
  }
  const auto summary = sizing::summarize_seeds(all);
  const auto comparison = sizing::compare_with_best_baseline(summary);
  std::ostream& out = human_output({a.json});
  out << table(all, seeded, a.per_workload);
  if (a.seeds > 1) out << summary_table(summary, a.seed, a.seeds);
  if (comparison) out << comparison_line(*comparison);
  out.flush();
  if (!a.json.empty()) {
    nlohmann::json j;
    j["trace"] = trace->path;
    j["protocol"] = a.protocol;
    j["notes"] = notes;
    j["results"] = nlohmann::json::array();
    for (const auto& r : all) {
      nlohmann::json e = tally_json(r.total);
      e["policy"] = r.policy;
      e["seed"] = seeded ? nlohmann::json(r.seed) : nlohmann::json(nullptr);
      e["per_workload"] = nlohmann::json::array();
      for (const auto& w : r.per_workload) {
        nlohmann::json wj = tally_json(w);
        wj["workload"] = w.workload;
        e["per_workload"].push_back(std::move(wj));
      }
      j["results"].push_back(std::move(e));
    }
    j["summary"] = nlohmann::json::array();
    for (const auto& m : summary) {
      j["summary"].push_back({{"policy", m.policy}, {"seeds", m.seeds}, {"waste_gbh", spread_json(m.waste_gbh)},
                              {"failures", spread_json(m.failures)}, {"retries", spread_json(m.retries)},
                              {"failed_jobs", spread_json(m.failed_jobs)}, {"jobs", spread_json(m.jobs)}});
    }
    j["comparison"] = comparison_json(comparison);
    if (Status st = write_output(a.json, j.dump(2) + "\n"); !st) return fail(st);
  }
  return kExitOk;
}

}  // namespace

void add_simulate_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand("simulate", "Replay a trace with memory-sizing policies: waste (GB*h) and failures");
  cmd->footer(
      "Replays the trace as a scheduler would with each sizing policy: a task gets the policy's "
      "allocation; when its true peak exceeds it, the attempt fails (out of memory) and is retried "
      "with the policy's retry rule. waste_GBh = over-allocation x run time of successful attempts "
      "+ the whole allocation x run time of failed ones (GB = 1e9 bytes). failures = failed "
      "attempts (as Sizey counts them); failed_jobs = tasks that failed at least once.\n"
      "Protocols: 'sizey' (Sizey's: per Nextflow process with >= 34 tasks, a numpy-compatible "
      "random order by seed, 30% warm start, the policy learns after each task; peak = rss, input "
      "= rchar, run time = realtime); 'chrono' (event time: the last 20% of tasks by submission "
      "are scored, each policy learning only from tasks completed before each submission; peak = "
      "peak_rss).\n"
      "Policies, in the order reported: presets (the first: the baseline `peakcast report` compares "
      "with), witt_p95, witt_lr_std, witt_lr_stdunder, tovar, max_so_far, vpa, peakcast, "
      "peakcast_fixed90 (docs/sizing.md says what each does).\n"
      "With --seeds N > 1 a second table gives each policy's mean over the seeds with its range. "
      "The last line sets peakcast against the baseline (presets, witt_*, tovar, max_so_far, vpa) "
      "of least mean waste: its waste as a multiple of that baseline's, and both failure counts.\n"
      "--json FILE writes {\"results\": [{policy, seed, waste_gbh, failures, retries, jobs, "
      "failed_jobs, per_workload: [...]}, ...], \"summary\": [{policy, seeds, waste_gbh: {mean, "
      "min, max}, failures: {...}, retries, failed_jobs, jobs}, ...], \"comparison\": {policy, "
      "best_baseline, waste_gbh, baseline_waste_gbh, waste_ratio, failures, baseline_failures, "
      "seeds} or null}, which `peakcast report --sim` reads; seed is null under chrono, which has "
      "no random order.\n"
      "Exit codes: 0 ok, 2 usage or input error, 1 other failures.");
  cmd->add_option("TRACE", a->trace, "Job trace (a Nextflow trace for --protocol sizey)")->required();
  add_reader_options(*cmd, a->reader);
  cmd->add_option("--policies", a->policies, "Comma-separated policy names (default: all)");
  cmd->add_option("--protocol", a->protocol, "sizey (default) or chrono");
  cmd->add_option("--seed", a->seed, "First seed of the sizey protocol's random order (default 1996)")
      ->check(non_negative_number());
  cmd->add_option("--seeds", a->seeds, "Sizey protocol: run seeds SEED .. SEED+N-1 (default 1)")
      ->check(positive_number());
  cmd->add_option("--threads", a->threads,
                  "Replays (one per seed and policy) run at once on N threads (default 0: all cores); "
                  "each replay is independent, so the figures are the same for any N");
  cmd->add_option("--config", a->config,
                  "Recommendation-rule settings (JSON, docs/sizing.md) for the peakcast policies, "
                  "as peakcastd --sizing-config reads them: a setting the file leaves out takes the "
                  "daemon's default (5% margin, 256 MiB granularity, 512 MiB floor), so even {} "
                  "replays what the daemon would recommend. Without --config: no margin, 1 MiB "
                  "granularity, no floor, capped at the preset request");
  cmd->add_option("--failure-price", a->failure_price_gbh,
                  "peakcast's price of one failed attempt in GBh, weighed against waste when it "
                  "chooses an allocation (default 0: the mean memory x run time of the tasks known "
                  "before the replay, i.e. a failure costs an average task)");
  // Not ->excludes(): CLI11 prints "Excludes: ..." in the option's column, run into its help.
  cmd->add_option("--def-mem-per-node", a->def_mem_per_node,
                  "What a task without a memory request is given, as slurm.conf's DefMemPerNode "
                  "gives a job submitted without --mem (4G, 4000M; a bare number is MB). "
                  "Default: nothing, and presets gives such a task the largest peak its type has "
                  "shown. Not with --def-mem-per-cpu")
      ->type_name("SIZE");
  cmd->add_option("--def-mem-per-cpu", a->def_mem_per_cpu,
                  "Same, per CPU, as DefMemPerCPU: SIZE x the task's CPUs (1 when the trace does not "
                  "say). Not with --def-mem-per-node")
      ->type_name("SIZE");
  cmd->add_option("--type-by", a->type_by,
                  "What makes a task type, sized by one policy instance: workload (default: the "
                  "trace's workload -- a Nextflow process, an SWF executable, a sacct job without a "
                  "stored script -- else the job name) or script (each job script alone, as peakcastd "
                  "sizes a script with its own runs; the same types where the trace has a workload)")
      ->check(CLI::IsMember({"workload", "script"}));
  cmd->add_flag("--per-workload", a->per_workload, "Also print each task type's line");
  cmd->add_option("--json", a->json, "Also write the results as JSON to FILE ('-' = stdout)");
  cmd->callback([a, &exit_code] { exit_code = run_simulate(*a); });
}

}  // namespace peakcast::app
