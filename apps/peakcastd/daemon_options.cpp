#include "daemon_options.h"

#include "cli_checks.h"

namespace peakcast::peakcastd {
namespace {

using app::finite_range;

// --max-script-bytes at most: a body limit of 6 x 64 MiB + 64 KiB, and a --max-buffered-bytes
// default (two such requests) of about 768 MiB.
constexpr size_t kMaxScriptBytesCap = size_t{64} << 20;

// The HTTP layer's limits (http_framing.h), one set for every endpoint.
void add_http_options(CLI::App& app, serve::HttpLimits& l) {
  app.add_option("--request-timeout", l.request_timeout_s,
                 "Seconds a client has to send one whole request (headers and body), from its first "
                 "byte; a slower one gets 408 and is closed")
      ->capture_default_str()->check(finite_range(0.05, 3600.0));
  app.add_option("--idle-timeout", l.idle_timeout_s,
                 "Seconds a keep-alive connection may wait between requests")
      ->capture_default_str()->check(finite_range(0.05, 3600.0));
  app.add_option("--max-connections", l.max_connections,
                 "Open connections at most; more get 503 and are closed. Each is a file descriptor: "
                 "the start warns when RLIMIT_NOFILE leaves fewer (then accepting pauses while none is free)")
      ->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 20));
  app.add_option("--max-buffered-bytes", l.max_buffered_bytes,
                 "Bytes of requests being received, all connections together: a request's whole "
                 "Content-Length is set aside when its head arrives; one beyond gets 503. At least "
                 "one largest request (the body limit, 6 x --max-script-bytes + 64 KiB, plus "
                 "--max-header-bytes). When not given: 256 MiB, or two largest requests where "
                 "--max-script-bytes makes that more (above about 21 MiB; at its 64 MiB cap, 768 MiB)")
      ->default_str("256 MiB")->check(CLI::Range(size_t{1} << 20, size_t{1} << 40));
  app.add_option("--max-header-bytes", l.max_header_bytes,
                 "Request line and headers, in bytes; more: 431")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{1} << 20));
  app.add_option("--max-headers", l.max_headers, "Header lines per request; more: 431")
      ->capture_default_str()->check(CLI::Range(size_t{8}, size_t{10000}));
  app.add_option("--max-uri-bytes", l.max_uri_bytes, "Request target, in bytes; longer: 414")
      ->capture_default_str()->check(CLI::Range(size_t{64}, size_t{8192}));
}

// The online upper bound and the recommended request (docs/bounds.md).
void add_sizing_options(CLI::App& app, DaemonArgs& a) {
  app.add_option("--sizing-config", a.sizing_config,
                 "JSON file of recommended-request settings, per partition (docs/bounds.md): margin, "
                 "granularity, floor, limit, whether a recommendation may exceed the user's request "
                 "(default: never); a partition list takes the strictest of its partitions; "
                 "\"default_partition\" sizes a job sent with no partition (docs/sizing.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--bound-coverage", a.sizing.bound.coverage,
                 "Nominal coverage of the online upper bound the recommendation starts from")
      ->capture_default_str()->check(finite_range(0.5, 0.999));
  app.add_option("--bound-rebuild-jobs", a.sizing.rebuild_jobs,
                 "At start, replay this many most recent stored completions into the online bound")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{10000000}));
  app.add_option("--sizing-workloads", a.sizing.workloads.max_workloads,
                 "Workloads (scripts) kept with their own sizing policy, the one `peakcast simulate` "
                 "replays as peakcast: once 10 of a script's runs have completed it sets the "
                 "recommendation; the least recently used go first; 0 = every recommendation from "
                 "the online bound")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{100000}));
  app.add_option("--sizing-memory", a.sizing_memory_mib,
                 "MiB the workloads' sizing policies may hold: past it the least recently used go "
                 "first (a policy holds about 30 KiB at 10-30 runs, 60 KiB at 100, 600 KiB at "
                 "1,999); 0 = no budget, only --sizing-workloads")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{1} << 20));
  app.add_option("--sizing-history", a.sizing.workloads.max_history,
                 "Completed runs a workload's policy learns from: at twice this many it is rebuilt "
                 "from the most recent ones")
      ->capture_default_str()->check(CLI::Range(size_t{10}, size_t{100000}));
  app.add_option("--sizing-rebuild-runs", a.sizing.workloads.rebuild_runs,
                 "At start, stored runs replayed into the scripts' sizing policies: each script's "
                 "--sizing-history most recent, the most recently active scripts first (10-100 us "
                 "a run); 0 = the policies start over")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{100000000}));
  app.add_option("--sizing-days", a.sizing_days,
                 "A script's sizing policy answers from its runs of about the last DAYS to 2 x DAYS "
                 "days: once its first run is DAYS old a second policy learns the new runs, and takes "
                 "over DAYS later (each run learned twice meanwhile); a start learns the last DAYS. "
                 "For a workload that drifts; 0 = no limit (--history-days, when set, is one). "
                 "`peakcast report --sizing-days` shows what it would have changed")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{100} * 365));
}

