// Canonical JSONL (docs/formats.md): one job object per line.
#include "peakcast/ingest/jsonl.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "peakcast/core/io.h"
#include "peakcast/ingest/json_line.h"
#include "peakcast/ingest/reader.h"
#include "reader_internal.h"

namespace peakcast::ingest {
namespace {

using nlohmann::json;

constexpr double kMaxTime = kMaxEpochSeconds;

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "an unexpected value";
  }
}

Status type_error(std::string_view field, std::string_view want, const json& v) {
  return Status::invalid(std::string(field) + ": expected " + std::string(want) + ", got " +
                         type_name(v));
}

// Reads a number field as double (integers of any width included).
Result<double> number(std::string_view field, const json& v) {
  if (!v.is_number()) return type_error(field, "a number", v);
  double d = v.get<double>();
  if (!std::isfinite(d)) return Status::invalid(std::string(field) + ": not a finite number");
  return d;
}

// Epoch seconds in the schema (fractions allowed) -> epoch ms, rounded to the nearest ms.
Result<int64_t> epoch_ms(std::string_view field, const json& v) {
  Result<double> d = number(field, v);
  if (!d) return d.status();
  if (*d < 0 || *d > kMaxTime) {
    return Status::invalid(std::string(field) + ": out of range for epoch seconds (" + v.dump() + ")");
  }
  if (v.is_number_integer()) return v.get<int64_t>() * kMsPerSecond;
  return ms_from_seconds(*d);
}

// Epoch ms -> the schema's epoch seconds: an integer when whole, else fractional seconds.
template <typename J>
void set_epoch_seconds(J& slot, int64_t ms) {
  if (ms % kMsPerSecond == 0) {
    slot = ms / kMsPerSecond;
  } else {
    slot = seconds_from_ms(ms);
  }
}

std::string fmt_seconds(int64_t ms) {
  json v;
  set_epoch_seconds(v, ms);
  return v.dump();
}

Result<uint64_t> byte_count(std::string_view field, const json& v) {
  Result<double> d = number(field, v);
  if (!d) return d.status();
  if (*d < 0) return Status::invalid(std::string(field) + ": negative (" + v.dump() + ")");
  if (*d > kMaxBytes) return Status::invalid(std::string(field) + ": out of range (" + v.dump() + ")");
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) return static_cast<uint64_t>(v.get<int64_t>());
  return static_cast<uint64_t>(std::round(*d));
}

Result<double> positive_count(std::string_view field, const json& v, bool integral) {
  Result<double> d = number(field, v);
  if (!d) return d.status();
  if (*d < 0) return Status::invalid(std::string(field) + ": negative (" + v.dump() + ")");
  if (*d > kMaxCount) return Status::invalid(std::string(field) + ": out of range (" + v.dump() + ")");
  if (integral && *d != std::floor(*d)) {
    return Status::invalid(std::string(field) + ": expected a whole number, got " + v.dump());
  }
  return *d;
}

Result<std::string> string_field(std::string_view field, const json& v) {
  if (!v.is_string()) return type_error(field, "a string", v);
  return v.get<std::string>();
}

// The keys of the canonical schema; anything else (except x_*) is an error.
enum class Key {
  kJobId, kUser, kSubmitTime, kStartTime, kEndTime, kState, kReqCpus, kReqMemBytes, kReqGpus,
  kReqTimeS, kGpuMemBytes, kScript, kWorkload, kJobName, kPartition, kAccount, kInputBytes,
  kPeakMemBytes, kPeakVramBytes, kAnswerId,
};
constexpr std::pair<std::string_view, Key> kKeys[] = {
    {"job_id", Key::kJobId},           {"user", Key::kUser},
    {"submit_time", Key::kSubmitTime}, {"start_time", Key::kStartTime},
    {"end_time", Key::kEndTime},       {"state", Key::kState},
    {"req_cpus", Key::kReqCpus},       {"req_mem_bytes", Key::kReqMemBytes},
    {"req_gpus", Key::kReqGpus},       {"req_time_s", Key::kReqTimeS},
    {"gpu_mem_bytes", Key::kGpuMemBytes}, {"script", Key::kScript},
    {"workload", Key::kWorkload},      {"job_name", Key::kJobName},
    {"partition", Key::kPartition},    {"account", Key::kAccount},
    {"input_bytes", Key::kInputBytes}, {"peak_mem_bytes", Key::kPeakMemBytes},
    {"peak_vram_bytes", Key::kPeakVramBytes}, {"answer_id", Key::kAnswerId},
};

