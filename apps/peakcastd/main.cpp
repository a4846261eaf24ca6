// peakcastd: the prediction service. Parses arguments, checks every option it can check without
// creating anything, then opens the model and the database and serves HTTP until SIGTERM/SIGINT;
// optionally polls sacct in the background (slurm-sync). SIGHUP or the admin socket's `reload`
// swaps in a new model without stopping (model_slot.h, admin_socket.h): from --model's path, or
// `reload DIR`'s directory until the next SIGHUP or reload.
#include <signal.h>
#include <sys/un.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "peakcast/cascade/predictor.h"
#include "peakcast/core/log.h"
#include "peakcast/core/version.h"
#include "peakcast/serve/admin_socket.h"
#include "peakcast/serve/http_server.h"
#include "peakcast/serve/model_slot.h"
#include "peakcast/serve/service.h"
#include "peakcast/serve/signal_pipe.h"
#include "peakcast/serve/slurm_sync.h"
#include "peakcast/serve/sync_loop.h"
#include "peakcast/serve/unix_socket.h"
#include "cli_checks.h"

namespace {

using namespace peakcast;

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

using app::finite_range;

// --max-script-bytes at most: a body limit of 6 x 64 MiB + 64 KiB, and a --max-buffered-bytes
// default (two such requests) of about 768 MiB.
constexpr size_t kMaxScriptBytesCap = size_t{64} << 20;

// README's rule, as `peakcast`'s (app::exit_code_for).
int fail(const Status& s) {
  std::cerr << "peakcastd: error: " << s.message() << "\n";
  return app::exit_code_for(s);
}

void install_log_sink(bool verbose) {
  set_log_sink([verbose](LogLevel level, std::string_view msg) {
    if (!verbose && level < LogLevel::kInfo) return;
    static constexpr const char* kNames[] = {"debug", "info", "warning", "error"};
    std::cerr << "peakcastd: " << kNames[static_cast<int>(level)] << ": " << msg << "\n";
  });
}

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

// Everything the command line sets.
struct DaemonArgs {
  std::string model_dir, db_path, socket_path = "/run/peakcast/peakcastd.sock", listen;
  bool allow_remote = false, store_scripts = false, verbose = false, sync_once_only = false;
  std::string socket_mode_text = "0660", socket_group, admin_socket = "default";
  size_t max_script_bytes = 1 << 20;
  int threads = 0;
  double sync_interval = 0;
  int64_t late_tolerance_s = 7 * 24 * 3600;
  int64_t history_days = 0;
  int64_t sizing_days = 0;
  size_t sizing_memory_mib = sizing::WorkloadSizerOptions{}.max_bytes >> 20;
  serve::SyncOptions sync;
  uint64_t gpu_mem_bytes = 0;
  serve::HttpLimits http_limits;
  serve::SqliteOptions so;
  std::string sizing_config;
  serve::SizingOptions sizing;
};

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

// Reads --sizing-config into the recommendation settings.
Status load_sizing(DaemonArgs& a) {
  if (a.sizing_config.empty()) return Status::ok();
  auto cfg = sizing::load_recommend_config(a.sizing_config);
  if (!cfg) return cfg.status();
  a.sizing.recommend = std::move(*cfg);
  a.sizing.config_source = a.sizing_config;
  return Status::ok();
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
      ->transform(CLI::Validator(serve::gpu_mem_option_transform, ""));
}

// The options in --help order (the HTTP limits and the WAL bound between sync and --sync-once).
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

// 3 or 4 octal digits, at most 0777. (std::stoul also took " 0660", "+660" and "-0".)
Result<unsigned> parse_socket_mode(const std::string& text) {
  const bool digits = (text.size() == 3 || text.size() == 4) &&
                      text.find_first_not_of("01234567") == std::string::npos;
  const unsigned mode = digits ? static_cast<unsigned>(std::stoul(text, nullptr, 8)) : 0;
  if (!digits || mode > 0777) {
    return Status::invalid("--socket-mode: expected 3 or 4 octal digits, at most 0777 (like 0660), got \"" +
                           text + "\"");
  }
  return mode;
}

// What opening --db would refuse for the caller to fix, seen without creating anything: a
// directory there, or a database to create in a directory that does not exist. (SQLite said only
// "unable to open database file", exit 1, after the model was loaded.) Permissions are left to
// the open, which names them.
Status check_db_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Status::invalid("--db: " + path + " is a directory");
  if (fs::exists(fs::symlink_status(path, ec))) return Status::ok();
  const fs::path dir = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::exists(dir, ec)) {  // ec: set for a reason other than "no such file"
    return Status::invalid("--db: cannot create " + path + ": directory " + dir.string() +
                           (ec ? " cannot be read: " + ec.message() : " does not exist"));
  }
  if (!fs::is_directory(dir, ec)) {
    return Status::invalid("--db: cannot create " + path + ": " + dir.string() + " is not a directory");
  }
  return Status::ok();
}

