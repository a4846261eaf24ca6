// peakcastd's start-up checks: what the options ask for that can be checked (and settled)
// without creating anything, before the model is read and the database opened, each refusal a
// Status naming the option (input errors: exit 2).
#pragma once

#include <cstddef>
#include <string>

#include "peakcast/core/status.h"
#include "peakcast/serve/http_server.h"
#include "daemon_options.h"

namespace peakcast::peakcastd {

// Reads --sizing-config into the recommendation settings.
Status load_sizing(DaemonArgs& a);

// 3 or 4 octal digits, at most 0777. (std::stoul also took " 0660", "+660" and "-0".)
Result<unsigned> parse_socket_mode(const std::string& text);

// What opening --db would refuse for the caller to fix, seen without creating anything: a
// directory there, or a database to create in a directory that does not exist. (SQLite said only
// "unable to open database file", exit 1, after the model was loaded.) Permissions are left to
// the open, which names them.
Status check_db_path(const std::string& path);

// --max-buffered-bytes against one largest request (head and body). Not given, it follows
// --max-script-bytes: 256 MiB, or two largest requests when that is more (one being received
// leaves room for another as large); the administrator raising --max-script-bytes past 42 MiB
// had the start refused for an option they never set. Given and too small: refused, naming both.
Status settle_buffered_bytes(DaemonArgs& a, bool given, size_t max_body_bytes);

// The HTTP listeners' options (--socket, --listen and their mode, group, threads, limits).
serve::ListenOptions listen_options(const DaemonArgs& a, unsigned socket_mode, size_t max_body_bytes);

// The admin socket's path: --admin-socket, or by default --socket + ".admin"; empty: none.
std::string admin_socket_path(const DaemonArgs& a);

// How errors name the admin socket: the option, or, for the default path (--socket + ".admin"),
// where it came from (an error naming --admin-socket sent the user to an option they never passed).
std::string admin_socket_option(const DaemonArgs& a);

// The admin socket's path checked as AdminSocket::bind() would (serve::check_socket_path: empty
// or too long, not a socket, a live daemon there, a directory it cannot be made in), named as
// bind's own errors name it (admin_socket_option).
Status check_admin_path(const DaemonArgs& a, const std::string& admin);

// --admin-socket neither --socket's path nor its lock file (PATH.lock, SocketPathLock), nor a
// path whose lock file is --socket: the start refused the admin socket's lock as another
// daemon's (the HTTP socket holding it), or one socket's bind found the other's lock file at its
// path, exit 1 after the database was created. Checked before the paths themselves, where a lock
// file a killed daemon left would only be "not a socket". (Only an --admin-socket given can be
// these: the default is --socket + ".admin".)
Status check_admin_path_apart(const DaemonArgs& a, const std::string& admin);

}  // namespace peakcast::peakcastd
