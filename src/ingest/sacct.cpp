// The Slurm `sacct -P` reader: header/columns, row repair, job-step join, and the Job record.
// The rules are in include/peakcast/ingest/sacct.h; field pieces live in sacct_fields.cpp and
// script loading (ScriptSources) in sacct_scripts.cpp.
#include <algorithm>
#include <array>
#include <cctype>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "peakcast/core/io.h"
#include "peakcast/core/time_zone.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/jobstats.h"
#include "peakcast/ingest/bounds.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/sacct.h"

namespace peakcast::ingest {
namespace {

using sacct::ReqMem;

constexpr uint64_t kMiB = 1024ull * 1024ull;

enum Col : int {
  kJobId, kJobIdRaw, kJobName, kUser, kAccount, kPartition, kState, kSubmit, kStart, kEnd,
  kElapsed, kElapsedRaw, kTimelimit, kTimelimitRaw, kNcpus, kReqCpus, kNNodes, kReqMem,
  kReqTres, kAllocTres, kMaxRss, kTresTot, kTresMax, kComment, kAdminComment, kExitCode, kNumCols
};

// Header names as sacct prints them; matched case-insensitively.
constexpr std::pair<std::string_view, Col> kColumnNames[] = {
    {"jobid", kJobId},         {"jobidraw", kJobIdRaw},       {"jobname", kJobName},
    {"user", kUser},           {"account", kAccount},         {"partition", kPartition},
    {"state", kState},         {"submit", kSubmit},           {"start", kStart},
    {"end", kEnd},             {"elapsed", kElapsed},         {"elapsedraw", kElapsedRaw},
    {"timelimit", kTimelimit}, {"timelimitraw", kTimelimitRaw}, {"ncpus", kNcpus},
    {"alloccpus", kNcpus},     {"reqcpus", kReqCpus},         {"nnodes", kNNodes},
    {"allocnodes", kNNodes},   {"reqmem", kReqMem},           {"reqtres", kReqTres},
    {"alloctres", kAllocTres}, {"maxrss", kMaxRss},           {"tresusageintot", kTresTot},
    {"tresusageinmax", kTresMax},  {"comment", kComment},         {"admincomment", kAdminComment},
    {"exitcode", kExitCode}};

constexpr std::string_view kDisplayNames[kNumCols] = {
    "JobID", "JobIDRaw", "JobName", "User", "Account", "Partition", "State", "Submit", "Start",
    "End", "Elapsed", "ElapsedRaw", "Timelimit", "TimelimitRaw", "NCPUS", "ReqCPUS", "NNodes",
    "ReqMem", "ReqTRES", "AllocTRES", "MaxRSS", "TRESUsageInTot", "TRESUsageInMax",
    "Comment", "AdminComment", "ExitCode"};

// Columns whose text is free and may contain '|'.
constexpr std::string_view kFreeText[] = {"jobname", "comment", "admincomment", "systemcomment",
                                          "submitline", "workdir", "constraints"};

// States of jobs that have not finished: no label yet, left out (not malformed).
constexpr std::string_view kUnfinished[] = {
    "RUNNING", "PENDING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "COMPLETING",
    "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"};

std::string column_key(std::string_view name) {
  name = trim(name);
  if (size_t pct = name.find('%'); pct != std::string_view::npos) name = name.substr(0, pct);
  return lower(trim(name));
}

bool is_free_text(const std::string& key) {
  for (auto f : kFreeText) {
    if (key == f) return true;
  }
  return false;
}

struct Layout {
  size_t ncols = 0;
  std::array<int, kNumCols> at{};
  int free_col = -1;         // absorbs extra '|' in a row; -1: none can
  bool trailing_pipe = false;  // `sacct -p`
  char delimiter = '|';        // the header's: '|', or sacct::kUnitSeparator (`--delimiter`)
  bool has(Col c) const { return at[c] >= 0; }
};

// What a refused header adds for the CLI's reader (SacctOptions::columns_hint).
constexpr std::string_view kColumnsHint =
    "; for `sacct -n` output give the --format column names (--columns)";

Result<Layout> make_layout(const std::vector<std::string>& names, bool trailing_pipe,
                           const std::string& where, std::string_view hint) {
  Layout l;
  l.at.fill(-1);
  l.ncols = names.size();
  l.trailing_pipe = trailing_pipe;
  std::vector<std::string> keys;
  for (size_t i = 0; i < names.size(); ++i) {
    keys.push_back(column_key(names[i]));
    for (auto [n, c] : kColumnNames) {
      if (keys.back() == n && l.at[c] < 0) l.at[c] = static_cast<int>(i);
    }
  }
  if (!l.has(kJobId) && !l.has(kJobIdRaw)) {
    return Status::invalid(where + ": header: no JobID or JobIDRaw column" + std::string(hint));
  }
  if (!keys.empty() && is_free_text(keys.back())) {
    l.free_col = static_cast<int>(keys.size() - 1);
  } else {
    int only = -1, count = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (is_free_text(keys[i])) {
        only = static_cast<int>(i);
        ++count;
      }
    }
    if (count == 1) l.free_col = only;
  }
  return l;
}

// A header has a JobID/JobIDRaw name and, unlike every data row, no field starting with a digit.
bool looks_like_header(const std::vector<std::string_view>& fields) {
  bool named = false;
  for (std::string_view f : fields) {
    std::string_view t = trim(f);
    if (!t.empty() && std::isdigit(static_cast<unsigned char>(t.front()))) return false;
    const std::string k = column_key(t);
    named = named || k == "jobid" || k == "jobidraw";
  }
  return named;
}

std::vector<std::string> header_names(std::vector<std::string_view> fields, bool& trailing) {
  trailing = fields.size() > 1 && trim(fields.back()).empty();
  if (trailing) fields.pop_back();
  std::vector<std::string> names;
  for (auto f : fields) names.emplace_back(trim(f));
  return names;
}

// One data row with its fields fitted to the layout.
struct Row {
  std::vector<std::string_view> f;
  std::string merged;  // owns a free-text field that contained '|'
  const Layout* layout = nullptr;
  std::string_view get(Col c) const {
    const int i = layout->at[c];
    return i < 0 ? std::string_view() : trim(f[static_cast<size_t>(i)]);
  }
};

// Fits split fields to the columns; returns an empty string or why it cannot.
std::string fit_row(Row& row, const Layout& l, bool& repaired) {
  repaired = false;
  auto& f = row.f;
  if (f.size() > l.ncols && l.trailing_pipe && trim(f.back()).empty()) f.pop_back();
  if (f.size() == l.ncols + 1 && !l.trailing_pipe && trim(f.back()).empty()) f.pop_back();
  if (f.size() < l.ncols) {
    return "expected " + std::to_string(l.ncols) + " fields, found " + std::to_string(f.size());
  }
  if (f.size() > l.ncols) {
    if (l.free_col < 0) {
      return "expected " + std::to_string(l.ncols) + " fields, found " + std::to_string(f.size()) +
             " and no free-text column to hold the extra '|'";
    }
    const size_t m = static_cast<size_t>(l.free_col);
    const size_t extra = f.size() - l.ncols;
    row.merged.assign(f[m]);
    for (size_t k = 1; k <= extra; ++k) {
      row.merged.push_back(l.delimiter);
      row.merged.append(f[m + k]);
    }
    f.erase(f.begin() + static_cast<std::ptrdiff_t>(m + 1),
            f.begin() + static_cast<std::ptrdiff_t>(m + 1 + extra));
    f[m] = row.merged;
    repaired = true;
  }
  return {};
}

// What one row (job or step) says about the outcome.
struct Usage {
  std::optional<uint64_t> peak_mem;
  std::optional<uint64_t> peak_vram;
  bool oom = false;
  bool cancelled_by_root = false;  // a row "CANCELLED by 0": OverMemoryKill's step (see finish_job)
  std::optional<ReqMem> req_mem;
};

void merge_usage(Usage& into, const Usage& u) {
  auto max_opt = [](std::optional<uint64_t>& a, const std::optional<uint64_t>& b) {
    if (b && (!a || *b > *a)) a = b;
  };
  max_opt(into.peak_mem, u.peak_mem);
  max_opt(into.peak_vram, u.peak_vram);
  into.oom = into.oom || u.oom;
  into.cancelled_by_root = into.cancelled_by_root || u.cancelled_by_root;
  if (!into.req_mem) into.req_mem = u.req_mem;
}

// A failed field: which one and why.
struct FieldError {
  Col col;
  std::string why;
};

std::string quoted(std::string_view v) { return "\"" + std::string(v) + "\""; }

// Reads the usage fields a job or step row may carry. Sizes without a suffix are bytes.
std::optional<FieldError> read_usage(const Row& row, Usage& u) {
  auto tres_size = [&](Col c, std::string_view key,
                       std::optional<uint64_t>& out) -> std::optional<FieldError> {
    const std::string_view tres = row.get(c);
    if (tres.empty()) return std::nullopt;
    auto v = sacct::tres_value(tres, key);
    if (!v || v->empty()) return std::nullopt;
    auto bytes = parse_size(*v);
    if (!bytes) return FieldError{c, std::string(key) + "=" + quoted(*v) + " is not a size"};
    out = bytes;
    return std::nullopt;
  };
  std::optional<uint64_t> tot, max_rss, tres_max;
  if (auto e = tres_size(kTresTot, "mem", tot)) return e;
  if (auto e = tres_size(kTresMax, "mem", tres_max)) return e;
  if (std::string_view v = row.get(kMaxRss); !v.empty()) {
    max_rss = parse_size(v);
    if (!max_rss) return FieldError{kMaxRss, quoted(v) + " is not a size"};
  }
  u.peak_mem = tot ? tot : (max_rss ? max_rss : tres_max);
  std::optional<uint64_t> vram_tot, vram_max;
  if (auto e = tres_size(kTresTot, "gres/gpumem", vram_tot)) return e;
  if (auto e = tres_size(kTresMax, "gres/gpumem", vram_max)) return e;
  u.peak_vram = vram_tot ? vram_tot : vram_max;
  if (row.layout->has(kState)) {
    u.oom = normalize_state(row.get(kState)) == "OUT_OF_MEMORY";
    u.cancelled_by_root = row.get(kState) == "CANCELLED by 0";
  }
  if (std::string_view v = row.get(kReqMem); !v.empty()) {
    u.req_mem = sacct::parse_req_mem(v);
    if (!u.req_mem) return FieldError{kReqMem, quoted(v) + " is not a memory request"};
  }
  return std::nullopt;
}

// Everything read from a job row, before its steps are folded in.
struct Record {
  Job job;
  size_t line = 0;
  std::string job_id_raw;
  Usage usage;
  std::optional<int64_t> end, elapsed, nodes;
  std::optional<double> ncpus, req_cpus;
  std::string req_tres, alloc_tres;
  std::string exit_code;  // the job row's ExitCode, "exit:signal"; empty without the column
  bool unfinished = false;
  bool superseded = false;
  bool rejected = false;  // a step row of it was malformed (StepJoin::reject_step)
  std::optional<jobstats::Summary> jobstats;  // AdminComment's summary, when it had one
};

bool is_unknown_time(std::string_view v) { return v == "Unknown" || v == "None"; }

// Reads a time field (epoch ms out): epoch or ISO, within the canonical schema's range. An ISO
// time without an offset is the wall clock of `zone` (ReadOptions::sacct_timezone), else UTC.
std::optional<FieldError> read_time(const Row& row, Col c, const TimeZone* zone,
                                    std::optional<int64_t>& out) {
  std::string_view v = row.get(c);
  const std::optional<Timestamp> t = parse_timestamp(v);
  if (!t) return FieldError{c, quoted(v) + " is not a time"};
  out = t->ms;
  if (t->wall_clock && zone != nullptr) {
    int64_t local_s = t->ms / 1000, ms = t->ms % 1000;
    if (ms < 0) {
      ms += 1000;
      --local_s;
    }
    const Result<int64_t> utc_s = zone->utc_of_local(local_s);
    if (!utc_s) return FieldError{c, quoted(v) + ": " + utc_s.status().message()};
    out = *utc_s * 1000 + ms;
  }
  if (*out < 0 || static_cast<double>(*out) / 1000.0 > kMaxEpochSeconds) {
    return FieldError{c, quoted(v) + " is out of range"};
  }
  return std::nullopt;
}

std::optional<FieldError> read_seconds(Col c, std::string_view v, std::optional<int64_t> s,
                                       std::optional<int64_t>& out) {
  if (!s || *s < 0 || static_cast<double>(*s) > kMaxEpochSeconds) {
    return FieldError{c, quoted(v) + " is not a duration"};
  }
  out = s;
  return std::nullopt;
}

// Submit, Start, End (End=Unknown: not finished yet) and the elapsed time.
std::optional<FieldError> read_job_times(const Row& row, const TimeZone* zone, Record& r) {
  Job& j = r.job;
  if (row.layout->has(kSubmit)) {
    std::optional<int64_t> t;
    if (auto e = read_time(row, kSubmit, zone, t)) return e;
    j.submit_ms = *t;
  }
  if (std::string_view v = row.get(kStart); !v.empty() && !is_unknown_time(v)) {
    if (auto e = read_time(row, kStart, zone, j.start_ms)) return e;
  }
  if (std::string_view v = row.get(kEnd); v == "Unknown") {
    r.unfinished = true;
  } else if (!v.empty() && v != "None") {
    if (auto e = read_time(row, kEnd, zone, r.end)) return e;
  }
  if (std::string_view v = row.get(kElapsedRaw); !v.empty()) {
    return read_seconds(kElapsedRaw, v, parse_int(v), r.elapsed);
  }
  if (std::string_view d = row.get(kElapsed); !d.empty()) {
    return read_seconds(kElapsed, d, d.size() > 20 ? std::nullopt : parse_slurm_duration(d),
                        r.elapsed);
  }
  return std::nullopt;
}

// The time limit: Timelimit ("1-00:00:00"), else TimelimitRaw (minutes); none when unlimited.
std::optional<FieldError> read_time_limit(const Row& row, Job& j) {
  if (std::string_view v = row.get(kTimelimit); !v.empty()) {
    if (v == "UNLIMITED" || v == "Partition_Limit" || v == "INVALID") return std::nullopt;
    auto s = v.size() > 20 ? std::nullopt : parse_slurm_duration(v);
    return read_seconds(kTimelimit, v, s, j.req_time_s);
  }
  std::string_view raw = row.get(kTimelimitRaw);
  if (raw.empty() || raw == "UNLIMITED" || raw == "Partition_Limit") return std::nullopt;
  auto minutes = parse_int(raw);
  if (!minutes || *minutes < 0 || static_cast<double>(*minutes) > kMaxEpochSeconds / 60) {
    return FieldError{kTimelimitRaw, quoted(raw) + " is not minutes"};
  }
  j.req_time_s = *minutes * 60;
  return std::nullopt;
}

// CPU and node counts, the TRES strings, and the GPU count they give.
std::optional<FieldError> read_counts(const Row& row, Record& r) {
  auto count = [&](Col c, std::optional<double>& out) -> std::optional<FieldError> {
    std::string_view v = row.get(c);
    if (v.empty()) return std::nullopt;
    out = parse_double(v);
    if (!out || *out < 0 || *out > kMaxCount) return FieldError{c, quoted(v) + " is not a count"};
    return std::nullopt;
  };
  if (auto e = count(kNcpus, r.ncpus)) return e;
  if (auto e = count(kReqCpus, r.req_cpus)) return e;
  if (std::string_view v = row.get(kNNodes); !v.empty()) {
    r.nodes = parse_int(v);
    if (!r.nodes || *r.nodes < 0 || static_cast<double>(*r.nodes) > kMaxCount) {
      return FieldError{kNNodes, quoted(v) + " is not a count"};
    }
  }
  r.req_tres = std::string(row.get(kReqTres));
  r.alloc_tres = std::string(row.get(kAllocTres));
  for (Col c : {kAllocTres, kReqTres}) {
    std::string_view tres = row.get(c);
    if (tres.find("gres/gpu=") == std::string_view::npos &&
        tres.find("gres/gpu:") == std::string_view::npos) {
      continue;
    }
    auto gpus = sacct::tres_gpus(tres);
    if (!gpus || *gpus > kMaxCount) return FieldError{c, "bad GPU count in " + quoted(tres)};
    if (!r.job.req_gpus) r.job.req_gpus = gpus;
  }
  return std::nullopt;
}

// A finished job needs an end at or after its submission (history is ordered by it) and
// after its start.
std::optional<FieldError> check_end(const Row& row, const Record& r) {
  if (r.unfinished) return std::nullopt;
  const Job& j = r.job;
  std::optional<int64_t> end = r.end;
  if (!end && j.start_ms && r.elapsed) end = *j.start_ms + *r.elapsed * kMsPerSecond;
  if (row.layout->has(kSubmit)) {
    if (!end) return FieldError{kEnd, "no end time for a finished job"};
    if (*end < j.submit_ms) return FieldError{kEnd, "before Submit"};
  }
  if (end && j.start_ms && *j.start_ms > *end) return FieldError{kStart, "after End"};
  return std::nullopt;
}

std::optional<FieldError> read_job_row(const Row& row, const TimeZone* zone, Record& r) {
  Job& j = r.job;
  j.job_name = std::string(row.get(kJobName));
  // The daemon's answer, where the hook wrote it into the comment (its COMMENT_FIELD: either).
  j.answer_id = sacct::answer_id_in_comment(row.get(kComment));
  if (j.answer_id.empty()) j.answer_id = sacct::answer_id_in_comment(row.get(kAdminComment));
  j.user = std::string(row.get(kUser));
  j.account = std::string(row.get(kAccount));
  j.partition = std::string(row.get(kPartition));
  r.job_id_raw = std::string(row.get(kJobIdRaw));
  r.exit_code = std::string(row.get(kExitCode));
  if (row.layout->has(kState)) {
    // normalize_state() reads "" as COMPLETED (a record with no state at all); an empty field
    // in a column sacct always fills is a damaged row, not a job that completed.
    if (row.get(kState).empty()) return FieldError{kState, "empty"};
    j.state = normalize_state(row.get(kState));
    for (auto s : kUnfinished) r.unfinished = r.unfinished || j.state == s;
  }
  if (auto e = read_job_times(row, zone, r)) return e;
  if (auto e = read_time_limit(row, j)) return e;
  if (auto e = read_counts(row, r)) return e;
  if (auto e = check_end(row, r)) return e;
  return read_usage(row, r.usage);
}

// Counts behind the notes the reader leaves for the user.
struct Tally {
  size_t unfinished = 0, one_node_assumed = 0, no_cpu_count = 0, zero_req_mem = 0;
  size_t superseded = 0, repaired = 0, gpu_no_capacity = 0, with_script = 0;
  size_t jobstats_used = 0, jobstats_empty = 0, jobstats_bad = 0, over_memory_kill = 0;
  std::string first_unfinished, first_jobstats_bad;
};

// A job row's AdminComment: a jobstats summary is kept for finish_job(); a malformed one is
// counted and left out, never fatal.
void read_jobstats(const Row& row, const std::string& at, Record& r, Tally& tally) {
  auto d = jobstats::decode_admin_comment(row.get(kAdminComment));
  if (!d) {
    if (tally.jobstats_bad++ == 0) {
      tally.first_jobstats_bad = at + ": AdminComment: " + d.status().message();
    }
    return;
  }
  if (d->kind == jobstats::Kind::kSummary) r.jobstats = std::move(d->summary);
  if (d->kind == jobstats::Kind::kShort || d->kind == jobstats::Kind::kNoData) ++tally.jobstats_empty;
}

std::optional<double> tres_count(std::string_view tres, std::string_view key) {
  if (auto v = sacct::tres_value(tres, key)) {
    auto n = parse_double(*v);
    if (n && *n >= 0 && *n <= kMaxCount) return n;
  }
  return std::nullopt;
}

std::optional<uint64_t> tres_mem_mb(std::string_view tres) {
  if (auto v = sacct::tres_value(tres, "mem")) return parse_size(*v, kMiB);
  return std::nullopt;
}

// A jobstats summary's labels (jobstats.h): the busiest GPU's peak and capacity; host memory
// only where sacct had none.
void apply_jobstats(const jobstats::Summary& s, Job& j, Tally& tally) {
  bool used = false;
  if (const jobstats::Gpu* g = jobstats::busiest_gpu(s)) {
    if (!j.req_gpus || *j.req_gpus <= 0) j.req_gpus = static_cast<int>(s.gpus.size());
    const double peak = static_cast<double>(g->used_bytes) * static_cast<double>(*j.req_gpus);
    if (peak < kMaxBytes) {
      j.peak_vram_bytes = static_cast<uint64_t>(peak);
      if (g->total_bytes) j.gpu_mem_bytes = g->total_bytes;
      used = true;
    }
  }
  if (!j.peak_mem_bytes && s.used_memory_bytes) {
    j.peak_mem_bytes = s.used_memory_bytes;
    used = true;
  }
  if (!j.req_mem_bytes && s.total_memory_bytes && *s.total_memory_bytes > 0) {
    j.req_mem_bytes = s.total_memory_bytes;
    used = true;
  }
  if (used) ++tally.jobstats_used;
}

// Turns a record into the final Job (request totals, peaks, GPU capacity, end time).
void finish_job(Record& r, const SacctOptions& so, Tally& tally) {
  Job& j = r.job;
  std::optional<double> tres_cpus = tres_count(r.req_tres, "cpu");
  if (!tres_cpus) tres_cpus = tres_count(r.alloc_tres, "cpu");
  j.req_cpus = r.req_cpus ? r.req_cpus : (r.ncpus ? r.ncpus : tres_cpus);
  if (r.usage.req_mem) {
    const ReqMem& m = *r.usage.req_mem;
    // A per-CPU request is enforced on the allocated CPUs (NCPUS), which can exceed ReqCPUS.
    std::optional<double> cpus = r.ncpus ? r.ncpus : (r.req_cpus ? r.req_cpus : tres_cpus);
    if (m.per == ReqMem::Per::kNode && !r.nodes) ++tally.one_node_assumed;
    if (m.per == ReqMem::Per::kCpu && !(cpus && *cpus > 0)) ++tally.no_cpu_count;
    j.req_mem_bytes = sacct::req_mem_total(m, r.nodes, cpus);
  } else {
    j.req_mem_bytes = tres_mem_mb(r.req_tres);
    if (!j.req_mem_bytes) j.req_mem_bytes = tres_mem_mb(r.alloc_tres);
  }
  if (j.req_mem_bytes && *j.req_mem_bytes == 0) {
    j.req_mem_bytes.reset();  // 0 = no limit / whole node: no ratio to learn from
    ++tally.zero_req_mem;
  }
  j.peak_mem_bytes = r.usage.peak_mem;
  j.peak_vram_bytes = r.usage.peak_vram;
  if (r.usage.oom) j.state = "OUT_OF_MEMORY";
  // JobAcctGatherParams=OverMemoryKill (no cgroup enforcement): slurmstepd kills a job over its
  // memory limit, which ends FAILED with ExitCode 0:9 (signal 9) and a step "CANCELLED by 0".
  // Its label is a lower bound, as for OUT_OF_MEMORY. Without an ExitCode column the state
  // pair alone decides (a user's or admin's scancel ends the job CANCELLED, not FAILED).
  if (j.state == "FAILED" && r.usage.cancelled_by_root &&
      (r.exit_code.empty() || r.exit_code == "0:9")) {
    j.state = "OUT_OF_MEMORY";
    ++tally.over_memory_kill;
  }
  if (r.jobstats) apply_jobstats(*r.jobstats, j, tally);
  if (j.req_gpus && *j.req_gpus > 0 && !j.gpu_mem_bytes) {
    std::optional<std::string> type = sacct::tres_gpu_type(r.alloc_tres);
    if (!type) type = sacct::tres_gpu_type(r.req_tres);
    if (type) {
      if (auto it = so.gpu_mem_by_type.find(*type); it != so.gpu_mem_by_type.end()) {
        j.gpu_mem_bytes = it->second;
      } else {
        j.gpu_mem_bytes = sacct::gpu_mem_from_type(*type);
      }
    }
    if (!j.gpu_mem_bytes) j.gpu_mem_bytes = so.default_gpu_mem_bytes;
    if (!j.gpu_mem_bytes && j.peak_vram_bytes) ++tally.gpu_no_capacity;
  }
  if (r.end) {
    j.end_ms = *r.end;
  } else if (j.start_ms && r.elapsed) {
    j.end_ms = *j.start_ms + *r.elapsed * kMsPerSecond;
  } else if (j.start_ms) {
    j.end_ms = *j.start_ms;  // only without Submit: the lower bound we know
  } else {
    j.end_ms = 0;
  }
}

std::string where(const std::string& name, size_t line) {
  return name + ":" + std::to_string(line);
}

void add_notes(const Tally& t, const Layout& first, bool submit_everywhere, Trace& out) {
  if (!submit_everywhere) {
    out.notes.push_back(
        "sacct: no Submit column: jobs have no submit times, so `evaluate` cannot order them "
        "by submission (add Submit to --format); end times come from End, else Start+Elapsed, "
        "else Start, else 0");
  }
  if (!first.has(kUser)) {
    out.notes.push_back("sacct: no User column: every job has an empty user, so there is no "
                        "same-user history");
  }
  if (!first.has(kState)) {
    out.notes.push_back("sacct: no State column: every job is taken as COMPLETED, so "
                        "OUT_OF_MEMORY jobs cannot be recognised as censored");
  }
  const std::pair<size_t, std::string> counted[] = {
      {t.over_memory_kill, " job(s) FAILED 0:9 with a step CANCELLED by 0 (killed by "
                           "OverMemoryKill) taken as OUT_OF_MEMORY: their memory label is a lower "
                           "bound (censored)"},
      {t.unfinished, " job(s) still running or pending (End=Unknown) left out, first " +
                         t.first_unfinished},
      {t.one_node_assumed, " job(s) with a per-node ReqMem (`n` suffix) and no NNodes column: "
                           "taken as one node"},
      {t.no_cpu_count, " job(s) with a per-CPU ReqMem (`c` suffix) and no CPU count "
                       "(NCPUS/ReqCPUS): memory request unknown"},
      {t.zero_req_mem, " job(s) with ReqMem 0 (no limit): memory request unknown"},
      {t.superseded, " earlier record(s) of requeued jobs replaced by the job's last record"},
      {t.repaired, " row(s) had '|' inside a free-text field; the extra fields were joined back "
                   "into it"},
      {t.jobstats_used, " job(s) labelled from jobstats summaries in AdminComment (busiest GPU's "
                        "peak and capacity; host memory where sacct had none)"},
      {t.jobstats_empty, " job(s) with AdminComment JS1:Short or JS1:None (jobstats had no "
                         "samples): labels from sacct alone"},
      {t.jobstats_bad, " malformed jobstats summary(ies) in AdminComment skipped (labels from "
                       "sacct alone), first " + t.first_jobstats_bad},
      {t.gpu_no_capacity, " GPU job(s) have a gres/gpumem peak but no known per-GPU memory (GPU "
                          "type not recognised): no VRAM label"}};
  for (const auto& [count, what] : counted) {
    if (count) out.notes.push_back("sacct: " + std::to_string(count) + what);
  }
}

// The job-step join: a step row's usage folds into its job's record whether the step comes
// before or after the job row; a requeued job's later record supersedes its earlier one; a job
// whose row is malformed loses its earlier record and the steps that follow; a job with a
// malformed step row is left out like one whose own row is malformed.
class StepJoin {
 public:
  StepJoin(Tally& tally, ReadStats& stats) : tally_(tally), stats_(stats) {}

