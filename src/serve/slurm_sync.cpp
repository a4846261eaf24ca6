#include "peakcast/serve/slurm_sync.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <csignal>
#include <ctime>
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "peakcast/core/units.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/sacct.h"
#include "peakcast/serve/request.h"

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

Result<std::string> run_program(const std::vector<std::string>& argv, const RunLimits& limits, RunStop* stopped_out) {
  if (stopped_out) *stopped_out = RunStop::kNone;
  if (argv.empty()) return Status::invalid("run_program: empty command");
  // Everything the child needs is built before fork(): only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_store;
  // Times as the reader reads them: UTC, and sacct's standard form (SLURM_TIME_FORMAT, from an
  // admin's shell, made every row's times unreadable: skipped, and the cursor moved past them).
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "TZ=", 3) != 0 && std::strncmp(*e, "SLURM_TIME_FORMAT=", 18) != 0) {
      env_store.emplace_back(*e);
    }
  }
  env_store.emplace_back("TZ=UTC");
  env_store.emplace_back("SLURM_TIME_FORMAT=standard");
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
    ::setpgid(0, 0);  // its own process group: stopping it stops what it started too
    ::dup2(out_w.fd, 1);
    ::dup2(err_w.fd, 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execvpe(args[0], args.data(), env.data());
    static const char msg[] = "exec failed\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // as the child does: whichever runs first
  out_w.reset();
  err_w.reset();
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(limits.timeout_ms);
  std::string out, err;
  RunStop stopped = RunStop::kNone;
  const auto stop = [&](RunStop why) {  // the rest is not read: its pipes drained until they close
    if (stopped != RunStop::kNone) return;
    stopped = why;
    ::kill(-pid, SIGKILL);
    out.clear();
    out.shrink_to_fit();
  };
  pollfd fds[2] = {{out_r.fd, POLLIN, 0}, {err_r.fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    int wait_ms = 1000;  // the stop check and the deadline, at least once a second
    if (limits.timeout_ms > 0 && stopped == RunStop::kNone) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      wait_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
    }
    const int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (stopped == RunStop::kNone) {
      if (limits.stop_requested && limits.stop_requested()) stop(RunStop::kRequested);
      else if (limits.timeout_ms > 0 && Clock::now() >= deadline) stop(RunStop::kTimeout);
    }
    if (ready == 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      if (i == 0 && stopped == RunStop::kNone && out.size() + static_cast<size_t>(n) > limits.max_output_bytes) {
        stop(RunStop::kOutput);
      }
      if (i == 1 && err.size() > 4096) continue;
      if (stopped == RunStop::kNone || i == 1) (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string what = argv[0];
  if (stopped_out) *stopped_out = stopped;
  switch (stopped) {
    case RunStop::kOutput:
      return Status::io(what + ": output over " + std::to_string(limits.max_output_bytes) + " bytes (stopped)");
    case RunStop::kTimeout:
      return Status::io(what + ": no answer within " + std::to_string(limits.timeout_ms / 1000) + " s (stopped)");
    case RunStop::kRequested:
      return Status::io(what + ": stopped (shutting down)");
    case RunStop::kNone:
      break;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string first = err.substr(0, err.find('\n'));
    return Status::io(what + ": exited with " +
                      (WIFEXITED(status) ? "status " + std::to_string(WEXITSTATUS(status))
                                         : "signal " + std::to_string(WTERMSIG(status))) +
                      (first.empty() ? "" : ": " + first));
  }
  return out;
}

namespace {

RunLimits sacct_limits(const SyncOptions& o) {
  RunLimits l;
  l.max_output_bytes = o.max_output_bytes;
  l.timeout_ms = o.sacct_timeout_s * 1000;
  l.stop_requested = o.stop_requested;
  return l;
}

// The scripts of `ids` from `sacct -B -j ID,ID,...` (sacct prints each as "Batch Script for ID",
// a dash rule and the script, or NONE), by job id. A batch whose output is over the limit, or
// that fails (one id sacct refuses must not cost the others their scripts), is asked again in
// halves; a single job that fails is noted, and has no script. A call past its deadline or
// stopped for a shutdown ends the fetch (returned; then the window's jobs are not stored without
// their scripts, but read again at the next poll).
Result<bool> fetch_scripts(const SyncOptions& o, const std::vector<std::string>& ids, size_t first, size_t n,
                           std::unordered_map<std::string, std::string>& scripts,
                           std::vector<std::string>& notes, RunStop& stopped_out) {
  if (n == 0) return true;
  std::string list;
  for (size_t i = first; i < first + n; ++i) list += (list.empty() ? "" : ",") + ids[i];
  // At most max_output_bytes for a batch, but room for one script of max_script_bytes.
  RunLimits limits = sacct_limits(o);
  limits.max_output_bytes = std::max(o.max_script_bytes, std::min(o.max_script_bytes * n, o.max_output_bytes));
  RunStop stopped = RunStop::kNone;
  auto dump = run_program({o.sacct, "-B", "-j", list}, limits, &stopped);
  if (stopped == RunStop::kRequested || stopped == RunStop::kTimeout) {
    stopped_out = stopped;
    return dump.status();
  }
  if (!dump && n > 1) {
    auto a = fetch_scripts(o, ids, first, n / 2, scripts, notes, stopped_out);
    if (!a) return a;
    return fetch_scripts(o, ids, first + n / 2, n - n / 2, scripts, notes, stopped_out);
  }
  if (!dump) {
    notes.push_back("job " + ids[first] + ": no script (" + dump.status().message() + ")");
    return true;
  }
  for (auto& [id, text] : ingest::sacct::parse_batch_script_dump(*dump)) scripts[id] = std::move(text);
  return true;
}

// One window of the poll: sacct's finished jobs in [from, to] (`to` empty: now) into the sink.
// `stopped`: why a sacct call was cut short (nothing of the window was stored then).
// `seen`: the runs (job id, submit time) of the window before, which sacct lists again when they ended on the
// boundary (left out); replaced by this window's.
Status sync_window(CompletionStore& store, const CompletionSink& sink, const SyncOptions& o,
                   int64_t from, const std::string& to, SyncReport& report, RunStop& stopped,
                   std::unordered_set<std::string>& seen) {
  // Fields delimited by the unit separator: with sacct's '|', a job named "a|b" (and an
  // AdminComment holding '|') could not be told from its neighbours and was skipped, not learned.
  auto listing = run_program({o.sacct, "-a", "-P", std::string("--delimiter=") + ingest::sacct::kUnitSeparator,
                              "--noconvert", "-S", sacct_time(from), "-E", to.empty() ? "now" : to, "-s",
                              "CD,F,TO,OOM,CA,NF,PR,DL", std::string("--format=") + kSacctColumns},
                             sacct_limits(o), &stopped);
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
  listing->clear();
  listing->shrink_to_fit();
  // sacct's -s selects the jobs that were in one of those states during the window, and prints
  // the state they are in now: one requeued since has no final peak yet. The reader leaves out
  // the states it knows as unfinished (RUNNING, REQUEUED...); this takes the rest that are not a
  // final state (SPECIAL_EXIT: requeued and held by an epilog; REVOKED; one this build does not
  // know). Stored, it would be learned as an exact label and hold its run (job id and submit time) against its real
  // completion, as /v1/complete refuses it (422). It is listed again in the window where it ends.
  std::erase_if(trace.jobs, [&](const Job& j) {
    if (is_finished_state(j.state)) return false;
    ++report.skipped;
    report.notes.push_back("job " + j.job_id + ": state " + j.state +
                           " has not finished; learned once it has (" + finished_state_names() + ")");
    return true;
  });
  std::unordered_set<std::string> now_seen;
  std::erase_if(trace.jobs, [&](const Job& j) {
    const std::string run = j.job_id + '@' + std::to_string(j.submit_ms);  // a requeued job's runs apart
    now_seen.insert(run);
    return seen.count(run) > 0;
  });
  seen = std::move(now_seen);
  report.skipped += trace.stats.skipped;
  report.notes.insert(report.notes.end(), trace.notes.begin(), trace.notes.end());
  for (const std::string& r : trace.stats.reasons) report.notes.push_back(r);
  report.finished += trace.jobs.size();

  // Scripts only for jobs not stored yet, a batch of them per sacct call.
  std::vector<bool> known(trace.jobs.size(), false);
  std::vector<std::string> want;
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    Job& job = trace.jobs[i];
    auto has = store.contains_run(job);  // a requeued job's later run is not known
    if (!has) return has.status();
    known[i] = *has;
    if (!known[i] && o.fetch_scripts && (!job.script || job.script->empty())) want.push_back(job.job_id);
  }
  std::unordered_map<std::string, std::string> scripts;
  for (size_t at = 0; at < want.size(); at += o.scripts_per_call) {
    auto f = fetch_scripts(o, want, at, std::min(o.scripts_per_call, want.size() - at), scripts, report.notes,
                           stopped);
    if (stopped == RunStop::kRequested) return Status::ok();  // nothing of the window stored
    if (!f) return f.status().with_context("the new jobs' scripts");
  }
  for (Job& job : trace.jobs) {
    if (auto it = scripts.find(job.job_id); it != scripts.end()) job.script = std::move(it->second);
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
  return Status::ok();
}

}  // namespace

namespace {

// The cursor (kSyncCursorKey), or nullopt before the first poll.
Result<std::optional<int64_t>> read_cursor(CompletionStore& store) {
  auto cursor = store.get_meta(kSyncCursorKey);
  if (!cursor) return cursor.status();
  if (!*cursor) return std::optional<int64_t>();
  try {
    return std::optional<int64_t>(std::stoll(**cursor));
  } catch (const std::exception&) {
    return Status::invalid(std::string(kSyncCursorKey) + ": not a number in the database: " + **cursor);
  }
}

// sacct's finished jobs that ended in [from, end] into the sink, in windows of at most
// max_window_s; a window whose listing is over max_output_bytes is asked again at half its span
// (down to min_window_s). `end_is_now`: the last window is asked up to `-E now`. After each
// window, `window_done(to, last)` (the poll moves its cursor there). false: stopped
// (stop_requested) before the end; the windows done are kept.
Result<bool> read_windows(CompletionStore& store, const CompletionSink& sink, const SyncOptions& o, int64_t from,
                          int64_t end, bool end_is_now, SyncReport& report,
                          const std::function<Status(int64_t to, bool last)>& window_done) {
  const int64_t max_span = std::max<int64_t>(o.max_window_s, 1);
  int64_t span = max_span;
  std::unordered_set<std::string> seen;  // the last window's runs
  while (true) {
    if (o.stop_requested && o.stop_requested()) return false;
    const bool last = from + span >= end;
    const int64_t to = last ? end : from + span;
    RunStop stopped = RunStop::kNone;  // where set, nothing of the window was stored
    Status s = sync_window(store, sink, o, from, last && end_is_now ? std::string() : sacct_time(to), report,
                           stopped, seen);
    if (stopped == RunStop::kRequested) return false;
    if (!s && stopped == RunStop::kOutput && span > o.min_window_s) {
      span = std::max<int64_t>(span / 2, o.min_window_s);
      continue;
    }
    if (!s) {
      if (stopped != RunStop::kNone) {
        return s.with_context(fmt::format("sacct's listing of the {} s from {}", to - from, sacct_time(from)));
      }
      return s;
    }
    ++report.windows;
    if (Status d = window_done(to, last); !d) return d;
    if (o.on_window) o.on_window(report, from, to);
    if (last) return true;
    from = to;
    span = std::min(span * 2, max_span);  // back up after a dense stretch
  }
}

}  // namespace

Result<SyncReport> sync_once(CompletionStore& store, const CompletionSink& sink,
                             const SyncOptions& o) {
  const int64_t started = o.clock ? o.clock() : system_now();
  SyncReport report;
  auto cursor = read_cursor(store);
  if (!cursor) return cursor.status();
  report.since = cursor->value_or(started - o.initial_lookback_s);
  // Up to now; the cursor moves after each window: an interrupted catch-up goes on from there.
  auto done = read_windows(store, sink, o, report.since, started, /*end_is_now=*/true, report,
                           [&](int64_t to, bool last) {
                             const int64_t next = last ? started - o.overlap_s : std::min(to, started - o.overlap_s);
                             return store.set_meta(kSyncCursorKey, std::to_string(next));
                           });
  if (!done) return done.status();
  report.stopped = !*done;
  return report;
}

Result<bool> rescan_due(CompletionStore& store, const SyncOptions& o) {
  if (o.rescan_interval_s <= 0 || o.rescan_lookback_s <= 0) return false;
  const int64_t now = o.clock ? o.clock() : system_now();
  auto last = store.get_meta(kSyncRescanKey);
  if (!last) return last.status();
  if (!*last) return true;
  try {
    const int64_t at = std::stoll(**last);
    // A time after now: the clock stepped back since; waiting for it would hold re-scans off.
    return at > now || now - at >= o.rescan_interval_s;
  } catch (const std::exception&) {
    return true;  // unreadable: re-scan, and write it anew
  }
}

Result<SyncReport> rescan_once(CompletionStore& store, const CompletionSink& sink, const SyncOptions& o) {
  const int64_t started = o.clock ? o.clock() : system_now();
  SyncReport report;
  report.rescan = true;
  auto cursor = read_cursor(store);
  if (!cursor) return cursor.status();
  // What the polls no longer reach: from the look-back to the cursor (the next poll reads on
  // from there). Before the first poll, nothing.
  report.since = started - o.rescan_lookback_s;
  report.until = std::min(cursor->value_or(report.since), started);
  if (report.since < report.until) {
    auto done = read_windows(store, sink, o, report.since, report.until, /*end_is_now=*/false, report,
                             [](int64_t, bool) { return Status::ok(); });
    if (!done) return done.status();
    if (!*done) {  // stopped: due again at the next poll
      report.stopped = true;
      return report;
    }
  }
  if (Status s = store.set_meta(kSyncRescanKey, std::to_string(started)); !s) return s;
  return report;
}

std::string describe_window(const SyncReport& r, int64_t from, int64_t to) {
  return std::string(r.rescan ? "re-scan " : "") + "window " + std::to_string(r.windows) + ", " + sacct_time(from) + " .. " + sacct_time(to) + ": " +
         std::to_string(r.finished) + " finished job(s) so far, " + std::to_string(r.added) + " new";
}

std::string describe(const SyncReport& r) {
  // What a poll and a re-scan both say after what they added.
  const std::string rest =
      std::to_string(r.known) + " already known, " + std::to_string(r.skipped) + " malformed row(s) skipped" +
      (r.windows > 1 ? " (" + std::to_string(r.windows) + " sacct windows)" : "") +
      (!r.stopped                     ? ""
       : r.rescan ? " (stopped on a signal: the windows done are kept, the re-scan is due again at the next poll)"
                  : " (stopped on a signal: the windows done are kept, the next poll goes on from there)");
  if (r.rescan) {
    return "re-scan of the jobs that ended " + sacct_time(r.since) + " .. " + sacct_time(r.until) + ": " +
           std::to_string(r.finished) + " finished job(s), " + std::to_string(r.added) +
           " stored late (slurmdbd recorded them after the polls' overlap; " + std::to_string(r.with_script) +
           " with script), " + rest;
  }
  return std::to_string(r.finished) + " finished job(s) since " + sacct_time(r.since) + ": " +
         std::to_string(r.added) + " new (" + std::to_string(r.with_script) + " with script), " + rest;
}

}  // namespace peakcast::serve
