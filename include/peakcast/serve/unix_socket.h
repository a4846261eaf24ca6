// What the daemon's UNIX sockets (HTTP and admin) share at bind time.
#pragma once

#include <string>

namespace peakcast::serve {

// Whether a process accepts connections on the UNIX socket at `path` (a connect succeeds): then
// the file is not a stale one left by a daemon that died, and must not be unlinked (the live
// daemon would keep running, unreachable).
bool socket_is_live(const std::string& path);

}  // namespace peakcast::serve
