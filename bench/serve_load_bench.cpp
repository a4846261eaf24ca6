// Load test of peakcastd's HTTP path over a UNIX socket: many concurrent clients send
// predictions mixed with completions to an in-process server (the same Service + HttpServer the
// daemon runs, SQLite with synchronous=FULL on a temp file). Prints p50/p99 per route and the
// throughput beside a single-threaded baseline (one client, one worker). Exits 1 on any error.
// With --slow-clients N, N more connections trickle one byte every 100 ms during the concurrent
// run (they are closed at the request deadline and reconnect): the latencies then show what
// slow clients cost everyone else.
//
//   serve_load_bench [--clients N] [--predictions N] [--complete-every K] [--seed-jobs N]
//                    [--slow-clients N]
#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/cascade/history_predictor.h"
#include "peakcast/serve/http_server.h"
#include "peakcast/serve/service.h"

#include "bench_options.h"

using namespace peakcast;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int slow_clients = 0;
  int clients = 16;
  int predictions = 24000;
  int complete_every = 10;  // one completion per this many predictions
  int seed_jobs = 2000;
  int scripts = 400;
  int users = 60;
};

int64_t epoch_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string script_text(int s) {
  return "#!/bin/bash\n#SBATCH --mem=" + std::to_string(4 + s % 60) + "G\nmodule load python\n"
         "python train.py --config exp" + std::to_string(s) + ".yaml --batch-size " +
         std::to_string(16 << (s % 5)) + "\n";
}

json request(int i, const Args& a, int64_t now) {
  const int s = (i * 7919) % a.scripts;
  return {{"job_id", "pending"}, {"user", "user" + std::to_string(s % a.users)},
          {"submit_time", now}, {"req_cpus", 4}, {"req_mem_bytes", (4ull + s % 60) << 30},
          {"req_time_s", 3600}, {"script", script_text(s)},
          {"job_name", "train_exp" + std::to_string(s) + "_sweep"}};  // the hook sends Slurm's name
}

json completion(const std::string& id, int i, const Args& a, int64_t now) {
  json j = request(i, a, now);
  j["job_id"] = id;
  j["submit_time"] = now - 7200;
  j["end_time"] = now - 60 - (i % 3000);
  j["peak_mem_bytes"] = ((4ull + (i * 7919) % a.scripts % 60) << 30) / 100 * (20 + i % 70);
  return j;
}

struct RunResult {
  std::vector<double> predict_ms, complete_ms;
  int errors = 0;
  std::string first_error;
  double seconds = 0;
};

void note_error(RunResult& r, const httplib::Result& res) {
  if (r.errors++ > 0) return;
  r.first_error = res ? "HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 200)
                      : "transport: " + httplib::to_string(res.error());
}

