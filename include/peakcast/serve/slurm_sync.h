// slurm-sync: finished Slurm jobs -> completions. Polls
//   sacct -a -P --delimiter=$'\x1f' --noconvert -S <from> -E <to> -s CD,F,TO,OOM,CA,NF,PR,DL
//         --format=<kSacctColumns>
// (with TZ=UTC and SLURM_TIME_FORMAT=standard, so times read as UTC are right) from the cursor
// to now, in windows of at most SyncOptions::max_window_s (halved where a listing is over
// max_output_bytes), parses each with the sacct reader (job peak over steps, ReqMem, GPUs,
// state), fetches the new jobs' scripts with `sacct -B -j ID,ID,...` (present when slurm.conf
// has AccountingStoreFlags=job_script), and hands every finished job to a sink (the daemon's
// completion path). The cursor is persisted in the
// store's meta table and moves only after every job of a window was accepted; each poll overlaps
// the previous one by `overlap_s` (slurmdbd receives end records late), and completions are
// idempotent by run (job id and submit time: store.h), so running a poll twice, or two polls
// over the same window, adds nothing twice.
//
// A record slurmdbd receives later than the overlap after the job's end (slurmdbd or its
// database down, a slurmctld that was down and sends its backlog when it is back) lies behind
// the cursor and no poll reads it. The re-scan (rescan_once) reads the last rescan_lookback_s
// again, once every rescan_interval_s (its time kept in the meta table, so a restart or a cron
// `peakcast slurm-sync` does not re-scan early), and stores only what is not stored: the known
// jobs cost a listing and a lookup each, no script fetch and no store write.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"
#include "peakcast/serve/store.h"

