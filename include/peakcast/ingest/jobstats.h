// Princeton jobstats summaries in Slurm's AdminComment: `JS1:` + base64(gzip(JSON)), written by
// jobstats' slurmctld epilog when a job ends. The JSON (jobstats `-j` output):
//
//   {"gpus": 1, "total_time": 50944,
//    "nodes": {"della-k1g1": {"cpus": 12, "total_time": 57620.8,
//                             "used_memory": 84683702272, "total_memory": 137438953472,
//                             "gpu_used_memory": {"1": 83314868224},
//                             "gpu_total_memory": {"1": 85899345920},
//                             "gpu_utilization": {"1": 98.6}}}}
//
// used_memory / total_memory: the node's peak and limit of host memory (bytes);
// gpu_used_memory / gpu_total_memory: per GPU index, peak and capacity (bytes).
// `JS1:Short` (job too short to sample) and `JS1:None` (no data) carry no summary.
//
// What the sacct reader takes from a summary (docs/formats.md, "jobstats"):
// - VRAM: the busiest GPU (highest used / total) gives the per-GPU capacity (gpu_mem_bytes) and
//   the job's peak as that GPU's peak times the job's GPU count, so that the VRAM label
//   peak / (gpus × capacity) is the busiest GPU's utilization: the one that runs out first.
//   Where the summary holds more GPUs than the request states (--exclusive gives a job every GPU
//   of its node), the peak is the memory used on all of them where that is more: the label stays
//   a share of the requested GPUs' memory, the capacity the Slurm hook sends, and may pass 1
//   (clipped at --util-cap; a note counts and names such jobs).
//   It replaces sacct's gres/gpumem, which Slurm sums over GPUs.
// - Host memory: the sum of used_memory over nodes, only when sacct has no peak of its own; the
//   sum of total_memory, only when sacct has no request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/core/status.h"

namespace peakcast::ingest::jobstats {

struct Gpu {
  std::string node;
  std::string index;
  uint64_t used_bytes = 0;
  std::optional<uint64_t> total_bytes;
};

struct Summary {
  std::optional<uint64_t> used_memory_bytes;   // summed over nodes; nullopt when no node says
  std::optional<uint64_t> total_memory_bytes;  // summed over nodes
  std::vector<Gpu> gpus;                       // every GPU of every node, in node/index order
};

enum class Kind {
  kAbsent,   // the text is not a jobstats field (empty, or another site's comment)
  kShort,    // JS1:Short
  kNoData,   // JS1:None
  kSummary,  // a decoded summary
};

struct Decoded {
  Kind kind = Kind::kAbsent;
  Summary summary;  // filled for kSummary
};

// Decodes an AdminComment. An error (bad base64, bad gzip, bad JSON, a field of the wrong type
// or out of range) says which; callers count it and carry on without the summary.
Result<Decoded> decode_admin_comment(std::string_view text);

// The schema in reverse: `JS1:` + base64(gzip(json)). For tests and for stand-in sacct outputs.
std::string encode_admin_comment(const std::string& json);

// The busiest GPU: highest used / total where totals are known, else highest used. nullptr
// when there are no GPUs.
const Gpu* busiest_gpu(const Summary& s);

}  // namespace peakcast::ingest::jobstats
