// check_socket_path (unix_socket.h): what bind() of the daemon's sockets would refuse, seen before
// anything is created. Here: a parent directory this user may not write in.
#include <gtest/gtest.h>

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "peakcast/serve/http_server.h"
#include "peakcast/serve/unix_socket.h"
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

}  // namespace
}  // namespace peakcast::serve
