// Running the peakcast binary (and Chromium) from the report tests.
#pragma once

#include <string>

#include "support/command.h"

namespace report_test {

using peakcast::test_support::CmdResult;  // out: stdout, and stderr too unless it went to a file
using peakcast::test_support::slurp;

// Runs `cmd` through the shell; stderr goes to `stderr_path`, or joins stdout when empty.
inline CmdResult run(const std::string& cmd, const std::string& stderr_path = "") {
  return peakcast::test_support::run_shell(
      cmd + (stderr_path.empty() ? " 2>&1" : " 2>" + stderr_path) + " </dev/null");
}

}  // namespace report_test
