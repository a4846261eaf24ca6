// One sacct row's fields and a record's final Job: the sacct reader's field rules (sacct.h);
// sacct.cpp reads the rows and joins steps to jobs (sacct_internal.h lists the files).
#include <algorithm>
#include <string>
#include <utility>

#include "peakcast/core/job.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/bounds.h"
#include "sacct_internal.h"

namespace peakcast::ingest::sacct_detail {
namespace {

constexpr uint64_t kMiB = 1024ull * 1024ull;

// States of jobs that have not finished: no label yet, left out (not malformed).
constexpr std::string_view kUnfinished[] = {
    "RUNNING", "PENDING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "COMPLETING",
    "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD"};

bool is_unknown_time(std::string_view v) { return v == "Unknown" || v == "None"; }

// Reads a time field (epoch ms out): epoch or ISO, within the canonical schema's range. An ISO
// time without an offset is the wall clock of `zone` (ReadOptions::sacct_timezone), else UTC.
// A wall-clock time the clocks showed twice (the hour after the autumn change) is the later
// instant for End and the earlier for Submit and Start: a job is never taken to have ended
// before it did, so it is never history for a job submitted before its real end (no leakage),
// and never to have started or been submitted after it did.
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
    const Result<int64_t> utc_s = zone->utc_of_local(
        local_s, c == kEnd ? TimeZone::TwiceShown::kLater : TimeZone::TwiceShown::kEarlier);
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

// The GPU count of a row whose TRES give none, from Slurm <= 20.11's ReqGRES/AllocGRES
// (`gpu:2`, `gpu:tesla:2`, `gpu:2(IDX:0-1)`): ReqGRES, the request, as ReqTRES before AllocTRES,
// else AllocGRES. Both are the job's count on every node count: slurmctld writes ReqGRES when it
// allocates the job, as `--gres`'s per-node count times the job's nodes (17.11's node_scheduler.c
// _fill_in_gres_fields), AllocGRES likewise (_get_gres_alloc), and slurmdbd keeps them as sent
// (slurmdbd_defs.h's job-start message documents gres_req as the whole job's, on all its nodes).
// A malformed GPU count in either is a damaged row.
std::optional<FieldError> read_gres_gpus(const Row& row, Record& r) {
  for (Col c : {kReqGres, kAllocGres}) {
    std::string_view gres = row.get(c);
    if (gres.find("gpu") == std::string_view::npos) continue;
    auto gpus = sacct::gres_gpus(gres);
    if (!gpus || *gpus > kMaxCount) return FieldError{c, "bad GPU count in " + quoted(gres)};
    if (r.job.req_gpus) continue;
    r.job.req_gpus = gpus;
    r.gres_gpu_type = sacct::gres_gpu_type(gres);
  }
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
  // ReqNodes where NNodes/AllocNodes gives no count (a listing without that column): sacct prints
  // it from ReqTRES `node=` (print.c PRINT_REQ_NODES), the count NNodes falls back to for a job
  // never allocated, through convert_num_unit (`1K` for 1024 nodes). Where NNodes is 0, so is it.
  if (std::string_view v = row.get(kReqNodes); !v.empty() && r.nodes.value_or(0) == 0) {
    const std::optional<uint64_t> n = parse_size(v);
    if (!n || static_cast<double>(*n) > kMaxCount) {
      return FieldError{kReqNodes, quoted(v) + " is not a count"};
    }
    if (*n > 0) r.nodes = static_cast<int64_t>(*n);
  }
  r.req_tres = std::string(row.get(kReqTres));
  r.alloc_tres = std::string(row.get(kAllocTres));
  // AllocTRES mem= is the job's memory limit where present (finish_job): a malformed one is a
  // damaged row, not a job without one (an empty one is none, as in read_usage).
  if (auto mem = sacct::tres_value(r.alloc_tres, "mem"); mem && !mem->empty() && !parse_size(*mem, kMiB)) {
    return FieldError{kAllocTres, "mem=" + quoted(*mem) + " is not a size"};
  }
  // The GPU count, the VRAM capacity's multiplier (capacity_bytes), is the one the request states:
  // ReqTRES gres/gpu, the count the Slurm hook sends for the submission (contrib/slurm/
  // job_submit.lua gpus_of). AllocTRES can hold more: --exclusive and OverSubscribe=EXCLUSIVE
  // partitions give a job every GPU of its nodes (select_nodes' whole-node GRES; 22.05.8,
  // observed on Gres=gpu:2: --exclusive --gpus=1 has ReqTRES gres/gpu=1, AllocTRES gres/gpu=2,
  // and --exclusive alone none and 2). Learned over those and served over the hook's, a VRAM
  // share would be off by their ratio. AllocTRES only where the row has no ReqTRES (a dump
  // without the column, an empty field). A malformed count in either is a damaged row.
  std::optional<int> requested, allocated;
  for (Col c : {kReqTres, kAllocTres}) {
    std::string_view tres = row.get(c);
    if (tres.find("gres/gpu=") == std::string_view::npos &&
        tres.find("gres/gpu:") == std::string_view::npos) {
      continue;
    }
    auto gpus = sacct::tres_gpus(tres);
    if (!gpus || *gpus > kMaxCount) return FieldError{c, "bad GPU count in " + quoted(tres)};
    (c == kReqTres ? requested : allocated) = gpus;
  }
  r.job.req_gpus = r.req_tres.empty() ? allocated : requested;
  r.gpus_beyond_request = !r.req_tres.empty() && allocated.value_or(0) > requested.value_or(0);
  if (requested || allocated) return std::nullopt;
  return read_gres_gpus(row, r);
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

// A jobstats summary's labels (jobstats.h): VRAM as a share of the requested GPUs' memory, the
// capacity the Slurm hook sends; host memory only where sacct had none. `gpus_unasked`: the job's
// TRES say it asked for no GPU and was given some (--exclusive: read_counts), so the GPUs the
// summary saw are not its request and give it no GPU count or VRAM label (the Slurm hook sends it
// as a job without GPUs).
//
// The VRAM peak is the busiest GPU's (highest used / total) times the requested GPUs, so that the
// label is that GPU's utilization, the card that runs out first; or, where the summary saw more
// GPUs than the request states (--exclusive gives a job every GPU of its node, and jobstats
// samples each), the memory used on all of them where that is more: a job that asked for one GPU
// and used two needed both, and the busiest alone would tell the daemon it fits in a share of the
// one it asks for. That share can pass 1 and is clipped at --util-cap, as a gres/gpumem one is
// (finish_job); the job is counted and named in a note.
void apply_jobstats(const jobstats::Summary& s, bool gpus_unasked, Record& r, Tally& tally) {
  Job& j = r.job;
  bool used = false;
  const jobstats::Gpu* g = gpus_unasked ? nullptr : jobstats::busiest_gpu(s);
  if (g) {
    if (!j.req_gpus || *j.req_gpus <= 0) j.req_gpus = static_cast<int>(s.gpus.size());
    double peak = static_cast<double>(g->used_bytes) * static_cast<double>(*j.req_gpus);
    bool beyond = false;
    if (s.gpus.size() > static_cast<size_t>(*j.req_gpus)) {
      double all = 0;
      for (const jobstats::Gpu& each : s.gpus) all += static_cast<double>(each.used_bytes);
      beyond = all > peak;
      peak = std::max(peak, all);
    }
    if (peak < kMaxBytes) {
      j.peak_vram_bytes = static_cast<uint64_t>(peak);
      if (g->total_bytes) j.gpu_mem_bytes = g->total_bytes;
      r.vram_from_jobstats = true;
      r.jobstats_beyond_request = beyond;
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
}  // namespace

void merge_usage(Usage& into, const Usage& u) {
  auto max_opt = [](std::optional<uint64_t>& a, const std::optional<uint64_t>& b) {
    if (b && (!a || *b > *a)) a = b;
  };
  max_opt(into.peak_mem, u.peak_mem);
  into.peak_below_unit = into.peak_below_unit || u.peak_below_unit;
  into.vram_below_unit = into.vram_below_unit || u.vram_below_unit;
  max_opt(into.peak_vram, u.peak_vram);
  into.oom = into.oom || u.oom;
  into.cancelled_by_root = into.cancelled_by_root || u.cancelled_by_root;
  if (!into.req_mem) into.req_mem = u.req_mem;
}

// Reads the usage fields a job or step row may carry. Sizes without a suffix are bytes.
std::optional<FieldError> read_usage(const Row& row, Usage& u) {
  // A size with the text it was read from (a 0 printed in a unit is told from a 0 so).
  struct Size {
    std::optional<uint64_t> bytes;
    std::string_view text;
  };
  auto tres_size = [&](Col c, std::string_view key, Size& out) -> std::optional<FieldError> {
    const std::string_view tres = row.get(c);
    if (tres.empty()) return std::nullopt;
    auto v = sacct::tres_value(tres, key);
    // NONE is how sacct prints a count held as INFINITE64, Slurm's "unknown"
    // (slurmdb_make_tres_string_from_simple): a usage TRES no sample set, e.g. gres/gpumem where
    // the GPU plugin cannot read per-process usage (gpu/metal's gpu_p_usage_read sets it so).
    // Not measured, as an absent one.
    if (!v || v->empty() || *v == "NONE") return std::nullopt;
    auto bytes = parse_size(*v);
    if (!bytes) return FieldError{c, std::string(key) + "=" + quoted(*v) + " is not a size"};
    out = {bytes, *v};
    return std::nullopt;
  };
  Size tot, max_rss, tres_max;
  if (auto e = tres_size(kTresTot, "mem", tot)) return e;
  if (auto e = tres_size(kTresMax, "mem", tres_max)) return e;
  if (std::string_view v = row.get(kMaxRss); !v.empty()) {
    max_rss = {parse_size(v), v};
    if (!max_rss.bytes) return FieldError{kMaxRss, quoted(v) + " is not a size"};
  }
  const Size& peak = tot.bytes ? tot : (max_rss.bytes ? max_rss : tres_max);
  u.peak_mem = peak.bytes;
  // sacct prints a size of 0 as "0" (convert_num_unit2); a 0 in a unit ("0.00G" under
  // --units=G) is a peak above 0 below the unit's last printed decimal.
  u.peak_below_unit = peak.bytes == uint64_t{0} && peak.text != "0";
  Size vram_tot, vram_max;
  if (auto e = tres_size(kTresTot, "gres/gpumem", vram_tot)) return e;
  if (auto e = tres_size(kTresMax, "gres/gpumem", vram_max)) return e;
  const Size& vram = vram_tot.bytes ? vram_tot : vram_max;
  u.peak_vram = vram.bytes;
  u.vram_below_unit = vram.bytes == uint64_t{0} && vram.text != "0";
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
    r.unknown_state = !is_slurm_state(j.state);
  }
  if (auto e = read_job_times(row, zone, r)) return e;
  if (auto e = read_time_limit(row, j)) return e;
  if (auto e = read_counts(row, r)) return e;
  if (auto e = check_end(row, r)) return e;
  return read_usage(row, r.usage);
}

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

// Turns a record into the final Job (request totals, peaks, GPU capacity, end time).
void finish_job(Record& r, const SacctOptions& so, Tally& tally) {
  Job& j = r.job;
  if (r.gpus_beyond_request) ++tally.gpus_beyond_request;
  std::optional<double> tres_cpus = tres_count(r.req_tres, "cpu");
  if (!tres_cpus) tres_cpus = tres_count(r.alloc_tres, "cpu");
  j.req_cpus = r.req_cpus ? r.req_cpus : (r.ncpus ? r.ncpus : tres_cpus);
  // The memory the job ran under: AllocTRES mem=, slurmctld's sum of the allocation's
  // memory_allocated (job_get_tres_mem), the limit slurmd enforces. It differs from ReqMem
  // (ReqTRES mem=, fixed at submission) where select/cons_tres sets the memory at allocation: a
  // GPU job that asks for no memory under a DefMemPerGPU gets DefMemPerGPU x GPUs
  // (gres_select_util_job_mem_set) while its ReqMem keeps the DefMemPerCPU x CPUs default given
  // at submission (22.05.8, observed: 600M against AllocTRES mem=500M), and a per-CPU request is
  // counted on the CPUs allocated. The Slurm hook sends that memory (contrib/slurm/
  // job_submit.lua), so the history row's request is the one the daemon was asked about.
  // ReqMem where there is no AllocTRES (a job never started, older dumps without the column).
  if (std::optional<uint64_t> alloc = tres_mem_mb(r.alloc_tres)) {
    j.req_mem_bytes = alloc;
  } else if (r.usage.req_mem) {
    const ReqMem& m = *r.usage.req_mem;
    // A per-CPU request is enforced on the allocated CPUs (NCPUS), which can exceed ReqCPUS.
    std::optional<double> cpus = r.ncpus ? r.ncpus : (r.req_cpus ? r.req_cpus : tres_cpus);
    if (m.per == ReqMem::Per::kNode && !r.nodes) ++tally.one_node_assumed;
    if (m.per == ReqMem::Per::kCpu && !(cpus && *cpus > 0)) ++tally.no_cpu_count;
    j.req_mem_bytes = sacct::req_mem_total(m, r.nodes, cpus);
  } else {
    j.req_mem_bytes = tres_mem_mb(r.req_tres);
  }
  if (j.req_mem_bytes && *j.req_mem_bytes == 0) {
    j.req_mem_bytes.reset();  // 0 = no limit / whole node: no ratio to learn from
    ++tally.zero_req_mem;
  }
  j.peak_mem_bytes = r.usage.peak_mem;
  j.peak_vram_bytes = r.usage.peak_vram;
  // A gres/gpumem peak of 0 (Slurm 23.02+) is no measurement either: jobacct_gather reads it in
  // the same poll as host memory (_handle_stats calls gpu_g_usage_read for each task pid, every
  // JobAcctGatherFrequency), as NVML's per-process used memory. GPU work between samples reads 0,
  // and so does a GPU NVML cannot read per process (MIG, some models and drivers, where sites
  // document zeros), indistinguishable from a GPU left unused. No label (a jobstats summary below
  // may still give one), and no GPU-memory kill read into an OOM job's 0 (censored_for).
  if (j.peak_vram_bytes && *j.peak_vram_bytes == 0) {
    j.peak_vram_bytes.reset();
    ++(r.usage.vram_below_unit ? tally.vram_below_unit : tally.zero_vram_peak);
  }
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
  if (r.jobstats) apply_jobstats(*r.jobstats, r.gpus_beyond_request && !j.req_gpus, r, tally);
  // A host-memory peak of 0 is no measurement: jobacct_gather samples the tasks' resident memory
  // every JobAcctGatherFrequency (task=30 s by default), and a job whose every step ended before a
  // sample reads 0 (its processes held memory). No label, as a Nextflow peak_rss of 0
  // (nextflow.cpp). An OUT_OF_MEMORY job keeps it: its label is the censored cap either way, and a
  // peak left unset beside a gres/gpumem one would read as a GPU-memory kill (censored_for).
  // One printed as 0 in a unit (0.00G) is a peak above 0 too small for the unit to show: its
  // size is unknown within the unit's resolution (up to 5.12 MiB under --units=G, 5.24 GiB
  // under T), so no label either, counted apart (the cause and the remedy differ).
  if (j.peak_mem_bytes && *j.peak_mem_bytes == 0 && j.state != "OUT_OF_MEMORY") {
    j.peak_mem_bytes.reset();
    ++(r.usage.peak_below_unit ? tally.peak_below_unit : tally.zero_peak);
  }
  if (j.req_gpus && *j.req_gpus > 0 && !j.gpu_mem_bytes) {
    std::optional<std::string> type = sacct::tres_gpu_type(r.alloc_tres);
    if (!type) type = sacct::tres_gpu_type(r.req_tres);
    if (!type) type = r.gres_gpu_type;
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
  // gres/gpumem sums the job's processes over every GPU it had, and a job given more GPUs than its
  // ReqTRES states (--exclusive) may use them: its peak can pass the requested GPUs' memory, the
  // capacity its label is a share of (the count the hook sends). That share is clipped at
  // --util-cap like any label; counted so the note says why. (A jobstats label has a note of its
  // own: apply_jobstats.)
  if (r.gpus_beyond_request && !r.vram_from_jobstats && j.peak_vram_bytes && j.req_gpus &&
      *j.req_gpus > 0 && j.gpu_mem_bytes &&
      static_cast<double>(*j.peak_vram_bytes) >
          static_cast<double>(*j.req_gpus) * static_cast<double>(*j.gpu_mem_bytes)) {
    ++tally.vram_beyond_request;
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

}  // namespace peakcast::ingest::sacct_detail
