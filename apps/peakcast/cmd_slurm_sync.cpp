// peakcast slurm-sync: one sacct poll into the daemon's database (cron, or filling the history
// before peakcastd first starts). A running daemon learns rows written here at its next start;
// to learn at once, let the daemon poll itself (peakcastd --sync-interval S).
#include <iostream>

#include "common.h"
#include "peakcast/serve/slurm_sync.h"
#include "peakcast/serve/store.h"

namespace peakcast::app {

void add_slurm_sync_command(CLI::App& app, int& exit_code) {
  struct Args {
    std::string db;
    std::string sacct = "sacct";
    int64_t overlap_s = 600;
    int64_t lookback_s = 7 * 24 * 3600;
    int64_t rescan_interval_s = serve::SyncOptions{}.rescan_interval_s;
    int64_t rescan_lookback_s = serve::SyncOptions{}.rescan_lookback_s;
    uint64_t gpu_mem_bytes = 0;
    double util_cap = 1.0;
    bool no_scripts = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "slurm-sync",
      "Poll sacct once for finished jobs and store them as completions in peakcastd's database "
      "(idempotent by run: job id and submit time; a persisted cursor; safe to run twice or from cron)");
  cmd->footer("Exit codes: 0 ok, 2 usage or input error, 1 other failures (sacct or the database).");
  cmd->add_option("--db", args->db, "SQLite database of completions (peakcastd --db)")->required();
  cmd->add_option("--sacct", args->sacct, "sacct program to run")->capture_default_str();
  cmd->add_option("--overlap", args->overlap_s, "Seconds each poll re-reads before the previous one")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{604800}));
  cmd->add_option("--lookback", args->lookback_s, "First poll: seconds back from now")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{315360000}));
  cmd->add_option("--rescan-interval", args->rescan_interval_s,
                  "Every S seconds (the last re-scan's time is kept in --db), after the poll, read the "
                  "jobs that ended in the last --rescan-lookback again and store those not stored: "
                  "records slurmdbd received later than --overlap after the job's end; 0: never")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{31536000}));
  cmd->add_option("--rescan-lookback", args->rescan_lookback_s,
                  "Seconds back from now that a re-scan reads (up to where the polls read on)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{315360000}));
  cmd->add_option("--gpu-mem-bytes", args->gpu_mem_bytes,
                  "Capacity of one GPU when sacct's GRES type does not say it (VRAM labels): 40G, "
                  "81920M, or a bare number of bytes")
      ->transform(CLI::Validator(serve::gpu_mem_option_transform, ""))
      ->type_name("SIZE");
  cmd->add_option("--util-cap", args->util_cap, "Labels above this utilization are clipped to it")
      ->capture_default_str()->check(positive_number());
  cmd->add_flag("--no-scripts", args->no_scripts, "Do not fetch job scripts with sacct -B");
  cmd->callback([args, &exit_code] {
    auto store = serve::open_sqlite_store(args->db);
    if (!store) {
      exit_code = fail(store.status());
      return;
    }
    serve::SyncOptions o;
    o.sacct = args->sacct;
    o.overlap_s = args->overlap_s;
    o.initial_lookback_s = args->lookback_s;
    o.rescan_interval_s = args->rescan_interval_s;
    o.rescan_lookback_s = args->rescan_lookback_s;
    o.fetch_scripts = !args->no_scripts;
    o.util_cap = args->util_cap;
    if (args->gpu_mem_bytes > 0) o.default_gpu_mem_bytes = args->gpu_mem_bytes;
    // Progress when the poll takes several sacct windows (a first poll over a week, a catch-up):
    // a line per window on stderr; nothing more for a poll of one window (cron).
    std::string first_window;
    o.on_window = [&first_window](const serve::SyncReport& r, int64_t from, int64_t to) {
      const std::string line = "slurm-sync: " + serve::describe_window(r, from, to);
      if (r.windows == 1) {
        first_window = line;
        return;
      }
      if (r.windows == 2) std::cerr << first_window << "\n";
      std::cerr << line << std::endl;
    };
    serve::CompletionStore& s = **store;
    auto report = serve::sync_once(s, [&s](const Job& j) { return s.insert(j); }, o);
    if (!report) {
      exit_code = fail(report.status());
      return;
    }
    for (const std::string& note : report->notes) std::cerr << "note: " << note << "\n";
    std::cout << "slurm-sync: " << serve::describe(*report) << "\n";
    auto due = serve::rescan_due(s, o);
    if (due && *due) {
      o.on_window = nullptr;
      auto rescan = serve::rescan_once(s, [&s](const Job& j) { return s.insert(j); }, o);
      if (rescan) {
        for (const std::string& note : rescan->notes) std::cerr << "note: " << note << "\n";
        std::cout << "slurm-sync: " << serve::describe(*rescan) << "\n";
      }
      due = rescan.ok() ? Result<bool>(true) : Result<bool>(rescan.status().with_context("re-scan"));
    }
    if (!due) {
      exit_code = fail(due.status());
      return;
    }
    exit_code = kExitOk;
  });
}

}  // namespace peakcast::app
