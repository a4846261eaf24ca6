// peakcastd: the prediction service. Parses arguments, checks every option it can check without
// creating anything, then opens the model and the database and serves HTTP until SIGTERM/SIGINT;
// optionally polls sacct in the background (slurm-sync). SIGHUP or the admin socket's `reload`
// swaps in a new model without stopping (model_slot.h, admin_socket.h): from --model's path, or
// `reload DIR`'s directory until the next SIGHUP or reload.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstring>
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
#include "daemon_options.h"
#include "start_checks.h"

namespace {

using namespace peakcast;
using namespace peakcast::peakcastd;

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

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
    if (Status s = locks.http.hold(a.socket_path, "--socket"); !s) return s;
  }
  if (!admin.empty()) {
    if (Status s = locks.admin.hold(admin, admin_socket_option(a)); !s) return s;
  }
  return locks;
}

// Serves until SIGTERM/SIGINT (or until serve() returns on its own); SIGHUP reloads the model.
// In-flight requests are answered before it returns.
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
