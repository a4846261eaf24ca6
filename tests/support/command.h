// Running programs from tests: a shell command line's output and exit code (the CLI tests run
// the peakcast binary this way), and a file's bytes.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

// The file's bytes; empty when it cannot be read.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace peakcast::test_support
