#include "peakcast/serve/unix_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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
  return Status::ok();
}

}  // namespace peakcast::serve