// --max-buffered-bytes against one largest request (head and body). Not given, it follows
// --max-script-bytes: 256 MiB, or two largest requests when that is more (one being received
// leaves room for another as large); the administrator raising --max-script-bytes past 42 MiB
// had the start refused for an option they never set. Given and too small: refused, naming both.
Status settle_buffered_bytes(DaemonArgs& a, bool given, size_t max_body_bytes) {
  serve::HttpLimits& l = a.http_limits;
  const size_t largest = max_body_bytes + l.max_header_bytes;
  if (!given) {
    l.max_buffered_bytes = std::max(serve::HttpLimits{}.max_buffered_bytes, 2 * largest);
    if (l.max_buffered_bytes > serve::HttpLimits{}.max_buffered_bytes) {
      log(LogLevel::kInfo, "--max-buffered-bytes " + std::to_string(l.max_buffered_bytes) +
                               ": two largest requests at --max-script-bytes " + std::to_string(a.max_script_bytes) +
                               " (not given: it follows --max-script-bytes past 256 MiB)");
    }
    return Status::ok();
  }
  if (l.max_buffered_bytes >= largest) return Status::ok();
  using std::to_string;
  return Status::invalid("--max-buffered-bytes " + to_string(l.max_buffered_bytes) +
                         " is less than one largest request, " + to_string(largest) +
                         " bytes: a body of 6 x --max-script-bytes " + to_string(a.max_script_bytes) +
                         " + 64 KiB (" + to_string(max_body_bytes) + ") and a head of --max-header-bytes " +
                         to_string(l.max_header_bytes) +
                         "; raise --max-buffered-bytes (or leave it out: it then follows --max-script-bytes) "
                         "or lower --max-script-bytes");
}

// `reload [DIR]` and `model` on the admin socket.
// A plain `reload` reads --model's path again, as SIGHUP does; `reload DIR` serves DIR until the
// next SIGHUP or reload.
// `option`: how its errors name the path (admin_socket_option).
// `lock`: the path's, taken with the start's checks (bind() uses it).
std::unique_ptr<serve::AdminSocket> make_admin_socket(const std::string& path, const std::string& option,
                                                      const std::string& model_dir, serve::Service& service,
                                                      serve::SocketPathLock lock) {
  auto handler = [&service, model_dir](const std::string& cmd, const std::string& arg) {
    if (cmd == "model") return service.model().to_json();
    if (cmd != "reload") return nlohmann::json{{"error", "unknown command \"" + cmd + "\" (reload [DIR], model)"}};
    auto r = service.model().reload(arg.empty() ? model_dir : arg);
    nlohmann::json out = {{"ok", r.ok()}, {"model", service.model().to_json()}};
    if (!r) out["error"] = r.status().message();
    return out;
  };
  return std::make_unique<serve::AdminSocket>(path, std::move(handler), 0600, option, std::move(lock));
}

