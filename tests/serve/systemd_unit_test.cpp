// contrib/systemd/peakcastd.service read as systemd reads it: what its ExecStart asks of the
// daemon must be possible under the unit's own sandbox. (systemd is not PID 1 where the tests
// run, so the unit cannot be started; the syscall groups are expanded by the real
// systemd-analyze where it is installed.)
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The [Service] settings in file order (a key set twice keeps every value), continuation
// lines joined.
std::vector<std::pair<std::string, std::string>> service_settings() {
  std::ifstream in(std::string(PEAKCAST_SOURCE_DIR) + "/contrib/systemd/peakcastd.service");
  EXPECT_TRUE(in.good());
  std::vector<std::pair<std::string, std::string>> out;
  std::string section, pending;
  for (std::string line; std::getline(in, line);) {
    if (!pending.empty()) {
      line = pending + " " + line;
      pending.clear();
    }
    if (!line.empty() && line.back() == '\\') {
      pending = line.substr(0, line.size() - 1);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line;
      continue;
    }
    const size_t eq = line.find('=');
    if (section != "[Service]" || eq == std::string::npos) continue;
    out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

std::string last_value(const std::vector<std::pair<std::string, std::string>>& s, const std::string& key) {
  std::string v;
  for (const auto& [k, value] : s) {
    if (k == key) v = value;
  }
  return v;
}

// The word after `option` in ExecStart ("" when absent).
std::string exec_option(const std::vector<std::pair<std::string, std::string>>& s, const std::string& option) {
  std::istringstream words(last_value(s, "ExecStart"));
  for (std::string w; words >> w;) {
    if (w == option && (words >> w)) return w;
  }
  return "";
}

// The system calls a filter entry names: a call, or a group expanded by systemd-analyze.
bool expand(const std::string& entry, std::set<std::string>& out, std::map<std::string, std::set<std::string>>& seen) {
  if (entry.empty() || entry[0] != '@') {
    out.insert(entry);
    return true;
  }
  if (auto it = seen.find(entry); it != seen.end()) {
    out.insert(it->second.begin(), it->second.end());
    return true;
  }
  FILE* p = ::popen(("systemd-analyze syscall-filter " + entry + " 2>/dev/null").c_str(), "r");
  if (!p) return false;
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
  if (::pclose(p) != 0) return false;
  std::set<std::string> members;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("    ", 0) != 0) continue;  // the group's own name
    const std::string name = line.substr(4);
    if (name.empty() || name[0] == '#') continue;
    if (!expand(name, members, seen)) return false;
  }
  seen[entry] = members;
  out.insert(members.begin(), members.end());
  return true;
}

// A socket handed to another group: its directory (owned by User/Group, with
// RuntimeDirectoryMode) must let that group's members reach it. slurmctld (user slurm) connects
// from the job_submit hook; with 0750 and group peakcast every connect() was EACCES, and the hook,
// failing open, gave no prediction at all.
TEST(SystemdUnit, TheSocketsGroupCanReachTheRuntimeDirectory) {
  const auto s = service_settings();
  const std::string socket_group = exec_option(s, "--socket-group");
  ASSERT_FALSE(socket_group.empty()) << "ExecStart hands the socket to a group (the Slurm hook's)";
  const std::string dir_group = last_value(s, "Group");
  const std::string mode_text = last_value(s, "RuntimeDirectoryMode");
  ASSERT_FALSE(mode_text.empty());
  const unsigned long mode = std::stoul(mode_text, nullptr, 8);
  if (dir_group == socket_group) {
    EXPECT_NE(mode & 010, 0u) << "RuntimeDirectoryMode " << mode_text;
  } else {
    EXPECT_NE(mode & 01, 0u) << "RuntimeDirectoryMode=" << mode_text << " with Group=" << dir_group
                             << ": group " << socket_group << " cannot reach the socket in it";
  }
}

// --socket-group chgrps the socket (chown(2) to a group the daemon is a member of: no
// privilege needed). SystemCallFilter=~@privileged removes @chown from @system-service, so the
// call failed with EPERM and the daemon refused to start.
TEST(SystemdUnit, TheSyscallFilterAllowsWhatExecStartAsks) {
  const auto s = service_settings();
  std::set<std::string> allowed;
  bool allow_list = false;
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& [key, value] : s) {
    if (key != "SystemCallFilter") continue;
    const bool deny = !value.empty() && value[0] == '~';
    std::istringstream words(deny ? value.substr(1) : value);
    std::set<std::string> calls;
    for (std::string w; words >> w;) {
      if (!expand(w, calls, seen)) GTEST_SKIP() << "systemd-analyze cannot expand " << w << " here";
    }
    if (deny) {
      for (const std::string& c : calls) allowed.erase(c);
    } else {
      allow_list = true;
      allowed.insert(calls.begin(), calls.end());
    }
  }
  ASSERT_TRUE(allow_list) << "the unit filters system calls by an allow list";
  if (!exec_option(s, "--socket-group").empty()) {
    for (const char* call : {"chown", "fchownat"}) {  // glibc's chown() is one or the other
      EXPECT_TRUE(allowed.count(call)) << call << " is filtered out, and --socket-group needs it";
    }
  }
  // What every run needs: its socket (bound in a private directory, given its mode there and
  // renamed onto its path: listen_unix), its database, and sacct (--sync-interval) started.
  for (const char* call : {"socket", "bind", "listen", "accept4", "mkdir", "fchmodat", "renameat2", "rmdir",
                           "fsync", "fdatasync", "pwrite64", "mmap", "clone", "execve", "pipe2", "wait4", "kill",
                           "setpgid"}) {
    EXPECT_TRUE(allowed.count(call)) << call << " is filtered out";
  }
}

}  // namespace
