// Invariants every reader must keep on any input, checked by the fuzz targets. A violation
// aborts, which libFuzzer reports as a crash with the input saved.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "peakcast/ingest/jsonl.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest::fuzz {

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  std::abort();
}

#define PEAKCAST_FUZZ_CHECK(cond) \
  do {                            \
    if (!(cond)) ::peakcast::ingest::fuzz::fail(#cond); \
  } while (0)

// Runs one parser on `text` in lenient and strict mode and checks the trace it leaves.
template <typename Parser>
void check_parser(Parser parse, std::string_view text, const char* name) {
  ReadOptions lenient;
  lenient.user = "fuzz";
  Trace trace;
  Status st = parse(text, name, lenient, trace);
  // Lenient mode only fails the whole read for a file-level problem (a missing header column).
  if (!st.is_ok()) PEAKCAST_FUZZ_CHECK(trace.jobs.empty() && !st.message().empty());
  finalize_trace(trace, 1.0);
  PEAKCAST_FUZZ_CHECK(trace.stats.jobs == trace.jobs.size());
  PEAKCAST_FUZZ_CHECK(trace.stats.jobs + trace.stats.skipped + trace.stats.ignored <= trace.stats.lines);
  PEAKCAST_FUZZ_CHECK(trace.stats.reasons.size() <= lenient.max_reasons);
  PEAKCAST_FUZZ_CHECK(trace.stats.reasons.size() <= trace.stats.skipped);
  for (const Job& job : trace.jobs) {
    PEAKCAST_FUZZ_CHECK(!job.job_id.empty());
    PEAKCAST_FUZZ_CHECK(job.end_ms >= job.submit_ms);
    for (Resource r : kResources) {
      if (job.is_valid(r)) PEAKCAST_FUZZ_CHECK(job.label(r) >= 0.0 && job.label(r) <= 1.0);
    }
    // Whatever a reader produced must survive the canonical form.
    Result<Job> back = job_from_json(job_to_json(job));
    PEAKCAST_FUZZ_CHECK(back.ok());
    PEAKCAST_FUZZ_CHECK(job_to_json(*back) == job_to_json(job));
    (void)job_to_jsonl_line(job);
  }

  ReadOptions strict = lenient;
  strict.strict = true;
  Trace strict_trace;
  Status strict_st = parse(text, name, strict, strict_trace);
  // Strict fails exactly when lenient mode had something to skip (or failed itself).
  PEAKCAST_FUZZ_CHECK(strict_st.is_ok() == (st.is_ok() && trace.stats.skipped == 0));
}

}  // namespace peakcast::ingest::fuzz
