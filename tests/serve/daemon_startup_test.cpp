// The real peakcastd's start: what it refuses before it creates anything (a bad listener option
// left a fresh database at --db, after loading the model and rebuilding the history), its exit
// codes (README: 2 = usage or input error, 1 = I/O failure), --sync-once without a model, and
// --version.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "daemon_process.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

const std::string kBinary = PEAKCAST_BINARY_DIR "/bin/peakcastd";

using testing::DaemonExit;

// Runs the binary with `args` to its end (killed after 30 s): its exit code, stdout and stderr.
DaemonExit run_daemon(const std::vector<std::string>& args, const TempDir& dir) {
  return testing::run_to_exit(kBinary, args, dir.file("run.out"), dir.file("run.err"));
}

// A start refused for a listener option, and what its message must say.
struct RefusedStart {
  std::vector<std::string> args;
  std::string says;
};

// Each case is refused with exit 2 before the database is created (and before the model is read:
// the same options with a model directory that has no manifest name the option, not the
// manifest).
void expect_refused_before_anything_is_created(const TempDir& dir, const std::vector<RefusedStart>& cases) {
  const std::string model = dir.file("model"), empty_model = dir.file("empty-model");
  fs::create_directories(model);
  fs::create_directories(empty_model);
  testing::write_history_model(model);
  for (const RefusedStart& c : cases) {
    const std::string db = dir.file("h.db");
    std::vector<std::string> args = {"--model", model, "--db", db};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const DaemonExit x = run_daemon(args, dir);
    EXPECT_EQ(x.code, 2) << c.says << ": " << x.err;
    EXPECT_NE(x.err.find(c.says), std::string::npos) << x.err;
    EXPECT_FALSE(fs::exists(db)) << c.says << ": a refused start left the database behind";
    fs::remove(db);
    args[1] = empty_model;
    const DaemonExit y = run_daemon(args, dir);
    EXPECT_NE(y.err.find(c.says), std::string::npos) << "the model was read before the option was checked: " << y.err;
    EXPECT_FALSE(fs::exists(db));
  }
  EXPECT_FALSE(fs::exists(dir.file("d.sock")));
}

// Each listener option that can be checked without creating anything is refused with exit 2
// before the database is created, and before the model is read.
TEST(DaemonStartup, ABadListenerOptionLeavesNoDatabaseAndIsCheckedBeforeTheModel) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  const std::string not_a_socket = dir.file("plain-file");
  std::ofstream(not_a_socket) << "x";
  const std::string long_path = dir.file(std::string(120, 'a') + ".sock");
  expect_refused_before_anything_is_created(dir, {
      {{"--socket", ""}, "nothing to listen on"},
      {{"--socket", dir.file("d.sock"), "--listen", "127.0.0.1:99999"}, "--listen: port"},
      {{"--socket", dir.file("d.sock"), "--listen", "0.0.0.0:1"}, "not a loopback address"},
      {{"--socket", dir.file("d.sock"), "--socket-group", "no-such-group-peakcast"}, "--socket-group: no such group"},
      {{"--socket", not_a_socket}, "exists and is not a socket"},
      {{"--socket", long_path}, "--socket: path empty or longer than"},
      {{"--socket", dir.file("d.sock"), "--admin-socket", long_path}, "--admin-socket: path empty or longer"},
      {{"--socket", dir.file("d.sock"), "--admin-socket", dir.file("./d.sock")},
       "--admin-socket: " + dir.file("./d.sock") + " is also the --socket path"},
  });
}

