// Hot model reload: the swappable slot (versions, refusals that keep the old model, metrics), the
// admin socket (protocol, SO_PEERCRED check against another user), and the real peakcastd under
// load through 20 swaps by SIGHUP and by the admin socket with zero non-2xx answers; SIGHUP and a
// plain `reload` always read --model's path.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "peakcast/cascade/cascade_model.h"
#include "peakcast/core/io.h"
#include "peakcast/serve/admin_socket.h"
#include "peakcast/serve/model_slot.h"
#include "serve/daemon_process.h"
#include "serve/raw_http.h"
#include "serve/serve_test_util.h"

namespace peakcast::serve {
namespace {

namespace fs = std::filesystem;
using testing::DaemonExit;
using testing::DaemonProcess;
using testing::run_to_exit;
using testing::TempDir;

// A history-kind model directory; `fallback` makes each one a different model.
std::string write_model(const std::string& dir, double fallback, double util_cap = 1.0) {
  fs::create_directories(dir);
  std::ofstream(dir + "/manifest.json")
      << nlohmann::json{{"format_version", 1}, {"kind", "history"}, {"util_cap", util_cap},
                        {"fallback", {{"mem", fallback}, {"vram", fallback}}},
                        {"trained_on", "model_reload_test"}}.dump();
  return dir;
}

// One request line to an admin socket; the reply line (empty when none).
std::string admin_call(const std::string& path, const std::string& line) {
  const int fd = testing::connect_unix(path);
  std::string out;
  if (fd >= 0) {
    // The daemon may refuse (and close) before reading: no SIGPIPE, the reply is still there.
    (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    ::close(fd);
  }
  return out;
}

// A manifest's trained_at is epoch seconds; one out of range (1e300, negative) is no time, and the
// manifest file's own modification time stands in, as for a manifest without one. llround's
// result for 1e300 is unspecified (INT64_MIN here), shown as the model's training time.
TEST(ModelSlot, ATrainedAtOutOfRangeIsTheFilesTime) {
  TempDir tmp;
  const std::string dir = write_model(tmp.file("m"), 0.3);
  auto plain = read_model_info(dir);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  for (const double bad : {1e300, -5.0}) {
    nlohmann::json m = nlohmann::json::parse(read_file(dir + "/manifest.json").value());
    m["trained_at"] = bad;
    std::ofstream(dir + "/manifest.json") << m.dump();
    auto info = read_model_info(dir);
    ASSERT_TRUE(info.ok()) << info.status().message();
    EXPECT_GT(info->trained_at_s, 0) << bad;
    EXPECT_LE(info->trained_at_s, plain->trained_at_s + 86400) << bad;
  }
  nlohmann::json m = nlohmann::json::parse(read_file(dir + "/manifest.json").value());
  m["trained_at"] = 1700000000.4;
  std::ofstream(dir + "/manifest.json") << m.dump();
  EXPECT_EQ(read_model_info(dir)->trained_at_s, 1700000000);
}

TEST(ModelSlot, ReloadSwapsAndAFailedOneKeepsTheOldModel) {
  TempDir tmp;
  const std::string a = write_model(tmp.file("a"), 0.3), b = write_model(tmp.file("b"), 0.6);
  auto slot = ModelSlot::open(a);
  ASSERT_TRUE(slot.ok()) << slot.status().message();
  const ModelInfo first = (*slot)->info();
  EXPECT_EQ(first.kind, "history");
  EXPECT_TRUE(first.version.starts_with("history-v1-")) << first.version;
  EXPECT_GT(first.trained_at_s, 0) << "the manifest's modification time";
  const auto held = (*slot)->get();  // a request in flight

  auto r = (*slot)->reload(b);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r->version, first.version);
  EXPECT_EQ((*slot)->info().dir, b);
  EXPECT_NE((*slot)->get().get(), held.get());
  EXPECT_EQ(held->util_cap(), 1.0) << "the old model stays alive for whoever holds it";

  const auto current = (*slot)->get();
  for (const std::string& bad : {tmp.file("missing"), write_model(tmp.file("cap2"), 0.5, 2.0)}) {
    auto f = (*slot)->reload(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("kept " + r->version), std::string::npos) << f.status().message();
    EXPECT_EQ((*slot)->get().get(), current.get()) << "the old model is still served";
  }
  EXPECT_NE((*slot)->reload(tmp.file("cap2")).status().message().find("util_cap"), std::string::npos);
  std::ofstream(b + "/manifest.json") << "{ not json";
  EXPECT_FALSE((*slot)->reload().ok()) << "reload() rereads the current directory";

  const std::string metrics = (*slot)->render_metrics();
  EXPECT_NE(metrics.find("peakcast_model_reloads_total{result=\"ok\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("peakcast_model_reloads_total{result=\"failed\"} 4\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("peakcast_model_info{version=\"" + r->version + "\",kind=\"history\"} 1"), std::string::npos);
  const nlohmann::json j = (*slot)->to_json();
  EXPECT_EQ(j["version"], r->version);
  EXPECT_TRUE(j["last_reload_error"].is_string());
}

TEST(AdminSocket, PeerCheckAndProtocol) {
  EXPECT_TRUE(admin_peer_allowed(0, 1000));
  EXPECT_TRUE(admin_peer_allowed(1000, 1000));
  EXPECT_FALSE(admin_peer_allowed(1001, 1000));

  TempDir tmp;
  chmod(tmp.path().c_str(), 0755);
  // World-writable here only so that another user can reach the credential check.
  AdminSocket admin(tmp.file("admin.sock"),
                    [](const std::string& cmd, const std::string& arg) {
                      return nlohmann::json{{"command", cmd}, {"arg", arg}};
                    },
                    0666);
  ASSERT_TRUE(admin.bind().is_ok());
  admin.start();
  const auto r = nlohmann::json::parse(admin_call(admin.path(), "reload /models/new\n"));
  EXPECT_EQ(r["command"], "reload");
  EXPECT_EQ(r["arg"], "/models/new");

  if (::geteuid() != 0) GTEST_SKIP() << "the other-user check needs root to become another user";
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const std::string reply = admin_call(admin.path(), "reload\n");
    ::_exit(reply.find("forbidden: uid 65534") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a user that is neither root nor the daemon's is refused";
  admin.stop();
  EXPECT_FALSE(fs::exists(tmp.file("admin.sock")));
}

// A second admin socket on the path of a live one unlinked it and took its place (the HTTP socket
// checked first): the first daemon's reloads then reached the second. Refused, as for --socket;
// a stale file (nobody listening) is still replaced.
TEST(AdminSocket, ASecondOnTheSamePathIsRefusedAndAStaleOneReplaced) {
  TempDir tmp;
  const auto echo = [](const std::string& cmd, const std::string&) { return nlohmann::json{{"command", cmd}}; };
  AdminSocket first(tmp.file("admin.sock"), echo);
  ASSERT_TRUE(first.bind().is_ok());
  first.start();
  AdminSocket second(tmp.file("admin.sock"), echo);
  const Status s = second.bind();
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "--admin-socket: another daemon is listening on " + tmp.file("admin.sock"));
  EXPECT_EQ(s.kind(), ErrorKind::kInvalidInput) << "the path is the caller's to change: peakcastd exits 2";
  EXPECT_EQ(nlohmann::json::parse(admin_call(first.path(), "model\n"))["command"], "model")
      << "the first one still answers on its path";
  first.stop();  // removes the file: make a stale one, a socket file nobody listens on
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, first.path().c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  AdminSocket third(tmp.file("admin.sock"), echo);
  EXPECT_TRUE(third.bind().is_ok());
}

// A client connected to `path` that sends "model" a byte at a time, one every 250 ms, never the
// newline, until `done` or 20 s; what the admin socket answered it (empty: nothing).
std::string dribble(const std::string& path, const std::atomic<bool>& done, std::atomic<bool>& connected) {
  const int fd = testing::connect_unix(path);
  std::string out;
  if (fd >= 0) {
    connected = true;
    const std::string word = "model";
    for (int i = 0; i < 80 && !done; ++i) {
      if (::send(fd, &word[i % word.size()], 1, MSG_NOSIGNAL) != 1) break;  // closed on us
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) out.append(buf, static_cast<size_t>(n));
    ::close(fd);
  }
  return out;
}

// The contract says a client has 5 s to send its line: the limit was per read, so one that sent
// a byte every 250 ms held the one admin thread as long as it went on (the next client waited),
// and stop() (the daemon's exit on SIGTERM) waited for it too. Now: 5 s in all, an error answer,
// the next client served; stop() does not wait. (Bounds here are 3x those 5 s: no timing is
// measured, only that nothing waits for the slow client's 20 s.)
TEST(AdminSocket, AClientThatSendsSlowlyHoldsNeitherTheNextClientNorStop) {
  TempDir tmp;
  const auto echo = [](const std::string& cmd, const std::string&) { return nlohmann::json{{"command", cmd}}; };
  AdminSocket admin(tmp.file("admin.sock"), echo);
  ASSERT_TRUE(admin.bind().is_ok());
  admin.start();
  std::atomic<bool> done{false}, connected{false};
  auto slow = std::async(std::launch::async, [&] { return dribble(admin.path(), done, connected); });
  while (!connected) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // accepted: the admin thread reads it
  auto next = std::async(std::launch::async, [&] { return admin_call(admin.path(), "model\n"); });
  const bool answered = next.wait_for(std::chrono::seconds(15)) == std::future_status::ready;
  EXPECT_TRUE(answered) << "the next client still waited 15 s behind one sending a byte every 250 ms";
  if (answered) {
    EXPECT_EQ(nlohmann::json::parse(next.get())["command"], "model");
  }
  done = true;
  const std::string said = slow.get();
  EXPECT_NE(said.find("no whole line"), std::string::npos) << said;
  EXPECT_EQ(said.find("\"command\""), std::string::npos) << "a line cut off by the time limit was run: " << said;

  // stop() while a slow client is still sending.
  done = false;
  connected = false;
  auto slow2 = std::async(std::launch::async, [&] { return dribble(admin.path(), done, connected); });
  while (!connected) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto stopped = std::async(std::launch::async, [&] { admin.stop(); });
  EXPECT_EQ(stopped.wait_for(std::chrono::seconds(15)), std::future_status::ready)
      << "stop() waited for a client still sending";
  done = true;
  EXPECT_EQ(slow2.get().find("\"command\""), std::string::npos) << "a command was run after stop()";
}

// The same with the real daemon: a second peakcastd with its own --socket but the first one's
// --admin-socket does not start, says why, and the first one's admin socket still answers it.
TEST(HotReload, ASecondDaemonOnTheSameAdminSocketIsRefused) {
  const std::string binary = PEAKCAST_BINARY_DIR "/bin/peakcastd";
  if (!fs::exists(binary)) GTEST_SKIP() << "peakcastd not built at " << binary;
  TempDir tmp;
  const std::string model = write_model(tmp.file("model"), 0.25), admin = tmp.file("admin.sock");
  DaemonProcess a;
  ASSERT_TRUE(a.start(binary, {"--model", model, "--db", tmp.file("a.db"), "--socket", tmp.file("a.sock"),
                               "--admin-socket", admin}, tmp.file("a.sock"), tmp.file("a.log")));
  // Refused at the start's checks, as a path whose lock another daemon holds is: exit 2, no database.
  const DaemonExit b = run_to_exit(binary, {"--model", model, "--db", tmp.file("b.db"), "--socket",
                                            tmp.file("b.sock"), "--admin-socket", admin},
                                   tmp.file("b.out"), tmp.file("b.log"));
  EXPECT_EQ(b.code, 2) << b.err;
  EXPECT_NE(b.err.find("--admin-socket: another daemon is listening on " + admin), std::string::npos) << b.err;
  EXPECT_FALSE(fs::exists(tmp.file("b.db")));
  const auto reply = nlohmann::json::parse(admin_call(admin, "model\n"), nullptr, false);
  EXPECT_TRUE(reply.is_object() && reply.contains("version")) << reply.dump();
  EXPECT_TRUE(a.healthy());
}

std::string healthz_version(const std::string& socket) {
  httplib::Client c(socket);
  c.set_address_family(AF_UNIX);
  auto r = c.Get("/healthz");
  if (!r || r->status != 200) return {};
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  return j.is_object() ? j.value("model_version", std::string()) : std::string();
}

// Points `link` at `target` atomically (what an operator's deploy does).
void repoint(const std::string& link, const std::string& target) {
  const std::string tmp = link + ".new";
  fs::remove(tmp);
  fs::create_directory_symlink(target, tmp);
  fs::rename(tmp, link);
}

TEST(HotReload, TwentySwapsUnderLoadWithoutAFailedRequest) {
  const std::string binary = PEAKCAST_BINARY_DIR "/bin/peakcastd";
  if (!fs::exists(binary)) GTEST_SKIP() << "peakcastd not built at " << binary;
  TempDir tmp;
  const std::string dirs[2] = {write_model(tmp.file("model-a"), 0.25), write_model(tmp.file("model-b"), 0.75)};
  std::string versions[2];
  for (int i = 0; i < 2; ++i) versions[i] = read_model_info(dirs[i])->version;
  ASSERT_NE(versions[0], versions[1]);
  const std::string link = tmp.file("current"), sock = tmp.file("d.sock"), log = tmp.file("d.log");
  repoint(link, dirs[0]);
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.start(binary, {"--model", link, "--db", tmp.file("h.db"), "--socket", sock}, sock, log))
      << "see " << log;
  ASSERT_EQ(healthz_version(sock), versions[0]);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ok{0}, not_2xx{0}, transport{0};
  std::vector<std::thread> clients;
  struct Join {  // stops and joins the clients however the test ends
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Join() {
      stop = true;
      for (auto& t : threads) if (t.joinable()) t.join();
    }
  } join{stop, clients};
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      httplib::Client c(sock);
      c.set_address_family(AF_UNIX);
      const std::string body = testing::request_json("u" + std::to_string(t), "#!/bin/sh\nrun " + std::to_string(t), 1'700'000'000, 1ull << 30).dump();
      while (!stop) {
        auto r = c.Post("/v1/predict", body, "application/json");
        if (!r) ++transport;
        else if (r->status / 100 != 2) ++not_2xx;
        else ++ok;
      }
    });
  }
  auto wait_for = [&](const std::string& version) {
    for (int i = 0; i < 1500; ++i) {  // up to 15 s on a loaded machine
      if (healthz_version(sock) == version) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  while (ok < 200) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  uint64_t during = ok;
  for (int swap = 1; swap <= 20; ++swap) {
    const int next = swap % 2;
    repoint(link, dirs[next]);
    if (swap % 2 == 1) {
      ::kill(daemon.pid(), SIGHUP);
    } else {
      const auto reply = nlohmann::json::parse(admin_call(sock + ".admin", "reload\n"), nullptr, false);
      ASSERT_TRUE(reply.is_object() && reply.value("ok", false)) << reply.dump();
    }
    ASSERT_TRUE(wait_for(versions[next])) << "swap " << swap << " did not take; see " << log;
    if (swap == 10) {  // a bad directory in the middle: refused, the model stays
      const auto bad = nlohmann::json::parse(admin_call(sock + ".admin", "reload " + tmp.file("none") + "\n"), nullptr, false);
      ASSERT_TRUE(bad.is_object());
      EXPECT_FALSE(bad.value("ok", true));
      EXPECT_NE(bad.value("error", std::string()).find("kept " + versions[next]), std::string::npos) << bad.dump();
      EXPECT_EQ(healthz_version(sock), versions[next]);
    }
  }
  during = ok - during;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  for (auto& c : clients) c.join();
  clients.clear();
  std::cout << "hot reload: " << ok << " requests answered 2xx, " << during
            << " of them during the 20 swaps; " << not_2xx << " non-2xx, " << transport
            << " transport errors\n";
  EXPECT_EQ(not_2xx.load(), 0u);
  EXPECT_EQ(transport.load(), 0u);
  EXPECT_GE(during, 20u) << "requests were answered while the swaps happened (one per swap at least)";

  httplib::Client c(sock);
  c.set_address_family(AF_UNIX);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m && m->status == 200);
  EXPECT_NE(m->body.find("peakcast_model_reloads_total{result=\"ok\"} 20\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("peakcast_model_reloads_total{result=\"failed\"} 1\n"), std::string::npos);
  EXPECT_NE(m->body.find("peakcast_model_info{version=\"" + versions[0] + "\""), std::string::npos);
  auto h = nlohmann::json::parse(c.Get("/healthz")->body);
  EXPECT_GT(h["model_trained_at"].get<int64_t>(), 0);
  // SIGHUP reloaded; SIGTERM, on the same signal pipe, still stops cleanly.
  const int status = daemon.kill(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(sock)) << "socket file left behind";
  EXPECT_FALSE(fs::exists(sock + ".admin")) << "admin socket file left behind";
}

// SIGHUP (systemctl reload) and a plain admin `reload` read --model's path again, also after an
// admin `reload DIR`: they reloaded the directory last loaded, so after `reload DIR` the daemon
// never went back to --model's path (the unit and README say SIGHUP reloads from --model).
TEST(HotReload, SighupAfterReloadDirGoesBackToTheModelPath) {
  const std::string binary = PEAKCAST_BINARY_DIR "/bin/peakcastd";
  if (!fs::exists(binary)) GTEST_SKIP() << "peakcastd not built at " << binary;
  TempDir tmp;
  const std::string home = write_model(tmp.file("model-a"), 0.25), other = write_model(tmp.file("model-b"), 0.75);
  const std::string home_version = read_model_info(home)->version, other_version = read_model_info(other)->version;
  ASSERT_NE(home_version, other_version);
  const std::string sock = tmp.file("d.sock"), log = tmp.file("d.log");
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.start(binary, {"--model", home, "--db", tmp.file("h.db"), "--socket", sock}, sock, log))
      << "see " << log;
  auto reload = [&](const std::string& line) {
    const auto r = nlohmann::json::parse(admin_call(sock + ".admin", line), nullptr, false);
    return r.is_object() && r.value("ok", false);
  };
  ASSERT_TRUE(reload("reload " + other + "\n"));
  ASSERT_EQ(healthz_version(sock), other_version);
  ::kill(daemon.pid(), SIGHUP);
  httplib::Client c(sock);
  c.set_address_family(AF_UNIX);
  bool reloaded = false;  // the SIGHUP's reload counted (ok or not), then the version is final
  for (int i = 0; i < 1500 && !reloaded; ++i) {  // up to 15 s on a loaded machine
    auto m = c.Get("/metrics");
    reloaded = m && (m->body.find("peakcast_model_reloads_total{result=\"ok\"} 2\n") != std::string::npos ||
                     m->body.find("peakcast_model_reloads_total{result=\"failed\"} 1\n") != std::string::npos);
    if (!reloaded) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(reloaded) << "see " << log;
  EXPECT_EQ(healthz_version(sock), home_version) << "SIGHUP reloaded " << other << ", not --model's " << home;
  // A plain admin `reload` the same.
  ASSERT_TRUE(reload("reload " + other + "\n"));
  ASSERT_TRUE(reload("reload\n"));
  EXPECT_EQ(healthz_version(sock), home_version);
}

// A model directory whose loader throws (here a cascade manifest's `trained_on` that is a number:
// nlohmann's type_error) ended the daemon through std::terminate when SIGHUP reloaded it: a
// reload that throws is a failed reload like the others (logged, counted, the old model kept).
TEST(HotReload, ALoaderThatThrowsIsAFailedReloadNotACrash) {
  const std::string binary = PEAKCAST_BINARY_DIR "/bin/peakcastd";
  if (!fs::exists(binary)) GTEST_SKIP() << "peakcastd not built at " << binary;
  TempDir tmp;
  const std::string good = write_model(tmp.file("model-a"), 0.25), bad = tmp.file("model-bad");
  fs::create_directories(bad);
  std::ofstream(bad + "/manifest.json") << nlohmann::json{{"format_version", cascade::kCascadeFormatVersion},
                                                          {"kind", "cascade"}, {"util_cap", 1.0}, {"trained_on", 5}}.dump();
  const std::string version = read_model_info(good)->version;
  const std::string link = tmp.file("current"), sock = tmp.file("d.sock"), log = tmp.file("d.log");
  repoint(link, good);
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.start(binary, {"--model", link, "--db", tmp.file("h.db"), "--socket", sock}, sock, log))
      << "see " << log;
  repoint(link, bad);
  ::kill(daemon.pid(), SIGHUP);
  httplib::Client c(sock);
  c.set_address_family(AF_UNIX);
  bool counted = false;
  for (int i = 0; i < 1500 && !counted; ++i) {  // up to 15 s on a loaded machine
    auto m = c.Get("/metrics");
    counted = m && m->body.find("peakcast_model_reloads_total{result=\"failed\"} 1\n") != std::string::npos;
    if (!counted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(counted) << "the daemon died or did not count the failed reload; see " << log;
  EXPECT_EQ(healthz_version(sock), version);
  // The admin socket's reload of it says why, as for any failed reload.
  const auto reply = nlohmann::json::parse(admin_call(sock + ".admin", "reload " + bad + "\n"), nullptr, false);
  ASSERT_TRUE(reply.is_object()) << reply.dump();
  EXPECT_FALSE(reply.value("ok", true));
  EXPECT_NE(reply.value("error", std::string()).find("kept " + version), std::string::npos) << reply.dump();
  const int status = daemon.kill(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace peakcast::serve
