#include "peakcast/serve/unix_socket.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace peakcast::serve {

namespace {

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  return addr;
}

// What a file at a socket's path, reached at `address`, says of the path (check_socket_path,
// and move_into_place of the file it swapped aside): one of another kind, or a socket a daemon
// listens on, is refused; a stale socket passes.
Status refusal_of_file(const struct stat& st, const std::string& address, const std::string& path,
                       std::string_view option) {
  if (!S_ISSOCK(st.st_mode)) return Status::invalid(fmt::format("{}: {} exists and is not a socket", option, path));
  if (socket_is_live(address)) {
    return Status::invalid(fmt::format("{}: another daemon is listening on {}", option, path));
  }
  return Status::ok();
}

}  // namespace

bool socket_is_live(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const sockaddr_un addr = unix_address(path);
  const bool live = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
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
    if (Status s = refusal_of_file(st, path, path, option); !s) return s;
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

namespace {

// The name a socket is bound under in its private directory (BindDirectory).
constexpr const char* kBoundName = "sock";

// The directory a socket is bound, listened on and given its mode in before it is renamed onto
// its path (bind_unix_socket): PATH.bind-XXXXXX (mkdtemp), beside the path so that the rename stays
// in one file system, mode 0700 so that nobody but root reaches the socket before it has its
// mode. Removed when this goes, with the entry kBoundName in it unless kept: our socket where it
// was not moved, a stale socket swapped in from the path; a file of someone else's that could
// not be put back is left where it is (keep_entry), and the directory with it.
class BindDirectory {
 public:
  BindDirectory() = default;
  ~BindDirectory() {
    if (fd_ < 0) return;
    if (!keep_entry_) ::unlinkat(fd_, kBoundName, 0);
    ::close(fd_);
    ::rmdir(path_.c_str());  // fails, ENOTEMPTY, where an entry is kept
  }
  BindDirectory(const BindDirectory&) = delete;
  BindDirectory& operator=(const BindDirectory&) = delete;

  Status create(const std::string& socket_path, std::string_view option) {
    std::string name = socket_path + ".bind-XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) {
      return Status::io(fmt::format("{}: cannot create a directory beside {} to bind the socket in: {}", option,
                                    socket_path, std::strerror(errno)));
    }
    path_ = name;
    // mkdtemp's 0700 less the umask: 0700 itself (an umask of 0300 would leave the owner unable to
    // create the socket in it). O_NOFOLLOW: the directory we made, not what replaced it.
    if (::chmod(path_.c_str(), 0700) != 0 ||
        (fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
      const int err = errno;
      ::rmdir(path_.c_str());
      return Status::io(fmt::format("{}: cannot open the directory {} to bind the socket in: {}", option, path_,
                                    std::strerror(err)));
    }
    return Status::ok();
  }

  int fd() const { return fd_; }
  // A path to the entry that fits sun_path: through the directory's own path, or, where that is
  // too long (the socket's path may take all 107 bytes and this adds 17), through /proc/self/fd.
  std::string entry_address() const {
    const std::string direct = path_ + "/" + kBoundName;
    if (direct.size() < sizeof(sockaddr_un{}.sun_path)) return direct;
    return fmt::format("/proc/self/fd/{}/{}", fd_, kBoundName);
  }
  const std::string& path() const { return path_; }
  void keep_entry() { keep_entry_ = true; }

 private:
  std::string path_;
  int fd_ = -1;
  bool keep_entry_ = false;
};

// What a daemon killed between its mkdtemp and its rename leaves beside `path`: its private
// directory (BindDirectory), empty or holding the socket it had bound. Removed before a bind, under
// the path's lock (no other peakcastd can be binding there), where it is ours and holds nothing or
// a socket nobody listens on; one that holds anything else (a file move_into_place could not put
// back, named in the error that left it) is kept, and so is every other name.
void remove_leftover_bind_directories(const std::string& path) {
  const std::string parent = parent_directory(path);
  const std::string prefix = path.substr(path.find_last_of('/') + 1) + ".bind-";
  std::vector<std::string> leftovers;
  if (DIR* d = ::opendir(parent.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string_view name = e->d_name;
      if (name.size() == prefix.size() + 6 && name.starts_with(prefix)) leftovers.emplace_back(name);
    }
    ::closedir(d);
  }
  for (const std::string& name : leftovers) {
    const std::string leftover = parent + "/" + name, entry = leftover + "/" + kBoundName;
    struct stat st{};
    if (::lstat(leftover.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (::lstat(entry.c_str(), &st) == 0) {
      // A socket too long to connect to is not known dead: kept.
      if (!S_ISSOCK(st.st_mode) || entry.size() >= sizeof(sockaddr_un{}.sun_path) || socket_is_live(entry)) continue;
      ::unlink(entry.c_str());
    }
    ::rmdir(leftover.c_str());  // fails (ENOTEMPTY) where anything else is in it: kept
  }
}

// Why the file swapped from `path` into `dir` may not be removed: it is not a socket, or a
// process listens on it. Checked where nobody else can change it.
Status refusal_of_displaced(const BindDirectory& dir, const std::string& path, std::string_view option) {
  struct stat st{};
  if (::fstatat(dir.fd(), kBoundName, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return Status::io(fmt::format("{}: cannot examine the file that was at {}: {}", option, path, std::strerror(errno)));
  }
  return refusal_of_file(st, dir.entry_address(), path, option);
}

// On a file system without renameat2's flags: the file at `path` checked as the start checks it,
// then replaced by rename(2). A file put there between the two is replaced: the window the flags
// close elsewhere.
Status replace_checked(const BindDirectory& dir, const std::string& path, std::string_view option) {
  if (Status s = check_socket_path(path, option); !s) return s;
  if (::renameat(dir.fd(), kBoundName, AT_FDCWD, path.c_str()) != 0) {
    return Status::io(fmt::format("{}: cannot move the socket onto {}: {}", option, path, std::strerror(errno)));
  }
  return Status::ok();
}

// Moves the socket bound in `dir` onto `path` (bind_unix_socket's contract): onto nothing without
// replacing what appears meanwhile, or by swapping it with what is there, which is removed only
// if it is a stale socket and swapped back otherwise.
Status move_into_place(BindDirectory& dir, const std::string& path, std::string_view option) {
  struct stat ours{};
  if (::fstatat(dir.fd(), kBoundName, &ours, AT_SYMLINK_NOFOLLOW) != 0) {
    return Status::io(fmt::format("{}: cannot examine the socket bound for {}: {}", option, path, std::strerror(errno)));
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (::renameat2(dir.fd(), kBoundName, AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return Status::ok();
    if (errno == EINVAL) return replace_checked(dir, path, option);
    if (errno != EEXIST) {
      return Status::io(fmt::format("{}: cannot move the socket onto {}: {}", option, path, std::strerror(errno)));
    }
    if (::renameat2(dir.fd(), kBoundName, AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0) {
      if (errno == ENOENT) continue;  // removed since: the path is free again
      if (errno == EINVAL) return replace_checked(dir, path, option);
      return Status::io(fmt::format("{}: cannot move the socket onto {}: {}", option, path, std::strerror(errno)));
    }
    // Ours is at `path`, serving; what was there is in `dir`.
    const Status refused = refusal_of_displaced(dir, path, option);
    if (refused.is_ok()) return Status::ok();  // a stale socket: removed with the directory
    struct stat back{};
    if (::renameat2(dir.fd(), kBoundName, AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0 ||
        ::fstatat(dir.fd(), kBoundName, &back, AT_SYMLINK_NOFOLLOW) != 0 || back.st_dev != ours.st_dev ||
        back.st_ino != ours.st_ino) {
      dir.keep_entry();  // not ours: never removed
      return Status::io(fmt::format("{} (it was moved aside to {}/{} while the socket was put in place, and could "
                                    "not be put back: it is kept there)",
                                    refused.message(), dir.path(), kBoundName));
    }
    return refused;
  }
  return Status::io(fmt::format("{}: cannot move the socket onto {}: the file there was removed and created "
                                "again 100 times",
                                option, path));
}

}  // namespace

Result<int> bind_unix_socket(const std::string& path, std::string_view option, int backlog,
                             const SocketAccess& access) {
  gid_t gid = static_cast<gid_t>(-1);
  if (!access.group.empty()) {
    const group* g = ::getgrnam(access.group.c_str());
    if (!g) return Status::invalid("--socket-group: no such group: " + access.group);
    gid = g->gr_gid;
  }
  remove_leftover_bind_directories(path);
  BindDirectory dir;
  if (Status s = dir.create(path, option); !s) return s;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::io(fmt::format("{}: socket(): {}", option, std::strerror(errno)));
  const sockaddr_un addr = unix_address(dir.entry_address());  // fits: entry_address
  Status s;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, backlog) != 0) {
    s = Status::io(fmt::format("{}: cannot listen on {}: {}", option, path, std::strerror(errno)));
  } else if (gid != static_cast<gid_t>(-1) &&
             ::fchownat(dir.fd(), kBoundName, static_cast<uid_t>(-1), gid, AT_SYMLINK_NOFOLLOW) != 0) {
    s = Status::io(fmt::format("--socket-group: chown {}: {}", path, std::strerror(errno)));
  } else if (::fchmodat(dir.fd(), kBoundName, access.mode, 0) != 0) {
    s = Status::io(fmt::format("{}: chmod {}: {}", access.mode_option, path, std::strerror(errno)));
  } else {
    s = move_into_place(dir, path, option);
  }
  if (!s) {
    ::close(fd);
    return s;
  }
  return fd;
}

Result<int> listen_unix(const std::string& path, std::string_view option, int backlog, const SocketAccess& access) {
  if (Status s = check_socket_path(path, option); !s) return s;
  return bind_unix_socket(path, option, backlog, access);
}

}  // namespace peakcast::serve
