// Nextflow trace files (`-with-trace`): a header naming the columns, then one task per row,
// tab-separated by default or comma-separated; values raw (bytes, epoch ms, ms) or in Nextflow's
// human-readable form (`4 GB`, `2023-01-23 10:00:00.000`, `1m 3s`, `-` for missing).
// See docs/formats.md for the column mapping and the CACHED decision.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "peakcast/core/io.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/bounds.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {
namespace {

constexpr double kMaxMs = kMaxEpochSeconds * 1000 / 4;  // each duration alone; sums stay in range

// Delimited records with optional double quotes (a quoted field may hold the delimiter,
// newlines and "" for a quote, as a `script` column needs).
class RecordReader {
 public:
  RecordReader(std::string_view text, char delim) : text_(text), delim_(delim) {}

  // Next record; false at the end. `line` is the 1-based line the record starts on.
  bool next(std::vector<std::string>& fields, size_t& line) {
    fields.clear();
    if (pos_ >= text_.size()) return false;
    line = line_;
    std::string field;
    bool quoted = false;
    bool field_started = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (quoted) {
        if (c == '"') {
          if (pos_ < text_.size() && text_[pos_] == '"') {
            field.push_back('"');
            ++pos_;
          } else {
            quoted = false;
          }
        } else {
          if (c == '\n') ++line_;
          field.push_back(c);
        }
        continue;
      }
      if (c == '"' && !field_started) {
        quoted = true;
        field_started = true;
      } else if (c == delim_) {
        fields.push_back(std::move(field));
        field.clear();
        field_started = false;
      } else if (c == '\n') {
        ++line_;
        break;
      } else if (c == '\r' && (pos_ >= text_.size() || text_[pos_] == '\n')) {
        // part of \r\n
      } else {
        field.push_back(c);
        if (c != ' ') field_started = true;
      }
    }
    fields.push_back(std::move(field));
    unterminated_ = quoted;
    return true;
  }

  // The last record ended inside a quoted field (the rest of the text went into it).
  bool unterminated() const { return unterminated_; }

 private:
  std::string_view text_;
  char delim_;
  size_t pos_ = 0;
  size_t line_ = 1;
  bool unterminated_ = false;
};

bool missing(std::string_view v) {
  v = trim(v);
  return v.empty() || v == "-";
}