// SIGTERM/SIGINT before serving (the start-up rebuild, --sync-once): read from the signal pipe
// here and noted, so that the start ends after the step under way, and a --sync-once poll at its
// next window (a sacct still running is stopped within a second). Unread, they waited in the pipe
// until serving began, and --sync-once could not be stopped at all. SIGHUP has nothing to reload
// yet: the model was just read.
class StartSignals {
 public:
  explicit StartSignals(serve::SignalPipe& signals) : signals_(signals), thread_([this] { watch(); }) {}
  ~StartSignals() { finish(); }
  StartSignals(const StartSignals&) = delete;
  StartSignals& operator=(const StartSignals&) = delete;

  // Stops watching (the pipe is then serving's); the signal that asked to stop, 0 if none.
  int finish() {
    if (thread_.joinable()) {
      signals_.cancel();
      thread_.join();
    }
    return stop_signal_;
  }
  bool stopping() const { return stop_signal_ != 0; }

 private:
  void watch() {
    int sig = 0;
    while ((sig = signals_.wait()) != 0) {
      if (sig == SIGHUP) {
        log(LogLevel::kInfo, "SIGHUP while starting: nothing to reload (the model was just loaded)");
        continue;
      }
      log(LogLevel::kInfo, std::string("stopping on signal ") + strsignal(sig) +
                               ": ending the start after the step under way, without serving");
      stop_signal_ = sig;
      return;
    }
  }

  serve::SignalPipe& signals_;
  std::atomic<int> stop_signal_{0};
  std::thread thread_;
};

// Serves until SIGTERM/SIGINT (or until serve() returns on its own); SIGHUP reloads the model.
// In-flight requests are answered before it returns.
serve::ListenOptions listen_options(const DaemonArgs& a, unsigned socket_mode, size_t max_body_bytes) {
  serve::ListenOptions lo;
  lo.socket_path = a.socket_path;
  lo.listen = a.listen;
  lo.allow_remote = a.allow_remote;
  lo.socket_mode = socket_mode;
  lo.socket_group = a.socket_group;
  lo.threads = a.threads;
  lo.limits = a.http_limits;
  lo.limits.max_body_bytes = max_body_bytes;
  return lo;
}

std::string admin_socket_path(const DaemonArgs& a) {
  if (a.admin_socket == "default") return a.socket_path.empty() ? "" : a.socket_path + ".admin";
  return a.admin_socket;
}

// How errors name the admin socket: the option, or, for the default path (--socket + ".admin"),
// where it came from (an error naming --admin-socket sent the user to an option they never passed).
std::string admin_socket_option(const DaemonArgs& a) {
  return a.admin_socket == "default" ? "the admin socket beside --socket" : "--admin-socket";
}

// The admin socket's path checked as AdminSocket::bind() would (serve::check_socket_path: empty
// or too long, not a socket, a live daemon there, a directory it cannot be made in), named as
// bind's own errors name it (admin_socket_option).
Status check_admin_path(const DaemonArgs& a, const std::string& admin) {
  constexpr size_t kMaxPath = sizeof(sockaddr_un{}.sun_path) - 1;
  if (a.admin_socket == "default" && admin.size() > kMaxPath) {
    return Status::invalid("the admin socket beside --socket (" + admin + ") is " + std::to_string(admin.size()) +
                           " bytes, over " + std::to_string(kMaxPath) +
                           "; pass --admin-socket PATH (or --admin-socket '' for none)");
  }
  return serve::check_socket_path(admin, admin_socket_option(a));
}

