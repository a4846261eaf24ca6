#include "common.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "cli_checks.h"
#include "peakcast/cascade/cascade_config.h"
#include "peakcast/core/io.h"
#include "peakcast/core/units.h"
#include "peakcast/eval/report.h"
#include "peakcast/models/code/code_config.h"

namespace peakcast::app {
namespace {

CLI::Validator number_check(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        const std::optional<double> v = parse_double(text);
        if (!v || !std::isfinite(*v)) return "must be a finite number, got '" + text + "'";
        if (zero_allowed ? *v < 0.0 : *v <= 0.0)
          return std::string(zero_allowed ? "must be 0 or more" : "must be above 0") + ", got " + text;
        return {};
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}

}  // namespace

CLI::Validator positive_number() { return number_check(false); }
CLI::Validator non_negative_number() { return number_check(true); }

CLI::Validator seed_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        constexpr uint64_t kMaxSeed = uint64_t{1} << 62;
        if (std::string e = number_check(true)(text); !e.empty()) return e;  // not a number, or negative
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        const unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
        if (!digits || errno == ERANGE || v > kMaxSeed)
          return fmt::format("must be a whole number from 0 to {}, got {}", kMaxSeed, text);
        return {};
      },
      "SEED");
}

void add_reader_options(CLI::App& cmd, ReaderArgs& a) {
  cmd.add_option("--format", a.format,
                 "Trace format: auto (detected from the content), swf, nextflow, sacct, jsonl")
      ->check(CLI::IsMember({"auto", "swf", "nextflow", "sacct", "jsonl"}))
      ->default_str("auto");
  cmd.add_flag("--strict", a.strict, "Stop at the first malformed line instead of skipping it");
  cmd.add_option("--util-cap", a.util_cap,
                 "Labels above this utilization are clipped to it (and counted)")
      ->check(positive_number())
      ->default_str("1.0");
  cmd.add_option("--user", a.user, "Nextflow traces: the user name (default: from the file name)");
  cmd.add_option("--columns", a.columns,
                 "sacct output without a header (-n): the --format column names, comma separated");
  cmd.add_option("--scripts-dir", a.scripts_dir, "sacct: folder of <jobid>.sh job scripts");
  cmd.add_option("--scripts-dump", a.scripts_dump, "sacct: file of concatenated `sacct -B` output");
  cmd.add_option("--sacct-timezone", a.sacct_timezone,
                 "sacct: the time zone its Submit/Start/End were printed in, a tz database name such "
                 "as Europe/Berlin (sacct prints the local time of the host it ran on unless run with "
                 "TZ=UTC; times with an offset are read as they say)")
      ->default_str("UTC");
  cmd.add_option("--nextflow-timezone", a.nextflow_timezone,
                 "Nextflow traces: the time zone their submit/start/complete were printed in, a tz "
                 "database name such as Europe/Berlin (Nextflow prints the local time of the JVM that "
                 "ran the pipeline, without a zone; raw epoch milliseconds, trace.raw = true, are read "
                 "as they say). A time the clocks showed twice is settled by the task's duration, then by "
                 "the row order (rows are written as tasks complete), else read as the earliest submit "
                 "and the latest complete; one they skipped skips its row (docs/formats.md)")
      ->default_str("UTC");
}

void add_learning_options(CLI::App& cmd, int& threads, std::vector<std::string>& code_options) {
  cmd.add_option("--threads", threads,
                 "Threads for XGBoost and LibTorch (0 = all cores; LibTorch's own default is 1). On a "
                 "machine shared with other work, run with OMP_WAIT_POLICY=passive: OpenMP's "
                 "spinning threads otherwise fight for the cores (measured 30x slower)")
      ->check(non_negative_number())
      ->default_str("0");
  std::string help = "Code-model setting KEY=VALUE over the defaults (repeatable):";
  for (const models::code::CodeOptionInfo& o : models::code::code_config_options()) {
    help += fmt::format("\n  {:<16} {} {}", o.name, o.bounds, o.description);
  }
  cmd.add_option("--code-option", code_options, help)->take_all()->expected(1);
}

namespace {

// One "KEY=VALUE" of a repeatable option (`flag`): a missing '=' or an empty key names the flag
// and an example.
Result<std::pair<std::string, std::string>> key_value(const std::string& kv, std::string_view flag,
                                                      std::string_view example) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::invalid(fmt::format("{} '{}': expected KEY=VALUE, e.g. {}", flag, kv, example));
  }
  return std::pair{kv.substr(0, eq), kv.substr(eq + 1)};
}

}  // namespace

void add_cascade_options(CLI::App& cmd, std::vector<std::string>& cascade_options) {
  std::string help =
      "Cascade setting KEY=VALUE over the defaults (repeatable; saved in the model's manifest). "
      "Lists are written a,b,c:";
  for (const std::string& line : cascade::cascade_option_help()) help += "\n  " + line;
  cmd.add_option("--cascade-option", cascade_options, help)->take_all()->expected(1);
}

Result<std::vector<std::pair<std::string, std::string>>> parse_cascade_options(
    const std::vector<std::string>& options) {
  std::vector<std::pair<std::string, std::string>> out;
  cascade::CascadeConfig check;
  for (const std::string& kv : options) {
    auto pair = key_value(kv, "--cascade-option", "tree_bag=1");
    if (!pair) return pair.status();
    if (Status s = cascade::set_cascade_option(check, pair->first, pair->second); !s) return s;
    out.push_back(std::move(*pair));
  }
  return out;
}