bool all_digits(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// Nextflow durations: raw milliseconds ("14400000") or human form ("4h", "1m 3s", "1d 2h 3m",
// "500ms", "2.5s"). Returns milliseconds.
std::optional<double> parse_duration_ms(std::string_view v) {
  v = trim(v);
  if (auto raw = parse_double(v)) {
    if (*raw < 0 || *raw > kMaxMs) return std::nullopt;
    return *raw;
  }
  double total = 0;
  bool any = false;
  size_t i = 0;
  while (i < v.size()) {
    while (i < v.size() && v[i] == ' ') ++i;
    if (i >= v.size()) break;
    size_t j = i;
    while (j < v.size() && (std::isdigit(static_cast<unsigned char>(v[j])) || v[j] == '.')) ++j;
    auto num = parse_double(v.substr(i, j - i));
    if (!num || *num < 0) return std::nullopt;
    size_t k = j;
    while (k < v.size() && std::isalpha(static_cast<unsigned char>(v[k]))) ++k;
    const std::string unit = lower(v.substr(j, k - j));
    double ms_per = 0;
    if (unit == "ms") ms_per = 1;
    else if (unit == "s" || unit == "sec") ms_per = 1e3;
    else if (unit == "m" || unit == "min") ms_per = 60e3;
    else if (unit == "h") ms_per = 3600e3;
    else if (unit == "d") ms_per = 86400e3;
    else return std::nullopt;
    total += *num * ms_per;
    any = true;
    i = k;
  }
  if (!any || total > kMaxMs) return std::nullopt;
  return total;
}

// Raw epoch milliseconds, or the human "2023-01-23 10:00:00.000" (read as UTC). Epoch ms, as
// recorded: tasks of one workflow often end and start within the same second.
std::optional<int64_t> parse_nf_time(std::string_view v) {
  v = trim(v);
  if (all_digits(v)) {
    if (v.size() > 15) return std::nullopt;
    auto ms = parse_int(v);
    if (!ms || *ms / 1000 > kMaxEpochSeconds / 2) return std::nullopt;
    return *ms;
  }
  auto t = parse_timestamp_ms(v);
  if (!t || *t < 0 || *t / 1000 > kMaxEpochSeconds / 2) return std::nullopt;
  return t;
}

// Nextflow prints memory as raw bytes or "4 GB" / "1.2 MB" / "512 KB" (binary multiples).
std::optional<uint64_t> parse_nf_size(std::string_view v) { return parse_size(v, 1); }

// The run name used to make task ids unique and, without --user, the user:
// trace_chipseq.csv -> "chipseq", execution_trace_2023-01-23.txt -> "execution_trace_2023-01-23".
std::string run_name_from_path(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  for (std::string_view ext : {".gz", ".csv", ".tsv", ".txt"}) {
    if (stem.size() > ext.size() && lower(stem).ends_with(ext)) stem.resize(stem.size() - ext.size());
  }
  for (std::string_view prefix : {"trace_", "trace-"}) {
    if (stem.size() > prefix.size() && lower(stem).starts_with(prefix)) stem = stem.substr(prefix.size());
  }
  if (stem.empty() || stem == "-" || lower(stem) == "trace") return "nextflow";
  return stem;
}

struct Columns {
  std::map<std::string, size_t> index;
  std::optional<size_t> find(const char* name) const {
    auto it = index.find(name);
    if (it == index.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace

Status parse_nextflow(std::string_view text, const std::string& name, const ReadOptions& o,
                      Trace& out) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  // Delimiter from the header line: tab (Nextflow's default) unless commas dominate.
  std::string_view first = text.substr(0, text.find('\n'));
  const size_t tabs = static_cast<size_t>(std::count(first.begin(), first.end(), '\t'));
  const size_t commas = static_cast<size_t>(std::count(first.begin(), first.end(), ','));
  const char delim = tabs > 0 && tabs >= commas ? '\t' : ',';

  RecordReader reader(text, delim);
  std::vector<std::string> row;
  size_t line = 0;
  Columns cols;
  bool have_header = false;
  size_t header_size = 0;
  while (!have_header && reader.next(row, line)) {
    if (row.size() == 1 && trim(row[0]).empty()) continue;
    for (size_t i = 0; i < row.size(); ++i) cols.index.emplace(lower(trim(row[i])), i);
    header_size = row.size();
    have_header = true;
  }
  if (!have_header) return Status::ok();  // empty file: no jobs
  const auto c_task = cols.find("task_id");
  const auto c_hash = cols.find("hash");
  const auto c_process = cols.find("process");
  const auto c_name = cols.find("name");
  const auto c_status = cols.find("status");
  const auto c_cpus = cols.find("cpus");
  const auto c_time = cols.find("time");
  const auto c_memory = cols.find("memory");
  const auto c_peak = cols.find("peak_rss");
  const auto c_submit = cols.find("submit");
  const auto c_start = cols.find("start");
  const auto c_complete = cols.find("complete");
  const auto c_queue = cols.find("queue");
  const auto c_script = cols.find("script");
  const auto c_user = cols.find("user");
  const auto c_duration = cols.find("duration");
  const auto c_rss = cols.find("rss");
  const auto c_rchar = cols.find("rchar");
  const auto c_realtime = cols.find("realtime");
  const auto c_exit = cols.find("exit");
  if (!c_submit || (!c_complete && !c_duration)) {
    return Status::invalid(name + ":" + std::to_string(line) +
                           ": header: a Nextflow trace needs the 'submit' column and 'complete' or "
                           "'duration' to place tasks in time");
  }

  const std::string run = run_name_from_path(name);
  const std::string default_user = o.user.empty() ? run : o.user;
  size_t cached = 0;
  size_t killed = 0;
  size_t users_from_file_name = 0;
  std::map<std::string, size_t> seen_ids;

  while (reader.next(row, line)) {
    if (row.size() == 1 && trim(row[0]).empty()) continue;
    ++out.stats.lines;
    const std::string where = name + ":" + std::to_string(line) + ": ";
    auto get = [&](const std::optional<size_t>& c) -> std::string_view {
      if (!c || *c >= row.size()) return {};
      return trim(row[*c]);
    };
    auto reject = [&](const char* field, const std::string& why) {
      return skip_line(out, o, where + field + ": " + why);
    };
    if (reader.unterminated()) {
      if (Status s = reject("row", "unterminated quoted field (runs to the end of the file)"); !s) {
        return s;
      }
      continue;
    }
    if (row.size() != header_size) {
      if (Status s = reject("row", "expected " + std::to_string(header_size) +
                                       " columns, got " + std::to_string(row.size()));
          !s) {
        return s;
      }
      continue;
    }

    const std::string status = lower(get(c_status));
    if (status == "cached") {
      // Not executed in this run: its figures repeat an earlier run's execution.
      ++cached;
      ++out.stats.ignored;
      continue;
    }

    Job job;
    // Times first: a task that cannot be placed in time is useless to the history.
    auto submit = parse_nf_time(get(c_submit));
    if (!submit) {
      Status s = reject("submit", missing(get(c_submit)) ? "missing"
                                                         : "not a timestamp: '" + std::string(get(c_submit)) + "'");
      if (!s) return s;
      continue;
    }
    std::optional<int64_t> complete;
    if (c_complete) {
      complete = parse_nf_time(get(c_complete));
      if (!complete) {
        Status s = reject("complete", missing(get(c_complete))
                                          ? "missing (task not finished)"
                                          : "not a timestamp: '" + std::string(get(c_complete)) + "'");
        if (!s) return s;
        continue;
      }
    } else {
      // Nextflow's default trace has no 'complete': duration runs from submission to completion.
      auto ms = missing(get(c_duration)) ? std::nullopt : parse_duration_ms(get(c_duration));
      if (!ms) {
        Status s = reject("duration", missing(get(c_duration))
                                          ? "missing (task not finished)"
                                          : "not a duration: '" + std::string(get(c_duration)) + "'");
        if (!s) return s;
        continue;
      }
      complete = *submit + static_cast<int64_t>(std::ceil(*ms));
    }
    // Nextflow records submit to the millisecond but start and complete often to the second
    // (".000"): a task done within the second of its submission can read as ending up to a
    // second before it. Such an end is the submission itself, as far as the trace can tell.
    if (*complete < *submit && *submit - *complete < kMsPerSecond) complete = *submit;
    if (*complete < *submit) {
      if (Status s = reject("complete", "before submit"); !s) return s;
      continue;
    }
    job.submit_ms = *submit;
    job.end_ms = *complete;
    if (!missing(get(c_start))) {
      auto start = parse_nf_time(get(c_start));
      if (!start) {
        if (Status s = reject("start", "not a timestamp: '" + std::string(get(c_start)) + "'"); !s) return s;
        continue;
      }
      job.start_ms = std::clamp(*start, job.submit_ms, job.end_ms);
    }

    std::string task_id(get(c_task));
    if (missing(task_id)) task_id = std::string(get(c_hash));
    if (missing(task_id)) task_id = "line" + std::to_string(line);
    job.job_id = run + ":" + task_id;
    // Resumed runs can repeat a task id: keep ids unique.
    if (size_t n = seen_ids[job.job_id]++; n > 0) job.job_id += "#" + std::to_string(n + 1);

    if (!missing(get(c_user))) {
      job.user = std::string(get(c_user));
    } else {
      job.user = default_user;
      if (o.user.empty()) ++users_from_file_name;
    }

    if (!missing(get(c_process))) {
      job.workload = std::string(get(c_process));
    } else if (!missing(get(c_name))) {
      // "PROC (tag)" -> "PROC"
      std::string_view n = get(c_name);
      job.workload = std::string(trim(n.substr(0, n.find(" ("))));
    }
    if (!missing(get(c_name))) job.job_name = std::string(get(c_name));
    if (!missing(get(c_queue))) job.partition = std::string(get(c_queue));
    if (c_script && *c_script < row.size() && !missing(row[*c_script])) job.script = row[*c_script];

    if (status.empty() || status == "completed" || status == "-") {
      job.state = "COMPLETED";
    } else if (status == "failed" && get(c_exit) == "137") {
      // Killed (128 + SIGKILL): on a memory-limited executor, the memory limit. nf-core retries
      // these with more memory (the retry is a new row); this attempt's label is a lower bound.
      job.state = "OUT_OF_MEMORY";
      ++killed;
    } else if (status == "failed") {
      job.state = "FAILED";
    } else if (status == "aborted") {
      job.state = "CANCELLED";
    } else {
      job.state = normalize_state(status);
    }

    if (!missing(get(c_cpus))) {
      auto cpus = parse_double(get(c_cpus));
      if (!cpus || *cpus < 0 || *cpus > kMaxCount) {
        if (Status s = reject("cpus", "not a CPU count: '" + std::string(get(c_cpus)) + "'"); !s) return s;
        continue;
      }
      job.req_cpus = *cpus;
    }
    if (!missing(get(c_time))) {
      auto ms = parse_duration_ms(get(c_time));
      if (!ms) {
        if (Status s = reject("time", "not a duration: '" + std::string(get(c_time)) + "'"); !s) return s;
        continue;
      }
      job.req_time_s = std::llround(*ms / 1000.0);
    }
    bool sizes_ok = true;
    for (auto [col, field, target] :
         {std::tuple{c_memory, "memory", &job.req_mem_bytes},
          std::tuple{c_peak, "peak_rss", &job.peak_mem_bytes},
          std::tuple{c_rss, "rss", &job.rss_bytes}, std::tuple{c_rchar, "rchar", &job.read_bytes}}) {
      if (missing(get(col))) continue;
      auto bytes = parse_nf_size(get(col));
      if (!bytes) {
        if (Status s = reject(field, "not a memory size: '" + std::string(get(col)) + "'"); !s) return s;
        sizes_ok = false;
        break;
      }
      *target = *bytes;
    }
    if (!sizes_ok) continue;
    if (!missing(get(c_realtime))) {
      auto ms = parse_duration_ms(get(c_realtime));
      if (!ms) {
        if (Status s = reject("realtime", "not a duration: '" + std::string(get(c_realtime)) + "'"); !s) return s;
        continue;
      }
      job.realtime_ms = std::llround(*ms);
    }
    out.jobs.push_back(std::move(job));
  }

  if (users_from_file_name > 0) {
    out.notes.push_back("Nextflow trace has no user column: all tasks attributed to user '" +
                        default_user + "' (from the file name; set it with --user)");
  }
  if (killed > 0) {
    out.notes.push_back(std::to_string(killed) +
                        " FAILED task(s) with exit 137 (killed) taken as OUT_OF_MEMORY: their "
                        "memory label is a lower bound (censored)");
  }
  if (cached > 0) {
    out.notes.push_back(std::to_string(cached) +
                        " CACHED tasks ignored: they were not executed in this run and repeat "
                        "an earlier run's figures");
  }
  return Status::ok();
}

}  // namespace peakcast::ingest
