// `peakcast synth`: a synthetic Slurm trace whose scripts' arguments really drive memory and VRAM
// (docs/synth.md has the generative model and its formulas). It is the built-in default for the
// demo and the fixture for tests that must not depend on ../shared.
//
// Deterministic for a seed: the only randomness is one std::mt19937_64 (its output is fixed by
// the C++ standard) and this module's own distributions, so the trace does not depend on which
// standard library implements std::normal_distribution & co. Transcendental functions come from
// libm; we ship one toolchain (Debian 12, glibc), where they are reproducible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/log.h"
#include "peakcast/core/status.h"

namespace peakcast::synth {

struct SynthOptions {
  size_t jobs = 20000;                 // exactly this many jobs (<= kMaxJobs)
  uint64_t seed = 1;
  int users = 60;                      // users over the whole trace (1 ..= kMaxUsers)
  int64_t start_time = 1704067200;     // first submission at or after this (2024-01-01T00:00Z)
  double days = 90.0;                  // approximate span of submissions (0 < days <= kMaxDays)
  double gpu_user_share = 0.4;         // share of users whose work is GPU training
  double late_user_share = 0.3;        // share of users who first appear during the trace
  double burst_prob = 0.12;            // a submission event is a burst (array or sweep)
  double new_script_prob = 0.12;       // a user's submission starts a brand-new script
  double edit_prob = 0.3;              // a resubmission first edits one argument
  bool include_scripts = true;         // false: no script text; identity goes to `workload`
};

// Bounds that keep every timestamp readable by ingest (epoch seconds <= 1e11) and inside int64 ms.
inline constexpr double kMaxDays = 36525.0;               // a century
inline constexpr int64_t kMaxStartTime = 10'000'000'000;  // epoch seconds (year 2286)
// Bounds on what is built in memory (about 4 KB a job with its script, 0.7 KB a user): beyond
// them a run would end in the kernel's OOM killer, without a message.
inline constexpr size_t kMaxJobs = 10'000'000;
inline constexpr int kMaxUsers = 1'000'000;

// Checks ranges: 1 <= users <= kMaxUsers, jobs <= kMaxJobs, 0 < days <= kMaxDays,
// 0 <= start_time <= kMaxStartTime, probabilities in [0, 1].
Status validate(const SynthOptions& o);

// The trace, sorted by submit time (ties by job id); job ids "1000000", "1000001", ... in that
// order. Derived fields are filled: script_key (script_sha256 of the script, or workload_key) and
// labels (compute_labels with cap 1.0), so the jobs can be used without a JSONL round trip.
// progress, when set: "generate jobs" done of o.jobs, ending at done == total.
Result<std::vector<Job>> generate_trace(const SynthOptions& o, const ProgressFn& progress = {});

// Canonical JSONL (ingest::job_to_jsonl_line), one job per line, written atomically.
// progress, when set: "write jobs" done of jobs.size().
Status write_trace_jsonl(const std::vector<Job>& jobs, const std::string& path, const ProgressFn& progress = {});

}  // namespace peakcast::synth
