// check_socket_path (unix_socket.h): what bind() of the daemon's sockets would refuse, seen before
// anything is created. Here: a parent directory this user may not write in.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

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

}  // namespace
}  // namespace peakcast::serve
