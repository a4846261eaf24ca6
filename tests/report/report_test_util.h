// Running the peakcast binary (and Chromium) from the report tests, and a young history to run it on.
#pragma once

#include <string>

#include "support/command.h"
#include "support/young_history.h"

namespace report_test {

using peakcast::test_support::CmdResult;  // out: stdout, and stderr too unless it went to a file
using peakcast::test_support::slurp;

// Runs `cmd` through the shell; stderr goes to `stderr_path`, or joins stdout when empty.
inline CmdResult run(const std::string& cmd, const std::string& stderr_path = "") {
  return peakcast::test_support::run_shell(
      cmd + (stderr_path.empty() ? " 2>&1" : " 2>" + stderr_path) + " </dev/null");
}

// A young history (report_young_test.cpp): tests/support/young_history.h.
using peakcast::test_support::young_jobs;

}  // namespace report_test