  // A job row read well: it takes the steps seen before it, unless one of them was malformed.
  void add_job(const std::string& key, Record r) {
    if (bad_steps_first_.erase(key) > 0) {
      reject_job(key);
      return;
    }
    rejected_.erase(key);
    if (auto it = current_.find(key); it != current_.end()) supersede(it->second);
    if (auto it = orphans_.find(key); it != orphans_.end()) {
      for (auto& [line, u] : it->second) merge_usage(r.usage, u);
      orphans_.erase(it);
    }
    current_[key] = recs_.size();
    recs_.push_back(std::move(r));
  }

  // A malformed job row (reported by the caller).
  void reject_job(const std::string& key) {
    rejected_.insert(key);
    if (auto it = current_.find(key); it != current_.end()) {
      supersede(it->second);
      current_.erase(it);
    }
  }

  // A malformed step row (reported by the caller). Its job is left out: a label from the other
  // steps alone (often the tiny .extern) would be wrong, and an OUT_OF_MEMORY or "CANCELLED by
  // 0" the bad step carried, which censors the label, would be lost. Its other steps go with it;
  // a job row still to come (steps listed first) is dropped when it comes.
  void reject_step(const std::string& key) {
    orphans_.erase(key);
    if (auto it = current_.find(key); it != current_.end()) {
      recs_[it->second].rejected = true;
      current_.erase(it);
    } else {
      bad_steps_first_.insert(key);
    }
    rejected_.insert(key);
  }

