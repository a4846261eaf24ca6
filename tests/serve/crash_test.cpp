// kill -9 the real daemon in the middle of a stream of completions, restart it: every completion
// that got a 2xx is in the history, none twice.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>

#include "daemon_process.h"
#include "peakcast/serve/store.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using namespace testing;

TEST(Crash, AcknowledgedCompletionsSurviveKill9) {
  const std::string binary = PEAKCAST_BINARY_DIR "/bin/peakcastd";
  if (!std::filesystem::exists(binary)) GTEST_SKIP() << "peakcastd not built at " << binary;
  TempDir dir;
  write_history_model(dir.path());
  const std::string db = dir.file("h.db"), sock = dir.file("d.sock"), log = dir.file("daemon.log");
  const std::vector<std::string> args = {"--model", dir.path(), "--db", db, "--socket", sock};
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.start(binary, args, sock, log)) << "daemon did not start; see " << log;

  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  constexpr int kClients = 4;
  std::mutex mu;
  std::vector<std::string> acked;
  std::vector<std::string> bodies_acked;
  std::atomic<int> sent{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto cli = unix_client(sock);
      for (int i = 0; !stop; ++i) {
        const std::string id = std::to_string(c) + "-" + std::to_string(i);
        const std::string body =
            completion_json(id, "user" + std::to_string(i % 7), "#!/bin/sh\nstep " + std::to_string(i % 13) + "\n",
                            now - 3600, now - 60, 1ull << 30, (1ull << 20) * (1 + i % 500)).dump();
        sent.fetch_add(1);
        auto r = cli.Post("/v1/complete", body, "application/json");
        if (!r) break;  // the daemon is gone
        if (r->status / 100 == 2) {
          std::lock_guard lock(mu);
          acked.push_back(id);
          bodies_acked.push_back(body);
        }
      }
    });
  }
  // Let a stream build up, then kill it mid-flight.
  while (true) {
    {
      std::lock_guard lock(mu);
      if (acked.size() >= 300) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  daemon.kill(SIGKILL);
  stop = true;
  for (auto& t : clients) t.join();

  // Restart on the same database.
  DaemonProcess again;
  ASSERT_TRUE(again.start(binary, args, sock, log)) << "daemon did not restart; see " << log;
  auto cli = unix_client(sock);
  auto health = cli.Get("/healthz");
  ASSERT_TRUE(health);
  const size_t history_jobs = nlohmann::json::parse(health->body)["history_jobs"].get<size_t>();

  // Re-sending every acknowledged completion changes nothing (none twice).
  size_t duplicates = 0;
  for (const std::string& body : bodies_acked) {
    auto r = cli.Post("/v1/complete", body, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    if (nlohmann::json::parse(r->body)["duplicate"] == true) ++duplicates;
  }
  health = cli.Get("/healthz");
  const size_t history_after = nlohmann::json::parse(health->body)["history_jobs"].get<size_t>();
  again.kill(SIGTERM);

  auto store = open_sqlite_store(db);
  ASSERT_TRUE(store.ok());
  std::multiset<std::string> rows;
  ASSERT_TRUE((*store)->for_each([&](Job&& j) { rows.insert(j.job_id); }).is_ok());
  size_t lost = 0, twice = 0;
  for (const std::string& id : acked) {
    const size_t n = rows.count(id);
    if (n == 0) ++lost;
    if (n > 1) ++twice;
  }
  std::cout << "crash test: " << sent.load() << " completions sent by " << kClients
            << " clients, " << acked.size() << " acknowledged before kill -9, " << rows.size()
            << " on disk after restart (" << rows.size() - std::min(rows.size(), acked.size())
            << " committed but unacknowledged), history " << history_jobs << " jobs; lost " << lost
            << ", twice " << twice << "; re-sent acknowledged: " << duplicates << " duplicates\n";
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(twice, 0u);
  EXPECT_GE(rows.size(), acked.size());
  EXPECT_EQ(history_jobs, rows.size());
  EXPECT_EQ(duplicates, acked.size());
  EXPECT_EQ(history_after, history_jobs);
}

}  // namespace
}  // namespace peakcast::serve
