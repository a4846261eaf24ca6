// Runs the real peakcastd binary in a child process for tests and benchmarks.
#pragma once

#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace peakcast::serve::testing {

class DaemonProcess {
 public:
  // Starts `binary` with args; returns when /healthz answers 200 on `socket` (or the child died).
  bool start(const std::string& binary, const std::vector<std::string>& args,
             const std::string& socket, const std::string& log_path) {
    socket_ = socket;
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* log = std::freopen(log_path.c_str(), "a", stderr);
      (void)log;
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    // Up to 30 s: it returns as soon as /healthz answers or the child exits, so only a start that
    // fails waits that long. 6 s was too short on a loaded machine (a daemon loading LibTorch
    // under another build took 13 s) and under ThreadSanitizer.
    for (int i = 0; i < 1500; ++i) {
      if (healthy()) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) { pid_ = -1; return false; }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  bool healthy() const {
    httplib::Client c(socket_);
    c.set_address_family(AF_UNIX);
    auto r = c.Get("/healthz");
    return r && r->status == 200;
  }
  // Sends `sig` and waits for the child; returns its wait status (-1: none running).
  int kill(int sig) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  ~DaemonProcess() { kill(SIGKILL); }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::string socket_;
};

inline httplib::Client unix_client(const std::string& socket) {
  httplib::Client c(socket);
  c.set_address_family(AF_UNIX);
  c.set_keep_alive(true);
  c.set_read_timeout(10, 0);
  return c;
}

inline void write_history_model(const std::string& dir) {
  std::ofstream(dir + "/manifest.json") << R"({"format_version": 1, "kind": "history"})";
}

}  // namespace peakcast::serve::testing