// --admin-socket neither --socket's path nor its lock file (PATH.lock, SocketPathLock), nor a
// path whose lock file is --socket: the start refused the admin socket's lock as another
// daemon's (the HTTP socket holding it), or one socket's bind found the other's lock file at its
// path, exit 1 after the database was created. Checked before the paths themselves, where a lock
// file a killed daemon left would only be "not a socket". (Only an --admin-socket given can be
// these: the default is --socket + ".admin".)
Status check_admin_path_apart(const DaemonArgs& a, const std::string& admin) {
  if (a.socket_path.empty() || admin.empty()) return Status::ok();
  std::error_code admin_ec, socket_ec;
  const std::string admin_file = std::filesystem::weakly_canonical(admin, admin_ec).lexically_normal().string();
  const std::string socket_file =
      std::filesystem::weakly_canonical(a.socket_path, socket_ec).lexically_normal().string();
  if (admin_ec || socket_ec) return Status::ok();  // check_socket_path names what cannot be read
  const std::string own_path =
      "; give the admin socket a path of its own (or leave --admin-socket out: --socket + \".admin\")";
  using serve::SocketPathLock;
  if (admin_file == socket_file) return Status::invalid("--admin-socket: " + admin + " is also the --socket path" + own_path);
  if (admin_file == SocketPathLock::lock_path(socket_file)) {
    return Status::invalid("--admin-socket: " + admin + " is the --socket path's lock file (--socket + \".lock\")" +
                           own_path);
  }
  if (socket_file == SocketPathLock::lock_path(admin_file)) {
    return Status::invalid("--admin-socket: " + admin + "'s lock file (--admin-socket + \".lock\") is the --socket path" +
                           own_path);
  }
  return Status::ok();
}

// The sockets' paths held (SocketPathLock) from the start's checks, before the model is read and
// the database opened, until their sockets are removed at exit: the loser of a start race (two
// daemons on one --socket started together, or one started while the first still rebuilds its
// history and listens on nothing, so that check_socket_path finds nobody there) exits 2 having
// created nothing (taken at bind, the lock refused it with exit 1 after it had created the
// database and rebuilt the history). Not for --listen (its bind refuses a second daemon) nor
// --sync-once (it listens on nothing).
struct SocketLocks {
  serve::SocketPathLock http, admin;
};

Result<SocketLocks> lock_socket_paths(const DaemonArgs& a, const std::string& admin) {
  SocketLocks locks;
  if (!a.socket_path.empty()) {
    auto lock = serve::SocketPathLock::acquire(a.socket_path, "--socket");
    if (!lock) return lock.status();
    locks.http = std::move(*lock);
  }
  if (!admin.empty()) {
    auto lock = serve::SocketPathLock::acquire(admin, admin_socket_option(a));
    if (!lock) return lock.status();
    locks.admin = std::move(*lock);
  }
  return locks;
}

int serve_until_stopped(const DaemonArgs& a, unsigned socket_mode, size_t max_body_bytes,
                        serve::Service& service, serve::SignalPipe& signals, SocketLocks locks) {
  serve::HttpServer server(service, listen_options(a, socket_mode, max_body_bytes), std::move(locks.http));
  if (Status s = server.bind(); !s) return fail(s);
  // The port bound, not the one asked for: --listen HOST:0 takes a free port, which only this
  // line tells.
  std::string tcp;
  if (auto hp = serve::parse_listen(a.listen); !a.listen.empty() && hp) {
    const bool v6 = hp->host.find(':') != std::string::npos;
    tcp = " tcp:" + (v6 ? "[" + hp->host + "]" : hp->host) + ":" + std::to_string(server.tcp_port());
  }
  log(LogLevel::kInfo, "listening on " + (a.socket_path.empty() ? std::string() : "unix:" + a.socket_path) + tcp);

  std::unique_ptr<serve::SyncLoop> sync_loop;
  if (a.sync_interval > 0) {
    sync_loop = std::make_unique<serve::SyncLoop>(service, a.sync, a.sync_interval);
    sync_loop->start();
  }
  const std::string admin_path = admin_socket_path(a);
  std::unique_ptr<serve::AdminSocket> admin;
  if (!admin_path.empty()) {
    admin = make_admin_socket(admin_path, admin_socket_option(a), a.model_dir, service, std::move(locks.admin));
    if (Status s = admin->bind(); !s) return fail(s);
    admin->start();
  }
  std::thread signal_thread([&server, &signals, &service, &a] {
    int sig = 0;
    // SIGHUP reloads the model from --model's path, also after an admin `reload DIR` (what
    // `systemctl reload` and the unit promise); the old one stays if that fails. Nothing
    // thrown may leave this thread (std::terminate): a failed reload is logged and counted
    // (peakcast_model_reloads_total{result="failed"}) by reload() itself.
    while ((sig = signals.wait()) == SIGHUP) {
      log(LogLevel::kInfo, "SIGHUP: reloading the model");
      try {
        (void)service.model().reload(a.model_dir);
      } catch (const std::exception& e) {
        log(LogLevel::kError, std::string("SIGHUP: reload failed: ") + e.what());
      }
    }
    if (sig != 0) {  // 0: cancelled because serve() returned on its own
      log(LogLevel::kInfo, std::string("stopping on signal ") + strsignal(sig) +
                               ": answering the requests already received");
      server.stop();
    }
  });
  server.serve();
  if (sync_loop) sync_loop->stop();
  if (admin) admin->stop();
  signals.cancel();  // serve() may also have returned on its own
  signal_thread.join();
  log(LogLevel::kInfo, "stopped: every received request answered; closing the database and removing the socket");
  return kExitOk;
}

