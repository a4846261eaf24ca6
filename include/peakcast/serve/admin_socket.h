// peakcastd's admin socket: a UNIX stream socket beside the HTTP one, for operations that change
// the daemon (hot model reload). One line in, one JSON line out:
//
//   reload            reload the model from peakcastd's --model path (as SIGHUP does)
//   reload DIR        load DIR and swap it in (served until the next SIGHUP or reload)
//   model             the served model's version, training date, reload counts
//
// Only root and the daemon's own user may use it: the peer's credentials (SO_PEERCRED) are
// checked on every connection, and the socket file is created with mode 0600. (A separate socket,
// because the HTTP library does not show handlers the connection's peer credentials.) Requests
// are served one at a time; a client has 5 s in all to send its line (then it gets an error and
// the command is not run), and stop() does not wait for one still sending.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "peakcast/core/status.h"
#include "peakcast/serve/unix_socket.h"

namespace peakcast::serve {

// Root, or the same user as the daemon.
bool admin_peer_allowed(uid_t peer, uid_t self);

class AdminSocket {
 public:
  // (command, argument) -> the reply object; {"error": ...} for an unknown command.
  using Handler = std::function<nlohmann::json(const std::string& command, const std::string& arg)>;

  // `option`: how errors name the path (peakcastd: "--admin-socket", or "the admin socket beside
  // --socket" for its default path, which the user never passed). `lock`: the path's lock when
  // the caller took it already (peakcastd, with its start's checks); bind() takes it otherwise.
  AdminSocket(std::string path, Handler handler, unsigned mode = 0600, std::string option = "--admin-socket",
              SocketPathLock lock = {});
  ~AdminSocket();
  AdminSocket(const AdminSocket&) = delete;
  AdminSocket& operator=(const AdminSocket&) = delete;

  // Holds the path (SocketPathLock, the one handed to the constructor or one taken here, until
  // stop()) and replaces a stale socket file; refuses a path another daemon holds, one that is
  // not a socket, and one a live daemon listens on (socket_is_live), as the HTTP socket does.
  Status bind();
  void start();   // serves on a thread until stop()
  void stop();
  const std::string& path() const { return path_; }

 private:
  void serve();
  void answer(int fd);

  std::string path_;
  std::string option_;
  Handler handler_;
  unsigned mode_;
  bool bound_ = false;  // the file at path_ is ours: removed at stop() (never another daemon's)
  SocketPathLock lock_;  // path_'s, released at stop() after the file is removed
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // stop() writes here to end the poll
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace peakcast::serve