// --admin-socket at --socket's lock file (PATH.lock), or --socket at the admin socket's, passed
// the start and failed at bind, after the database was created and the history rebuilt: the
// second socket's path held the first's lock file. Refused with the other listener options,
// saying which, also where a killed daemon left the lock file behind (then it was only "not a
// socket").
TEST(DaemonStartup, AnAdminSocketAtTheSocketsLockFileIsRefusedBeforeAnythingIsCreated) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  const std::string left = dir.file("left.sock");
  std::ofstream(left + ".lock") << "";  // a killed daemon's lock file, unlocked
  expect_refused_before_anything_is_created(dir, {
      {{"--socket", dir.file("d.sock"), "--admin-socket", dir.file("d.sock.lock")},
       "--admin-socket: " + dir.file("d.sock.lock") + " is the --socket path's lock file (--socket + \".lock\")"},
      {{"--socket", left, "--admin-socket", dir.file("./left.sock.lock")},
       "--admin-socket: " + dir.file("./left.sock.lock") + " is the --socket path's lock file"},
      {{"--socket", dir.file("a.sock.lock"), "--admin-socket", dir.file("a.sock")},
       "--admin-socket: " + dir.file("a.sock") + "'s lock file (--admin-socket + \".lock\") is the --socket path"},
  });
  EXPECT_FALSE(fs::exists(dir.file("d.sock.lock")) || fs::exists(dir.file("a.sock.lock")));
}

// A --socket that fits sun_path (107 bytes) with a default admin socket (--socket + ".admin")
// that does not: the error named --admin-socket, an option the user never passed. It says where
// the path came from and what to pass; an admin path that is not a socket is named the same way.
TEST(DaemonStartup, TheDefaultAdminSocketIsNamedAsBesideTheSocket) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  const std::string prefix = dir.file("");
  ASSERT_LT(prefix.size(), 100u);
  const std::string socket = prefix + std::string(104 - prefix.size(), 's');  // 104 bytes: fits
  const std::string admin = socket + ".admin";                                   // 110: does not
  const std::string near = dir.file("n.sock");
  std::ofstream(near + ".admin") << "x";
  expect_refused_before_anything_is_created(dir, {
      {{"--socket", socket},
       "the admin socket beside --socket (" + admin + ") is 110 bytes, over 107; pass --admin-socket PATH"},
      {{"--socket", near}, "the admin socket beside --socket: " + near + ".admin exists and is not a socket"},
  });
}

// --socket-mode took what std::stoul takes: " 0660" (leading space), "+660", "-0" passed. Only 3
// or 4 octal digits are a mode, and none above 0777.
TEST(DaemonStartup, ASocketModeIsThreeOrFourOctalDigits) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  std::vector<RefusedStart> cases;
  for (const char* mode : {" 0660", "+660", "-0", "0660 ", "66", "06600", "0x1b0", "0968", "1777"}) {
    cases.push_back({{"--socket", dir.file("d.sock"), "--socket-mode", mode},
                     std::string("--socket-mode: expected 3 or 4 octal digits, at most 0777 (like 0660), got \"") +
                         mode + "\""});
  }
  expect_refused_before_anything_is_created(dir, cases);
}

// A socket whose directory is missing (/run/peakcast not made yet) or is a file failed only at
// bind: exit 1, after the database was created and the history rebuilt. Refused with the other
// listener options, the directory and the reason named, for the HTTP and the admin socket.
TEST(DaemonStartup, ASocketDirectoryThatCannotHoldTheSocketIsRefusedBeforeAnythingIsCreated) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  const std::string missing = dir.file("no-such-dir"), plain_file = dir.file("plain-file");
  std::ofstream(plain_file) << "x";
  expect_refused_before_anything_is_created(dir, {
      {{"--socket", missing + "/d.sock"},
       "--socket: cannot create " + missing + "/d.sock: directory " + missing + " does not exist"},
      {{"--socket", plain_file + "/d.sock"}, "--socket: cannot create " + plain_file + "/d.sock: " + plain_file +
                                                 " is not a directory"},
      {{"--socket", dir.file("d.sock"), "--admin-socket", missing + "/a.sock"},
       "--admin-socket: cannot create " + missing + "/a.sock: directory " + missing + " does not exist"},
  });
  EXPECT_FALSE(fs::exists(missing)) << "the check created the directory";
}

