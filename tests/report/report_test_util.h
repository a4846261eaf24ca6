// Running the peakcast binary (and Chromium) from the report tests, and a young history to run it on.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/synth/synth.h"
#include "support/command.h"

namespace report_test {

using peakcast::test_support::CmdResult;  // out: stdout, and stderr too unless it went to a file
using peakcast::test_support::slurp;

// Runs `cmd` through the shell; stderr goes to `stderr_path`, or joins stdout when empty.
inline CmdResult run(const std::string& cmd, const std::string& stderr_path = "") {
  return peakcast::test_support::run_shell(
      cmd + (stderr_path.empty() ? " 2>&1" : " 2>" + stderr_path) + " </dev/null");
}

// A young history (a site's first day, report_young_test.cpp): `n` synthetic jobs submitted evenly
// over `span_h` hours, each running `run_lo_h` to `run_lo_h + run_spread_h` hours (spread by a
// fixed pattern, not drawn: the tests must not depend on a generator's draws).
inline std::vector<peakcast::Job> young_jobs(double span_h, double run_lo_h, double run_spread_h,
                                             size_t n = 400) {
  peakcast::synth::SynthOptions o;
  o.jobs = n;
  o.seed = 3;
  o.users = 6;
  o.days = 0.1;
  auto jobs = peakcast::synth::generate_trace(o);
  if (!jobs) throw std::runtime_error(jobs.status().message());
  const int64_t t0 = jobs->front().submit_ms;
  for (size_t i = 0; i < jobs->size(); ++i) {
    peakcast::Job& j = (*jobs)[i];
    j.submit_ms =
        t0 + static_cast<int64_t>(span_h * 3.6e6 * static_cast<double>(i) / static_cast<double>(n));
    j.start_ms = j.submit_ms;
    const double run_h = run_lo_h + run_spread_h * static_cast<double>((i * 37) % 100) / 100.0;
    j.end_ms = j.submit_ms + static_cast<int64_t>(run_h * 3.6e6);
  }
  return std::move(jobs).value();
}

}  // namespace report_test
