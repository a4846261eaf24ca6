// The option loop of the benches with a main of their own (bpe_bench, redact_bench,
// code_model_bench, serve_load_bench, cascade_bench): `-h`/`--help` prints the usage and ends
// with 0; every other argument must be one of the bench's options and takes the next argument as
// its value; an unknown option or a missing value prints why (each bench's own wording) and the
// usage to stderr and ends with 2. The tests `<bench>_help` and `<bench>_missing_value` pin it.
#pragma once

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace peakcast::bench {

// How a bench words an error, as each did before they shared this loop.
enum class OptionErrors {
  kPlain,   // "unknown option X" / "X needs a value", then the usage
  kNumber,  // "PROGRAM: X: unknown option" / "PROGRAM: X: expected a non-negative number after
            // it", then the usage
  kUsage,   // the usage alone
};

struct OptionSpec {
  const char* program;
  const char* usage;
  std::vector<std::string_view> names;  // the options, each taking a value
  OptionErrors errors = OptionErrors::kPlain;
  FILE* help_to = stdout;  // where --help prints the usage
};

// Prints the error for option `k` to stderr: its value missing (or, for kNumber, not a valid
// number), or, with `missing` false, the option unknown.
inline void option_error(const OptionSpec& spec, const std::string& k, bool missing) {
  switch (spec.errors) {
    case OptionErrors::kPlain:
      std::fprintf(stderr, missing ? "%s needs a value\n%s" : "unknown option %s\n%s", k.c_str(), spec.usage);
      break;
    case OptionErrors::kNumber:
      std::fprintf(stderr, "%s: %s: %s\n%s", spec.program, k.c_str(),
                   missing ? "expected a non-negative number after it" : "unknown option", spec.usage);
      break;
    case OptionErrors::kUsage:
      std::fputs(spec.usage, stderr);
      break;
  }
}

// Reads the arguments: `on_value(option, value)` returns 0 to go on, or the exit code (having
// printed why). Returns the exit code when the bench is to end now, nullopt when it is to run.
template <typename OnValue>
std::optional<int> parse_options(int argc, char** argv, const OptionSpec& spec, OnValue&& on_value) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::fputs(spec.usage, spec.help_to);
      return 0;
    }
    const bool known = std::find(spec.names.begin(), spec.names.end(), k) != spec.names.end();
    if (!known || i + 1 >= argc) {
      option_error(spec, k, known);
      return 2;
    }
    if (const int rc = on_value(k, std::string(argv[++i])); rc != 0) return rc;
  }
  return std::nullopt;
}

}  // namespace peakcast::bench
