// Standard Workload Format v2.2 (Parallel Workloads Archive): `;` header comments, then one job
// per line with 18 whitespace-separated numeric fields; -1 means unknown. See docs/formats.md.
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "peakcast/core/io.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/jsonl.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

constexpr int kSwfFields = 18;
// Each time field alone must stay well inside the canonical bound, so sums cannot overflow.
constexpr double kMaxSeconds = kMaxEpochSeconds / 4;

// 1-based field numbers of the SWF v2.2 definition, named as the standard names them.
enum SwfField : int {
  kJobNumber = 1, kSubmitTime = 2, kWaitTime = 3, kRunTime = 4, kAllocatedProcs = 5,
  kAverageCpuTime = 6, kUsedMemory = 7, kRequestedProcs = 8, kRequestedTime = 9,
  kRequestedMemory = 10, kStatus = 11, kUserId = 12, kGroupId = 13, kExecutable = 14,
  kQueue = 15, kPartition = 16, kPrecedingJob = 17, kThinkTime = 18,
};

const char* field_label(int f) {
  static const char* kLabels[] = {
      "",                          "field 1 (job number)",      "field 2 (submit time)",
      "field 3 (wait time)",       "field 4 (run time)",        "field 5 (allocated processors)",
      "field 6 (average CPU time)", "field 7 (used memory)",    "field 8 (requested processors)",
      "field 9 (requested time)",  "field 10 (requested memory)", "field 11 (status)",
      "field 12 (user id)",        "field 13 (group id)",       "field 14 (executable number)",
      "field 15 (queue)",          "field 16 (partition)",      "field 17 (preceding job)",
      "field 18 (think time)"};
  return kLabels[f];
}

// SWF status codes: 0 failed, 1 completed, 2 partial execution to be continued, 3 last partial
// execution (completed), 4 partial execution failed, 5 cancelled, -1 unknown.
std::string swf_state(double status) {
  if (!(status >= -1 && status <= 5)) return "UNKNOWN";
  switch (static_cast<int>(status)) {
    case 0: return "FAILED";
    case 1: return "COMPLETED";
    case 2: return "REQUEUED";
    case 3: return "COMPLETED";
    case 4: return "FAILED";
    case 5: return "CANCELLED";
    default: return "UNKNOWN";
  }
}

// Identifiers are integers in SWF; a huge or fractional one is still printed, never UB.
std::string int_string(double v) {
  if (std::fabs(v) < 9e15) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

struct Header {
  int64_t unix_start = 0;
  bool has_unix_start = false;
  std::optional<int64_t> time_zone;
  std::map<int64_t, std::string> queues;  // number -> name
};

// "; Key: value" lines. Only the keys that change how jobs are read are kept.
void read_header_line(std::string_view line, Header& h) {
  line = trim(line.substr(1));
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;
  std::string_view key = trim(line.substr(0, colon));
  std::string_view value = trim(line.substr(colon + 1));
  if (key == "UnixStartTime") {
    if (auto v = parse_int(value); v && *v >= 0 && *v < kMaxEpochSeconds / 4) {
      h.unix_start = *v;
      h.has_unix_start = true;
    }
  } else if (key == "TimeZone") {
    h.time_zone = parse_int(value);
  } else if (key == "Queue") {
    // "Queue:  2  production"
    size_t sp = value.find_first_of(" \t");
    if (sp == std::string_view::npos) return;
    auto num = parse_int(value.substr(0, sp));
    std::string_view name = trim(value.substr(sp));
    if (num && !name.empty()) h.queues[*num] = std::string(name);
  }
}

}  // namespace

