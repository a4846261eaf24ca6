// Running the peakcast binary (and Chromium) from the report tests, a young history to run it on,
// and the plots a report input draws.
#pragma once

#include <set>
#include <string>

#include "peakcast/report/report.h"
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

// The ids of the plots the report would draw for `in`.
inline std::set<std::string> plot_ids(const peakcast::report::ReportInput& in) {
  std::set<std::string> ids;
  for (const peakcast::report::Plot& p : peakcast::report::make_plots(in)) ids.insert(p.id);
  return ids;
}

// A young history (report_young_test.cpp): tests/support/young_history.h.
using peakcast::test_support::young_jobs;

}  // namespace report_test
