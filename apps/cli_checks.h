// Option checks both programs (peakcast, peakcastd) share; header-only, CLI11's Validator.
#pragma once

#include <cmath>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "peakcast/core/status.h"
#include "peakcast/core/units.h"

namespace peakcast::app {

// A finite number from lo to hi. CLI::Range lets "nan" through (both its comparisons are false):
// a NaN timeout reached a cast to time_t (undefined), a NaN share ran on.
inline CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const std::optional<double> v = parse_double(text);
        if (!v || !std::isfinite(*v) || *v < lo || *v > hi) {
          return fmt::format("must be a number from {} to {}, got '{}'", lo, hi, text);
        }
        return {};
      },
      fmt::format("[{} - {}]", lo, hi));
}

// README's exit-code rule, both programs: 2 for what the caller can fix in the input (an option,
// a file that is malformed, missing or of a newer format), 1 for the system failing (I/O,
// permission, an internal error).
inline int exit_code_for(const Status& s) {
  switch (s.kind()) {
    case ErrorKind::kInvalidInput:
    case ErrorKind::kNotFound:
    case ErrorKind::kUnsupported:
      return 2;
    default:
      return 1;
  }
}

}  // namespace peakcast::app