namespace peakcast::serve {

inline constexpr const char* kSacctColumns =
    // ExitCode: OverMemoryKill's form is FAILED 0:9 with a step CANCELLED by 0 (without it, a
    // step root cancelled in a job that then failed read as a memory kill)
    "JobID,JobIDRaw,JobName,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,"
    "NCPUS,ReqCPUS,NNodes,ReqMem,ReqTRES,AllocTRES,MaxRSS,TRESUsageInTot,TRESUsageInMax,"
    "Comment,AdminComment";  // free text: the hook's answer (its id), jobstats's summary (jobstats.h)
inline constexpr const char* kSyncCursorKey = "slurm_sync.cursor";
inline constexpr const char* kSyncRescanKey = "slurm_sync.rescan";  // when the last finished re-scan started (epoch s)

struct SyncReport;

struct SyncOptions {
  std::string sacct = "sacct";        // program (PATH lookup) or path
  int64_t overlap_s = 600;            // each poll starts this long before the last one did
  int64_t initial_lookback_s = 7 * 24 * 3600;  // first poll: from now minus this
  // The re-scan (rescan_once): every rescan_interval_s (0: never), the jobs that ended in the
  // last rescan_lookback_s up to the cursor are read again.
  int64_t rescan_interval_s = 24 * 3600;
  int64_t rescan_lookback_s = 2 * 24 * 3600;
  bool fetch_scripts = true;          // sacct -B for the new jobs
  double util_cap = 1.0;
  std::optional<uint64_t> default_gpu_mem_bytes;  // capacity of an untyped GPU (VRAM labels)
  // Bounded memory: a poll asks sacct for at most max_window_s at a time (a first poll over a
  // week, or a catch-up after downtime, is several calls); a listing over max_output_bytes is
  // asked again at half the span, down to min_window_s (then the poll fails, saying so).
  int64_t max_window_s = 24 * 3600;
  int64_t sacct_timeout_s = 600;  // each sacct call (a hung slurmdbd): the poll fails, and the next one retries
  int64_t min_window_s = 60;
  size_t max_output_bytes = 128u << 20;
  // Scripts: `sacct -B -j ID,ID,...` for up to scripts_per_call new jobs at once (one call per
  // job took a process per job: hours for a first poll of a large cluster); one script may be up
  // to max_script_bytes.
  size_t scripts_per_call = 64;
  size_t max_script_bytes = 16u << 20;
  std::function<int64_t()> clock;     // epoch seconds; default: the system clock
  // Checked before each window and while sacct runs (it is stopped): true ends the poll there,
  // without an error (the windows done are kept).
  std::function<bool()> stop_requested;
  // After each window: the totals so far and the window's span (progress on long catch-ups).
  std::function<void(const SyncReport&, int64_t from, int64_t to)> on_window;
};

struct SyncReport {
  bool rescan = false;      // a re-scan (rescan_once), not a poll
  int64_t since = 0;        // cursor used (-S); a re-scan's start
  int64_t until = 0;        // a re-scan's end (the cursor); a poll reads up to now
  size_t finished = 0;      // finished jobs sacct listed
  size_t added = 0;         // new completions
  size_t known = 0;         // already stored (earlier poll)
  size_t with_script = 0;   // new completions whose script was found
  size_t skipped = 0;       // malformed sacct rows
  size_t windows = 0;       // sacct listings read (SyncOptions::max_window_s)
  // Ended by SyncOptions::stop_requested (the daemon shutting down) before its last window: the
  // windows done are kept (a poll's cursor moved past them); a re-scan's time is not kept.
  bool stopped = false;
  std::vector<std::string> notes;
};

// One line for people: "N finished job(s) since T: A new (S with script), K already known, M
// malformed row(s) skipped", and " (W sacct windows)" when there were several; for a re-scan,
// "re-scan of the jobs that ended T .. U: N finished job(s), A stored late (...), K already
// known, ..."; a report stopped on a signal (SyncReport::stopped) ends saying so.
std::string describe(const SyncReport& report);
// One line of a catch-up's progress after a window: "window N, FROM .. TO: F finished job(s) so
// far, A new" (peakcast slurm-sync and peakcastd say it so).
std::string describe_window(const SyncReport& report, int64_t from, int64_t to);

// true: stored now; false: already known.
using CompletionSink = std::function<Result<bool>(const Job&)>;

// What run_program allows a program.
struct RunLimits {
  size_t max_output_bytes = 128u << 20;
  int64_t timeout_ms = 0;                // 0: no deadline
  std::function<bool()> stop_requested;  // asked at least once a second
};
// Why run_program stopped the program itself (SIGKILL to its process group).
enum class RunStop { kNone, kOutput, kTimeout, kRequested };

// Runs `argv` (no shell, in a process group of its own) with TZ=UTC and
// SLURM_TIME_FORMAT=standard (sacct's times as the reader reads them) and returns its standard
// output; a non-zero exit is an error carrying the first line of its standard error. Output over
// max_output_bytes, the deadline, or stop_requested stop the program and are errors saying so;
// `stopped` (when given) says which.
Result<std::string> run_program(const std::vector<std::string>& argv, const RunLimits& limits,
                                RunStop* stopped = nullptr);

// "2024-05-01T12:00:00" (UTC), the form sacct -S takes.
std::string sacct_time(int64_t epoch_s);

// --gpu-mem-bytes: the capacity of one GPU as "40G", "81920M" or a bare number of bytes; an
// error naming the option unless it is a size above 0.
Result<uint64_t> parse_gpu_mem_option(const std::string& text);
// The same as a command-line transform (CLI11's): rewrites `text` to its bytes and returns "", or
// returns the reason.
std::string gpu_mem_option_transform(std::string& text);

// One poll, in windows (SyncOptions::max_window_s); the cursor moves after each. `store` holds
// the cursor and says which jobs are known (to skip their script fetch).
Result<SyncReport> sync_once(CompletionStore& store, const CompletionSink& sink,
                             const SyncOptions& options);

// Whether a re-scan is due (SyncOptions::clock): rescan_interval_s and rescan_lookback_s above 0
// and no finished re-scan started in the last rescan_interval_s (kSyncRescanKey; a time after
// now, the clock stepped back since, counts as none).
Result<bool> rescan_due(CompletionStore& store, const SyncOptions& options);
// The re-scan: sacct's finished jobs that ended from now minus rescan_lookback_s up to the
// cursor, in windows as a poll reads them; the known ones are counted (known), the others go to
// the sink (added: those slurmdbd recorded late). The cursor does not move; the re-scan's time is
// kept (kSyncRescanKey) once it has read every window (not when it fails or is stopped: then it
// is due again at the next poll). Before the first poll (no cursor) there is nothing to re-read.
Result<SyncReport> rescan_once(CompletionStore& store, const CompletionSink& sink,
                               const SyncOptions& options);

}  // namespace peakcast::serve