// A --db that is a directory, or in a directory that is missing or is a file: SQLite said only
// "unable to open database file", exit 1, after the model was loaded. Refused before the model is
// read (a model directory without a manifest: the message is still about --db), exit 2, the
// reason named, for serving and for --sync-once alike.
TEST(DaemonStartup, ADatabaseThatCannotBeCreatedIsRefusedBeforeTheModel) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  const std::string missing = dir.file("no-such-dir"), plain_file = dir.file("plain-file");
  std::ofstream(plain_file) << "x";
  fs::create_directories(dir.file("empty-model"));
  const std::vector<RefusedStart> cases = {
      {{"--db", missing + "/h.db"}, "--db: cannot create " + missing + "/h.db: directory " + missing + " does not exist"},
      {{"--db", plain_file + "/h.db"}, "--db: cannot create " + plain_file + "/h.db: " + plain_file + " is not a directory"},
      {{"--db", dir.path()}, "--db: " + dir.path() + " is a directory"},
  };
  for (const RefusedStart& c : cases) {
    for (const std::vector<std::string>& mode : {std::vector<std::string>{"--socket", dir.file("d.sock")},
                                                 std::vector<std::string>{"--sync-once", "--sacct", "/bin/false"}}) {
      std::vector<std::string> args = {"--model", dir.file("empty-model")};
      args.insert(args.end(), c.args.begin(), c.args.end());
      args.insert(args.end(), mode.begin(), mode.end());
      const DaemonExit x = run_daemon(args, dir);
      EXPECT_EQ(x.code, 2) << mode[0] << ": " << x.err;
      EXPECT_NE(x.err.find(c.says), std::string::npos) << mode[0] << ": " << x.err;
    }
  }
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_FALSE(fs::exists(dir.file("d.sock")));
}

// README: 2 = usage or input error, 1 = I/O failure. A --model directory without a model in it
// is the caller's input, as for `peakcast predict` (it was 1: the manifest's "not found").
TEST(DaemonStartup, AMissingModelIsAnInputError) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  fs::create_directories(dir.file("empty-model"));
  const std::vector<std::string> base = {"--db", dir.file("h.db"), "--socket", dir.file("d.sock")};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--model", dir.file("empty-model")});
  DaemonExit x = run_daemon(args, dir);
  EXPECT_EQ(x.code, 2) << x.err;
  EXPECT_NE(x.err.find("manifest.json"), std::string::npos) << x.err;
  EXPECT_FALSE(fs::exists(dir.file("h.db")));
  args = base;
  args.insert(args.end(), {"--model", dir.file("no-such-dir")});
  x = run_daemon(args, dir);
  EXPECT_EQ(x.code, 2) << x.err;
  x = run_daemon(base, dir);  // no --model at all
  EXPECT_EQ(x.code, 2) << x.err;
  EXPECT_NE(x.err.find("--model"), std::string::npos) << x.err;
}

// --sync-once serves nothing: it runs without --model (labels clipped at 1.0), into --db.
TEST(DaemonStartup, SyncOnceNeedsNoModel) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  const std::string sacct = dir.file("sacct"), calls = dir.file("calls.log");
  std::ofstream(sacct) << "#!/bin/sh\necho \"$*\" >> '" << calls << "'\nexit 0\n";
  ::chmod(sacct.c_str(), 0755);
  const DaemonExit x = run_daemon({"--db", dir.file("h.db"), "--sacct", sacct, "--sync-once"}, dir);
  EXPECT_EQ(x.code, 0) << x.err;
  EXPECT_NE(x.out.find("slurm-sync: "), std::string::npos) << x.out << x.err;
  EXPECT_TRUE(fs::exists(calls)) << "sacct was not asked";
  EXPECT_TRUE(fs::exists(dir.file("h.db")));
}

