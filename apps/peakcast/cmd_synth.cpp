// peakcast synth --jobs N --seed S -o FILE.jsonl: the synthetic trace generator (src/synth).
#include <iostream>

#include "common.h"

#ifdef PEAKCAST_HAVE_SYNTH
#include "peakcast/synth/synth.h"
#endif

namespace peakcast::app {
namespace {

struct SynthArgs {
  size_t jobs = 5000;
  uint64_t seed = 42;
  std::string out;
};

int run_synth(const SynthArgs& a) {
#ifdef PEAKCAST_HAVE_SYNTH
  return run_synth_module(a);
#else
  return fail(Status::unsupported(
      "this build has no synthetic generator (src/synth was not present when it was configured)"));
#endif
}

}  // namespace

void add_synth_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SynthArgs>();
  CLI::App* cmd = app.add_subcommand(
      "synth",
      "Write a synthetic job trace in canonical JSONL: users who over-request, recurring scripts "
      "that drift, CPU and GPU jobs whose arguments drive memory and VRAM, bursts of submissions, "
      "OOM-killed jobs. The built-in demo trace and the test fixture.");
  cmd->add_option("--jobs", a->jobs, "Number of jobs")->check(CLI::PositiveNumber)->default_str("5000");
  cmd->add_option("--seed", a->seed, "Random seed (same seed, same trace)")->default_str("42");
  cmd->add_option("-o,--output", a->out, "Output file (.jsonl; '-' = stdout)")->required();
  cmd->callback([a, &exit_code] { exit_code = run_synth(*a); });
}

}  // namespace peakcast::app