  // Steps of a rejected job are dropped unread: its job row, or a step, was already reported.
  bool rejected(const std::string& key) const { return rejected_.count(key) > 0; }

  void add_step(const std::string& key, size_t line, const Usage& u) {
    if (auto it = current_.find(key); it != current_.end()) {
      merge_usage(recs_[it->second].usage, u);
    } else {
      orphans_[key].emplace_back(line, u);
    }
  }

  // Steps whose job row never came, as (line, job key) in line order.
  std::vector<std::pair<size_t, std::string>> lost_steps() const {
    std::vector<std::pair<size_t, std::string>> lost;
    for (auto& [key, steps] : orphans_) {
      for (auto& [line, u] : steps) lost.emplace_back(line, key);
    }
    std::sort(lost.begin(), lost.end());
    return lost;
  }

  std::vector<Record>& records() { return recs_; }

 private:
  void supersede(size_t i) {
    recs_[i].superseded = true;
    ++tally_.superseded;
    ++stats_.ignored;
  }

  Tally& tally_;
  ReadStats& stats_;
  std::vector<Record> recs_;
  std::unordered_map<std::string, size_t> current_;  // job key -> its latest record
  std::unordered_map<std::string, std::vector<std::pair<size_t, Usage>>> orphans_;
  std::unordered_set<std::string> rejected_;
  std::unordered_set<std::string> bad_steps_first_;  // a malformed step came before its job row
};

// Reads a sacct text line by line (a header may come again, as in concatenated outputs) into
// the step join, then turns its records into Jobs.
class SacctReader {
 public:
  SacctReader(const std::string& name, const ReadOptions& o, bool columns_hint, const TimeZone* zone,
              Trace& out)
      : name_(name), o_(o), hint_(columns_hint ? kColumnsHint : std::string_view()), zone_(zone),
        out_(out), join_(tally_, out.stats) {}

