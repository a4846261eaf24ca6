// peakcast predict --model MODEL_DIR JOB.json|-: predicts canonical JSONL request records with a
// saved model, optionally with the history of an earlier trace.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common.h"
#include "peakcast/core/io.h"
#include "peakcast/tools/model_tools.h"

namespace peakcast::app {
namespace {

struct PredictArgs {
  std::string model;
  std::string input;
  std::string history;
  ReaderArgs reader;
  bool util_cap_given = false;  // --util-cap on the command line
  bool json = false;
};

Result<std::string> read_input(const std::string& path) {
  if (path != "-") return read_file(path);
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (std::cin.bad()) return Status::io("reading standard input failed");
  return text;
}

int run_predict(const PredictArgs& a) {
  if (a.input == "-" && a.history == "-") {
    return fail(Status::invalid("JOBS and --history both read standard input (-): give one of them as a file"));
  }
  Result<std::unique_ptr<cascade::Predictor>> predictor = cascade::load_predictor(a.model);
  if (!predictor) return fail(predictor.status());
  Result<std::string> text = read_input(a.input);
  if (!text) return fail(text.status());
  Result<std::vector<Job>> jobs = eval::parse_request_records(
      *text, a.input == "-" ? "<stdin>" : a.input, (*predictor)->util_cap());
  if (!jobs) return fail(jobs.status());
  std::optional<ingest::Trace> history;
  if (!a.history.empty()) {
    // The history's labels are clipped as the model's training labels were (peakcastd does the
    // same with its store): a cap of its own would feed the experts other values.
    const double cap = (*predictor)->util_cap();
    if (a.util_cap_given && a.reader.util_cap != cap) {
      return fail(Status::invalid(fmt::format(
          "--util-cap {} differs from the model's util_cap {}: the history is read with the "
          "model's cap; leave --util-cap out (or give {})", a.reader.util_cap, cap, cap)));
    }
    ReaderArgs reader = a.reader;
    reader.util_cap = cap;
    Result<ingest::Trace> t = load_trace(a.history, reader);
    if (!t) return fail(t.status());
    history = std::move(t).value();
  }
  const std::vector<cascade::JobPrediction> preds =
      eval::predict_jobs(**predictor, *jobs, history ? &history->jobs : nullptr);
  std::string out;
  if (!a.json) out += (*predictor)->describe() + "\n";
  for (const cascade::JobPrediction& p : preds) {
    out += a.json ? cascade::to_json(p).dump() + "\n" : eval::render_prediction(p);
  }
  if (Status s = write_output("-", out); !s) return fail(s);
  return kExitOk;
}

}  // namespace

void add_predict_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand("predict", "Predict jobs' peak utilization with a saved model");
  cmd->footer(
      "Predicts canonical JSONL job records (one per line; outcome fields are ignored) with a "
      "model directory from `peakcast train` (or a history-only model). With --history TRACE, "
      "the jobs of that trace that ended before a job's submit_time (a required field, epoch "
      "seconds, as peakcastd's) are its history, its labels clipped at the model's util_cap. Prints per job and resource the utilization, the "
      "bytes, the route (bypass, encoder, cache, no_history, tree), expert, gamma and a rationale; "
      "--json prints one object per job in the service's answer format. The upper bound and "
      "the request at it are the model's own (split-conformal, fitted once at training): "
      "peakcastd answers with its online bound instead, updated with every completion, and "
      "recommends from that or from the script's own sizing policy, or not at all before it has "
      "evidence (docs/bounds.md); `peakcast report` shows what it would have answered.\nExit "
      "codes: 0 ok, 2 usage or input error, 1 other failures.");
  cmd->add_option("--model", a->model, "Model directory")->required();
  cmd->add_option("JOBS", a->input, "Canonical JSONL request record(s); '-' = stdin")->required();
  cmd->add_option("--history", a->history, "Trace of earlier jobs (any supported format; '-' = stdin)");
  add_reader_options(*cmd, a->reader);
  cmd->get_option("--util-cap")
      ->description(
          "Labels of the --history trace above this are clipped to it; default and only accepted "
          "value: the model's util_cap")
      ->default_str("");  // not the reader's 1.0: the default is the model's cap
  cmd->add_flag("--json", a->json, "One JSON object per job: {job_id, predictions: {mem, vram}}");
  cmd->callback([a, cmd, &exit_code] {
    a->util_cap_given = cmd->get_option("--util-cap")->count() > 0;
    exit_code = run_predict(*a);
  });
}

}  // namespace peakcast::app
