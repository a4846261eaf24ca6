#include "peakcast/serve/unix_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace

Status check_socket_path(const std::string& path, std::string_view option) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return Status::invalid(fmt::format("{}: path empty or longer than {} bytes: {}", option,
                                       sizeof(sockaddr_un{}.sun_path) - 1, path));
  }
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return Status::invalid(fmt::format("{}: {} exists and is not a socket", option, path));
    if (socket_is_live(path)) return Status::io(fmt::format("{}: another daemon is listening on {}", option, path));
  }
  return check_parent_directory(path, option);
}

}  // namespace peakcast::serve