  // The --columns layout for output without a header (`sacct -n`).
  Status set_columns(const std::vector<std::string>& columns) {
    auto l = make_layout(columns, false, name_ + ": --columns", hint_);
    if (!l) return l.status();
    layout_ = *l;
    for (const std::string& c : columns) columns_.push_back(column_key(c));
    return Status::ok();
  }

  // The last of the lines from `i` on that make one row. sacct prints a job's name and comment
  // as they are, so one holding a newline splits its row over lines. Under the unit separator,
  // which no text holds, the row is rejoined: lines are added while it has fewer fields than the
  // header (never past that count), and a line with no separator after a full row continues the
  // last column where that is free text (no row can be one field). Under '|' a row is never
  // rejoined: a '|' in the text makes the count ambiguous. `i` itself: not a split row.
  size_t row_end(const std::vector<std::string_view>& lines, size_t i) const {
    static constexpr char kUs = sacct::kUnitSeparator;
    // A row is never rejoined from more lines than this: lines of text with no separator would
    // otherwise be scanned again from each of them (quadratic in a hostile file).
    static constexpr size_t kMaxRowLines = 64;
    if (!layout_ || layout_->delimiter != kUs || layout_->trailing_pipe) return i;
    const auto header = [](std::string_view l) {  // under either delimiter: concatenated outputs
      return looks_like_header(split(l, kUs)) || looks_like_header(split(l, '|'));
    };
    const auto separators = [](std::string_view l) { return static_cast<size_t>(std::count(l.begin(), l.end(), kUs)); };
    const size_t want = layout_->ncols;
    size_t n = separators(lines[i]) + 1, end = i;
    if (n > want) return i;
    if (n < want) {  // a split row (or one cut short, or another header)
      if (trim(lines[i]).empty() || header(lines[i])) return i;
      while (n < want && end + 1 < lines.size() && end - i < kMaxRowLines && !header(lines[end + 1])) {
        const size_t more = separators(lines[end + 1]);
        if (n + more > want) break;
        n += more;
        ++end;
      }
      if (n != want) return i;
    }
    // A full row: the lines after it with no separator (never a row of their own) continue its
    // last column, where that is free text. The usual next line, a row, has one at once.
    const bool free_last = layout_->free_col == static_cast<int>(want) - 1;
    while (free_last && end + 1 < lines.size() && end - i < kMaxRowLines &&
           lines[end + 1].find(kUs) == std::string_view::npos && !trim(lines[end + 1]).empty() &&
           !header(lines[end + 1])) {
      ++end;
    }
    return end;
  }

