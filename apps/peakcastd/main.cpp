// peakcastd: the prediction service. Parses arguments, opens the model and the database, serves
// HTTP until SIGTERM/SIGINT; optionally polls sacct in the background (slurm-sync). SIGHUP or the
// admin socket's `reload` swaps in a new model without stopping (model_slot.h, admin_socket.h).
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>

#include "peakcast/cascade/predictor.h"
#include "peakcast/core/log.h"
#include "peakcast/serve/admin_socket.h"
#include "peakcast/serve/http_server.h"
#include "peakcast/serve/model_slot.h"
#include "peakcast/serve/service.h"
#include "peakcast/serve/signal_pipe.h"
#include "peakcast/serve/slurm_sync.h"

namespace {

using namespace peakcast;

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

int fail(const Status& s) {
  std::cerr << "peakcastd: error: " << s.message() << "\n";
  return s.kind() == ErrorKind::kInvalidInput || s.kind() == ErrorKind::kUnsupported ? kExitUsage
                                                                                     : kExitFailure;
}

void install_log_sink(bool verbose) {
  set_log_sink([verbose](LogLevel level, std::string_view msg) {
    if (!verbose && level < LogLevel::kInfo) return;
    static constexpr const char* kNames[] = {"debug", "info", "warning", "error"};
    std::cerr << "peakcastd: " << kNames[static_cast<int>(level)] << ": " << msg << "\n";
  });
}

// Background slurm-sync: one poll every `interval`, until stopped.
class SyncLoop {
 public:
  SyncLoop(serve::Service& service, serve::SyncOptions options, double interval_s)
      : service_(service), options_(std::move(options)), interval_(interval_s) {}
  void start() { thread_ = std::thread([this] { run(); }); }
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      poll_once();
      lock.lock();
      cv_.wait_for(lock, std::chrono::duration<double>(interval_), [this] { return stopping_; });
    }
  }
  void poll_once() {
    auto report = serve::sync_once(
        service_.store(), [this](const Job& j) { return service_.add_completion(j); }, options_);
    service_.sync_metrics().record(report, std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::system_clock::now().time_since_epoch()).count());
    if (!report) {
      log(LogLevel::kWarn, "slurm-sync: " + report.status().message());
      return;
    }
    if (report->added > 0 || report->skipped > 0) {
      log(LogLevel::kInfo, "slurm-sync: " + std::to_string(report->finished) + " finished job(s) since " +
                               serve::sacct_time(report->since) + ", " + std::to_string(report->added) +
                               " new (" + std::to_string(report->with_script) + " with script), " +
                               std::to_string(report->skipped) + " malformed row(s) skipped");
    }
    for (const std::string& n : report->notes) log(LogLevel::kDebug, "slurm-sync: " + n);
  }

  serve::Service& service_;
  serve::SyncOptions options_;
  double interval_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

