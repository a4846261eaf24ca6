// The real peakcastd under memory abuse, SIGTERM and a database file that stops being writable.
// Loopback UNIX socket only; each test bounded to a few seconds.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "daemon_process.h"
#include "raw_http.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using namespace testing;
using nlohmann::json;

const std::string kBinary = PEAKCAST_BINARY_DIR "/bin/peakcastd";

// Peak resident set ("VmHWM") of a process, in bytes.
uint64_t peak_rss(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

using Daemon = ServedDaemon;

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

// The per-workload sizing policies' bounds are the daemon's flags, shown in /healthz; a value
// out of range stops it at start with the flag named.
TEST(DaemonHardening, SizingWorkloadFlagsReachTheDaemonAndAreChecked) {
  if (!std::filesystem::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  {
    Daemon d;
    ASSERT_TRUE(d.start({"--sizing-workloads", "3", "--sizing-history", "50", "--sizing-memory", "7",
                         "--sizing-rebuild-runs", "12", "--sizing-days", "30"}))
        << d.log_text();
    httplib::Client c(d.sock);
    c.set_address_family(AF_UNIX);
    auto r = c.Get("/healthz");
    ASSERT_TRUE(r && r->status == 200);
    const json w = json::parse(r->body)["sizing"]["workloads"];
    EXPECT_EQ(w["max"], 3);
    EXPECT_EQ(w["max_history"], 50);
    EXPECT_EQ(w["max_memory_bytes"], 7 << 20);
    EXPECT_EQ(w["kept"], 0);
    EXPECT_EQ(w["memory_bytes"], 0);
    EXPECT_EQ(w["rebuild_runs"], 12);
    EXPECT_EQ(w["rebuilt_from_runs"], 0);  // an empty store
    EXPECT_EQ(w["max_age_days"], 30.0);
    EXPECT_NE(d.log_text().find("stored run(s) (--sizing-history 50 a script, --sizing-rebuild-runs 12 in all, "
                                "those of the last 30 day(s))"),
              std::string::npos)
        << d.log_text();
  }
  Daemon bad;
  EXPECT_FALSE(bad.start({"--sizing-history", "5"}));
  EXPECT_NE(bad.log_text().find("--sizing-history"), std::string::npos) << bad.log_text();
  Daemon negative;
  EXPECT_FALSE(negative.start({"--sizing-rebuild-runs", "-1"}));
  EXPECT_NE(negative.log_text().find("--sizing-rebuild-runs"), std::string::npos) << negative.log_text();
  Daemon ageless;
  EXPECT_FALSE(ageless.start({"--sizing-days", "-1"}));
  EXPECT_NE(ageless.log_text().find("--sizing-days"), std::string::npos) << ageless.log_text();
}

// A seconds or share flag given "nan" stops the start naming the flag: CLI::Range let it through
// (both its comparisons are false), and a NaN timeout reached a cast to time_t (undefined).
TEST(DaemonHardening, ANanTimeoutIntervalOrCoverageStopsTheStart) {
  if (!std::filesystem::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  for (const char* flag : {"--idle-timeout", "--request-timeout", "--sync-interval", "--bound-coverage"}) {
    for (const char* value : {"nan", "inf"}) {
      Daemon d;
      EXPECT_FALSE(d.start({flag, value})) << flag << " " << value;
      EXPECT_NE(d.log_text().find(flag), std::string::npos) << d.log_text();
    }
  }
}

TEST(DaemonHardening, ManyValueBodiesDoNotBlowUpMemory) {
  if (!std::filesystem::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  Daemon d;
  ASSERT_TRUE(d.start()) << d.log_text();
  // Warm up, then take the baseline.
  auto warm = unix_client(d.sock);
  ASSERT_TRUE(warm.Get("/healthz"));
  const uint64_t before = peak_rss(d.process.pid());
  // x_a holding empty objects: 6.6 MB (over the body limit, 6 MiB + 64 KiB) and 1.2 MB (under it).
  auto body = [](size_t objects) {
    std::string s = R"({"job_id":"p","user":"u","submit_time":1,"x_a":[{})";
    s.reserve(objects * 3 + 100);
    for (size_t i = 1; i < objects; ++i) s += ",{}";
    return s + "]}";
  };
  const std::string big = body(2'200'000), under = body(400'000);
  std::atomic<int> refused{0}, other{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      auto cli = unix_client(d.sock);
      for (int i = 0; i < 3; ++i) {
        for (const std::string* b : {&big, &under}) {
          auto r = cli.Post("/v1/predict", *b, "application/json");
          (r && r->status == 413 ? refused : other)++;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  const uint64_t after = peak_rss(d.process.pid());
  std::cout << "peak RSS " << (before >> 20) << " MiB before, " << (after >> 20) << " MiB after 48 "
            << "bodies of empty objects\n";
  EXPECT_EQ(refused.load(), 48);
  EXPECT_EQ(other.load(), 0);
  EXPECT_LT(after - before, uint64_t{100} << 20);  // was +1.3 GiB: the parsed DOM of each body
}

TEST(DaemonHardening, SigtermAnswersInFlightRequestsAndExitsCleanly) {
  if (!std::filesystem::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  Daemon d;
  ASSERT_TRUE(d.start()) << d.log_text();
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, server_errors{0};
  std::vector<std::thread> clients;
  const int64_t now = now_s();
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      auto cli = unix_client(d.sock);
      for (int i = 0; !stop; ++i) {
        const std::string id = std::to_string(c) + "-" + std::to_string(i);
        auto r = cli.Post("/v1/complete",
                          completion_json(id, "u", "#!/bin/sh\n", now - 99, now - 9, 1 << 30, 1 << 20).dump(),
                          "application/json");
        if (!r) break;  // the daemon stopped listening
        if (r->status == 200) ++ok;
        if (r->status >= 500) ++server_errors;
      }
    });
  }
  while (ok < 50) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int status = d.process.kill(SIGTERM);
  stop = true;
  for (auto& t : clients) t.join();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(server_errors.load(), 0);
  EXPECT_FALSE(std::filesystem::exists(d.sock)) << "socket file left behind";
  const std::string log = d.log_text();
  EXPECT_NE(log.find("stopping on signal"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped:"), std::string::npos) << log;
  // The database was closed cleanly: no WAL left to replay.
  EXPECT_FALSE(std::filesystem::exists(d.db + "-wal") && std::filesystem::file_size(d.db + "-wal") > 0);
}

bool chattr(const std::string& flag, const std::string& path) {
  return std::system(("chattr " + flag + " '" + path + "' 2>/dev/null").c_str()) == 0;
}

TEST(DaemonHardening, ImmutableShmFileGives503NotSigbus) {
  if (!std::filesystem::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  Daemon d;
  ASSERT_TRUE(d.start()) << d.log_text();
  auto cli = unix_client(d.sock);
  const int64_t now = now_s();
  auto complete = [&](const std::string& id) {
    auto r = cli.Post("/v1/complete",
                      completion_json(id, "u", "#!/bin/sh\nx\n", now - 99, now - 9, 1 << 30, 1 << 20).dump(),
                      "application/json");
    return r ? r->status : 0;
  };
  ASSERT_EQ(complete("1"), 200);
  const std::string shm = d.db + "-shm";
  ASSERT_TRUE(std::filesystem::exists(shm));
  if (!chattr("+i", shm)) GTEST_SKIP() << "chattr +i not possible here (needs root and ext4/xfs)";
  const int refused = complete("2");
  auto predict = cli.Post("/v1/predict", request_json("u", "#!/bin/sh\nx\n", now, 1 << 30).dump(), "application/json");
  auto health = cli.Get("/healthz");
  chattr("-i", shm);
  EXPECT_EQ(refused, 503);
  ASSERT_TRUE(predict) << "the daemon died";
  EXPECT_EQ(predict->status, 200);
  ASSERT_TRUE(health);
  const json h = json::parse(health->body);
  EXPECT_EQ(h["storage"]["ok"], false);
  EXPECT_NE(h["storage"]["error"].get<std::string>().find("-shm"), std::string::npos) << health->body;
  EXPECT_EQ(complete("2"), 200);  // writable again: accepted
}

}  // namespace
}  // namespace peakcast::serve
