// Runs the real peakcastd binary in a child process for tests and benchmarks: the one fork/exec
// the daemon tests share (started to serve and probed on /healthz, sent signals, or run to its
// exit with its output captured).
#pragma once

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve_test_util.h"

namespace peakcast::serve::testing {

// The whole text of a file; empty when there is none.
inline std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class DaemonProcess {
 public:
  DaemonProcess() = default;
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;
  ~DaemonProcess() { kill(SIGKILL); }

  // Starts `binary` with `args` and returns at once: its stdout appended to `out_path`, its
  // stderr to `err_path` (created when absent; the same path: one file for both; empty: the
  // test's own). False if fork failed.
  bool spawn(const std::string& binary, const std::vector<std::string>& args, const std::string& out_path,
             const std::string& err_path) {
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {  // only async-signal-safe calls from here: the test may run other threads
      const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
      const int out = out_path.empty() ? -1 : ::open(out_path.c_str(), flags, 0644);
      const int err = err_path.empty() ? -1 : err_path == out_path ? out : ::open(err_path.c_str(), flags, 0644);
      if (out >= 0) ::dup2(out, 1);
      if (err >= 0) ::dup2(err, 2);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    return pid_ > 0;
  }

  // Starts `binary` with `args`, stderr appended to `log_path`; returns true when /healthz
  // answers 200 on `socket`, false when the child exits first or 30 s pass (it then runs on until
  // kill() or the destructor).
  bool start(const std::string& binary, const std::vector<std::string>& args, const std::string& socket,
             const std::string& log_path) {
    socket_ = socket;
    if (!spawn(binary, args, "", log_path)) return false;
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

  // Its wait status once it exits within `seconds`; else it is killed (SIGKILL) and nullopt.
  std::optional<int> wait(double seconds) {
    if (pid_ <= 0) return std::nullopt;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(SIGKILL);
    return std::nullopt;
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

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::string socket_;
};

// How a run to the end went.
struct DaemonExit {
  int code = -1;  // -1: killed by a signal, or still running after the limit (then killed)
  std::string out, err;
};

// Runs `binary` with `args` to its end (killed after `seconds`): its exit code, and its stdout
// and stderr as written to `out_path` and `err_path` (emptied first).
inline DaemonExit run_to_exit(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& out_path, const std::string& err_path, double seconds = 30.0) {
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  DaemonExit x;
  DaemonProcess child;
  if (child.spawn(binary, args, out_path, err_path)) {
    const std::optional<int> status = child.wait(seconds);
    if (status && WIFEXITED(*status)) x.code = WEXITSTATUS(*status);
  }
  x.out = file_text(out_path);
  x.err = file_text(err_path);
  return x;
}

inline void write_history_model(const std::string& dir) {
  std::ofstream(dir + "/manifest.json") << R"({"format_version": 1, "kind": "history"})";
}

// A daemon serving a history model from a folder of its own: the model, --db h.db, --socket
// d.sock and its stderr, daemon.log, in `dir`.
struct ServedDaemon {
  TempDir dir;
  std::string db = dir.file("h.db"), sock = dir.file("d.sock"), log = dir.file("daemon.log");
  DaemonProcess process;

  // Starts it with `extra` after --model, --db and --socket; true once /healthz answers
  // (DaemonProcess::start). `nofile`: its RLIMIT_NOFILE (0: the test's).
  bool start(const std::vector<std::string>& extra = {}, rlim_t nofile = 0) {
    write_history_model(dir.path());
    std::vector<std::string> args = {"--model", dir.path(), "--db", db, "--socket", sock};
    args.insert(args.end(), extra.begin(), extra.end());
    rlimit old{};
    ::getrlimit(RLIMIT_NOFILE, &old);
    if (nofile > 0) {
      rlimit low = old;
      low.rlim_cur = nofile;
      ::setrlimit(RLIMIT_NOFILE, &low);  // the child inherits it; restored at once below
    }
    const bool ok = process.start(PEAKCAST_BINARY_DIR "/bin/peakcastd", args, sock, log);
    ::setrlimit(RLIMIT_NOFILE, &old);
    return ok;
  }
  std::string log_text() const { return file_text(log); }
  // How many times `what` occurs in the log.
  size_t log_count(const std::string& what) const {
    const std::string text = log_text();
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
};

inline httplib::Client unix_client(const std::string& socket) {
  httplib::Client c(socket);
  c.set_address_family(AF_UNIX);
  c.set_keep_alive(true);
  c.set_read_timeout(10, 0);
  return c;
}

}  // namespace peakcast::serve::testing
