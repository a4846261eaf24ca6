#include "peakcast/serve/unix_socket.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace peakcast::serve {

bool socket_is_live(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const bool live = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return live;
}

namespace {

// The directory bind() creates `path` in: what precedes its last '/', "/" for a file in the root,
// "." for a bare name.
std::string parent_directory(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Whether this process may create (and unlink) a socket in `dir`: it exists, is a directory, and
// the effective user may write and search it (faccessat with AT_EACCESS: a read-only file system
// refuses root too).
Status check_parent_directory(const std::string& path, std::string_view option) {
  const std::string dir = parent_directory(path);
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    return Status::invalid(fmt::format("{}: cannot create {}: directory {} {}", option, path, dir,
                                       err == ENOENT ? std::string("does not exist") : std::strerror(err)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::invalid(fmt::format("{}: cannot create {}: {} is not a directory", option, path, dir));
  }
  if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    const int err = errno;
    return Status::invalid(fmt::format("{}: cannot create {}: directory {} is not writable by uid {}: {}", option,
                                       path, dir, ::geteuid(), std::strerror(err)));
  }
  return Status::ok();
}

// Whether CAP_CHOWN (capability 0) is in this process's effective set, read from
// /proc/self/status's CapEff line (hex); false where it cannot be read.
bool has_cap_chown() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    try {
      return (std::stoull(line.substr(7), nullptr, 16) & 1u) != 0;
    } catch (const std::exception&) {
      return false;
    }
  }
  return false;
}

// Whether this process is in group `gid`: its effective group or one of its supplementary groups.
bool in_group(gid_t gid) {
  if (::getegid() == gid) return true;
  const int n = ::getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  const int got = ::getgroups(n, groups.data());
  for (int i = 0; i < got; ++i) {
    if (groups[static_cast<size_t>(i)] == gid) return true;
  }
  return false;
}

}  // namespace

Status check_socket_group(const std::string& group_name) {
  const group* g = ::getgrnam(group_name.c_str());
  if (!g) return Status::invalid("--socket-group: no such group: " + group_name);
  if (::geteuid() == 0 || in_group(g->gr_gid) || has_cap_chown()) return Status::ok();
  return Status::invalid(fmt::format(
      "--socket-group: uid {} is not in group {} (gid {}), so it cannot give the socket to that group "
      "(chown(2) takes only the caller's own groups without CAP_CHOWN): add the daemon's user to the "
      "group or drop --socket-group",
      ::geteuid(), group_name, g->gr_gid));
}

Status check_socket_path(const std::string& path, std::string_view option) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Status::invalid(fmt::format("{}: path empty or longer than {} bytes: {}", option,
                                       sizeof(sockaddr_un{}.sun_path) - 1, path));
  }
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Status::invalid(fmt::format("{}: {} exists and is not a socket", option, path));
    if (socket_is_live(path)) return Status::invalid(fmt::format("{}: another daemon is listening on {}", option, path));
  }
  return check_parent_directory(path, option);
}

SocketPathLock::SocketPathLock(SocketPathLock&& o) noexcept
    : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)) {}

SocketPathLock& SocketPathLock::operator=(SocketPathLock&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void SocketPathLock::release() {
  if (fd_ < 0) return;
  // Removed while still locked: whoever opened this file meanwhile finds, once it has the lock,
  // that the path names another file (or none) and tries again (acquire).
  ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

Result<SocketPathLock> SocketPathLock::acquire(const std::string& socket_path, std::string_view option) {
  SocketPathLock lock;
  lock.path_ = lock_path(socket_path);
  const std::string& path = lock.path_;
  // A few tries: each lost only to a holder that removed the file between our open and our lock.
  for (int attempt = 0; attempt < 100; ++attempt) {
    // O_NOFOLLOW: a symbolic link put there is refused, not followed; O_NONBLOCK: a FIFO there
    // does not hang the start. Mode 0600: nobody but the daemon's user (and root) can open it,
    // and so nobody else can hold it to keep the daemon from starting.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) {
      const int err = errno;
      return Status::io(fmt::format("{}: cannot open the lock file {}: {}", option, path,
                                    err == ELOOP ? "it is a symbolic link" : std::strerror(err)));
    }
    struct stat mine{};
    if (::fstat(fd, &mine) != 0 || !S_ISREG(mine.st_mode)) {
      ::close(fd);
      return Status::io(fmt::format("{}: the lock file {} is not a regular file", option, path));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) {
        return Status::invalid(fmt::format("{}: another peakcastd holds {} (it has the lock {})", option,
                                           socket_path, path));
      }
      return Status::io(fmt::format("{}: cannot lock {}: {}", option, path, std::strerror(err)));
    }
    struct stat now{};
    if (::lstat(path.c_str(), &now) == 0 && now.st_dev == mine.st_dev && now.st_ino == mine.st_ino) {
      lock.fd_ = fd;
      return lock;
    }
    ::close(fd);  // the holder removed it as we opened it: the path is free, or newly taken
  }
  return Status::io(fmt::format("{}: cannot lock {}: it was removed and created again 100 times", option, path));
}

Status SocketPathLock::hold(const std::string& socket_path, std::string_view option) {
  if (held()) {
    if (holds(socket_path)) return Status::ok();
    return Status::internal(fmt::format("{}: the lock handed over is {}, not {}", option, path_,
                                        lock_path(socket_path)));
  }
  auto lock = acquire(socket_path, option);
  if (!lock) return lock.status();
  *this = std::move(*lock);
  return Status::ok();
}

Result<int> listen_unix(const std::string& path, std::string_view option, int backlog) {
  if (Status s = check_socket_path(path, option); !s) return s;
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    // A stale socket, its daemon dead (a live one is refused above, and no other peakcastd can be
    // binding: the caller holds the path's lock). Only a socket: anything else put there since
    // the check is refused, never removed.
    if (!S_ISSOCK(st.st_mode)) return Status::invalid(fmt::format("{}: {} exists and is not a socket", option, path));
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::io(fmt::format("{}: cannot remove the stale socket {}: {}", option, path, std::strerror(errno)));
    }
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::io(fmt::format("{}: socket(): {}", option, std::strerror(errno)));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);  // fits: check_socket_path
  const mode_t old = ::umask(0177);
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  const bool listening = bound && ::listen(fd, backlog) == 0;
  const int err = errno;
  ::umask(old);
  if (!listening) {
    ::close(fd);
    if (bound) ::unlink(path.c_str());
    return Status::io(fmt::format("{}: cannot listen on {}: {}", option, path, std::strerror(err)));
  }
  return fd;
}

}  // namespace peakcast::serve