RunResult run(const std::string& sock, int clients, int predictions, const Args& a,
              const std::string& id_prefix) {
  RunResult out;
  std::vector<RunResult> per(clients);
  const int64_t now = epoch_now();
  std::atomic<int> next{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client cli(sock);
      cli.set_address_family(AF_UNIX);
      cli.set_keep_alive(true);
      RunResult& r = per[c];
      int i;
      while ((i = next.fetch_add(1)) < predictions) {
        const std::string body = request(i, a, now).dump();
        auto s = Clock::now();
        auto res = cli.Post("/v1/predict", body, "application/json");
        r.predict_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
        if (!res || res->status != 200) note_error(r, res);
        if (i % a.complete_every == 0) {
          const std::string cb = completion(id_prefix + std::to_string(i), i, a, now).dump();
          s = Clock::now();
          res = cli.Post("/v1/complete", cb, "application/json");
          r.complete_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
          if (!res || res->status != 200) note_error(r, res);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& r : per) {
    out.predict_ms.insert(out.predict_ms.end(), r.predict_ms.begin(), r.predict_ms.end());
    out.complete_ms.insert(out.complete_ms.end(), r.complete_ms.begin(), r.complete_ms.end());
    out.errors += r.errors;
    if (out.first_error.empty()) out.first_error = r.first_error;
  }
  return out;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct Server {
  std::unique_ptr<serve::Service> service;
  std::unique_ptr<serve::HttpServer> http;
  std::thread thread;
  ~Server() {
    if (http) http->stop();
    if (thread.joinable()) thread.join();
  }
};

std::unique_ptr<Server> start(const std::string& dir, const std::string& name, int threads,
                              const Args& a) {
  auto s = std::make_unique<Server>();
  auto store = serve::open_sqlite_store(dir + "/" + name + ".db");
  if (!store) {
    std::fprintf(stderr, "store: %s\n", store.status().message().c_str());
    std::exit(1);
  }
  serve::ServiceOptions options;  // a named value: GCC 12 warns falsely on a ServiceOptions{} temporary
  s->service = std::make_unique<serve::Service>(
      std::make_shared<cascade::HistoryPredictor>(cascade::HistoryPredictorConfig{}),
      std::move(*store), std::move(options));
  (void)s->service->rebuild();
  // Seed the history (through the service, so it is on disk too).
  const int64_t now = epoch_now();
  for (int i = 0; i < a.seed_jobs; ++i) {
    auto r = s->service->complete(completion("seed" + std::to_string(i), i, a, now).dump());
    if (r.status != 200) {
      std::fprintf(stderr, "seed: %s\n", r.body.c_str());
      std::exit(1);
    }
  }
  serve::ListenOptions lo;
  lo.socket_path = dir + "/" + name + ".sock";
  lo.threads = threads;
  s->http = std::make_unique<serve::HttpServer>(*s->service, lo);
  if (auto st = s->http->bind(); !st) {
    std::fprintf(stderr, "bind: %s\n", st.message().c_str());
    std::exit(1);
  }
  s->thread = std::thread([p = s.get()] { p->http->serve(); });
  return s;
}

void print_row(const char* name, int clients, int threads, const RunResult& r) {
  const double n = static_cast<double>(r.predict_ms.size() + r.complete_ms.size());
  std::printf("%-16s %7d %7d %8zu %8zu %7d %9.3f %9.3f %9.3f %9.3f %10.0f\n", name, clients, threads,
              r.predict_ms.size(), r.complete_ms.size(), r.errors, pct(r.predict_ms, 0.5),
              pct(r.predict_ms, 0.99), pct(r.complete_ms, 0.5), pct(r.complete_ms, 0.99),
              n / r.seconds);
}

}  // namespace

constexpr const char* kUsage =
    "usage: serve_load_bench [--clients N] [--predictions N] [--complete-every K] [--seed-jobs N]\n"
    "                        [--slow-clients N]\n"
    "Load test of peakcastd's HTTP path: an in-process server (the daemon's Service and HttpServer,\n"
    "SQLite with synchronous=FULL in a temp folder) on a UNIX socket, first with one client and one\n"
    "worker, then with N concurrent keep-alive clients. Prints predict/complete p50 and p99 (ms,\n"
    "client side) and requests per second. Exits 1 on any failed request.\n"
    "  --clients N         concurrent clients in the second run (default 16)\n"
    "  --predictions N     predictions in the second run; the first run sends N/4 (default 24000)\n"
    "  --complete-every K  one completion after every K predictions (default 10)\n"
    "  --seed-jobs N       completions stored before timing starts (default 2000)\n"
    "  --slow-clients N    N more connections sending one byte every 100 ms during the second run\n"
    "                      (closed at the 5 s request deadline, then reconnecting; default 0)\n"
    "  -h, --help          this text\n";

// Connections that send a request head one byte every 100 ms, reconnecting when closed.
class SlowClients {
 public:
  SlowClients(const std::string& sock, int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this, sock] { trickle(sock); });
  }
  ~SlowClients() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  int closed_by_server() const { return closed_.load(); }

 private:
  void trickle(const std::string& sock) {
    const std::string head = "POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
    while (!stop_) {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, sock.c_str(), sizeof(addr.sun_path) - 1);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        for (size_t k = 0; !stop_; ++k) {
          if (::send(fd, head.data() + k % head.size(), 1, MSG_NOSIGNAL) != 1) break;
          pollfd p{fd, POLLIN, 0};
          if (::poll(&p, 1, 100) > 0) {
            ++closed_;
            break;
          }
        }
      }
      ::close(fd);
    }
  }
  std::atomic<bool> stop_{false};
  std::atomic<int> closed_{0};
  std::vector<std::thread> threads_;
};