// --max-script-bytes above about 42 MiB made the body limit (6 x it + 64 KiB) exceed the default
// --max-buffered-bytes (256 MiB), and the start was refused for an option the administrator never
// set. Not given, it follows --max-script-bytes: two largest requests (body and head) when that is
// over 256 MiB, and the start says so. Given too small, the start is refused naming both options;
// --help says the rule.
TEST(DaemonStartup, TheBufferedBytesDefaultFollowsTheScriptLimit) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  const size_t script = size_t{48} << 20, head = size_t{16} << 10;  // --max-header-bytes' default
  const size_t largest = 6 * script + (64 << 10) + head;
  testing::ServedDaemon d;
  ASSERT_TRUE(d.start({"--max-script-bytes", std::to_string(script)})) << d.log_text();
  EXPECT_NE(d.log_text().find("--max-buffered-bytes " + std::to_string(2 * largest) +
                              ": two largest requests at --max-script-bytes " + std::to_string(script)),
            std::string::npos)
      << d.log_text();
  d.process.kill(SIGTERM);

  TempDir dir;
  expect_refused_before_anything_is_created(dir, {
      {{"--socket", dir.file("d.sock"), "--max-script-bytes", std::to_string(script), "--max-buffered-bytes",
        std::to_string(size_t{256} << 20)},
       "--max-buffered-bytes 268435456 is less than one largest request, " + std::to_string(largest) +
           " bytes: a body of 6 x --max-script-bytes " + std::to_string(script)},
  });
  const DaemonExit help = run_daemon({"--help"}, dir);
  EXPECT_EQ(help.code, 0) << help.err;
  // CLI11 wraps the description: compare with the white space folded.
  const std::string text = std::regex_replace(help.out, std::regex("\\s+"), " ");
  EXPECT_NE(text.find("When not given: 256 MiB, or two largest requests where --max-script-bytes makes that more"),
            std::string::npos)
      << help.out;
}

// Another daemon's hold on the socket path `socket`, as one still in its start (its lock taken,
// its history being rebuilt, nothing listening yet) has it: an exclusive flock(2) on
// `socket`.lock, from this test's own open file.
class HeldSocketLock {
 public:
  explicit HeldSocketLock(const std::string& socket)
      : fd_(::open((socket + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (fd_ >= 0) ::fstat(fd_, &st_);
  }
  ~HeldSocketLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  HeldSocketLock(const HeldSocketLock&) = delete;
  HeldSocketLock& operator=(const HeldSocketLock&) = delete;
  bool held() const { return fd_ >= 0; }
  // Whether `socket`.lock is still this holder's file (nobody removed or replaced it).
  bool still_there(const std::string& socket) const {
    struct stat now{};
    return ::lstat((socket + ".lock").c_str(), &now) == 0 && now.st_ino == st_.st_ino && now.st_dev == st_.st_dev;
  }

 private:
  int fd_ = -1;
  struct stat st_{};
};

// The loser of a start race (two daemons on one --socket started together, or one started while
// the first still rebuilds its history and listens on nothing) found the path's lock held only at
// bind: exit 1, after it had created the database and rebuilt the history. The locks of the HTTP
// and the admin socket are taken with the start's checks: exit 2 naming the path held (the default
// admin socket as beside --socket), before the model is read and the database created, the other's
// lock file left alone and no socket or lock file of its own left behind.
TEST(DaemonStartup, ASocketPathAnotherDaemonHoldsIsRefusedBeforeTheDatabase) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  const std::string sock = dir.file("d.sock"), admin = dir.file("a.sock");
  struct Held {
    std::string path;  // whose lock another daemon holds
    RefusedStart start;
  };
  const std::vector<Held> cases = {
      {sock,
       {{"--socket", sock}, "--socket: another peakcastd holds " + sock + " (it has the lock " + sock + ".lock)"}},
      {sock + ".admin",
       {{"--socket", sock},
        "the admin socket beside --socket: another peakcastd holds " + sock + ".admin (it has the lock " + sock +
            ".admin.lock)"}},
      {admin,
       {{"--socket", sock, "--admin-socket", admin},
        "--admin-socket: another peakcastd holds " + admin + " (it has the lock " + admin + ".lock)"}},
  };
  for (const Held& c : cases) {
    const HeldSocketLock other(c.path);
    ASSERT_TRUE(other.held()) << c.path;
    expect_refused_before_anything_is_created(dir, {c.start});
    EXPECT_TRUE(other.still_there(c.path)) << c.path << ": the other daemon's lock file was removed";
    for (const std::string& own : {sock, sock + ".admin", admin}) {
      EXPECT_FALSE(fs::exists(own)) << c.path << ": " << own << " left behind";
      if (own != c.path) {
        EXPECT_FALSE(fs::exists(own + ".lock")) << c.path << ": " << own << ".lock left behind";
      }
    }
    fs::remove(c.path + ".lock");  // the other daemon's, gone with it
  }
}

// --sync-once listens on nothing and may run beside the serving daemon: it takes no socket's lock.
TEST(DaemonStartup, SyncOnceTakesNoSocketLock) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  const std::string sock = dir.file("d.sock"), sacct = dir.file("sacct");
  std::ofstream(sacct) << "#!/bin/sh\nexit 0\n";
  ::chmod(sacct.c_str(), 0755);
  const HeldSocketLock http(sock), admin(sock + ".admin");
  ASSERT_TRUE(http.held() && admin.held());
  const DaemonExit x =
      run_daemon({"--db", dir.file("h.db"), "--socket", sock, "--sacct", sacct, "--sync-once"}, dir);
  EXPECT_EQ(x.code, 0) << x.err;
  EXPECT_TRUE(http.still_there(sock) && admin.still_there(sock + ".admin"));
}

