// Slurm `sacct -P` reading: the pieces parse_sacct() (reader.h) is built from, exposed so they
// can be tested one by one, plus job-script loading (`<jobid>.sh` folders and `sacct -B` dumps).
//
// What parse_sacct does with a sacct table (Slurm 22.05 field formats; docs/formats.md):
// - Columns are named by the header line (case-insensitive, `%N` widths ignored) or, for `-n`
//   output, by ReadOptions.columns (whose delimiter the first row tells, as a header's would). A
//   `-p` trailing `|` is dropped. A row with more fields than
//   columns is repaired when the extra `|` can be attributed to one free-text column (the last
//   column when it is free text, else the only free-text column: JobName, Comment, AdminComment,
//   SubmitLine, WorkDir, Constraints); otherwise the row is skipped. A repeated header line (two
//   sacct outputs concatenated) switches to the new header. A header delimited by the ASCII unit
//   separator (`sacct -P --delimiter=$'\x1f'`, as slurm-sync asks) delimits its rows so: a '|' in
//   a job's name or comment is then text, and a row that a newline in a name or comment split
//   over lines (sacct prints them as they are) is rejoined (SacctReader::row_end). A first line
//   naming the columns with another delimiter is read where only free text can hold it (a tab,
//   ';'), and refused saying why where sacct's own fields hold it (',', ':', ...), as is output
//   without -P (columns padded with spaces).
// - Job rows (`123`, `123_4`, `123+0`) are joined with their step rows (`123_4.batch`,
//   `.extern`, `.0`, ...). Each hetjob component is its own job. A job row seen twice (sacct -D
//   after a requeue) keeps the last record, steps going to the record they follow. With a
//   Cluster column (sacct -L), a job is its id on its cluster.
// - Job peak memory = max over all rows of the row's peak: TRESUsageInTot `mem=` when present,
//   else MaxRSS, else TRESUsageInMax `mem=`. Bare numbers are bytes (`--noconvert`).
//   Peak VRAM = max over rows of `gres/gpumem` in TRESUsageInTot, else TRESUsageInMax (Slurm ≥
//   23.02; bare numbers taken as bytes, suffixed values as printed).
// - Memory request: AllocTRES `mem=`, the memory the job ran under (slurmctld's allocation, which
//   slurmd enforces; a GPU job under a DefMemPerGPU gets DefMemPerGPU x GPUs there while ReqMem
//   keeps the per-CPU default of its submission; the Slurm hook sends the former), else ReqMem
//   (see parse_req_mem; a job never started, a dump without AllocTRES), else ReqTRES `mem=`; a
//   malformed AllocTRES `mem=` makes the row malformed. CPUs from
//   ReqCPUS, else NCPUS, else ReqTRES/AllocTRES `cpu=`. GPUs from ReqTRES, the count the request
//   states and the Slurm hook sends (--exclusive allocates every GPU of the node, which AllocTRES
//   shows: a note counts such jobs), else AllocTRES where the row has no ReqTRES; where neither
//   counts GPUs, Slurm <= 20.11's ReqGRES else AllocGRES, each the job's count on any node count
//   (gres_gpus); walltime from Timelimit, else TimelimitRaw (minutes).
//   A per-node ReqMem counts NNodes/AllocNodes, else ReqNodes (ReqTRES `node=`), else one node
//   (with a note).
// - A `sacct --json`/`--yaml` document is refused whole, naming the export to use.
// - Times: Submit/Start/End in ISO form or epoch. ISO without an offset is sacct's local time:
//   the wall clock of ReadOptions::sacct_timezone (TimeZone::utc_of_local), else read as UTC;
//   a time the zone's clocks skipped makes the row malformed.
//   A job whose End is `Unknown`, or whose state is RUNNING/PENDING/..., is still going: it is
//   left out and counted in a note, not as a malformed line. No Submit column → the trace has
//   no submit times (Trace.has_submit_times = false, with a note); end_time is End if present,
//   else Start + Elapsed, else Start (a lower bound, so start <= end holds), else 0. With a
//   Submit column a finished job must have an end (End or Start + Elapsed) not before Submit,
//   and every job a Start not after its end; otherwise the row is malformed.
// - State: normalize_state() of the job row; any step that ended OUT_OF_MEMORY makes the job
//   OUT_OF_MEMORY (its label is censored). No State column: jobs are COMPLETED (with a note). A
//   state no Slurm version prints is read as finished and counted in a note naming the first.
// - Identity: JobName is job_name, and becomes `workload` for jobs with no script attached.
// - Comment, else AdminComment: where peakcast's Slurm hook wrote the daemon's answer (a JSON
//   object with "answer_id"), the id becomes Job::answer_id; any other comment is left alone.
// - AdminComment: a jobstats summary (`JS1:` + base64(gzip(JSON)), jobstats.h) gives VRAM
//   labels (the busiest GPU, or all used on more GPUs than requested: jobstats.h) and host
//   memory where sacct has none; a malformed one is counted in a note and left out, never fatal.
// - Malformed rows are skipped through skip_line() ("file:line: field: why"); a bad job row
//   drops its steps with it, and steps whose job row never appears are skipped each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "peakcast/core/status.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {

// Extra knobs the ReadOptions struct does not carry (yet). Defaults reproduce parse_sacct().
struct SacctOptions {
  // Capacity of one GPU, by GRES type ("a100_80g" -> bytes); consulted before the built-in
  // guesses of gpu_mem_from_type(). Keys are compared lower-case.
  std::unordered_map<std::string, uint64_t> gpu_mem_by_type;
  // Capacity of one GPU when the type says nothing (untyped `gres/gpu=N`); nullopt: unknown,
  // and such jobs get no VRAM label.
  std::optional<uint64_t> default_gpu_mem_bytes;
  // A listing that is not sacct's (no JobID column, or no header) is refused with a hint for
  // `sacct -n` output: give the --format column names (`peakcast --columns`). false for a caller
  // that chose the columns itself (slurm-sync), where that hint would mislead.
  bool columns_hint = true;
};