// The HTTP layer's limits (http_framing.h), one set for every endpoint.
void add_http_options(CLI::App& app, serve::HttpLimits& l) {
  app.add_option("--request-timeout", l.request_timeout_s,
                 "Seconds a client has to send one whole request (headers and body), from its first "
                 "byte; a slower one gets 408 and is closed")
      ->capture_default_str()->check(CLI::Range(0.05, 3600.0));
  app.add_option("--idle-timeout", l.idle_timeout_s,
                 "Seconds a keep-alive connection may wait between requests")
      ->capture_default_str()->check(CLI::Range(0.05, 3600.0));
  app.add_option("--max-connections", l.max_connections,
                 "Open connections at most; more get 503 and are closed")
      ->capture_default_str()->check(CLI::Range(size_t{1}, size_t{1} << 20));
  app.add_option("--max-header-bytes", l.max_header_bytes,
                 "Request line and headers, in bytes; more: 431")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{1} << 20));
  app.add_option("--max-headers", l.max_headers, "Header lines per request; more: 431")
      ->capture_default_str()->check(CLI::Range(size_t{8}, size_t{10000}));
  app.add_option("--max-uri-bytes", l.max_uri_bytes, "Request target, in bytes; longer: 414")
      ->capture_default_str()->check(CLI::Range(size_t{64}, size_t{8192}));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "peakcastd: answers peak-memory predictions for jobs at submission (POST /v1/predict), "
      "learns from finished jobs (POST /v1/complete, or its own sacct polling), keeps the history "
      "in SQLite. HTTP/1.1 + JSON on a UNIX socket; loopback TCP only when asked."};
  std::string model_dir, db_path, socket_path = "/run/peakcast/peakcastd.sock", listen;
  bool allow_remote = false, store_scripts = false, verbose = false, sync_once_only = false;
  std::string socket_mode_text = "0660", socket_group, admin_socket = "default";
  size_t max_script_bytes = 1 << 20;
  int threads = 0;
  double sync_interval = 0;
  int64_t late_tolerance_s = 7 * 24 * 3600;
  serve::SyncOptions sync;
  uint64_t gpu_mem_bytes = 0;
  serve::HttpLimits http_limits;
  serve::SqliteOptions so;
  std::string sizing_config;
  serve::SizingOptions sizing;
  app.add_option("--model", model_dir, "Model directory (manifest.json with kind and format_version)")
      ->required()->check(CLI::ExistingDirectory);
  app.add_option("--db", db_path, "SQLite database of completions (created when absent)")->required();
  app.add_option("--socket", socket_path,
                 "UNIX socket to listen on; empty string: none (then --listen is required)")
      ->capture_default_str();
  app.add_option("--admin-socket", admin_socket,
                 "UNIX socket for `reload [DIR]` and `model` (root or the daemon's user only, mode "
                 "0600); default: the --socket path + \".admin\"; empty string: none")
      ->capture_default_str();
  app.add_option("--listen", listen, "Also listen on TCP HOST:PORT (loopback only unless --allow-remote)");
  app.add_flag("--allow-remote", allow_remote, "Accept a non-loopback --listen address (the API has no authentication)");
  app.add_option("--socket-mode", socket_mode_text, "File mode of the socket, octal")->capture_default_str();
  app.add_option("--socket-group", socket_group, "Group that owns the socket (e.g. slurm)");
  app.add_option("--max-script-bytes", max_script_bytes, "Largest job script accepted, in bytes")
      ->capture_default_str()->check(CLI::Range(size_t{1}, size_t{64} << 20));
  app.add_flag("--store-scripts", store_scripts, "Keep script text in the database (default: hashes and features only)");
  app.add_option("--threads", threads, "Worker threads per listener (0: max(8, cores - 1))")
      ->capture_default_str()->check(CLI::Range(0, 1024));
  app.add_option("--late-tolerance", late_tolerance_s,
                 "Seconds a completion may arrive after its end and still be used exactly; older "
                 "labels are folded to keep memory bounded")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{10} * 365 * 86400));
  app.add_option("--sync-interval", sync_interval,
                 "Poll sacct for finished jobs every S seconds (slurm-sync inside the daemon); 0: off")
      ->capture_default_str()->check(CLI::Range(0.0, 86400.0));
  app.add_option("--sacct", sync.sacct, "sacct program used by the sync")->capture_default_str();
  app.add_option("--sync-overlap", sync.overlap_s, "Seconds each poll re-reads before the previous one")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{7} * 86400));
  app.add_option("--sync-lookback", sync.initial_lookback_s, "First poll: seconds back from now")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{3650} * 86400));
  app.add_option("--gpu-mem-bytes", gpu_mem_bytes, "Sync: capacity of one GPU when sacct's GRES type does not say it");
  add_http_options(app, http_limits);
  app.add_option("--max-wal-bytes", so.max_wal_bytes,
                 "Refuse completions (503) while the database's write-ahead log is larger than this "
                 "and cannot be checkpointed")
      ->capture_default_str()->check(CLI::Range(uint64_t{1} << 20, uint64_t{1} << 40));
  app.add_option("--sizing-config", sizing_config,
                 "JSON file of recommended-request settings, per partition (docs/bounds.md): margin, "
                 "granularity, floor, limit, whether a recommendation may exceed the user's request "
                 "(default: never)")
      ->check(CLI::ExistingFile);
  app.add_option("--bound-coverage", sizing.bound.coverage,
                 "Nominal coverage of the online upper bound the recommendation starts from")
      ->capture_default_str()->check(CLI::Range(0.5, 0.999));
  app.add_option("--bound-rebuild-jobs", sizing.rebuild_jobs,
                 "At start, replay this many most recent stored completions into the online bound")
      ->capture_default_str()->check(CLI::Range(size_t{0}, size_t{10000000}));
  app.add_flag("--sync-once", sync_once_only, "Run one sacct poll into --db and exit (no serving)");
  app.add_flag("-v,--verbose", verbose, "Also log debug messages");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  install_log_sink(verbose);

  unsigned socket_mode = 0;
  try {
    size_t used = 0;
    socket_mode = static_cast<unsigned>(std::stoul(socket_mode_text, &used, 8));
    if (used != socket_mode_text.size() || socket_mode > 0777) throw std::invalid_argument("");
  } catch (const std::exception&) {
    return fail(Status::invalid("--socket-mode: expected an octal mode like 0660, got " + socket_mode_text));
  }

  // From here SIGTERM (systemctl stop) and SIGINT stop the daemon cleanly: in-flight requests
  // answered, the database closed, the socket removed, exit 0. SIGHUP reloads the model. The
  // signal pipe's handlers work on any thread, also those libraries start before main().
  serve::SignalPipe signals({SIGTERM, SIGINT, SIGHUP});
  signal(SIGPIPE, SIG_IGN);

  auto slot = serve::ModelSlot::open(model_dir);
  if (!slot) return fail(slot.status());
  const std::shared_ptr<const cascade::Predictor> model = (*slot)->get();
  so.store_scripts = store_scripts;
  auto store = serve::open_sqlite_store(db_path, so);
  if (!store) return fail(store.status());

  if (!sizing_config.empty()) {
    auto cfg = sizing::load_recommend_config(sizing_config);
    if (!cfg) return fail(cfg.status());
    sizing.recommend = std::move(*cfg);
    sizing.config_source = sizing_config;
  }

  serve::ServiceOptions opts;
  opts.sizing = sizing;
  opts.limits.max_script_bytes = max_script_bytes;
  opts.late_tolerance_s = late_tolerance_s;
  serve::Service service(*slot, std::move(*store), opts);
  const auto t0 = std::chrono::steady_clock::now();
  if (Status s = service.rebuild(); !s) return fail(s);
  log(LogLevel::kInfo, "sizing: online upper bound at coverage " + std::to_string(sizing.bound.coverage) +
                           ", recommended-request settings from " + sizing.config_source);
  log(LogLevel::kInfo, "model: " + model->describe() + " (version " + (*slot)->info().version + ")");
  log(LogLevel::kInfo, "history: " + std::to_string(service.history_size()) + " completion(s) from " +
                           db_path + " in " +
                           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::steady_clock::now() - t0).count()) + " ms");

  sync.util_cap = model->util_cap();
  if (gpu_mem_bytes > 0) sync.default_gpu_mem_bytes = gpu_mem_bytes;
  if (sync_once_only) {
    auto report = serve::sync_once(
        service.store(), [&service](const Job& j) { return service.add_completion(j); }, sync);
    if (!report) return fail(report.status());
    std::cout << "slurm-sync: " << serve::describe(*report) << "\n";
    return kExitOk;
  }

  serve::ListenOptions lo;
  lo.socket_path = socket_path;
  lo.listen = listen;
  lo.allow_remote = allow_remote;
  lo.socket_mode = socket_mode;
  lo.socket_group = socket_group;
  lo.threads = threads;
  lo.limits = http_limits;
  lo.limits.max_body_bytes = opts.limits.max_body_bytes();
  serve::HttpServer server(service, lo);
  if (Status s = server.bind(); !s) return fail(s);
  log(LogLevel::kInfo, "listening on " + (socket_path.empty() ? std::string() : "unix:" + socket_path) +
                           (listen.empty() ? "" : " tcp:" + listen));

  std::unique_ptr<SyncLoop> sync_loop;
  if (sync_interval > 0) {
    sync_loop = std::make_unique<SyncLoop>(service, sync, sync_interval);
    sync_loop->start();
  }
  if (admin_socket == "default") admin_socket = socket_path.empty() ? "" : socket_path + ".admin";
  std::unique_ptr<serve::AdminSocket> admin;
  if (!admin_socket.empty()) {
    admin = std::make_unique<serve::AdminSocket>(admin_socket, [&service](const std::string& cmd,
                                                                          const std::string& arg) {
      if (cmd == "model") return service.model().to_json();
      if (cmd != "reload") return nlohmann::json{{"error", "unknown command \"" + cmd + "\" (reload [DIR], model)"}};
      auto r = service.model().reload(arg);
      nlohmann::json out = {{"ok", r.ok()}, {"model", service.model().to_json()}};
      if (!r) out["error"] = r.status().message();
      return out;
    });
    if (Status s = admin->bind(); !s) return fail(s);
    admin->start();
  }
  std::thread signal_thread([&server, &signals, &service] {
    int sig = 0;
    // SIGHUP reloads the model from its directory (the old one stays if that fails).
    while ((sig = signals.wait()) == SIGHUP) {
      log(LogLevel::kInfo, "SIGHUP: reloading the model");
      (void)service.model().reload();
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