// --sync-once: one poll (and the re-scan when due) straight into the database, as `peakcast
// slurm-sync` does: nothing is served, so neither the history nor the sizing state is rebuilt.
// The labels are clipped at --model's util_cap (as the serving daemon stores them), or at 1.0
// without --model. SIGTERM/SIGINT end the poll at its next window.
int sync_once_and_exit(DaemonArgs& a, StartSignals& start_signals) {
  if (!a.model_dir.empty()) {
    auto model = cascade::load_predictor(a.model_dir);
    if (!model) return fail(model.status().with_context("--model"));
    a.sync.util_cap = (*model)->util_cap();
  }
  auto store = serve::open_sqlite_store(a.db_path, a.so);
  if (!store) return fail(store.status());
  serve::CompletionStore& db = **store;
  const auto insert = [&db](const Job& j) { return db.insert(j); };
  a.sync.stop_requested = [&start_signals] { return start_signals.stopping(); };
  auto report = serve::sync_once(db, insert, a.sync);
  if (!report) return fail(report.status());
  for (const std::string& note : report->notes) log(LogLevel::kInfo, "slurm-sync: " + note);
  // A poll the signal stopped says so itself (describe); one that had read its last window
  // when the signal came is complete, and only the re-scan is left for the next poll.
  std::cout << "slurm-sync: " << serve::describe(*report)
            << (start_signals.stopping() && !report->stopped ? " (stopped on a signal: the re-scan, when due, "
                                                               "runs after the next poll)"
                                                             : "")
            << "\n";
  if (start_signals.stopping()) return kExitOk;
  // The re-scan too when it is due (cron: its time is kept in the database).
  auto due = serve::rescan_due(db, a.sync);
  if (!due) return fail(due.status().with_context("re-scan"));
  if (!*due) return kExitOk;
  auto rescan = serve::rescan_once(db, insert, a.sync);
  if (!rescan) return fail(rescan.status().with_context("re-scan"));
  for (const std::string& note : rescan->notes) log(LogLevel::kInfo, "slurm-sync: " + note);
  std::cout << "slurm-sync: " << serve::describe(*rescan) << "\n";
  return kExitOk;
}