// parse_sacct() with the extra options.
Status parse_sacct(std::string_view text, const std::string& name, const ReadOptions& o,
                   const SacctOptions& so, Trace& out);

namespace sacct {

// The field delimiter slurm-sync asks sacct for (`-P --delimiter=`): the ASCII unit separator,
// which no job name or comment holds. The reader takes a header's delimiter, '|' or this one.
inline constexpr char kUnitSeparator = '\x1f';

// "123_4.batch" -> {"123_4", "batch"}; "123+0" -> {"123+0", ""}; "5.0" -> {"5", "0"}.
struct JobIdParts {
  std::string_view job;   // the job (or array task, or hetjob component) the row belongs to
  std::string_view step;  // empty on job rows
};
JobIdParts split_job_id(std::string_view job_id);

// Where a job's script may be found, most specific first: the JobID ("123_4"), the JobIDRaw
// ("130"), then the array or hetjob parent ("123"), without duplicates.
std::vector<std::string> script_keys(std::string_view job_id, std::string_view job_id_raw);

// The "answer_id" of peakcastd's answer that the Slurm hook wrote into a job's comment
// (contrib/slurm/job_submit.lua: the answer as compact JSON, or its summary); "" for any other
// comment, a malformed one, or an id that is not 1-64 characters of [0-9A-Za-z_-].
std::string answer_id_in_comment(std::string_view comment);

// ReqMem as printed by sacct. Bare numbers are MB.
struct ReqMem {
  enum class Per { kJob, kNode, kCpu };
  uint64_t bytes = 0;    // per unit
  Per per = Per::kJob;   // 21.08+: whole job; up to 20.11: `n` per node, `c` per CPU
};
std::optional<ReqMem> parse_req_mem(std::string_view text);

// The whole-job request in bytes: per-node × nodes, per-CPU × cpus. A per-node value with no
// node count is taken as one node (most jobs are single-node; said in a note by the reader);
// a per-CPU value with no CPU count gives nullopt (guessing one CPU would inflate the label).
std::optional<uint64_t> req_mem_total(const ReqMem& m, std::optional<int64_t> nodes,
                                      std::optional<double> cpus);

// The value of `key` in a TRES string "cpu=1,mem=1G,gres/gpu=2" (exact key match).
std::optional<std::string_view> tres_value(std::string_view tres, std::string_view key);

// GPU count of a TRES string: `gres/gpu=N` when present, else the sum of `gres/gpu:TYPE=N`.
// nullopt when no GPU entry (or a malformed count).
std::optional<int> tres_gpus(std::string_view tres);

// The first GPU type named in a TRES string ("gres/gpu:a100=1" -> "a100"), lower-case.
std::optional<std::string> tres_gpu_type(std::string_view tres);

// The GPU count of a ReqGRES/AllocGRES string (Slurm <= 20.11): `name[:type]:count` items joined
// by ',' (`gpu:2`, `gpu:tesla:2,mps:100`), each maybe with its indexes (`gpu:2(IDX:0,2)`); the
// `gpu` items' counts summed (a `gpu` or `gpu:type` item without a count is one), 0 where none
// names a GPU. nullopt when a GPU item's count is malformed (`gpu:tesla:x2`).
std::optional<int> gres_gpus(std::string_view gres);

// The first GPU type such a string names ("gpu:tesla:2" -> "tesla"), lower-case.
std::optional<std::string> gres_gpu_type(std::string_view gres);

// Capacity of one GPU from its GRES type: a size written in the name ("a100_80g", "a100-40gb",
// "h100.80GB") or a type that comes in one size only (t4, l4, a10, a40, l40, l40s, rtx8000,
// rtx6000 ada, h200, ...). Ambiguous types (a100, v100, h100, p100) give nullopt.
std::optional<uint64_t> gpu_mem_from_type(std::string_view type);

// Job scripts from concatenated `sacct -B -j N` outputs: each starts with "Batch Script for N"
// and a line of dashes; a body of just "NONE" means the job had no script (left out).
// Keys are the N as printed.
std::unordered_map<std::string, std::string> parse_batch_script_dump(std::string_view text);

// `<jobid>.sh` files of a folder, keyed by the file name without ".sh". Texts are read lazily.
class ScriptFolder {
 public:
  static Result<ScriptFolder> open(const std::string& dir);
  // The script for the first key that has a file; nullopt when none. Unreadable files give an
  // error naming the file.
  Result<std::optional<std::string>> find(const std::vector<std::string>& keys) const;
  size_t size() const { return files_.size(); }

 private:
  std::unordered_map<std::string, std::string> files_;  // key -> path
};

// Where a trace's job scripts come from: a `sacct -B` dump (ReadOptions.scripts_dump) and a
// folder of `<jobid>.sh` files (ReadOptions.scripts_dir); either may be unset.
class ScriptSources {
 public:
  // Reads the dump and lists the folder: a bad path fails here, before any row is read.
  static Result<ScriptSources> open(const ReadOptions& o);
  // The script under the first of a job's keys the dump has, else the folder's; nullopt when
  // neither has one.
  Result<std::optional<std::string>> find(const std::vector<std::string>& keys) const;

 private:
  std::unordered_map<std::string, std::string> dump_;
  std::optional<ScriptFolder> folder_;
};

}  // namespace sacct
}  // namespace peakcast::ingest
