// Shared pieces of the peakcast subcommands: reader options, the stderr log sink and progress,
// and the one place that maps a Status to an exit code.
#pragma once

#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "peakcast/core/log.h"
#include "peakcast/core/status.h"
#include "peakcast/ingest/reader.h"
#include "cli_checks.h"

namespace peakcast::app {

// CLI11's PositiveNumber / NonNegativeNumber, with a message a person reads ("--jobs: must be a
// finite number above 0, got 0") instead of a range that prints the largest double in full.
CLI::Validator positive_number();
CLI::Validator non_negative_number();
// A seed: a whole number from 0 to 2^62 (XGBoost reads its seed as a signed 64-bit integer, and
// --seeds N adds up to N - 1 to it); non_negative_number's check first, with its messages.
CLI::Validator seed_number();

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the system failed us (disk, internal error)
inline constexpr int kExitUsage = 2;    // bad arguments or bad input

struct ReaderArgs {
  std::string format = "auto";
  bool strict = false;
  double util_cap = 1.0;
  std::string user;
  std::string columns;
  std::string scripts_dir;
  std::string scripts_dump;
  std::string sacct_timezone;
  std::string nextflow_timezone;
};

// --format, --strict, --util-cap, --user, --columns, --scripts-dir, --scripts-dump,
// --sacct-timezone, --nextflow-timezone.
void add_reader_options(CLI::App& cmd, ReaderArgs& args);

// Reads the trace and prints the reader summary to stderr (every command does); `sizey_rows`
// reads a Nextflow trace as Sizey's protocol does (ingest::ReadOptions::sizey_rows).
Result<ingest::Trace> load_trace(const std::string& path, const ReaderArgs& args,
                                 bool sizey_rows = false);

// Writes text to FILE ("-" = standard output).
Status write_output(const std::string& path, const std::string& text);
// Before a long run: each output given (option name, path; empty = not given) can be written
// where it points (its folder exists and is writable, it is no folder itself), no two name the
// same file, and at most one goes to standard output. A typo then costs nothing.
Status check_outputs(std::initializer_list<std::pair<std::string_view, std::string_view>> outputs);
// Where a command's human-readable tables go: standard output, or standard error when one of
// `outputs` is "-" (that output then has standard output to itself: `--json - | jq` works).
std::ostream& human_output(std::initializer_list<std::string_view> outputs);

// Prints "peakcast: error: ..." to stderr; returns kExitUsage for input errors, else kExitFailure.
int fail(const Status& status);

// Progress lines on stderr, at most about once a second per stage, for runs that take a while.
ProgressFn stderr_progress();

// Routes peakcast::log to stderr (warnings and above, or everything with verbose).
void install_log_sink(bool verbose);

// --threads N (XGBoost and LibTorch; 0 = all cores) and --code-option KEY=VALUE (repeatable,
// code-model settings such as max_epochs=5; the list is in --help).
void add_learning_options(CLI::App& cmd, int& threads, std::vector<std::string>& code_options);
// The code model's settings from the command line: --code-option pairs and the script encoder.
struct CodeSettings {
  std::vector<std::pair<std::string, std::string>> options;  // without encoder=
  std::string encoder;                                        // empty: neither form given (bag)
};
// "key=value" strings -> pairs; a missing '=' is an input error naming the option.
// `--code-option encoder=NAME` is the same setting as `--encoder NAME` (docs/qwen2.md writes it
// that way): it moves out of the pairs into `encoder`. `encoder_flag` is --encoder's value, empty
// when it was not given; the two forms with different names are a usage error.
Result<CodeSettings> parse_code_options(const std::vector<std::string>& options,
                                        const std::string& encoder_flag);

// --cascade-option KEY=VALUE (repeatable): the cascade's own settings over its defaults, such as
// tree_bag=1 or tree.max_depth=8 (the list is in --help).
void add_cascade_options(CLI::App& cmd, std::vector<std::string>& cascade_options);
// "key=value" strings -> pairs, each checked against the cascade's defaults
// (cascade::set_cascade_option): a typo or a value out of bounds is an input error before any
// trace is read.
Result<std::vector<std::pair<std::string, std::string>>> parse_cascade_options(
    const std::vector<std::string>& options);

// Subcommands: each adds itself to `app` and sets `exit_code` when it runs.
void add_evaluate_command(CLI::App& app, int& exit_code);
void add_inspect_command(CLI::App& app, int& exit_code);
void add_synth_command(CLI::App& app, int& exit_code);
void add_slurm_sync_command(CLI::App& app, int& exit_code);
void add_train_command(CLI::App& app, int& exit_code);
void add_predict_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);
void add_tokenize_command(CLI::App& app, int& exit_code);  // BPE ids (qwen2 encoder)
void add_embed_command(CLI::App& app, int& exit_code);     // Qwen2 hidden states
void add_simulate_command(CLI::App& app, int& exit_code);  // sizing policies replayed

}  // namespace peakcast::app
