#include "start_checks.h"

#include <sys/un.h>

#include <algorithm>
#include <filesystem>

#include "peakcast/core/log.h"
#include "peakcast/serve/unix_socket.h"
#include "peakcast/sizing/recommend.h"

namespace peakcast::peakcastd {

Status load_sizing(DaemonArgs& a) {
  if (a.sizing_config.empty()) return Status::ok();
  auto cfg = sizing::load_recommend_config(a.sizing_config);
  if (!cfg) return cfg.status();
  a.sizing.recommend = std::move(*cfg);
  a.sizing.config_source = a.sizing_config;
  return Status::ok();
}

Result<unsigned> parse_socket_mode(const std::string& text) {
  const bool digits = (text.size() == 3 || text.size() == 4) &&
                      text.find_first_not_of("01234567") == std::string::npos;
  const unsigned mode = digits ? static_cast<unsigned>(std::stoul(text, nullptr, 8)) : 0;
  if (!digits || mode > 0777) {
    return Status::invalid("--socket-mode: expected 3 or 4 octal digits, at most 0777 (like 0660), got \"" +
                           text + "\"");
  }
  return mode;
}

Status check_db_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Status::invalid("--db: " + path + " is a directory");
  if (fs::exists(fs::symlink_status(path, ec))) return Status::ok();
  const fs::path dir = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::exists(dir, ec)) {  // ec: set for a reason other than "no such file"
    return Status::invalid("--db: cannot create " + path + ": directory " + dir.string() +
                           (ec ? " cannot be read: " + ec.message() : " does not exist"));
  }
  if (!fs::is_directory(dir, ec)) {
    return Status::invalid("--db: cannot create " + path + ": " + dir.string() + " is not a directory");
  }
  return Status::ok();
}

Status settle_buffered_bytes(DaemonArgs& a, bool given, size_t max_body_bytes) {
  serve::HttpLimits& l = a.http_limits;
  const size_t largest = max_body_bytes + l.max_header_bytes;
  if (!given) {
    l.max_buffered_bytes = std::max(serve::HttpLimits{}.max_buffered_bytes, 2 * largest);
    if (l.max_buffered_bytes > serve::HttpLimits{}.max_buffered_bytes) {
      log(LogLevel::kInfo, "--max-buffered-bytes " + std::to_string(l.max_buffered_bytes) +
                               ": two largest requests at --max-script-bytes " + std::to_string(a.max_script_bytes) +
                               " (not given: it follows --max-script-bytes past 256 MiB)");
    }
    return Status::ok();
  }
  if (l.max_buffered_bytes >= largest) return Status::ok();
  using std::to_string;
  return Status::invalid("--max-buffered-bytes " + to_string(l.max_buffered_bytes) +
                         " is less than one largest request, " + to_string(largest) +
                         " bytes: a body of 6 x --max-script-bytes " + to_string(a.max_script_bytes) +
                         " + 64 KiB (" + to_string(max_body_bytes) + ") and a head of --max-header-bytes " +
                         to_string(l.max_header_bytes) +
                         "; raise --max-buffered-bytes (or leave it out: it then follows --max-script-bytes) "
                         "or lower --max-script-bytes");
}

serve::ListenOptions listen_options(const DaemonArgs& a, unsigned socket_mode, size_t max_body_bytes) {
  serve::ListenOptions lo;
  lo.socket_path = a.socket_path;
  lo.listen = a.listen;
  lo.allow_remote = a.allow_remote;
  lo.socket_mode = socket_mode;
  lo.socket_group = a.socket_group;
  lo.threads = a.threads;
  lo.limits = a.http_limits;
  lo.limits.max_body_bytes = max_body_bytes;
  return lo;
}

std::string admin_socket_path(const DaemonArgs& a) {
  if (a.admin_socket == "default") return a.socket_path.empty() ? "" : a.socket_path + ".admin";
  return a.admin_socket;
}

std::string admin_socket_option(const DaemonArgs& a) {
  return a.admin_socket == "default" ? "the admin socket beside --socket" : "--admin-socket";
}

Status check_admin_path(const DaemonArgs& a, const std::string& admin) {
  constexpr size_t kMaxPath = sizeof(sockaddr_un{}.sun_path) - 1;
  if (a.admin_socket == "default" && admin.size() > kMaxPath) {
    return Status::invalid("the admin socket beside --socket (" + admin + ") is " + std::to_string(admin.size()) +
                           " bytes, over " + std::to_string(kMaxPath) +
                           "; pass --admin-socket PATH (or --admin-socket '' for none)");
  }
  return serve::check_socket_path(admin, admin_socket_option(a));
}

Status check_admin_path_apart(const DaemonArgs& a, const std::string& admin) {
  if (a.socket_path.empty() || admin.empty()) return Status::ok();
  std::error_code admin_ec, socket_ec;
  const std::string admin_file = std::filesystem::weakly_canonical(admin, admin_ec).lexically_normal().string();
  const std::string socket_file =
      std::filesystem::weakly_canonical(a.socket_path, socket_ec).lexically_normal().string();
  if (admin_ec || socket_ec) return Status::ok();  // check_socket_path names what cannot be read
  const std::string own_path =
      "; give the admin socket a path of its own (or leave --admin-socket out: --socket + \".admin\")";
  using serve::SocketPathLock;
  if (admin_file == socket_file) return Status::invalid("--admin-socket: " + admin + " is also the --socket path" + own_path);
  if (admin_file == SocketPathLock::lock_path(socket_file)) {
    return Status::invalid("--admin-socket: " + admin + " is the --socket path's lock file (--socket + \".lock\")" +
                           own_path);
  }
  if (socket_file == SocketPathLock::lock_path(admin_file)) {
    return Status::invalid("--admin-socket: " + admin + "'s lock file (--admin-socket + \".lock\") is the --socket path" +
                           own_path);
  }
  return Status::ok();
}

}  // namespace peakcast::peakcastd