Status parse_swf(std::string_view text, const std::string& name, const ReadOptions& o, Trace& out) {
  Header header;
  size_t unknown_wait = 0;
  size_t no_processors = 0;
  const std::vector<std::string_view> lines = split_lines(text);
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    std::string_view line = trim(lines[ln]);
    if (line.empty()) continue;
    if (line.front() == ';') {
      read_header_line(line, header);
      continue;
    }
    ++out.stats.lines;
    const std::string where = name + ":" + std::to_string(ln + 1) + ": ";

    std::array<double, kSwfFields + 1> f{};  // 1-based
    int count = 0;
    std::string bad;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i >= line.size()) break;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      ++count;
      if (count <= kSwfFields) {
        std::string_view tok = line.substr(i, j - i);
        auto v = parse_double(tok);
        if (!v && bad.empty()) {
          bad = std::string(field_label(count)) + ": not a number: '" +
                std::string(tok.substr(0, 40)) + "'";
        }
        f[count] = v.value_or(-1);
      }
      i = j;
    }
    if (count != kSwfFields) {
      Status s = skip_line(out, o, where + "fields: expected 18 whitespace-separated fields, got " +
                                       std::to_string(count));
      if (!s) return s;
      continue;
    }
    if (!bad.empty()) {
      if (Status s = skip_line(out, o, where + bad); !s) return s;
      continue;
    }
    auto reject = [&](int field, const std::string& why) {
      return skip_line(out, o, where + field_label(field) + ": " + why);
    };
    // Times that must be known to place the job on the timeline.
    if (f[kSubmitTime] < 0) {
      if (Status s = reject(kSubmitTime, "unknown (-1): the job cannot be placed in time"); !s) return s;
      continue;
    }
    if (f[kRunTime] < 0) {
      if (Status s = reject(kRunTime, "unknown (-1): the job's end time is unknown"); !s) return s;
      continue;
    }
    bool range_ok = true;
    for (int k : {kSubmitTime, kWaitTime, kRunTime, kRequestedTime}) {
      if (f[k] > kMaxSeconds) {
        if (Status s = reject(k, "out of range (more than 2.5e10 seconds)"); !s) return s;
        range_ok = false;
        break;
      }
    }
    if (!range_ok) continue;

    if (f[kRequestedProcs] > kMaxCount || f[kAllocatedProcs] > kMaxCount) {
      const int k = f[kRequestedProcs] > kMaxCount ? kRequestedProcs : kAllocatedProcs;
      if (Status s = reject(k, "out of range (more than 1e7 processors)"); !s) return s;
      continue;
    }

    Job job;
    job.job_id = int_string(f[kJobNumber]);
    job.user = f[kUserId] >= 0 ? int_string(f[kUserId]) : std::string();
    job.submit_ms = header.unix_start * kMsPerSecond + ms_from_seconds(f[kSubmitTime]);
    const int64_t run = ms_from_seconds(f[kRunTime]);
    if (f[kWaitTime] >= 0) {
      job.start_ms = job.submit_ms + ms_from_seconds(f[kWaitTime]);
      job.end_ms = *job.start_ms + run;
    } else {
      // Wait unknown: the end is at least submit + run time; no start time.
      job.end_ms = job.submit_ms + run;
      ++unknown_wait;
    }
    job.state = swf_state(f[kStatus]);
    if (f[kRequestedProcs] > 0) {
      job.req_cpus = f[kRequestedProcs];
    } else if (f[kAllocatedProcs] > 0) {
      job.req_cpus = f[kAllocatedProcs];
    }
    if (f[kRequestedTime] > 0) job.req_time_s = std::llround(f[kRequestedTime]);
    if (f[kExecutable] >= 0) job.workload = int_string(f[kExecutable]);
    if (f[kGroupId] >= 0) job.account = int_string(f[kGroupId]);
    if (f[kQueue] >= 0 && f[kQueue] < 9e15) {
      auto q = header.queues.find(static_cast<int64_t>(f[kQueue]));
      job.partition = q != header.queues.end() ? q->second : int_string(f[kQueue]);
    }

    // Memory fields are KB per processor. Scale request and use by the same processor count, so
    // the label is exactly used / requested whatever the count.
    const double procs = f[kAllocatedProcs] > 0   ? f[kAllocatedProcs]
                         : f[kRequestedProcs] > 0 ? f[kRequestedProcs]
                                                  : 0.0;
    const bool has_memory = f[kUsedMemory] >= 0 || f[kRequestedMemory] >= 0;
    if (procs > 0) {
      auto bytes = [&](double kb_per_proc) { return kb_per_proc * 1024.0 * procs; };
      bool mem_ok = true;
      for (int k : {kUsedMemory, kRequestedMemory}) {
        if (f[k] >= 0 && bytes(f[k]) > kMaxBytes) {
          if (Status s = reject(k, "out of range (more than 2^64 bytes for the job)"); !s) return s;
          mem_ok = false;
          break;
        }
      }
      if (!mem_ok) continue;
      if (f[kUsedMemory] >= 0) job.peak_mem_bytes = static_cast<uint64_t>(std::round(bytes(f[kUsedMemory])));
      if (f[kRequestedMemory] >= 0) {
        job.req_mem_bytes = static_cast<uint64_t>(std::round(bytes(f[kRequestedMemory])));
      }
    } else if (has_memory) {
      ++no_processors;
    }
    out.jobs.push_back(std::move(job));
  }

  if (!header.has_unix_start && out.stats.lines > 0) {
    out.notes.push_back("SWF header has no UnixStartTime: times are seconds from the log start");
  }
  if (header.time_zone) {
    out.notes.push_back("SWF times are UTC epoch seconds (UnixStartTime + offset); the log's local "
                        "time zone is UTC" + std::string(*header.time_zone >= 0 ? "+" : "") +
                        std::to_string(*header.time_zone / 3600) + "h");
  }
  if (unknown_wait > 0) {
    out.notes.push_back(std::to_string(unknown_wait) +
                        " SWF jobs have an unknown wait time: no start time, end = submit + run time");
  }
  if (no_processors > 0) {
    out.notes.push_back(std::to_string(no_processors) +
                        " SWF jobs have memory figures but no processor count: memory left unknown");
  }
  return Status::ok();
}

}  // namespace peakcast::ingest