  Status read_line(std::string_view text, size_t lineno) {
    if (trim(text).empty()) return Status::ok();
    // A header says how its rows are delimited: sacct's '|', or the unit separator slurm-sync
    // asks for (no name or comment holds it, so a '|' in a job's name needs no repair there).
    // Split once by the current delimiter; the other is tried only on a line that holds it.
    const char cur = layout_ ? layout_->delimiter : '|';
    std::vector<std::string_view> fields = split(text, cur);
    if (looks_like_header(fields)) return read_header(fields, lineno, cur);
    if (const char other = cur == '|' ? sacct::kUnitSeparator : '|'; text.find(other) != std::string_view::npos) {
      if (std::vector<std::string_view> h = split(text, other); looks_like_header(h)) {
        return read_header(h, lineno, other);
      }
    }
    if (!layout_) {
      return Status::invalid(where(name_, lineno) +
                             ": header: the first line is not a sacct header (no JobID column)" +
                             std::string(hint_));
    }
    if (!first_layout_) {
      first_layout_ = layout_;
      submit_everywhere_ = layout_->has(kSubmit);
    }
    ++out_.stats.lines;
    Row row;
    row.f = std::move(fields);
    row.layout = &*layout_;
    bool repaired = false;
    if (std::string why = fit_row(row, *layout_, repaired); !why.empty()) {
      return skip(lineno, "row: " + why);
    }
    tally_.repaired += repaired ? 1 : 0;
    std::string_view id = row.get(layout_->has(kJobId) ? kJobId : kJobIdRaw);
    const sacct::JobIdParts parts = sacct::split_job_id(id);
    if (parts.job.empty() || !std::isdigit(static_cast<unsigned char>(parts.job.front()))) {
      return skip(lineno, "JobID: " + quoted(id) + " is not a job id");
    }
    const std::string key(parts.job);
    if (parts.step.empty()) return read_job(row, key, lineno);
    if (join_.rejected(key)) return Status::ok();
    Usage u;
    if (auto e = read_usage(row, u)) {
      join_.reject_step(key);
      e->why += "; job " + key + " left out";
      return fail(lineno, *e);
    }
    join_.add_step(key, lineno, u);
    return Status::ok();
  }

