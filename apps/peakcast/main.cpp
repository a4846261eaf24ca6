// peakcast CLI: parses arguments and calls the library; each subcommand lives in cmd_*.cpp.
#include <iostream>

#include "common.h"
#include "peakcast/core/version.h"

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
  app.set_version_flag("--version", "peakcast " + std::string(peakcast::kVersion),
                       "Print the version and exit");
  // README writes `peakcast -v inspect ...`; `peakcast inspect ... -v` means the same.
  for (CLI::App* sub : app.get_subcommands({})) {
    sub->add_flag("-v,--verbose", verbose, "Also print informational log messages to stderr");
  }
  app.parse_complete_callback([&verbose] { install_log_sink(verbose); });
  // A first word that names no subcommand is said to be one (CLI11 would say "A subcommand is
  // required", as if none had been given).
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("-")) {
      if (arg == "-v" || arg == "--verbose") continue;
      break;  // --help, --version or an unknown option: CLI11 answers it
    }
    std::string names;
    bool known = false;
    for (CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->check_name(arg);
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "peakcast: error: unknown subcommand '" << arg << "' (subcommands: " << names
                << "; peakcast --help lists them)\n";
      return kExitUsage;
    }
    break;
  }
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
