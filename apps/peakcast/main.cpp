// peakcast CLI: parses arguments and calls the library; each subcommand lives in cmd_*.cpp.
#include <iostream>

#include "common.h"

int main(int argc, char** argv) {
  using namespace peakcast::app;
  CLI::App app{
      "peakcast: predict, at submission, the peak memory and GPU-memory utilization of batch "
      "jobs, and evaluate predictors on real job traces under an event-time protocol."};
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Also print informational log messages to stderr");
  int exit_code = kExitOk;
  add_evaluate_command(app, exit_code);
  add_inspect_command(app, exit_code);
  add_synth_command(app, exit_code);
  add_train_command(app, exit_code);
  add_predict_command(app, exit_code);
  add_report_command(app, exit_code);
  add_slurm_sync_command(app, exit_code);
  add_tokenize_command(app, exit_code);
  add_embed_command(app, exit_code);
  add_simulate_command(app, exit_code);
  app.parse_complete_callback([&verbose] { install_log_sink(verbose); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the parse error
    return code == 0 ? kExitOk : kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "peakcast: internal error: " << e.what() << "\n";
    return kExitFailure;
  }
  return exit_code;
}