  // Reports the steps whose job row never came, then the Jobs and the notes.
  Status finish(const SacctOptions& so, const sacct::ScriptSources& scripts) {
    for (auto& [line, key] : join_.lost_steps()) {
      if (Status s = skip(line, "JobID: step of job " + key + " whose job row is missing"); !s) {
        return s;
      }
    }
    for (Record& r : join_.records()) {
      if (Status s = emit(r, so, scripts); !s) return s;
    }
    if (tally_.with_script) out_.has_scripts = true;
    if (!submit_everywhere_) out_.has_submit_times = false;
    if (first_layout_) add_notes(tally_, *first_layout_, submit_everywhere_, out_);
    return Status::ok();
  }

 private:
  Status read_header(const std::vector<std::string_view>& fields, size_t lineno, char delimiter) {
    bool trailing = false;
    std::vector<std::string> names = header_names(fields, trailing);
    if (Status s = check_columns(names, lineno); !s) return s;
    auto l = make_layout(names, trailing, where(name_, lineno), hint_);
    if (!l) return l.status();
    l->delimiter = delimiter;
    layout_ = *l;
    if (!first_layout_) first_layout_ = layout_;
    submit_everywhere_ = submit_everywhere_ && layout_->has(kSubmit);
    return Status::ok();
  }

