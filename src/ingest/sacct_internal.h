// Internals of the sacct reader (include/peakcast/ingest/sacct.h), shared by its .cpp files; not
// part of the public contract:
//   sacct.cpp          the header and its columns, row repair, the job-step join, the notes
//   sacct_record.cpp   one row's fields (usage, times, the time limit, counts, jobstats) and a
//                      record's final Job
//   sacct_fields.cpp   field pieces: job ids, ReqMem, TRES strings, GPU types (sacct.h)
//   sacct_scripts.cpp  script loading (ScriptSources)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/core/io.h"
#include "peakcast/core/time_zone.h"
#include "peakcast/ingest/jobstats.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/sacct.h"

namespace peakcast::ingest::sacct_detail {

using sacct::ReqMem;

enum Col : int {
  kJobId, kJobIdRaw, kJobName, kUser, kAccount, kPartition, kState, kSubmit, kStart, kEnd,
  kElapsed, kElapsedRaw, kTimelimit, kTimelimitRaw, kNcpus, kReqCpus, kNNodes, kReqMem,
  kReqTres, kAllocTres, kMaxRss, kTresTot, kTresMax, kComment, kAdminComment, kExitCode, kCluster,
  kReqGres, kAllocGres, kReqNodes, kNumCols
};

struct Layout {
  size_t ncols = 0;
  std::array<int, kNumCols> at{};
  int free_col = -1;         // absorbs extra '|' in a row; -1: none can
  bool trailing_pipe = false;  // `sacct -p`
  char delimiter = '|';        // the header's: '|', or sacct::kUnitSeparator (`--delimiter`)
  bool has(Col c) const { return at[c] >= 0; }
};

// One data row with its fields fitted to the layout.
struct Row {
  std::vector<std::string_view> f;
  std::string merged;  // owns a free-text field that contained '|'
  const Layout* layout = nullptr;
  std::string_view get(Col c) const {
    const int i = layout->at[c];
    return i < 0 ? std::string_view() : trim(f[static_cast<size_t>(i)]);
  }
};

// What one row (job or step) says about the outcome.
struct Usage {
  std::optional<uint64_t> peak_mem;
  bool peak_below_unit = false;  // peak_mem 0 as printed in a unit (0.00G): above 0, size unknown
  std::optional<uint64_t> peak_vram;
  bool vram_below_unit = false;  // peak_vram 0 as printed in a unit, as peak_below_unit
  bool oom = false;
  bool cancelled_by_root = false;  // a row "CANCELLED by 0": OverMemoryKill's step (see finish_job)
  std::optional<ReqMem> req_mem;
};

// A failed field: which one and why.
struct FieldError {
  Col col;
  std::string why;
};

inline std::string quoted(std::string_view v) { return "\"" + std::string(v) + "\""; }

// Everything read from a job row, before its steps are folded in.
struct Record {
  Job job;
  size_t line = 0;
  std::string job_id_raw;
  Usage usage;
  std::optional<int64_t> end, elapsed, nodes;  // nodes: NNodes/AllocNodes, else ReqNodes
  std::optional<double> ncpus, req_cpus;
  std::string req_tres, alloc_tres;
  std::optional<std::string> gres_gpu_type;  // ReqGRES/AllocGRES's, where they gave the GPU count
  std::string exit_code;  // the job row's ExitCode, "exit:signal"; empty without the column
  bool gpus_beyond_request = false;  // AllocTRES has more GPUs than ReqTRES (read_counts)
  bool unfinished = false;
  bool unknown_state = false;  // a State no Slurm version prints (read as finished, noted)
  bool superseded = false;
  bool rejected = false;  // a step row of it was malformed (StepJoin::reject_step)
  std::optional<jobstats::Summary> jobstats;  // AdminComment's summary, when it had one
  bool vram_from_jobstats = false;  // the VRAM peak and capacity are the summary's (finish_job)
  bool jobstats_beyond_request = false;  // that peak is the memory used on more GPUs than requested
};

// Counts behind the notes the reader leaves for the user.
struct Tally {
  size_t unfinished = 0, one_node_assumed = 0, no_cpu_count = 0, zero_req_mem = 0;
  size_t superseded = 0, repaired = 0, gpu_no_capacity = 0, with_script = 0;
  size_t jobstats_used = 0, jobstats_empty = 0, jobstats_bad = 0, over_memory_kill = 0;
  size_t zero_peak = 0;  // a host-memory peak of 0: no sample caught the job (finish_job)
  size_t peak_below_unit = 0;  // a host-memory peak printed as 0 in a unit: 0.00G (finish_job)
  size_t zero_vram_peak = 0;  // a gres/gpumem peak of 0: not measured (finish_job)
  size_t vram_below_unit = 0;  // a gres/gpumem peak printed as 0 in a unit (finish_job)
  size_t gpus_beyond_request = 0;  // allocated more GPUs than their ReqTRES states (read_counts)
  size_t vram_beyond_request = 0;  // of those, a VRAM peak over the requested GPUs' (finish_job)
  size_t jobstats_beyond_request = 0;  // a jobstats VRAM peak summed over more GPUs than requested
  size_t unknown_state = 0;            // a State no Slurm version prints
  std::string first_unfinished, first_jobstats_bad, first_jobstats_beyond, first_unknown_state;
};

// A step row's usage folded into its job's (peaks: the larger; flags: either; ReqMem: the first).
void merge_usage(Usage& into, const Usage& u);

// Reads the usage fields a job or step row may carry. Sizes without a suffix are bytes.
std::optional<FieldError> read_usage(const Row& row, Usage& u);

// A job row: names, the answer id, state, times, the time limit, counts and usage.
std::optional<FieldError> read_job_row(const Row& row, const TimeZone* zone, Record& r);

// A job row's AdminComment: a jobstats summary is kept for finish_job(); a malformed one is
// counted and left out, never fatal.
void read_jobstats(const Row& row, const std::string& at, Record& r, Tally& tally);

// Turns a record into the final Job (request totals, peaks, GPU capacity, end time).
void finish_job(Record& r, const SacctOptions& so, Tally& tally);

}  // namespace peakcast::ingest::sacct_detail
