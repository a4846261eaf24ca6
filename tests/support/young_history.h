// A young history (a site's first day): every job submitted within a few hours and running for
// hours, so few had ended before the later ones were submitted. The cascade cannot be trained on
// it; the history methods can still be scored. Used by the report and evaluate CLI tests.
#pragma once

#include <stdexcept>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/synth/synth.h"

namespace peakcast::test_support {

// `n` synthetic jobs submitted evenly over `span_h` hours, each running `run_lo_h` to
// `run_lo_h + run_spread_h` hours (spread by a fixed pattern, not drawn: the tests must not
// depend on a generator's draws).
inline std::vector<Job> young_jobs(double span_h, double run_lo_h, double run_spread_h, size_t n = 400) {
  synth::SynthOptions o;
  o.jobs = n;
  o.seed = 3;
  o.users = 6;
  o.days = 0.1;
  auto jobs = synth::generate_trace(o);
  if (!jobs) throw std::runtime_error(jobs.status().message());
  const int64_t t0 = jobs->front().submit_ms;
  for (size_t i = 0; i < jobs->size(); ++i) {
    Job& j = (*jobs)[i];
    j.submit_ms = t0 + static_cast<int64_t>(span_h * 3.6e6 * static_cast<double>(i) / static_cast<double>(n));
    j.start_ms = j.submit_ms;
    const double run_h = run_lo_h + run_spread_h * static_cast<double>((i * 37) % 100) / 100.0;
    j.end_ms = j.submit_ms + static_cast<int64_t>(run_h * 3.6e6);
  }
  return std::move(jobs).value();
}

}  // namespace peakcast::test_support
