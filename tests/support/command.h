// Running programs from tests: a shell command line's output and exit code, the peakcast binary
// run that way (the CLI tests), a fresh folder per test, and a file's bytes.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace peakcast::test_support {

// The peakcast binary of this build tree; CLI tests skip when it is not built.
inline const std::string kPeakcastBinary = PEAKCAST_BINARY_DIR "/bin/peakcast";

struct CmdResult {
  int exit_code = -1;  // -1: the command could not start or ended by a signal
  std::string out;     // its stdout (stderr too where the command line sends it there)
};

// Runs `command_line` through /bin/sh and reads its stdout to the end. Redirections such as
// " 2>&1", " 2>/dev/null" or " </dev/null" are part of the line, the caller's choice.
inline CmdResult run_shell(const std::string& command_line) {
  CmdResult r;
  FILE* p = popen(command_line.c_str(), "r");
  if (p == nullptr) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs the peakcast binary of this build tree with `args` (its arguments as shell words: quote
// what needs it). `redirect` is the rest of the command line, the caller's choice of where the
// streams go: stderr into `out` by default, where the error messages are; "2>/dev/null" for
// stdout alone, "2>FILE" to keep them apart, " </dev/null" added where stdin must not be read.
// OMP_WAIT_POLICY=passive: OpenMP threads (XGBoost, LibTorch) sleep between regions instead of
// spinning, on the few cores the tests share.
inline CmdResult run_peakcast(const std::string& args, const std::string& redirect = "2>&1") {
  return run_shell("OMP_WAIT_POLICY=passive " + kPeakcastBinary + " " + args + " " + redirect);
}

// A fresh, empty folder for the running test under the system's temporary folder:
// "peakcast_PREFIX_PID_TEST", so that neither two tests nor two runs share one. The caller
// removes it (TearDown).
inline std::filesystem::path fresh_test_dir(const std::string& prefix) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("peakcast_" + prefix + "_" + std::to_string(::getpid()) + "_" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  return dir;
}

// The file's bytes; empty when it cannot be read.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace peakcast::test_support
