#include <string>

#include "peakcast/core/io.h"
#include "peakcast/ingest/jsonl.h"
#include "peakcast/synth/synth.h"

namespace peakcast::synth {

Status write_trace_jsonl(const std::vector<Job>& jobs, const std::string& path, const ProgressFn& progress) {
  std::string out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (progress) progress("write jobs", i, jobs.size());
    out += ingest::job_to_jsonl_line(jobs[i]);
    out += '\n';
  }
  if (progress) progress("write jobs", jobs.size(), jobs.size());
  return write_file_atomic(path, out);
}

}  // namespace peakcast::synth