  // A file with its own header is read by it. --columns naming other columns means the user
  // expects another layout than the file has: say so rather than read it by one of the two.
  Status check_columns(const std::vector<std::string>& names, size_t lineno) const {
    if (columns_.empty()) return Status::ok();
    std::vector<std::string> keys;
    for (const std::string& n : names) keys.push_back(column_key(n));
    if (keys == columns_) return Status::ok();
    std::string header;
    for (size_t i = 0; i < names.size() && i < 12; ++i) header += (i ? "|" : "") + names[i];
    if (names.size() > 12) header += "|...";
    return Status::invalid(where(name_, lineno) + ": header: the file names its own columns (" +
                           header + "), not those of --columns; drop --columns, which is for " +
                           "`sacct -n` output without a header");
  }

  Status read_job(const Row& row, const std::string& key, size_t lineno) {
    Record r;
    r.line = lineno;
    r.job.job_id = key;
    if (auto e = read_job_row(row, zone_, r)) {
      join_.reject_job(key);
      return fail(lineno, *e);
    }
    read_jobstats(row, where(name_, lineno), r, tally_);
    join_.add_job(key, std::move(r));
    return Status::ok();
  }

  // A record's Job, with its script; superseded records are left out, unfinished ones counted.
  Status emit(Record& r, const SacctOptions& so, const sacct::ScriptSources& scripts) {
    if (r.superseded || r.rejected) return Status::ok();
    if (r.unfinished) {
      ++out_.stats.ignored;
      if (tally_.unfinished++ == 0) {
        tally_.first_unfinished = where(name_, r.line) + " " + r.job.job_id;
      }
      return Status::ok();
    }
    finish_job(r, so, tally_);
    Job& j = r.job;
    auto script = scripts.find(sacct::script_keys(j.job_id, r.job_id_raw));
    if (!script) return script.status();
    j.script = std::move(script.value());
    if (j.script) {
      ++tally_.with_script;
    } else if (!j.job_name.empty()) {
      j.workload = j.job_name;
    }
    out_.jobs.push_back(std::move(j));
    ++out_.stats.jobs;
    return Status::ok();
  }