Result<CodeSettings> parse_code_options(const std::vector<std::string>& options,
                                        const std::string& encoder_flag) {
  CodeSettings out;
  out.encoder = encoder_flag;
  for (const std::string& kv : options) {
    auto pair = key_value(kv, "--code-option", "max_epochs=5");
    if (!pair) return pair.status();
    auto& [key, value] = *pair;
    if (key != "encoder") {
      out.options.emplace_back(std::move(key), std::move(value));
      continue;
    }
    if (!out.encoder.empty() && value != out.encoder) {
      return Status::invalid(
          encoder_flag.empty()
              ? fmt::format("--code-option encoder given twice ({} and {})", out.encoder, value)
              : fmt::format("--encoder {} and --code-option encoder={} disagree: give the encoder once",
                            encoder_flag, value));
    }
    out.encoder = std::move(value);
  }
  return out;
}

Result<ingest::Trace> load_trace(const std::string& path, const ReaderArgs& a, bool sizey_rows) {
  Result<ingest::Format> format = ingest::parse_format(a.format);
  if (!format) return format.status();
  ingest::ReadOptions o;
  o.format = *format;
  o.strict = a.strict;
  o.util_cap = a.util_cap;
  o.user = a.user;
  for (std::string_view c : split(a.columns, ',')) {
    if (!trim(c).empty()) o.columns.emplace_back(trim(c));
  }
  o.scripts_dir = a.scripts_dir;
  o.scripts_dump = a.scripts_dump;
  o.sacct_timezone = a.sacct_timezone;
  o.nextflow_timezone = a.nextflow_timezone;
  o.sizey_rows = sizey_rows;
  o.progress = stderr_progress();  // a large trace takes minutes to read
  Result<ingest::Trace> trace = ingest::read_trace(path, o);
  if (!trace) return trace;
  std::cerr << eval::render_reader_summary(*trace);
  // Every record skipped: the file is not what --format says (or is broken throughout); going
  // on would report an empty trace as if it were one.
  if (trace->jobs.empty() && trace->stats.skipped > 0) {
    return Status::invalid(fmt::format("{}: none of its {} records could be read as {} (first: {})", path,
                                       trace->stats.skipped, ingest::format_name(trace->format),
                                       trace->stats.reasons.empty() ? "no reason kept" : trace->stats.reasons.front()));
  }
  return trace;
}

std::ostream& human_output(std::initializer_list<std::string_view> outputs) {
  for (std::string_view o : outputs) {
    if (o == "-") return std::cerr;
  }
  return std::cout;
}

Status write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    return std::cout ? Status::ok() : Status::io("writing standard output failed");
  }
  return write_file_atomic(path, text);
}

Status check_outputs(std::initializer_list<std::pair<std::string_view, std::string_view>> outputs) {
  std::map<std::string, std::string_view> seen;  // path (as a file) -> option
  std::string_view to_stdout;
  for (const auto& [option, path] : outputs) {
    if (path.empty()) continue;
    const std::string opt(option);
    if (path == "-") {
      if (!to_stdout.empty()) {
        return Status::invalid(fmt::format("{} and {} both write to standard output (-)", to_stdout, opt));
      }
      to_stdout = option;
      continue;
    }
    std::error_code ec;
    const std::filesystem::path file = std::filesystem::weakly_canonical(std::string(path), ec);
    const std::string key = ec ? std::string(path) : file.string();
    if (auto it = seen.find(key); it != seen.end()) {
      return Status::invalid(fmt::format("{} and {} name the same file {}", it->second, opt, path));
    }
    seen.emplace(key, option);
    const std::string p(path);
    if (std::filesystem::is_directory(p, ec)) {
      return Status::invalid(fmt::format("{}: {} is a directory (give a file name)", opt, p));
    }
    if (std::filesystem::exists(p, ec)) {
      if (::access(p.c_str(), W_OK) != 0) {
        return Status::invalid(fmt::format("{}: cannot write {}: {}", opt, p, std::strerror(errno)));
      }
      continue;
    }
    std::string dir = std::filesystem::path(p).parent_path().string();
    if (dir.empty()) dir = ".";
    if (!std::filesystem::is_directory(dir, ec)) {
      return Status::invalid(fmt::format("{}: cannot write {}: the folder {} does not exist", opt, p, dir));
    }
    if (::access(dir.c_str(), W_OK) != 0) {
      return Status::invalid(fmt::format("{}: cannot write {}: folder {}: {}", opt, p, dir, std::strerror(errno)));
    }
  }
  return Status::ok();
}

int fail(const Status& status) {
  std::cerr << "peakcast: error: " << status.message() << "\n";
  return app::exit_code_for(status);
}

ProgressFn stderr_progress() {
  using Clock = std::chrono::steady_clock;
  struct State {
    Clock::time_point start = Clock::now();
    std::map<std::string, Clock::time_point, std::less<>> last;
  };
  auto st = std::make_shared<State>();
  return [st](std::string_view stage, size_t done, size_t total) {
    const auto now = Clock::now();
    // Quiet for short runs: nothing before a second has passed.
    if (now - st->start < std::chrono::seconds(1)) return;
    auto it = st->last.find(stage);
    const bool finished = done >= total;
    if (it != st->last.end() && !finished && now - it->second < std::chrono::seconds(1)) return;
    st->last[std::string(stage)] = now;
    const double secs = std::chrono::duration<double>(now - st->start).count();
    std::cerr << fmt::format("[{:6.1f}s] {}: {}/{}{}\n", secs, stage, done, total,
                             total ? fmt::format(" ({:.0f}%)", 100.0 * done / total) : "");
  };
}

void install_log_sink(bool verbose) {
  set_log_sink([verbose](LogLevel level, std::string_view msg) {
    if (!verbose && level < LogLevel::kWarn) return;
    static constexpr const char* kNames[] = {"debug", "info", "warning", "error"};
    std::cerr << "peakcast: " << kNames[static_cast<int>(level)] << ": " << msg << "\n";
  });
}

}  // namespace peakcast::app
