// The real peakcastd stopped by SIGTERM before it serves: during --sync-once (a sacct that hangs)
// and while it starts (the model still loading, the history still rebuilding). The signal pipe's
// handlers were installed, but nothing read the pipe until serving began: --sync-once ran on for
// sacct's whole timeout (600 s), and a start went on to serve.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon_process.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

const std::string kBinary = PEAKCAST_BINARY_DIR "/bin/peakcastd";

using testing::DaemonProcess;
using testing::file_text;

// A SIGTERM while --sync-once waits on a sacct that hangs: the poll ends (sacct stopped within a
// second), exit 0, the cursor untouched.
TEST(DaemonSignals, SigtermEndsASyncOnceWhoseSacctHangs) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  testing::write_history_model(dir.path());
  const std::string sacct = dir.file("sacct"), calls = dir.file("calls.log"), log = dir.file("d.log");
  std::ofstream(sacct) << "#!/bin/bash\necho \"$*\" >> '" << calls << "'\nsleep 3600\n";
  ::chmod(sacct.c_str(), 0755);
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.spawn(kBinary, {"--model", dir.path(), "--db", dir.file("h.db"), "--socket", dir.file("d.sock"),
                                     "--sacct", sacct, "--sync-once"}, log, log));
  for (int i = 0; i < 1000 && !fs::exists(calls); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(calls)) << "sacct was never started; " << file_text(log);
  const auto sent = std::chrono::steady_clock::now();
  ::kill(daemon.pid(), SIGTERM);
  const std::optional<int> status = daemon.wait(10.0);
  ASSERT_TRUE(status) << "still running 10 s after SIGTERM (sacct's timeout is 600 s); " << file_text(log);
  std::cout << "--sync-once stopped " << std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::steady_clock::now() - sent).count()
            << " ms after SIGTERM\n";
  ASSERT_TRUE(WIFEXITED(*status)) << "killed by signal " << (WIFSIGNALED(*status) ? WTERMSIG(*status) : 0);
  EXPECT_EQ(WEXITSTATUS(*status), 0) << file_text(log);
  const std::string out = file_text(log);
  EXPECT_NE(out.find("stopping on signal"), std::string::npos) << out;
  EXPECT_NE(out.find("stopped on a signal"), std::string::npos) << out;
}

// Writes `text` to the FIFO `path` once a reader opens it (within 10 s); false if none did.
bool feed_fifo(const std::string& path, const std::string& text) {
  for (int i = 0; i < 1000; ++i) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);  // ENXIO: no reader yet
    if (fd >= 0) {
      const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      return ok;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A SIGTERM while the daemon starts (held here reading --sizing-config, a FIFO the test feeds,
// before the model, the database and the history rebuild): the start goes on to the end of the
// rebuild, then the daemon exits 0 without serving: no socket, no "listening" line.
TEST(DaemonSignals, SigtermWhileStartingExitsWithoutServing) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  testing::write_history_model(dir.path());
  const std::string config = dir.file("sizing.json"), sock = dir.file("d.sock"), log = dir.file("d.log");
  ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0) << std::strerror(errno);
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.spawn(kBinary, {"--model", dir.path(), "--db", dir.file("h.db"), "--socket", sock,
                                     "--sizing-config", config}, log, log));
  // Read after the signal handlers are in place, before the model and the database are opened.
  ASSERT_TRUE(feed_fifo(config, "{}")) << file_text(log);
  ::kill(daemon.pid(), SIGTERM);
  const std::optional<int> status = daemon.wait(20.0);
  ASSERT_TRUE(status) << "still running 20 s after SIGTERM; " << file_text(log);
  ASSERT_TRUE(WIFEXITED(*status)) << "killed by signal " << (WIFSIGNALED(*status) ? WTERMSIG(*status) : 0);
  EXPECT_EQ(WEXITSTATUS(*status), 0) << file_text(log);
  const std::string out = file_text(log);
  EXPECT_NE(out.find("stopped before serving"), std::string::npos) << out;
  EXPECT_EQ(out.find("listening on"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(sock));
}

}  // namespace
}  // namespace peakcast::serve
