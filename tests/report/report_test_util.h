// Running the peakcast binary (and Chromium) from the report tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace report_test {

struct CmdResult {
  int exit_code = -1;
  std::string out;  // stdout, and stderr too unless it went to a file
};

// Runs `cmd` through the shell; stderr goes to `stderr_path`, or joins stdout when empty.
inline CmdResult run(const std::string& cmd, const std::string& stderr_path = "") {
  CmdResult r;
  const std::string full = cmd + (stderr_path.empty() ? " 2>&1" : " 2>" + stderr_path) + " </dev/null";
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace report_test
