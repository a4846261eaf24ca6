// Trace readers: SWF, Nextflow trace, Slurm `sacct -P`, canonical JSONL. One entry point picks
// the reader by --format or by content (gzip is undone first, everywhere).
//
// Failure behaviour: a malformed line is skipped and counted (ReadStats), with the first few
// reasons kept as "file:line: field: why"; with strict=true the first one is returned as an
// error instead. Only an unreadable file or an unknown format fails the whole read.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/log.h"
#include "peakcast/core/status.h"

namespace peakcast::ingest {

enum class Format { kAuto, kSwf, kNextflow, kSacct, kJsonl };
std::string_view format_name(Format f);               // "auto", "swf", "nextflow", "sacct", "jsonl"
// For a trace without submit times: how to record them in `f`, as a clause ("write the trace
// with submit and complete in Nextflow's trace.fields").
std::string_view submit_times_remedy(Format f);
Result<Format> parse_format(std::string_view name);   // error lists the valid names

struct ReadOptions {
  Format format = Format::kAuto;
  bool strict = false;
  double util_cap = 1.0;
  size_t max_reasons = 5;            // how many skip reasons to keep
  std::string user;                  // Nextflow: user name (else derived from the file name)
  std::vector<std::string> columns;  // sacct -n output: the --format column names, in order
  std::string scripts_dir;           // sacct: folder of <jobid>.sh job scripts
  std::string scripts_dump;          // sacct: file of concatenated `sacct -B` outputs
  // sacct: the tz database zone ("Europe/Berlin") the file's times were printed in. sacct prints
  // Submit/Start/End as the local wall clock of the host it ran on, without an offset, unless run
  // with TZ=UTC; "" reads them as UTC. A time with an offset ("...+01:00", "Z") or an epoch
  // number is read as it says, whatever the zone.
  std::string sacct_timezone;
  // Nextflow: the zone its human-form times ("2023-01-23 10:00:00.000": the wall clock of the JVM
  // that wrote the trace, without an offset) were printed in; "" reads them as UTC. Raw epoch
  // milliseconds (trace.raw = true) are read as they say. A time the clocks showed twice is
  // settled by the row's duration, else by the row order (docs/formats.md); one they skipped
  // skips its row.
  std::string nextflow_timezone;
  // Nextflow: read the task rows as Sizey's protocol does (`simulate --protocol sizey`), which
  // reads process, rss, rchar, realtime and memory and no status: CACHED tasks are kept (their
  // figures are the earlier run's, which Sizey's reader takes as any row's), times are not
  // read (the protocol orders tasks by seed), and a malformed cpus, time, memory or peak_rss
  // (columns Sizey does not read, or reads as NaN) is left unset instead of skipping the row.
  bool sizey_rows = false;
  // How far a long read is: "read lines" (lines of the text) while the records are parsed, then
  // "read jobs" while scripts are redacted and labels computed; each ends at done == total.
  // Empty: nothing is said.
  ProgressFn progress;
};

struct ReadStats {
  size_t lines = 0;        // data lines/records seen (headers and comments excluded)
  size_t jobs = 0;         // jobs kept
  size_t skipped = 0;      // malformed lines skipped
  size_t ignored = 0;      // well-formed records deliberately not kept (Nextflow CACHED tasks);
                           // never an error, explained in Trace::notes
  std::array<size_t, kNumResources> labelled{0, 0};  // jobs valid per resource
  std::array<size_t, kNumResources> clipped{0, 0};   // labels clipped to the cap
  size_t censored = 0;     // OUT_OF_MEMORY jobs
  std::vector<std::string> reasons;  // first max_reasons skip reasons, "file:line: field: why"
};

struct Trace {
  std::string path;
  Format format = Format::kAuto;    // the format actually read
  std::vector<Job> jobs;            // in file order; labels and script_key filled
  ReadStats stats;
  bool has_submit_times = true;     // false for sacct dumps without Submit and Nextflow traces
                                    // without submit/complete: evaluate refuses
  bool has_scripts = false;         // any job carries script text
  std::vector<std::string> notes;   // facts worth telling the user ("no user column: ...")
};

// Reads, parses, redacts+hashes scripts (script_key), computes labels.
Result<Trace> read_trace(const std::string& path, const ReadOptions& options = {});

// Detects the format from the (decompressed) content's first lines; kAuto when it cannot tell.
// read_trace() then falls back to ReadOptions::columns (sacct) and the file name's extension.
Format detect_format(std::string_view content);

// Per-format parsers over already-decompressed text; `name` is used in messages. They fill
// jobs and stats but leave script_key and labels to finalize_trace(). Each refuses Slurm's own
// job document (`sacct --json`, `sacct --yaml`) whole, naming `name` and the `sacct -P` export to
// use (docs/formats.md), as read_trace() does, rather than skipping its every line.
Status parse_swf(std::string_view text, const std::string& name, const ReadOptions& o, Trace& out);
Status parse_nextflow(std::string_view text, const std::string& name, const ReadOptions& o, Trace& out);
Status parse_sacct(std::string_view text, const std::string& name, const ReadOptions& o, Trace& out);
Status parse_jsonl(std::string_view text, const std::string& name, const ReadOptions& o, Trace& out);

// Redacts the job's identity text in place (script, workload, job name: ingest::redact_script,
// docs/redaction.md), then computes script_key (the redacted script's SHA-256, else the workload
// identity's) and the labels. Every job is finalized once where it enters: a trace reader,
// slurm-sync, a daemon request.
void finalize_job(Job& job, double util_cap);

// finalize_job() for every job, and the label counts in stats.
// `progress` hears "read jobs" (ReadOptions::progress).
void finalize_trace(Trace& trace, double util_cap, const ProgressFn& progress = {});

// Records a skipped line: counts it, keeps the reason while fewer than max_reasons, and in
// strict mode returns it as an error (else OK).
Status skip_line(Trace& out, const ReadOptions& o, const std::string& reason);

}  // namespace peakcast::ingest
