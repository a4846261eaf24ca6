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
// listens on (the caller stops that daemon or picks another path: an input error, exit 2 as for a
// path another peakcastd holds the lock of), a parent directory that is missing, is
// not a directory, or that this process may not write in (the daemon's start refuses these before
// it creates the database, not at bind after the history rebuild). `option` names the flag in the
// message ("--socket", "--admin-socket"). A stale socket passes: listen_unix replaces it.
Status check_socket_path(const std::string& path, std::string_view option);

// A UNIX socket path this process holds while the object lives: an exclusive flock(2) on
// PATH.lock, a file beside the socket, taken before the socket's checks and bind and held until
// the socket file is removed. Two daemons starting on one path could both see it free (nothing
// listening), and the second then unlinked the first's freshly bound socket (the first went on
// listening on a name nobody could reach); a daemon still stopping (its socket not yet removed)
// unlinked a new one's. The lock file is removed on release; a lock left by a killed daemon is
// free again (flock dies with its holder). Move-only.
class SocketPathLock {
 public:
  SocketPathLock() = default;
  ~SocketPathLock() { release(); }
  SocketPathLock(SocketPathLock&& o) noexcept;
  SocketPathLock& operator=(SocketPathLock&& o) noexcept;
  SocketPathLock(const SocketPathLock&) = delete;
  SocketPathLock& operator=(const SocketPathLock&) = delete;

  // Takes the lock of the socket at `socket_path` without waiting: "OPTION: another peakcastd
  // holds PATH (it has the lock PATH.lock)" when another process holds it, an input error (the
  // caller stops that daemon or picks another path: peakcastd exits 2); the lock file's own
  // failures (not a regular file, not openable) are I/O errors, named too. `option` as for
  // check_socket_path. peakcastd takes its locks with the start's checks, before it opens the
  // database, and hands them to HttpServer and AdminSocket, which take their own when not handed one.
  static Result<SocketPathLock> acquire(const std::string& socket_path, std::string_view option);
  static std::string lock_path(const std::string& socket_path) { return socket_path + ".lock"; }

  bool held() const { return fd_ >= 0; }
  // Whether this is the held lock of the socket at `socket_path`.
  bool holds(const std::string& socket_path) const { return held() && path_ == lock_path(socket_path); }
  // Makes this hold the socket at `socket_path`: the lock handed to its owner (nothing to do), or
  // one taken now (acquire) when none was; holding another path's is an internal error. What
  // HttpServer and AdminSocket do before listen_unix.
  Status hold(const std::string& socket_path, std::string_view option);
  // Removes the lock file and lets the lock go (nothing when not held).
  void release();

 private:
  std::string path_;  // of the lock file
  int fd_ = -1;
};

// Who may reach a socket: its file mode and its group, set before the socket appears at its path.
struct SocketAccess {
  unsigned mode = 0600;
  std::string_view mode_option;  // how a failed chmod names the mode ("--socket-mode")
  std::string group;             // --socket-group's; empty: the group it is created with
};

// A listening UNIX stream socket at `path` (backlog `backlog`) with `access`'s mode and group, for
// a caller holding its SocketPathLock: check_socket_path again (the path may have changed since
// the start's check), then bind_unix_socket. The listening descriptor, or the error naming
// `option` (`access.mode_option` for chmod, --socket-group for chown) and the path.
Result<int> listen_unix(const std::string& path, std::string_view option, int backlog, const SocketAccess& access);

// What listen_unix does once check_socket_path has passed, all it relies on to never remove a
// file it should not (a file put at `path` after the check): the socket is bound, listened on and
// given its group and mode in a private directory beside `path` (mkdtemp, mode 0700: nobody but
// root reaches it there), then renamed onto `path`. Without a process-wide umask(2), which other
// threads (the sync loop, when the admin socket is bound) would have created files under; the
// socket's mode is access.mode whatever the umask. The rename neither replaces what is at `path`
// (RENAME_NOREPLACE) nor unlinks it there: a socket found at `path` is swapped into the private
// directory (RENAME_EXCHANGE) and removed only if it is a socket nobody listens on; anything else
// (a file of another kind, a live socket) is swapped back and refused, as check_socket_path
// refuses it. The private directory is removed again, and those a daemon killed between its
// mkdtemp and its rename left beside `path` are removed first (when empty or holding a dead
// socket). On a file system without renameat2's flags (EINVAL: NFS), the file at `path` is checked
// and replaced by rename(2): a file put there between the two is replaced, the only case with that
// window.
Result<int> bind_unix_socket(const std::string& path, std::string_view option, int backlog,
                             const SocketAccess& access);

// What chown(2) of the socket to --socket-group would refuse, seen without side effects: no such
// group, or a group this process may not give a file to (not its effective or a supplementary
// group, and neither root nor holding CAP_CHOWN). Invalid input, the group named.
Status check_socket_group(const std::string& group_name);

}  // namespace peakcast::serve