// --listen 127.0.0.1:0 takes a free port; the start's "listening on" line said "tcp:127.0.0.1:0",
// so nobody could tell which. It names the port bound, and /healthz answers there.
TEST(DaemonStartup, TheListeningLineNamesThePortBound) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  testing::write_history_model(dir.path());
  const std::string sock = dir.file("d.sock"), log = dir.file("d.log");
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.start(kBinary, {"--model", dir.path(), "--db", dir.file("h.db"), "--socket", sock, "--listen",
                                     "127.0.0.1:0"}, sock, log))
      << testing::file_text(log);
  const std::string text = testing::file_text(log);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("listening on unix:\\S+ tcp:127\\.0\\.0\\.1:([0-9]+)\n"))) << text;
  const int port = std::stoi(m[1].str());
  ASSERT_GT(port, 0) << text;
  httplib::Client tcp("127.0.0.1", port);
  const auto r = tcp.Get("/healthz");
  ASSERT_TRUE(r) << "nothing answers on port " << port;
  EXPECT_EQ(r->status, 200);
}

// --gpu-mem-bytes takes a size in Slurm's units (40G, 81920M): its --help says SIZE, as `peakcast
// slurm-sync --help` and README do, not CLI11's UINT.
TEST(DaemonStartup, TheHelpCallsTheGpuMemoryASize) {
  TempDir dir;
  const DaemonExit help = run_daemon({"--help"}, dir);
  EXPECT_EQ(help.code, 0) << help.err;
  EXPECT_TRUE(std::regex_search(help.out, std::regex(R"(--gpu-mem-bytes SIZE\b)"))) << help.out;
}

TEST(DaemonStartup, VersionPrintsTheProjectVersion) {
  if (!fs::exists(kBinary)) GTEST_SKIP() << "peakcastd not built";
  TempDir dir;
  const DaemonExit x = run_daemon({"--version"}, dir);
  EXPECT_EQ(x.code, 0) << x.err;
  EXPECT_TRUE(std::regex_match(x.out, std::regex("peakcastd [0-9]+\\.[0-9]+\\.[0-9]+\n"))) << x.out;
}

}  // namespace
}  // namespace peakcast::serve