int run(int argc, char** argv) {
  CLI::App app{
      "peakcastd: answers peak-memory predictions for jobs at submission (POST /v1/predict), "
      "learns from finished jobs (POST /v1/complete, or its own sacct polling), keeps the history "
      "in SQLite. HTTP/1.1 + JSON on a UNIX socket; loopback TCP only when asked."};
  DaemonArgs a;
  add_options(app, a);
  app.set_version_flag("--version", "peakcastd " + std::string(kVersion), "Print the version and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  install_log_sink(a.verbose);

  // From here SIGTERM (systemctl stop) and SIGINT stop the daemon cleanly: in-flight requests
  // answered, the database closed, the socket removed, exit 0. SIGHUP reloads the model. The
  // signal pipe's handlers work on any thread, also those libraries start before main().
  serve::SignalPipe signals({SIGTERM, SIGINT, SIGHUP});
  signal(SIGPIPE, SIG_IGN);
  StartSignals start_signals(signals);

  // Every option that can be checked without creating anything is checked here, before the model
  // is loaded (the history rebuild takes seconds per million completions) and before the
  // database is created: a refused start leaves no file behind.
  if (a.model_dir.empty() && !a.sync_once_only) {
    return fail(Status::invalid("--model is required (only --sync-once runs without a model)"));
  }
  if (Status s = check_db_path(a.db_path); !s) return fail(s);
  const Result<unsigned> socket_mode = parse_socket_mode(a.socket_mode_text);
  if (!socket_mode) return fail(socket_mode.status());
  if (Status s = load_sizing(a); !s) return fail(s);
  if (a.gpu_mem_bytes > 0) a.sync.default_gpu_mem_bytes = a.gpu_mem_bytes;
  a.so.store_scripts = a.store_scripts;
  serve::ServiceOptions opts;
  opts.sizing = a.sizing;
  opts.sizing.workloads.max_bytes = a.sizing_memory_mib << 20;
  opts.sizing.workloads.max_age_ms = a.sizing_days * kMsPerDay;
  opts.limits.max_script_bytes = a.max_script_bytes;
  opts.late_tolerance_s = a.late_tolerance_s;
  opts.history_days = a.history_days;
  const size_t max_body_bytes = opts.limits.max_body_bytes();
  SocketLocks locks;
  if (!a.sync_once_only) {  // --sync-once listens on nothing (and may run beside the daemon)
    if (Status s = settle_buffered_bytes(a, app.count("--max-buffered-bytes") > 0, max_body_bytes); !s) return fail(s);
    const std::string admin = admin_socket_path(a);
    if (Status s = check_admin_path_apart(a, admin); !s) return fail(s);
    if (Status s = serve::check_listen_options(listen_options(a, *socket_mode, max_body_bytes)); !s) return fail(s);
    if (!admin.empty()) {
      if (Status s = check_admin_path(a, admin); !s) return fail(s);
    }
    auto held = lock_socket_paths(a, admin);  // the last check: what it holds is released on any refusal
    if (!held) return fail(held.status());
    locks = std::move(*held);
  }

  if (a.sync_once_only) return sync_once_and_exit(a, start_signals);

  // A --model that is missing, malformed or of a newer format is the caller's input (exit 2).
  auto slot = serve::ModelSlot::open(a.model_dir);
  if (!slot) return fail(slot.status().with_context("--model"));
  const std::shared_ptr<const cascade::Predictor> model = (*slot)->get();
  a.sync.util_cap = model->util_cap();  // --sync-interval's labels (a reload keeps the cap)
  auto store = serve::open_sqlite_store(a.db_path, a.so);
  if (!store) return fail(store.status());

  serve::Service service(*slot, std::move(*store), opts);
  const auto t0 = std::chrono::steady_clock::now();
  if (Status s = service.rebuild(); !s) return fail(s);
  log(LogLevel::kInfo, "sizing: online upper bound at coverage " + std::to_string(a.sizing.bound.coverage) +
                           ", recommended-request settings from " + a.sizing.config_source);
  log(LogLevel::kInfo, "model: " + model->describe() + " (version " + (*slot)->info().version + ")");
  log(LogLevel::kInfo, "history: " + std::to_string(service.history_size()) + " completion(s) from " +
                           a.db_path + " in " +
                           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::steady_clock::now() - t0).count()) + " ms");

  if (start_signals.finish() != 0) {
    log(LogLevel::kInfo, "stopped before serving: closing the database");
    return kExitOk;
  }
  return serve_until_stopped(a, *socket_mode, max_body_bytes, service, signals, std::move(locks));
}

}  // namespace

// Every failure the daemon foresees is a Status with a message; anything else thrown on the way
// up (a library's exception) ends the daemon with its reason and exit 1, never an abort.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "peakcastd: internal error: " << e.what() << "\n";
    return kExitFailure;
  }
}