std::string valid_keys() {
  std::string s;
  for (auto [name, key] : kKeys) {
    if (!s.empty()) s += ", ";
    s += name;
  }
  return s;
}

// Requested walltime in seconds, rounded to whole seconds.
Result<int64_t> walltime_s(std::string_view field, const json& v) {
  Result<double> d = number(field, v);
  if (!d) return d.status();
  if (*d < 0 || *d > kMaxTime) {
    return Status::invalid(std::string(field) + ": out of range (" + v.dump() + ")");
  }
  return static_cast<int64_t>(std::llround(*d));
}

// Stores a read value into its Job member, or passes the reader's error on.
template <typename T, typename Slot>
Status store(Result<T> r, Slot& slot) {
  if (!r) return r.status();
  slot = std::move(*r);
  return Status::ok();
}

Status set_field(Job& job, Key key, std::string_view field, const json& v, bool& has_end) {
  switch (key) {
    case Key::kJobId: {
      auto s = string_field(field, v);
      if (s && s->empty()) return Status::invalid("job_id: empty");
      return store(std::move(s), job.job_id);
    }
    case Key::kUser: return store(string_field(field, v), job.user);
    case Key::kSubmitTime: return store(epoch_ms(field, v), job.submit_ms);
    case Key::kStartTime: return store(epoch_ms(field, v), job.start_ms);
    case Key::kEndTime: {
      Status s = store(epoch_ms(field, v), job.end_ms);
      if (s) has_end = true;
      return s;
    }
    case Key::kState: {
      // Absent (or null) means COMPLETED, as the schema says; a state given as "" says nothing
      // about how the job ended, and normalize_state() would read it as COMPLETED.
      auto s = string_field(field, v);
      if (!s) return s.status();
      if (trim(*s).empty()) return Status::invalid("state: empty");
      job.state = normalize_state(*s);
      return Status::ok();
    }
    case Key::kReqCpus: return store(positive_count(field, v, false), job.req_cpus);
    case Key::kReqGpus: {
      auto d = positive_count(field, v, true);
      if (!d) return d.status();
      job.req_gpus = static_cast<int>(*d);
      return Status::ok();
    }
    case Key::kReqTimeS: return store(walltime_s(field, v), job.req_time_s);
    case Key::kReqMemBytes: return store(byte_count(field, v), job.req_mem_bytes);
    case Key::kGpuMemBytes: return store(byte_count(field, v), job.gpu_mem_bytes);
    case Key::kInputBytes: return store(byte_count(field, v), job.input_bytes);
    case Key::kPeakMemBytes: return store(byte_count(field, v), job.peak_mem_bytes);
    case Key::kPeakVramBytes: return store(byte_count(field, v), job.peak_vram_bytes);
    case Key::kScript: return store(string_field(field, v), job.script);
    case Key::kWorkload: return store(string_field(field, v), job.workload);
    case Key::kJobName: return store(string_field(field, v), job.job_name);
    case Key::kPartition: return store(string_field(field, v), job.partition);
    case Key::kAccount: return store(string_field(field, v), job.account);
    case Key::kAnswerId: return store(string_field(field, v), job.answer_id);
  }
  return Status::internal("set_field: unhandled key");
}

bool is_required(Key key, bool require_outcome) {
  return key == Key::kJobId || key == Key::kUser || key == Key::kSubmitTime ||
         (require_outcome && key == Key::kEndTime);
}

// Fills either json or ordered_json, so the line writer keeps the schema's key order.
template <typename J>
void fill(J& out, const Job& job) {
  out["job_id"] = job.job_id;
  out["user"] = job.user;
  set_epoch_seconds(out["submit_time"], job.submit_ms);
  if (job.start_ms) set_epoch_seconds(out["start_time"], *job.start_ms);
  set_epoch_seconds(out["end_time"], job.end_ms);
  out["state"] = job.state;
  if (job.req_cpus) {
    const double c = *job.req_cpus;
    if (c == std::floor(c) && std::fabs(c) < 9e15) {
      out["req_cpus"] = static_cast<int64_t>(c);
    } else {
      out["req_cpus"] = c;
    }
  }
  if (job.req_mem_bytes) out["req_mem_bytes"] = *job.req_mem_bytes;
  if (job.req_gpus) out["req_gpus"] = *job.req_gpus;
  if (job.req_time_s) out["req_time_s"] = *job.req_time_s;
  if (job.gpu_mem_bytes) out["gpu_mem_bytes"] = *job.gpu_mem_bytes;
  if (!job.partition.empty()) out["partition"] = job.partition;
  if (!job.account.empty()) out["account"] = job.account;
  if (!job.job_name.empty()) out["job_name"] = job.job_name;
  if (job.workload) out["workload"] = *job.workload;
  if (job.script) out["script"] = *job.script;
  if (job.input_bytes) out["input_bytes"] = *job.input_bytes;
  if (!job.answer_id.empty()) out["answer_id"] = job.answer_id;
  if (job.peak_mem_bytes) {
    out["peak_mem_bytes"] = *job.peak_mem_bytes;
  } else {
    out["peak_mem_bytes"] = nullptr;
  }
  if (job.peak_vram_bytes) {
    out["peak_vram_bytes"] = *job.peak_vram_bytes;
  } else {
    out["peak_vram_bytes"] = nullptr;
  }
}

}  // namespace