int main(int argc, char** argv) {
  Args a;
  const bench::OptionSpec spec{"serve_load_bench", kUsage,
                               {"--clients", "--predictions", "--complete-every", "--seed-jobs", "--slow-clients"},
                               bench::OptionErrors::kNumber};
  const auto on_value = [&](const std::string& k, const std::string& value) {
    char* end = nullptr;
    const long v = std::strtol(value.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > 100'000'000) {
      bench::option_error(spec, k, true);
      return 2;
    }
    const int n = static_cast<int>(v);
    if (k == "--clients") a.clients = std::max(1, n);
    else if (k == "--predictions") a.predictions = n;
    else if (k == "--complete-every") a.complete_every = std::max(1, n);
    else if (k == "--seed-jobs") a.seed_jobs = n;
    else a.slow_clients = n;
    return 0;
  };
  if (const std::optional<int> done = bench::parse_options(argc, argv, spec, on_value)) return *done;
  std::string tmpl = (std::filesystem::temp_directory_path() / "peakcast-load-XXXXXX").string();
  const std::string dir = mkdtemp(tmpl.data());
  const int threads = std::max(8, static_cast<int>(std::thread::hardware_concurrency()) - 1);
  std::printf("serve_load_bench: %d predictions (+1 completion per %d), history seeded with %d jobs, "
              "%u cores\n", a.predictions, a.complete_every, a.seed_jobs,
              std::thread::hardware_concurrency());
  std::printf("%-16s %7s %7s %8s %8s %7s %9s %9s %9s %9s %10s\n", "run", "clients", "workers",
              "predict", "complete", "errors", "pred p50", "pred p99", "comp p50", "comp p99", "req/s");
  RunResult base, conc;
  {
    auto s = start(dir, "single", 1, a);
    base = run(dir + "/single.sock", 1, a.predictions / 4, a, "b");
    print_row("single-threaded", 1, 1, base);
  }
  {
    auto s = start(dir, "multi", threads, a);
    std::unique_ptr<SlowClients> slow;
    if (a.slow_clients > 0) slow = std::make_unique<SlowClients>(dir + "/multi.sock", a.slow_clients);
    conc = run(dir + "/multi.sock", a.clients, a.predictions, a, "c");
    print_row(a.slow_clients > 0 ? "concurrent+slow" : "concurrent", a.clients, threads, conc);
    if (slow) {
      std::printf("%d slow client(s) trickling one byte every 100 ms meanwhile; %d of their "
                  "connections closed by the server (408) during the run\n",
                  a.slow_clients, slow->closed_by_server());
    }
  }
  const double base_rps = static_cast<double>(base.predict_ms.size() + base.complete_ms.size()) / base.seconds;
  const double conc_rps = static_cast<double>(conc.predict_ms.size() + conc.complete_ms.size()) / conc.seconds;
  std::printf("latency in ms (client side, keep-alive); throughput %.2fx the single-threaded run\n",
              conc_rps / base_rps);
  std::filesystem::remove_all(dir);
  const int errors = base.errors + conc.errors;
  if (errors > 0) {
    std::printf("FAILED: %d error(s); first: %s\n", errors,
                (base.first_error.empty() ? conc.first_error : base.first_error).c_str());
  }
  return errors > 0 ? 1 : 0;
}