  Status skip(size_t lineno, const std::string& what) {
    return skip_line(out_, o_, where(name_, lineno) + ": " + what);
  }
  Status fail(size_t lineno, const FieldError& e) {
    return skip(lineno, std::string(kDisplayNames[e.col]) + ": " + e.why);
  }

  const std::string& name_;
  const ReadOptions& o_;
  std::string_view hint_;  // appended to a refused header (SacctOptions::columns_hint)
  const TimeZone* zone_;   // where times without an offset were printed; nullptr: UTC
  Trace& out_;
  std::optional<Layout> layout_, first_layout_;
  std::vector<std::string> columns_;  // --columns, as column keys; empty without it
  bool submit_everywhere_ = true;
  Tally tally_;
  StepJoin join_;
};

}  // namespace

Status parse_sacct(std::string_view text, const std::string& name, const ReadOptions& o,
                   Trace& out) {
  return parse_sacct(text, name, o, SacctOptions{}, out);
}

Status parse_sacct(std::string_view text, const std::string& name, const ReadOptions& o,
                   const SacctOptions& so, Trace& out) {
  // Scripts first: a bad --scripts path should fail before any work.
  auto scripts = sacct::ScriptSources::open(o);
  if (!scripts) return scripts.status();
  std::optional<TimeZone> zone;  // ReadOptions::sacct_timezone; a name that is not a zone fails the read
  if (!o.sacct_timezone.empty()) {
    Result<TimeZone> z = TimeZone::load(o.sacct_timezone);
    if (!z) return z.status();
    zone = std::move(*z);
  }
  SacctReader reader(name, o, so.columns_hint, zone ? &*zone : nullptr, out);
  if (!o.columns.empty()) {
    if (Status s = reader.set_columns(o.columns); !s) return s;
  }
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte-order mark
  const std::vector<std::string_view> lines = split_lines(text);
  std::deque<std::string> rejoined;  // rows a newline split (SacctReader::row_end), kept whole
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view row = lines[i];
    const size_t last = reader.row_end(lines, i);
    if (last > i) {
      std::string& r = rejoined.emplace_back(lines[i]);
      for (size_t k = i + 1; k <= last; ++k) (r += '\n') += lines[k];
      row = r;
    }
    if (Status s = reader.read_line(row, i + 1); !s) return s;
    i = last;
  }
  return reader.finish(so, *scripts);
}

}  // namespace peakcast::ingest
