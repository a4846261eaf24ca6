// What the daemon's UNIX sockets (HTTP and admin) share at bind time.
#pragma once

#include <string>
#include <string_view>

#include "peakcast/core/status.h"

namespace peakcast::serve {

// Whether a process accepts connections on the UNIX socket at `path` (a connect succeeds): then
// the file is not a stale one left by a daemon that died, and must not be unlinked (the live
// daemon would keep running, unreachable).
bool socket_is_live(const std::string& path);

// What bind() of a UNIX socket at `path` would refuse, seen without creating anything: a path
// empty or too long for sockaddr_un, a file there that is not a socket, a socket a live daemon
// listens on (an I/O error; the others are input errors), a parent directory that is missing, is
// not a directory, or that this process may not write in (the daemon's start refuses these before
// it creates the database, not at bind after the history rebuild). `option` names the flag in the
// message ("--socket", "--admin-socket"). A stale socket passes: bind() unlinks it.
Status check_socket_path(const std::string& path, std::string_view option);

// What chown(2) of the socket to --socket-group would refuse, seen without side effects: no such
// group, or a group this process may not give a file to (not its effective or a supplementary
// group, and neither root nor holding CAP_CHOWN). Invalid input, the group named.
Status check_socket_group(const std::string& group_name);

}  // namespace peakcast::serve
