#include "peakcast/serve/slurm_sync.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "peakcast/core/units.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/sacct.h"

extern char** environ;

namespace peakcast::serve {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) ::close(fd); }
  void reset() { if (fd >= 0) ::close(fd); fd = -1; }
};

int64_t system_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string sacct_time(int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

namespace {
// The bytes of a --gpu-mem-bytes value, or the reason it is none (without the option's name).
Result<uint64_t> gpu_mem_bytes(const std::string& text) {
  const auto bytes = parse_size(text, 1);
  if (!bytes || *bytes == 0)
    return Status::invalid("not a memory size above 0: '" + text + "' (e.g. 40G or 81920M; a bare number is bytes)");
  return *bytes;
}
}  // namespace

Result<uint64_t> parse_gpu_mem_option(const std::string& text) {
  auto bytes = gpu_mem_bytes(text);
  if (!bytes) return Status::invalid("--gpu-mem-bytes: " + bytes.status().message());
  return bytes;
}

std::string gpu_mem_option_transform(std::string& text) {
  auto bytes = gpu_mem_bytes(text);
  if (!bytes) return bytes.status().message();  // CLI11 puts the option's name before it
  text = std::to_string(*bytes);
  return {};
}

Result<std::string> run_program(const std::vector<std::string>& argv, size_t max_output_bytes) {
  if (argv.empty()) return Status::invalid("run_program: empty command");
  // Everything the child needs is built before fork(): only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "TZ=", 3) != 0) env_store.emplace_back(*e);
  }
  env_store.emplace_back("TZ=UTC");
  std::vector<char*> env;
  for (std::string& e : env_store) env.push_back(e.data());
  env.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Status::io(std::string("pipe: ") + std::strerror(errno));
  Fd out_r{out_pipe[0]}, out_w{out_pipe[1]};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Status::io(std::string("pipe: ") + std::strerror(errno));
  Fd err_r{err_pipe[0]}, err_w{err_pipe[1]};
  const pid_t pid = ::fork();
  if (pid < 0) return Status::io(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(out_w.fd, 1);
    ::dup2(err_w.fd, 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execvpe(args[0], args.data(), env.data());
    static const char msg[] = "exec failed\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  out_w.reset();
  err_w.reset();
  std::string out, err;
  bool too_big = false;
  pollfd fds[2] = {{out_r.fd, POLLIN, 0}, {err_r.fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& dst = i == 0 ? out : err;
      if (i == 0 && out.size() + static_cast<size_t>(n) > max_output_bytes) too_big = true;
      if (i == 1 && err.size() > 4096) continue;
      if (!too_big || i == 1) dst.append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string what = argv[0];
  if (too_big) return Status::io(what + ": output over " + std::to_string(max_output_bytes) + " bytes");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string first = err.substr(0, err.find('\n'));
    return Status::io(what + ": exited with " +
                      (WIFEXITED(status) ? "status " + std::to_string(WEXITSTATUS(status))
                                         : "signal " + std::to_string(WTERMSIG(status))) +
                      (first.empty() ? "" : ": " + first));
  }
  return out;
}

Result<SyncReport> sync_once(CompletionStore& store, const CompletionSink& sink,
                             const SyncOptions& o) {
  const int64_t started = o.clock ? o.clock() : system_now();
  SyncReport report;
  auto cursor = store.get_meta(kSyncCursorKey);
  if (!cursor) return cursor.status();
  report.since = started - o.initial_lookback_s;
  if (*cursor) {
    try {
      report.since = std::stoll(**cursor);
    } catch (const std::exception&) {
      return Status::invalid(std::string(kSyncCursorKey) + ": not a number in the database: " + **cursor);
    }
  }
  // Fields delimited by the unit separator: with sacct's '|', a job named "a|b" (and an
  // AdminComment holding '|') could not be told from its neighbours and was skipped, not learned.
  auto listing = run_program({o.sacct, "-a", "-P", std::string("--delimiter=") + ingest::sacct::kUnitSeparator,
                              "--noconvert", "-S", sacct_time(report.since), "-E", "now", "-s",
                              "CD,F,TO,OOM,CA,NF,PR", std::string("--format=") + kSacctColumns},
                             o.max_output_bytes);
  if (!listing) return listing.status();

  ingest::Trace trace;
  ingest::ReadOptions ro;
  ro.util_cap = o.util_cap;
  ingest::SacctOptions so;
  so.default_gpu_mem_bytes = o.default_gpu_mem_bytes;
  so.columns_hint = false;  // the reader's --columns hint is for files given to `peakcast`
  if (Status s = ingest::parse_sacct(*listing, "sacct", ro, so, trace); !s) {
    return Status::invalid(fmt::format("'{}' printed something that is not `sacct -P --format={}` output ({}); "
                                       "check --sacct", o.sacct, kSacctColumns, s.message()));
  }
  report.skipped = trace.stats.skipped;
  report.notes = trace.notes;
  for (const std::string& r : trace.stats.reasons) report.notes.push_back(r);
  report.finished = trace.jobs.size();

  // Scripts only for jobs not stored yet.
  std::vector<bool> known(trace.jobs.size(), false);
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    Job& job = trace.jobs[i];
    auto has = store.contains(job.job_id);
    if (!has) return has.status();
    known[i] = *has;
    if (known[i] || !o.fetch_scripts || (job.script && !job.script->empty())) continue;
    auto dump = run_program({o.sacct, "-B", "-j", job.job_id}, 16u << 20);
    if (!dump) {
      report.notes.push_back("job " + job.job_id + ": no script (" + dump.status().message() + ")");
      continue;
    }
    auto scripts = ingest::sacct::parse_batch_script_dump(*dump);
    if (!scripts.empty()) job.script = std::move(scripts.begin()->second);
  }
  ingest::finalize_trace(trace, o.util_cap);
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    if (known[i]) {
      ++report.known;
      continue;
    }
    const Job& job = trace.jobs[i];
    auto added = sink(job);
    if (!added) return added.status().with_context("job " + job.job_id);
    if (*added) {
      ++report.added;
      if (job.script) ++report.with_script;
    } else {
      ++report.known;
    }
  }
  if (Status s = store.set_meta(kSyncCursorKey, std::to_string(started - o.overlap_s)); !s) return s;
  return report;
}

std::string describe(const SyncReport& r) {
  return std::to_string(r.finished) + " finished job(s) since " + sacct_time(r.since) + ": " +
         std::to_string(r.added) + " new (" + std::to_string(r.with_script) + " with script), " +
         std::to_string(r.known) + " already known, " + std::to_string(r.skipped) +
         " malformed row(s) skipped";
}

}  // namespace peakcast::serve