Result<Job> job_from_json(const nlohmann::json& obj, const JobParseOptions& o) {
  if (!obj.is_object()) {
    return Status::invalid(std::string("record: expected a JSON object, got ") + type_name(obj));
  }
  Job job;
  bool seen[std::size(kKeys)] = {};
  bool has_end = false;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& field = it.key();
    if (field.starts_with("x_")) continue;
    size_t k = 0;
    while (k < std::size(kKeys) && kKeys[k].first != field) ++k;
    if (k == std::size(kKeys)) {
      return Status::invalid(field + ": unknown key (valid: " + valid_keys() +
                             "; extension keys must start with x_)");
    }
    seen[k] = true;
    const Key key = kKeys[k].second;
    if (it.value().is_null()) {
      if (is_required(key, o.require_outcome)) return Status::invalid(field + ": required, got null");
      seen[k] = false;
      continue;
    }
    if (Status s = set_field(job, key, field, it.value(), has_end); !s) return s;
  }
  for (size_t k = 0; k < std::size(kKeys); ++k) {
    if (!seen[k] && is_required(kKeys[k].second, o.require_outcome)) {
      return Status::invalid(std::string(kKeys[k].first) + ": required field missing");
    }
  }
  if (has_end && job.end_ms < job.submit_ms) {
    return Status::invalid("end_time: before submit_time (" + fmt_seconds(job.end_ms) + " < " +
                           fmt_seconds(job.submit_ms) + ")");
  }
  if (job.start_ms && has_end && *job.start_ms > job.end_ms) {
    return Status::invalid("start_time: after end_time (" + fmt_seconds(*job.start_ms) +
                           " > " + fmt_seconds(job.end_ms) + ")");
  }
  return job;
}

nlohmann::json job_to_json(const Job& job) {
  json out = json::object();
  fill(out, job);
  return out;
}

std::string job_to_jsonl_line(const Job& job) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  fill(out, job);
  // Scripts from old traces may hold invalid UTF-8: replace it rather than throw.
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

Status parse_jsonl(std::string_view text, const std::string& name, const ReadOptions& o, Trace& out) {
  // `sacct --json` is one pretty-printed object: read as JSONL, every line would be skipped.
  if (Status s = refuse_slurm_document(text, name); !s) return s;
  const std::vector<std::string_view> lines = split_lines(text);
  size_t zero_peaks = 0;
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    read_progress(o, ln, lines.size());
    std::string_view line = trim(lines[ln]);
    if (ln == 0 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
    if (line.empty()) continue;
    ++out.stats.lines;
    const std::string where = name + ":" + std::to_string(ln + 1) + ": ";
    Result<json> obj = parse_json_line(line);
    if (!obj) {
      if (Status s = skip_line(out, o, where + obj.status().message()); !s) return s;
      continue;
    }
    Result<Job> job = job_from_json(*obj);
    if (!job) {
      if (Status s = skip_line(out, o, where + job.status().message()); !s) return s;
      continue;
    }
    // A host-memory peak of 0 is no measurement (a job that ran held resident memory): a
    // converted sacct MaxRSS or Nextflow peak_rss whose sampler caught nothing. No label, as
    // those readers leave it; the schema's "not measured" is null. A GPU peak of 0 stays a
    // label: a GPU the job never touched reads 0. Only traces: /v1/complete reads its body as
    // it is (job_from_json).
    if (job->peak_mem_bytes && *job->peak_mem_bytes == 0) {
      job->peak_mem_bytes.reset();
      ++zero_peaks;
    }
    out.jobs.push_back(std::move(*job));
  }
  read_progress(o, lines.size(), lines.size());
  if (zero_peaks > 0) {
    out.notes.push_back(unmeasured_memory_note(
        {{"peak_mem_bytes", zero_peaks}},
        "a job that ran held memory; null is the schema's \"not measured\""));
  }
  return Status::ok();
}

}  // namespace peakcast::ingest
