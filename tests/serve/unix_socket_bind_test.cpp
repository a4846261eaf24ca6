// listen_unix and bind_unix_socket (unix_socket.h): the socket gets its mode and group whatever
// the umask, without changing the process's umask (other threads create files meanwhile); a stale
// socket at the path is replaced; anything else there (a file of another kind, a live socket),
// even one put there after the start's check, is refused and kept; nothing is left beside it.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "daemon_process.h"
#include "peakcast/serve/unix_socket.h"
#include "raw_http.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

// Sets the umask for one scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t old_;
};

// The process's umask as /proc/self/status shows it (Linux 4.7+), without setting it; -1 where
// it cannot be read.
int umask_shown() {
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* line = std::strstr(buf, "\nUmask:");
  return line ? static_cast<int>(std::strtol(line + 7, nullptr, 8)) : -1;
}

// A socket bound at `path` and closed without listening: what a daemon that died leaves.
void make_stale_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path;
  ::close(fd);
}

// The names in `dir`: what the bind left there besides the socket (its private directory).
std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

struct stat lstat_of(const std::string& path) {
  struct stat st{};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

// The umask is the process's, not the thread's: listen_unix set it to 0177 around bind(), and a
// file another thread created meanwhile (the sync loop's database files while the admin socket
// was bound) had the wrong mode. Another thread watches the umask while sockets are bound: it
// never changes.
TEST(UnixSocketBind, TheUmaskIsNeverChanged) {
  if (umask_shown() < 0) GTEST_SKIP() << "/proc/self/status shows no Umask here";
  TempDir dir;
  const ScopedUmask mask(022);
  std::atomic<bool> done{false};
  std::atomic<int> other{-1};
  std::thread watcher([&] {
    while (!done) {
      if (const int seen = umask_shown(); seen != 022) other = seen;
    }
  });
  for (int i = 0; i < 2000 && other < 0; ++i) {
    const std::string path = dir.file("d.sock");
    auto fd = listen_unix(path, "--socket", 4, {0660, "--socket-mode", ""});
    ASSERT_TRUE(fd.ok()) << fd.status().message();
    ::close(*fd);
    ::unlink(path.c_str());
  }
  done = true;
  watcher.join();
  EXPECT_EQ(other, -1) << "another thread saw the umask " << std::oct << other.load() << " while a socket was bound";
}

// The mode asked for, whatever the umask (0000 would have left the socket open to all, 0077 or
// 0277 closed to the group), and the group asked for: the daemon's own, or as root another.
TEST(UnixSocketBind, TheModeAndGroupAreTheOnesAskedForWhateverTheUmask) {
  TempDir dir;
  const group* own = ::getgrgid(::geteuid() == 0 && ::getgrgid(65534) ? 65534 : ::getegid());
  ASSERT_NE(own, nullptr);
  for (const mode_t mask : {0000, 0077, 0277}) {
    for (const unsigned mode : {0660u, 0600u, 0666u}) {
      const ScopedUmask scoped(mask);
      const std::string path = dir.file("d.sock");
      auto fd = listen_unix(path, "--socket", 4, {mode, "--socket-mode", own->gr_name});
      ASSERT_TRUE(fd.ok()) << fd.status().message();
      const struct stat st = lstat_of(path);
      EXPECT_TRUE(S_ISSOCK(st.st_mode));
      EXPECT_EQ(st.st_mode & 07777, mode) << "umask " << std::oct << mask << ", --socket-mode " << mode;
      EXPECT_EQ(st.st_gid, own->gr_gid) << "umask " << std::oct << mask;
      const int client = testing::connect_unix(path);
      EXPECT_GE(client, 0) << "nothing listens on " << path;
      if (client >= 0) ::close(client);
      ::close(*fd);
      ::unlink(path.c_str());
      EXPECT_EQ(entries(dir.path()), std::set<std::string>{}) << "the bind left something beside the socket";
    }
  }
}

// A socket a daemon that died left is replaced: a new file, listened on, and nothing left beside it.
TEST(UnixSocketBind, AStaleSocketIsReplaced) {
  TempDir dir;
  const std::string path = dir.file("d.sock");
  make_stale_socket(path);
  const ino_t stale = lstat_of(path).st_ino;
  auto fd = listen_unix(path, "--socket", 4, {0600, "--socket-mode", ""});
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  EXPECT_NE(lstat_of(path).st_ino, stale) << "the stale socket is still there";
  const int client = testing::connect_unix(path);
  EXPECT_GE(client, 0) << "nothing listens on " << path;
  if (client >= 0) ::close(client);
  ::close(*fd);
  EXPECT_EQ(entries(dir.path()), std::set<std::string>{"d.sock"});
}

// What is put at the path after the start's check (check_socket_path) and before the bind: the
// lstat then unlink of a stale socket removed whatever had replaced it between the two, and a
// rename onto the path replaces it too. bind_unix_socket (listen_unix past its check) refuses a
// file of another kind and keeps it as it was, and leaves nothing of its own.
TEST(UnixSocketBind, AFilePutAtThePathAfterTheCheckIsRefusedAndKept) {
  TempDir dir;
  const std::string file = dir.file("file.sock"), subdir = dir.file("dir.sock"), link = dir.file("link.sock");
  std::ofstream(file) << "keep";
  fs::create_directory(subdir);
  std::ofstream(subdir + "/inside") << "keep";
  make_stale_socket(dir.file("target"));
  fs::create_symlink(dir.file("target"), link);
  const std::set<std::string> before = entries(dir.path());
  for (const std::string& path : {file, subdir, link}) {
    const ino_t ino = lstat_of(path).st_ino;
    auto fd = bind_unix_socket(path, "--admin-socket", 4, {0600, "--admin-socket", ""});
    ASSERT_FALSE(fd.ok()) << path << ": bound over it";
    EXPECT_EQ(fd.status().message(), "--admin-socket: " + path + " exists and is not a socket");
    EXPECT_EQ(fd.status().kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(lstat_of(path).st_ino, ino) << path << " was replaced";
  }
  EXPECT_EQ(testing::file_text(file), "keep");
  EXPECT_EQ(testing::file_text(subdir + "/inside"), "keep");
  EXPECT_EQ(fs::read_symlink(link), dir.file("target"));
  EXPECT_EQ(entries(dir.path()), before) << "the bind left something behind";
}

// A socket another process listens on, put at the path after the check: refused and kept, and it
// still answers there.
TEST(UnixSocketBind, ALiveSocketPutAtThePathAfterTheCheckIsRefusedAndKept) {
  TempDir dir;
  const std::string path = dir.file("d.sock");
  auto other = bind_unix_socket(path, "--socket", 4, {0600, "--socket-mode", ""});
  ASSERT_TRUE(other.ok()) << other.status().message();
  const ino_t ino = lstat_of(path).st_ino;
  auto fd = bind_unix_socket(path, "--socket", 4, {0666, "--socket-mode", ""});
  ASSERT_FALSE(fd.ok()) << "bound over a live socket";
  EXPECT_EQ(fd.status().message(), "--socket: another daemon is listening on " + path);
  EXPECT_EQ(lstat_of(path).st_ino, ino) << "the live socket was replaced";
  EXPECT_EQ(lstat_of(path).st_mode & 07777, 0600u);
  const int client = testing::connect_unix(path);
  ASSERT_GE(client, 0) << "the other process no longer answers at " << path;
  const int accepted = ::accept4(*other, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  EXPECT_GE(accepted, 0) << "the connection reached someone else";
  for (const int f : {client, accepted, *other}) {
    if (f >= 0) ::close(f);
  }
  EXPECT_EQ(entries(dir.path()), std::set<std::string>{"d.sock"});
}

// What a daemon killed between its mkdtemp and its rename leaves beside the path (its private
// directory, empty or holding its socket) is removed at the next bind under the path's lock; a
// private directory holding anything else (a file moved aside that could not be put back) is kept,
// as is every name that is not this path's private directory.
TEST(UnixSocketBind, APrivateDirectoryAKilledDaemonLeftIsRemoved) {
  TempDir dir;
  const std::string path = dir.file("d.sock");
  fs::create_directory(path + ".bind-Aaaaaa");                      // killed before its bind
  fs::create_directory(path + ".bind-Bbbbbb");                      // killed before its rename
  make_stale_socket(path + ".bind-Bbbbbb/sock");
  fs::create_directory(path + ".bind-Cccccc");                      // a file kept aside: kept
  std::ofstream(path + ".bind-Cccccc/sock") << "keep";
  fs::create_directory(path + ".bind-x");                           // not a private directory
  fs::create_directory(dir.file("other.sock.bind-Dddddd"));         // another path's
  std::ofstream(path + ".bind-Eeeeee") << "keep";                   // not a directory
  auto fd = listen_unix(path, "--socket", 4, {0600, "--socket-mode", ""});
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  ::close(*fd);
  EXPECT_EQ(entries(dir.path()), (std::set<std::string>{"d.sock", "d.sock.bind-Cccccc", "d.sock.bind-x",
                                                         "other.sock.bind-Dddddd", "d.sock.bind-Eeeeee"}));
  std::ifstream kept(path + ".bind-Cccccc/sock");
  std::string text;
  kept >> text;
  EXPECT_EQ(text, "keep");
}

// A path of the 107 bytes sun_path holds: its private directory's is longer, and the socket is
// bound there through /proc/self/fd.
TEST(UnixSocketBind, APathOfTheLongestLengthBinds) {
  TempDir dir;
  const std::string prefix = dir.file("");
  ASSERT_LT(prefix.size(), 100u);
  const std::string path = prefix + std::string(107 - prefix.size(), 's');
  make_stale_socket(path);
  auto fd = listen_unix(path, "--socket", 4, {0640, "--socket-mode", ""});
  ASSERT_TRUE(fd.ok()) << fd.status().message();
  EXPECT_EQ(lstat_of(path).st_mode & 07777, 0640u);
  const int client = testing::connect_unix(path);
  EXPECT_GE(client, 0) << "nothing listens on " << path;
  if (client >= 0) ::close(client);
  ::close(*fd);
  EXPECT_EQ(entries(dir.path()), std::set<std::string>{path.substr(prefix.size())});
}

#if defined(__x86_64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kNativeAuditArch = 0;
#endif

// From here on this thread's renameat2 fails with EINVAL whenever it is given flags, as on a file
// system without RENAME_NOREPLACE and RENAME_EXCHANGE (NFS); renameat2 without flags, rename and
// renameat run as before. A seccomp filter: the kernel's own answer, no code of peakcast's is
// swapped. False (errno set) where it cannot be installed.
bool deny_rename_flags() {
  // seccomp_data.args[4] is a 64-bit field; the flags are in its low 32 bits.
  const uint32_t flags_low = offsetof(seccomp_data, args[4]) +
                             (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? sizeof(uint32_t) : 0);
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_renameat2, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, flags_low),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EINVAL & SECCOMP_RET_DATA)),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// Runs `checks` in a child process without renameat2's flags (deny_rename_flags) and returns
// what it returned: the checks that failed, one per line, or "" when all held.
std::string without_rename_flags(const std::function<std::string()>& checks) {
  int fds[2];
  if (::pipe(fds) != 0) return std::string("pipe: ") + std::strerror(errno);
  const pid_t pid = ::fork();
  if (pid < 0) return std::string("fork: ") + std::strerror(errno);
  if (pid == 0) {
    ::close(fds[0]);
    const std::string out = deny_rename_flags() ? checks() : std::string("seccomp: ") + std::strerror(errno);
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::_exit(0);  // no destructor of the parent's objects runs twice
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) out += "the child did not exit cleanly\n";
  return out;
}

// On a file system without renameat2's flags (NFS answers EINVAL) the socket is still put in
// place, by the start's check then rename(2): onto nothing, over a stale socket; a file of another
// kind or a live socket there is refused and kept. The fallback's one weakness, a file put at the
// path between its check and its rename, is the window the flags close elsewhere.
TEST(UnixSocketBind, WithoutRenameFlagsTheCheckThenRenameStillHolds) {
  if (kNativeAuditArch == 0) GTEST_SKIP() << "no seccomp architecture known for this build";
  TempDir dir;
  const std::string fresh = dir.file("fresh.sock"), stale = dir.file("stale.sock"), file = dir.file("file.sock"),
                    live = dir.file("live.sock");
  make_stale_socket(stale);
  std::ofstream(file) << "keep";
  const ino_t stale_ino = lstat_of(stale).st_ino, file_ino = lstat_of(file).st_ino;
  const std::string failed = without_rename_flags([&]() -> std::string {
    std::string out;
    auto check = [&](bool held, const std::string& what) {
      if (!held) out += what + "\n";
    };
    // The filter is in force: a rename with a flag fails as on NFS.
    const std::string a = dir.file("a"), b = dir.file("b");
    std::ofstream(a) << "a";
    check(::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_NOREPLACE) != 0 && errno == EINVAL,
          "renameat2 with RENAME_NOREPLACE did not fail with EINVAL");
    ::unlink(a.c_str());
    for (const std::string& path : {fresh, stale}) {
      auto fd = bind_unix_socket(path, "--socket", 4, {0640, "--socket-mode", ""});
      if (!fd.ok()) {
        out += path + ": " + fd.status().message() + "\n";
        continue;
      }
      struct stat st{};
      check(::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0640,
            path + ": not a socket of mode 0640");
      check(path != stale || st.st_ino != stale_ino, path + ": the stale socket is still there");
      const int client = testing::connect_unix(path);
      check(client >= 0, path + ": nothing listens");
      if (client >= 0) ::close(client);
      ::close(*fd);
    }
    auto refused = bind_unix_socket(file, "--socket", 4, {0600, "--socket-mode", ""});
    check(!refused.ok() && refused.status().message() == "--socket: " + file + " exists and is not a socket",
          file + ": " + (refused.ok() ? std::string("bound over it") : refused.status().message()));
    auto other = bind_unix_socket(live, "--socket", 4, {0600, "--socket-mode", ""});
    check(other.ok(), live + ": the first bind failed");
    auto second = bind_unix_socket(live, "--socket", 4, {0600, "--socket-mode", ""});
    check(!second.ok() && second.status().message() == "--socket: another daemon is listening on " + live,
          live + ": " + (second.ok() ? std::string("bound over a live socket") : second.status().message()));
    if (other.ok()) {
      const int client = testing::connect_unix(live);
      pollfd pending{*other, POLLIN, 0};  // no wait for a connection that went elsewhere
      check(client >= 0 && ::poll(&pending, 1, 2000) == 1 && ::accept4(*other, nullptr, nullptr, SOCK_CLOEXEC) >= 0,
            live + ": the first socket no longer answers there");
    }
    return out;
  });
  EXPECT_EQ(failed, "");
  EXPECT_EQ(testing::file_text(file), "keep");
  EXPECT_EQ(lstat_of(file).st_ino, file_ino);
  EXPECT_EQ(entries(dir.path()), (std::set<std::string>{"fresh.sock", "stale.sock", "file.sock", "live.sock"}))
      << "the bind left something behind";
}

}  // namespace
}  // namespace peakcast::serve