// The model, the database and what is exposed.
void add_service_options(CLI::App& app, DaemonArgs& a) {
  app.add_option("--model", a.model_dir,
                 "Model directory (manifest.json with kind and format_version); required, except with "
                 "--sync-once, which only takes its util_cap for the labels it stores (without it: 1.0, "
                 "the default of `peakcast train`)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--db", a.db_path, "SQLite database of completions (created when absent)")->required();
  app.add_option("--socket", a.socket_path,
                 "UNIX socket to listen on; empty string: none (then --listen is required)")
      ->capture_default_str();
  app.add_option("--admin-socket", a.admin_socket,
                 "UNIX socket for `reload [DIR]` and `model` (root or the daemon's user only, mode "
                 "0600); default: the --socket path + \".admin\"; empty string: none")
      ->capture_default_str();
  app.add_option("--listen", a.listen, "Also listen on TCP HOST:PORT (loopback only unless --allow-remote)");
  app.add_flag("--allow-remote", a.allow_remote, "Accept a non-loopback --listen address (the API has no authentication)");
  app.add_option("--socket-mode", a.socket_mode_text, "File mode of the socket, octal")->capture_default_str();
  app.add_option("--socket-group", a.socket_group, "Group that owns the socket (e.g. slurm)");
  app.add_option("--max-script-bytes", a.max_script_bytes,
                 "Largest job script accepted, in bytes, at most 64 MiB (the request body may be 6 x "
                 "this + 64 KiB: --max-buffered-bytes follows it unless given)")
      ->capture_default_str()->check(CLI::Range(size_t{1}, kMaxScriptBytesCap));
  app.add_flag("--store-scripts", a.store_scripts, "Keep script text in the database (default: hashes and features only)");
  app.add_option("--threads", a.threads, "Worker threads per listener (0: max(8, cores - 1))")
      ->capture_default_str()->check(CLI::Range(0, 1024));
  app.add_option("--late-tolerance", a.late_tolerance_s,
                 "Seconds a completion may arrive after its end and still be used exactly; older "
                 "labels are folded to keep memory bounded")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{10} * 365 * 86400));
  app.add_option("--history-days", a.history_days,
                 "Learn only the completions that ended in the last DAYS days (0: all): at start, and "
                 "while running, each hour, forget the runs that ended more than DAYS days ago, as a "
                 "restart would (the scripts' sizing policies too: --sizing-days). The database keeps them "
                 "all. Start time and memory grow with the history: 1,000,000 completions took 6 s "
                 "and 520 MiB here")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{100} * 365));
}

// slurm-sync inside the daemon.
void add_sync_options(CLI::App& app, DaemonArgs& a) {
  app.add_option("--sync-interval", a.sync_interval,
                 "Poll sacct for finished jobs every S seconds (slurm-sync inside the daemon); 0: off")
      ->capture_default_str()->check(finite_range(0.0, 86400.0));
  app.add_option("--sacct", a.sync.sacct, "sacct program used by the sync")->capture_default_str();
  app.add_option("--sync-overlap", a.sync.overlap_s, "Seconds each poll re-reads before the previous one")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{7} * 86400));
  app.add_option("--sync-lookback", a.sync.initial_lookback_s, "First poll: seconds back from now")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{3650} * 86400));
  app.add_option("--sync-rescan-interval", a.sync.rescan_interval_s,
                 "Every S seconds (after a poll), read the jobs that ended in the last "
                 "--sync-rescan-lookback again and store those not stored: records slurmdbd received "
                 "later than --sync-overlap after the job's end; 0: never")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{365} * 86400));
  app.add_option("--sync-rescan-lookback", a.sync.rescan_lookback_s,
                 "Seconds back from now that each re-scan reads (up to where the polls read on)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{3650} * 86400));
  app.add_option("--gpu-mem-bytes", a.gpu_mem_bytes,
                 "Sync: capacity of one GPU when sacct's GRES type does not say it: 40G, 81920M, or a "
                 "bare number of bytes")
      ->transform(CLI::Validator(serve::gpu_mem_option_transform, ""))
      ->type_name("SIZE");
}

}  // namespace

void add_options(CLI::App& app, DaemonArgs& a) {
  add_service_options(app, a);
  add_sync_options(app, a);
  add_http_options(app, a.http_limits);
  app.add_option("--max-wal-bytes", a.so.max_wal_bytes,
                 "Refuse completions (503) while the database's write-ahead log is larger than this "
                 "and cannot be checkpointed")
      ->capture_default_str()->check(CLI::Range(uint64_t{1} << 20, uint64_t{1} << 40));
  add_sizing_options(app, a);
  app.add_flag("--sync-once", a.sync_once_only,
               "Run one sacct poll (and the re-scan when due) into --db and exit: no serving, no "
               "history rebuild; --model optional");
  app.add_flag("-v,--verbose", a.verbose, "Also log debug messages");
}

}  // namespace peakcast::peakcastd
