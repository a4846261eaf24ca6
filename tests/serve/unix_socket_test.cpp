// check_socket_path (unix_socket.h): what bind() of the daemon's sockets would refuse, seen before
// anything is created (here: a parent directory this user may not write in, a group it is not
// in); and the path's lock (SocketPathLock), which keeps a second server from unlinking the
// socket of one that holds the path.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon_process.h"
#include "peakcast/serve/admin_socket.h"
#include "peakcast/serve/http_server.h"
#include "peakcast/serve/service.h"
#include "peakcast/serve/unix_socket.h"
#include "raw_http.h"
#include "serve_test_util.h"

namespace peakcast::serve {
namespace {

using testing::TempDir;

// The expected start of check_socket_path's message for a socket in `dir`, which this user may
// not write in.
std::string not_writable(const std::string& option, const std::string& dir) {
  return option + ": cannot create " + dir + "/d.sock: directory " + dir + " is not writable by uid ";
}

// A directory the daemon's user may search but not write in (/run/peakcast owned by root, say):
// bind() would fail with EACCES after the history rebuild; the check says so first. As root
// (which may write anywhere) the check runs in a child that became uid 65534 (nobody).
TEST(UnixSocketPath, ADirectoryThisUserCannotWriteInIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.file("read-only");
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);  // searchable by the other user
  ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);
  if (::geteuid() != 0) {
    const Status s = check_socket_path(dir + "/d.sock", "--socket");
    EXPECT_EQ(s.kind(), ErrorKind::kInvalidInput) << s.message();
    EXPECT_EQ(s.message().rfind(not_writable("--socket", dir), 0), 0u) << s.message();
    return;
  }
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const Status s = check_socket_path(dir + "/d.sock", "--admin-socket");
    const bool says = s.kind() == ErrorKind::kInvalidInput &&
                      s.message().rfind(not_writable("--admin-socket", dir) + "65534: ", 0) == 0;
    ::_exit(says ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 3) << "could not become uid 65534";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "uid 65534 was not refused a socket in " << dir << " (mode 0555, root's)";
  // Root itself may create the socket there: passes.
  EXPECT_TRUE(check_socket_path(dir + "/d.sock", "--socket").is_ok());
}

// The directory of a bare name is the working directory; of a name in "/", "/" itself.
TEST(UnixSocketPath, ABareNameIsCheckedInTheWorkingDirectory) {
  TempDir tmp;
  const std::string here = std::filesystem::current_path().string();
  std::filesystem::current_path(tmp.path());
  const Status in_cwd = check_socket_path("d.sock", "--socket");
  std::filesystem::current_path(here);
  EXPECT_TRUE(in_cwd.is_ok()) << in_cwd.message();
  // "/" exists: refused at most for want of permission (a user, a read-only root file system).
  const Status in_root = check_socket_path("/d.sock", "--socket");
  EXPECT_EQ(in_root.message().find("does not exist"), std::string::npos) << in_root.message();
}

// --socket-group names a group the daemon's (non-root) user is not in: chown(2) of the socket
// would fail with EPERM after the database was created and the history rebuilt (exit 1);
// check_listen_options says so first, naming the group. As root the check runs in a child that
// became uid/gid 65534 with no supplementary groups; root itself may give the socket to any group.
TEST(UnixSocketPath, ASocketGroupThisUserIsNotInIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.file("open");
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);  // writable by the other user: only the group is wrong
  const group* root_group = ::getgrgid(0);
  ASSERT_NE(root_group, nullptr);
  ListenOptions lo;
  lo.socket_path = dir + "/d.sock";
  lo.socket_group = root_group->gr_name;
  const std::string expected = "--socket-group: uid 65534 is not in group " + lo.socket_group + " (gid 0)";
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become a user outside group " << lo.socket_group;
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const Status refused = check_listen_options(lo);
    const bool says = refused.kind() == ErrorKind::kInvalidInput && refused.message().rfind(expected, 0) == 0;
    // Its own group (65534) it may give the socket to.
    ListenOptions own = lo;
    const group* own_group = ::getgrgid(65534);
    if (own_group) own.socket_group = own_group->gr_name;
    const bool own_passes = !own_group || check_listen_options(own).is_ok();
    ::_exit(says ? (own_passes ? 0 : 2) : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 3) << "could not become uid 65534";
  EXPECT_NE(WEXITSTATUS(status), 1) << "uid 65534 was not refused --socket-group " << lo.socket_group
                                    << " (expected a message starting: " << expected << ")";
  EXPECT_NE(WEXITSTATUS(status), 2) << "uid 65534 was refused its own group";
  EXPECT_TRUE(check_listen_options(lo).is_ok()) << "root may give the socket to any group";
}

