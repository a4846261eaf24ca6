// peakcast inspect TRACE: what a trace holds, before evaluating anything on it.
#include <iostream>

#include <nlohmann/json.hpp>

#include "common.h"
#include "peakcast/tools/inspect.h"
#include "peakcast/eval/report.h"

namespace peakcast::app {
namespace {

struct InspectArgs {
  std::string trace;
  ReaderArgs reader;
  std::string json;
};

int run_inspect(const InspectArgs& a) {
  // Before reading and replaying the trace (minutes for a large one): a mistyped path is a usage error.
  if (Status s = check_outputs({{"--json", a.json}}); !s) return fail(s);
  Result<ingest::Trace> trace = load_trace(a.trace, a.reader);
  if (!trace) return fail(trace.status());
  // Nothing to describe: "jobs 0" with exit 0 read as if an empty file were a trace (evaluate
  // and train refuse one too).
  if (trace->jobs.empty()) {
    return fail(Status::invalid(
        trace->path + ": the trace holds no jobs (" +
        (trace->stats.lines == 0 ? std::string("no records: an empty file, or a header alone")
                                 : std::to_string(trace->stats.lines) +
                                       " records, none kept: the reader's notes above say why") +
        ")"));
  }
  const eval::TraceSummary s = eval::summarize_trace(*trace, stderr_progress());
  std::ostream& out = human_output({a.json});
  out << eval::render_summary(s, *trace);
  out.flush();
  if (!a.json.empty()) {
    nlohmann::json j = eval::to_json(s);
    j["trace"] = {{"path", trace->path}, {"format", ingest::format_name(trace->format)}};
    j["reader"] = eval::to_json(trace->stats);
    j["notes"] = trace->notes;
    if (Status st = write_output(a.json, j.dump(2) + "\n"); !st) return fail(st);
  }
  return kExitOk;
}

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Describe what a job trace holds");
  cmd->footer(
      "Describes a job trace: jobs, users, distinct script identities, label coverage per resource "
      "(clipped, OOM-censored), share of jobs with exact-script and user history at submission, "
      "the utilization distribution, and final states (OUT_OF_MEMORY, PREEMPTED, ...). Works on "
      "sacct dumps without submit times. A trace that holds no jobs (an empty file, a header "
      "alone) is an input error.\n"
      "Exit codes: 0 ok, 2 usage or input error (no jobs included), 1 other failures.");
  cmd->add_option("TRACE", a->trace, "Job trace (any supported format; gzip accepted; '-' = stdin)")
      ->required();
  add_reader_options(*cmd, a->reader);
  cmd->add_option("--json", a->json, "Also write the summary as JSON to FILE ('-' = stdout)");
  cmd->callback([a, &exit_code] { exit_code = run_inspect(*a); });
}

}  // namespace peakcast::app
