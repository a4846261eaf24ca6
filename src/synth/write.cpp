#include <string>

#include "peakcast/core/io.h"
#include "peakcast/ingest/jsonl.h"
#include "peakcast/synth/synth.h"

namespace peakcast::synth {

Status write_trace_jsonl(const std::vector<Job>& jobs, const std::string& path) {
  std::string out;
  for (const Job& j : jobs) {
    out += ingest::job_to_jsonl_line(j);
    out += '\n';
  }
  return write_file_atomic(path, out);
}

}  // namespace peakcast::synth
