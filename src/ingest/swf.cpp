// Standard Workload Format v2.2 (Parallel Workloads Archive): `;` header comments, then one job
// per line with 18 whitespace-separated numeric fields; -1 means unknown. See docs/formats.md.
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "peakcast/core/io.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/bounds.h"
#include "peakcast/ingest/reader.h"
#include "reader_internal.h"

namespace peakcast::ingest {
namespace {

constexpr int kSwfFields = 18;
constexpr int kMinSwfFields = 15;  // through field 15 (queue), the last one read
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
  return fmt::format("{:.0f}", v);
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

using Fields = std::array<double, kSwfFields + 1>;  // 1-based, as SWF numbers them

// One data line split into its numbers; `bad` names the first that is not a number.
struct Row {
  Fields f{};
  int count = 0;
  std::string bad;
};

Row split_row(std::string_view line) {
  Row row;
  row.f.fill(-1);  // trailing fields a log dropped are unknown
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    ++row.count;
    if (row.count <= kSwfFields) {
      std::string_view tok = line.substr(i, j - i);
      auto v = parse_double(tok);
      if (!v && row.bad.empty()) {
        row.bad = std::string(field_label(row.count)) + ": not a number: '" +
                  std::string(tok.substr(0, 40)) + "'";
      }
      row.f[row.count] = v.value_or(-1);
    }
    i = j;
  }
  return row;
}

std::string field_error(int field, const std::string& why) {
  return std::string(field_label(field)) + ": " + why;
}

// Why a row cannot be a job (shape, times, processor counts), or nullopt.
std::optional<std::string> check_row(const Row& row) {
  // Some logs drop trailing fields; the reader reads fields 1 to 15 (queue) and nothing after,
  // so 15 to 18 fields make a job, as format detection (reader.cpp) takes them.
  if (row.count < kMinSwfFields || row.count > kSwfFields) {
    return "fields: expected 18 whitespace-separated fields (15 at least, trailing ones dropped), got " +
           std::to_string(row.count);
  }
  if (!row.bad.empty()) return row.bad;
  const Fields& f = row.f;
  // -1 is the standard's unknown; another negative (a used memory of -7) is no value, and read as
  // unknown it would cost the job its label, request or start without a word.
  for (int k = kJobNumber; k <= kQueue; ++k) {
    if (f[k] < 0 && f[k] != -1) {
      return field_error(k, fmt::format("negative ({}); the standard's unknown is -1", f[k]));
    }
  }
  // Times that must be known to place the job on the timeline.
  if (f[kSubmitTime] < 0) return field_error(kSubmitTime, "unknown (-1): the job cannot be placed in time");
  if (f[kRunTime] < 0) return field_error(kRunTime, "unknown (-1): the job's end time is unknown");
  for (int k : {kSubmitTime, kWaitTime, kRunTime, kRequestedTime}) {
    if (f[k] > kMaxSeconds) return field_error(k, "out of range (more than 2.5e10 seconds)");
  }
  if (f[kRequestedProcs] > kMaxCount || f[kAllocatedProcs] > kMaxCount) {
    const int k = f[kRequestedProcs] > kMaxCount ? kRequestedProcs : kAllocatedProcs;
    return field_error(k, "out of range (more than 1e7 processors)");
  }
  return std::nullopt;
}

// Counts behind the reader's notes.
struct SwfCounts {
  size_t unknown_wait = 0;
  size_t unknown_wait_peaks = 0;  // of them with a memory peak, left out
  size_t no_processors = 0;
  size_t zero_used = 0;  // field 7 of 0: not measured, no label (read_memory)
};

// Memory fields are KB per processor. Scale request and use by the same processor count, so the
// label is exactly used / requested whatever the count. Returns the field error, if any.
std::optional<std::string> read_memory(const Fields& f, Job& job, SwfCounts& counts) {
  const double procs = f[kAllocatedProcs] > 0   ? f[kAllocatedProcs]
                       : f[kRequestedProcs] > 0 ? f[kRequestedProcs]
                                                : 0.0;
  if (procs <= 0) {
    if (f[kUsedMemory] >= 0 || f[kRequestedMemory] >= 0) ++counts.no_processors;
    return std::nullopt;
  }
  auto bytes = [&](double kb_per_proc) { return kb_per_proc * 1024.0 * procs; };
  for (int k : {kUsedMemory, kRequestedMemory}) {
    if (f[k] >= 0 && bytes(f[k]) > kMaxBytes) {
      return field_error(k, "out of range (more than 2^64 bytes for the job)");
    }
  }
  // A used memory of 0 is no measurement: a job that ran held resident memory, so 0 is a log
  // that recorded none for it (the standard's unknown is -1, but the 0 is no value either; unlike
  // a run time of 0, which the standard defines as under half a second). No label, as a Nextflow
  // peak_rss of 0; the job keeps its request and its place in the split.
  if (f[kUsedMemory] >= 0) {
    const uint64_t used = static_cast<uint64_t>(std::round(bytes(f[kUsedMemory])));
    if (used > 0) {
      job.peak_mem_bytes = used;
    } else {
      ++counts.zero_used;
    }
  }
  if (f[kRequestedMemory] >= 0) {
    job.req_mem_bytes = static_cast<uint64_t>(std::round(bytes(f[kRequestedMemory])));
  }
  return std::nullopt;
}

// A checked row as a job (times, request, identity, partition).
Job job_from_row(const Fields& f, const Header& header, SwfCounts& counts) {
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
    ++counts.unknown_wait;
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
  return job;
}

void add_notes(const Header& header, const SwfCounts& counts, Trace& out) {
  if (!header.has_unix_start && out.stats.lines > 0) {
    out.notes.push_back("SWF header has no UnixStartTime: times are seconds from the log start");
  }
  if (header.time_zone) {
    out.notes.push_back("SWF times are UTC epoch seconds (UnixStartTime + offset); the log's local "
                        "time zone is UTC" + std::string(*header.time_zone >= 0 ? "+" : "") +
                        std::to_string(*header.time_zone / 3600) + "h");
  }
  if (counts.unknown_wait > 0) {
    std::string note = std::to_string(counts.unknown_wait) +
                       " SWF jobs have an unknown wait time: no start time, end = submit + run time";
    if (counts.unknown_wait_peaks > 0) {
      note += "; their end is not known, so the memory peaks of " +
              std::to_string(counts.unknown_wait_peaks) +
              " of them are left out (as history they could be seen before they were known)";
    }
    out.notes.push_back(note);
  }
  if (counts.zero_used > 0) {
    out.notes.push_back(unmeasured_memory_note(
        {{"used memory (SWF field 7)", counts.zero_used}},
        "a job that ran held memory, so 0 is none recorded (the standard's unknown is -1)"));
  }
  if (counts.no_processors > 0) {
    out.notes.push_back(std::to_string(counts.no_processors) +
                        " SWF jobs have memory figures but no processor count: memory left unknown");
  }
}

}  // namespace