// Another daemon's hold on the socket path `socket`, as one between its lock and its bind has it:
// an exclusive flock(2) on `socket`.lock, from an open file of its own (flock locks belong to the
// open file, so this conflicts with a lock the same process takes through another open).
class OtherDaemonsLock {
 public:
  explicit OtherDaemonsLock(const std::string& socket)
      : fd_(::open((socket + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {}
  ~OtherDaemonsLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  OtherDaemonsLock(const OtherDaemonsLock&) = delete;
  OtherDaemonsLock& operator=(const OtherDaemonsLock&) = delete;
  bool held() const { return fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) == 0; }

 private:
  int fd_;
};

// A service over a fresh database in `dir`, for HttpServers to serve.
std::unique_ptr<Service> make_service(const TempDir& dir) {
  auto store = open_sqlite_store(dir.file("h.db"));
  EXPECT_TRUE(store.ok()) << store.status().message();
  ServiceOptions options;  // a named value: GCC 12 warns falsely on a ServiceOptions{} temporary
  return std::make_unique<Service>(testing::history_model(), std::move(*store), std::move(options));
}

// The status of GET /healthz at the UNIX socket `path`; 0: nothing answered.
int healthz_status(const std::string& path) {
  const std::string answer =
      testing::http_exchange(path, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5);
  return answer.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(answer.substr(9, 3)) : 0;
}

// An HttpServer serving on a thread of its own.
struct RunningServer {
  std::unique_ptr<HttpServer> http;
  std::thread thread;
  RunningServer(Service& service, const std::string& socket) {
    ListenOptions lo;
    lo.socket_path = socket;
    lo.threads = 2;
    http = std::make_unique<HttpServer>(service, lo);
  }
  Status bind_and_serve() {
    Status s = http->bind();
    if (s) thread = std::thread([this] { http->serve(); });
    return s;
  }
  // Stops serving (its listener closed) but keeps the object, as a daemon does while it answers
  // what it has received and stops its other parts; its socket file is removed when it is destroyed.
  void stop() {
    http->stop();
    if (thread.joinable()) thread.join();
  }
  ~RunningServer() { stop(); }
};

// A daemon that had stopped listening but not yet removed its socket (serve() returned; the sync
// loop and admin socket still stopping) looked stale to a second one starting on the path: the
// second unlinked it and bound its own, and the first then removed the second's socket as it
// went, leaving it serving a name nobody could reach. The path is held until its socket is gone:
// the second is refused, naming the path, and once the first is gone a new one takes the path
// and answers there.
TEST(SocketPathLock, ASecondServerCannotTakeThePathFromOneStillStopping) {
  TempDir dir;
  const std::string sock = dir.file("d.sock");
  const auto service = make_service(dir);
  auto first = std::make_unique<RunningServer>(*service, sock);
  ASSERT_TRUE(first->bind_and_serve().is_ok());
  ASSERT_EQ(healthz_status(sock), 200);
  first->stop();
  ASSERT_TRUE(std::filesystem::exists(sock)) << "the socket file stays until the server is destroyed";
  ASSERT_EQ(healthz_status(sock), 0) << "a stopped server no longer accepts";

  RunningServer second(*service, sock);
  const Status s = second.http->bind();
  ASSERT_FALSE(s.is_ok()) << "bound on the path of a server still stopping";
  EXPECT_EQ(s.kind(), ErrorKind::kInvalidInput) << "another daemon's path is the caller's to change: exit 2";
  EXPECT_EQ(s.message().rfind("--socket: another peakcastd holds " + sock, 0), 0u) << s.message();
  first.reset();
  EXPECT_FALSE(std::filesystem::exists(sock));
  EXPECT_FALSE(std::filesystem::exists(sock + ".lock")) << "the lock file is removed with the socket";

  RunningServer third(*service, sock);
  ASSERT_TRUE(third.bind_and_serve().is_ok());
  EXPECT_EQ(healthz_status(sock), 200) << "the path's new server answers there";
}

// Two daemons starting on one path both saw nothing listening, and the second unlinked the
// socket the first had just bound. Here the first is between its lock and its bind (its lock
// held, no socket yet, or a stale one from a daemon that died): the second is refused, the HTTP
// socket and the admin socket alike, and creates nothing. Once the lock is let go (its holder
// gone) the path binds, the stale socket replaced.
TEST(SocketPathLock, APathAnotherDaemonHoldsIsRefusedAndNothingIsUnlinked) {
  TempDir dir;
  const auto service = make_service(dir);
  for (const std::string option : {"--socket", "--admin-socket"}) {
    const std::string sock = dir.file("d" + option + ".sock");
    {  // a stale socket: bound, never listened on (a daemon that died)
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
      ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
      ::close(fd);
    }
    struct stat before{};
    ASSERT_EQ(::lstat(sock.c_str(), &before), 0);
    auto other = std::make_unique<OtherDaemonsLock>(sock);
    ASSERT_TRUE(other->held());
    const auto echo = [](const std::string& cmd, const std::string&) { return nlohmann::json{{"command", cmd}}; };
    RunningServer http(*service, sock);
    AdminSocket admin(sock, echo);  // its errors name --admin-socket
    const Status s = option == "--socket" ? http.bind_and_serve() : admin.bind();
    ASSERT_FALSE(s.is_ok()) << option << ": bound on a path another daemon holds";
    EXPECT_EQ(s.message(), option + ": another peakcastd holds " + sock + " (it has the lock " + sock + ".lock)");
    EXPECT_EQ(s.kind(), ErrorKind::kInvalidInput) << option;
    struct stat after{};
    ASSERT_EQ(::lstat(sock.c_str(), &after), 0) << option << ": the other daemon's socket was unlinked";
    EXPECT_EQ(after.st_ino, before.st_ino) << option << ": the other daemon's socket was replaced";

    other.reset();  // its holder gone: the lock file stays behind, unlocked
    ASSERT_TRUE(std::filesystem::exists(sock + ".lock"));
    const Status again = option == "--socket" ? http.bind_and_serve() : admin.bind();
    ASSERT_TRUE(again.is_ok()) << option << ": " << again.message();
    if (option == "--socket") {
      EXPECT_EQ(healthz_status(sock), 200);
    } else {
      admin.start();
      const int fd = testing::connect_unix(sock);
      EXPECT_GE(fd, 0) << "nothing listens on the admin socket";
      if (fd >= 0) ::close(fd);
    }
  }
}

// peakcastd takes its sockets' locks with the start's checks, before the database, and hands
// them over: bind() uses the lock handed (a second acquire in this process would conflict with
// it, flock locks belonging to the open file), holds it until the socket is removed, and refuses
// one handed for another path.
TEST(SocketPathLock, AServerBindsWithTheLockItIsHanded) {
  TempDir dir;
  const auto service = make_service(dir);
  const auto echo = [](const std::string& cmd, const std::string&) { return nlohmann::json{{"command", cmd}}; };
  const std::string sock = dir.file("d.sock"), admin_sock = dir.file("a.sock");
  {
    auto http_lock = SocketPathLock::acquire(sock, "--socket");
    auto admin_lock = SocketPathLock::acquire(admin_sock, "--admin-socket");
    ASSERT_TRUE(http_lock.ok() && admin_lock.ok());
    ListenOptions lo;
    lo.socket_path = sock;
    lo.threads = 2;
    HttpServer http(*service, lo, std::move(*http_lock));
    AdminSocket admin(admin_sock, echo, 0600, "--admin-socket", std::move(*admin_lock));
    const Status bound = http.bind();
    ASSERT_TRUE(bound.is_ok()) << bound.message();
    const Status admin_bound = admin.bind();
    ASSERT_TRUE(admin_bound.is_ok()) << admin_bound.message();
    for (const std::string& path : {sock, admin_sock}) {
      EXPECT_FALSE(SocketPathLock::acquire(path, "--socket").ok()) << path << ": its lock was let go at bind";
    }
    admin.stop();
    EXPECT_FALSE(std::filesystem::exists(admin_sock + ".lock")) << "the admin socket's lock outlived stop()";
  }
  EXPECT_FALSE(std::filesystem::exists(sock));
  EXPECT_FALSE(std::filesystem::exists(sock + ".lock")) << "the handed lock outlived the server";

  auto other = SocketPathLock::acquire(dir.file("other.sock"), "--socket");
  ASSERT_TRUE(other.ok());
  ListenOptions lo;
  lo.socket_path = sock;
  lo.threads = 2;
  HttpServer http(*service, lo, std::move(*other));
  const Status wrong = http.bind();
  EXPECT_EQ(wrong.kind(), ErrorKind::kInternal) << wrong.message();
  EXPECT_FALSE(std::filesystem::exists(sock)) << "bound without the path's lock";
  auto other_admin = SocketPathLock::acquire(dir.file("other.sock.admin"), "--admin-socket");
  ASSERT_TRUE(other_admin.ok());
  AdminSocket admin(admin_sock, echo, 0600, "--admin-socket", std::move(*other_admin));
  EXPECT_EQ(admin.bind().kind(), ErrorKind::kInternal);
  EXPECT_FALSE(std::filesystem::exists(admin_sock)) << "bound without the path's lock";
}

// The lock file is the daemon's own: a symbolic link or a directory put at PATH.lock is refused
// (never followed, never removed), the path named.
TEST(SocketPathLock, ALockPathThatIsNotARegularFileIsRefused) {
  TempDir dir;
  const std::string sock = dir.file("d.sock"), target = dir.file("target");
  std::ofstream(target) << "keep";
  std::filesystem::create_symlink(target, sock + ".lock");
  const auto link = SocketPathLock::acquire(sock, "--socket");
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.status().message(), "--socket: cannot open the lock file " + sock + ".lock: it is a symbolic link");
  EXPECT_TRUE(std::filesystem::is_symlink(sock + ".lock"));
  std::filesystem::remove(sock + ".lock");
  std::filesystem::create_directory(sock + ".lock");
  const auto directory = SocketPathLock::acquire(sock, "--socket");
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find(sock + ".lock"), std::string::npos) << directory.status().message();
  EXPECT_TRUE(std::filesystem::is_directory(sock + ".lock"));
  EXPECT_EQ(testing::file_text(target), "keep");
}

}  // namespace
}  // namespace peakcast::serve
