// peakcast synth --jobs N --seed S -o FILE.jsonl: the synthetic trace generator (src/synth).
#include <iostream>

#include <fmt/format.h>

#include "common.h"
#include "peakcast/ingest/jsonl.h"
#include "peakcast/synth/synth.h"

namespace peakcast::app {
namespace {

struct SynthArgs {
  synth::SynthOptions options;
  bool no_scripts = false;
  std::string out;
};

int run_synth(const SynthArgs& a) {
  synth::SynthOptions o = a.options;
  o.include_scripts = !a.no_scripts;
  if (Status s = synth::validate(o); !s) {
    // synth::validate names the options' fields ("jobs: ..."); the user typed --jobs.
    for (const char* name : {"jobs", "users", "days", "seed"}) {
      if (s.message().starts_with(std::string(name) + ": ")) return fail(Status::invalid("--" + s.message()));
    }
    return fail(s);
  }
  // Before generating (minutes for millions of jobs): a mistyped path is a usage error.
  if (Status s = check_outputs({{"--output", a.out}}); !s) return fail(s);
  const ProgressFn progress = stderr_progress();
  Result<std::vector<Job>> jobs = synth::generate_trace(o, progress);
  if (!jobs) return fail(jobs.status());
  if (a.out == "-") {
    std::string text;
    for (const Job& j : *jobs) text += ingest::job_to_jsonl_line(j) + "\n";
    if (Status s = write_output("-", text); !s) return fail(s);
  } else if (Status s = synth::write_trace_jsonl(*jobs, a.out, progress); !s) {
    return fail(s);
  }
  size_t gpu = 0, oom = 0;
  for (const Job& j : *jobs) {
    gpu += j.req_gpus.value_or(0) > 0;
    oom += j.state == "OUT_OF_MEMORY";
  }
  std::cerr << fmt::format("wrote {} job{} ({} with GPUs, {} OUT_OF_MEMORY) to {}\n", jobs->size(),
                           jobs->size() == 1 ? "" : "s", gpu, oom, a.out);
  return kExitOk;
}

}  // namespace

void add_synth_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SynthArgs>();
  CLI::App* cmd = app.add_subcommand("synth", "Write a synthetic job trace (canonical JSONL)");
  cmd->footer(
      "Writes a synthetic job trace in canonical JSONL: users who over-request, recurring scripts "
      "that drift, CPU and GPU jobs whose arguments drive memory and VRAM, bursts of submissions, "
      "OOM-killed jobs (docs/synth.md has the generative model). The same seed gives the same "
      "trace. It is the built-in demo trace and the fixture for tests. " +
      fmt::format("The trace is built in memory (about 4 KB a job): --jobs at most {}, --users at "
                  "most {}, --days at most {} (a century).\n",
                  synth::kMaxJobs, synth::kMaxUsers, synth::kMaxDays) +
      "Exit codes: 0 ok, 2 usage or input error, 1 other failures.");
  synth::SynthOptions& o = a->options;
  cmd->add_option("--jobs", o.jobs, "Number of jobs")->check(positive_number())->capture_default_str();
  cmd->add_option("--seed", o.seed, "Random seed")
      ->check(seed_number())
      ->capture_default_str();
  cmd->add_option("--users", o.users, "Users over the whole trace")->check(positive_number())->capture_default_str();
  cmd->add_option("--days", o.days, "Approximate span of the submissions in days")->check(positive_number())->capture_default_str();
  cmd->add_flag("--no-scripts", a->no_scripts, "Leave out script text (identity goes to `workload`)");
  cmd->add_option("-o,--output", a->out, "Output file (.jsonl; '-' = stdout)")->required();
  cmd->callback([a, &exit_code] { exit_code = run_synth(*a); });
}

}  // namespace peakcast::app