Status parse_swf(std::string_view text, const std::string& name, const ReadOptions& o, Trace& out) {
  if (Status s = refuse_slurm_document(text, name); !s) return s;
  Header header;
  SwfCounts counts;
  // A UTF-8 byte-order mark (as the other readers do): left in, it hid a first header line
  // (`; UnixStartTime: ...`), and every time fell back to seconds from 1970.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const std::vector<std::string_view> lines = split_lines(text);
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    read_progress(o, ln, lines.size());
    std::string_view line = trim(lines[ln]);
    if (line.empty()) continue;
    if (line.front() == ';') {
      read_header_line(line, header);
      continue;
    }
    ++out.stats.lines;
    const Row row = split_row(line);
    std::optional<std::string> why = check_row(row);
    if (!why) {
      Job job = job_from_row(row.f, header, counts);
      why = read_memory(row.f, job, counts);
      // Wait unknown: the end is only known to be at or after submit + run time, so the peak
      // cannot be placed in time. Kept, it would be history for jobs submitted before it was
      // known; the job stays (its request, its place in the split) without a label.
      if (!why && !job.start_ms && job.peak_mem_bytes) {
        job.peak_mem_bytes.reset();
        ++counts.unknown_wait_peaks;
      }
      if (!why) out.jobs.push_back(std::move(job));
    }
    if (why) {
      if (Status s = skip_line(out, o, name + ":" + std::to_string(ln + 1) + ": " + *why); !s) return s;
    }
  }
  read_progress(o, lines.size(), lines.size());
  add_notes(header, counts, out);
  return Status::ok();
}

}  // namespace peakcast::ingest
