// Nextflow trace files (`-with-trace`): a header naming the columns, then one task per row,
// tab-separated by default or comma-separated; values raw (bytes, epoch ms, ms) or in Nextflow's
// human-readable form (`4 GB`, `2023-01-23 10:00:00.000`, `1m 3s`, `-` for missing).
// See docs/formats.md for the column mapping and the CACHED decision.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "nextflow_internal.h"
#include "peakcast/core/io.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/bounds.h"
#include "peakcast/ingest/reader.h"
#include "reader_internal.h"

namespace peakcast::ingest {
namespace {

using nextflow_detail::Duration;
using nextflow_detail::Instants;
using nextflow_detail::parse_duration;
using nextflow_detail::parse_size;
using nextflow_detail::parse_time;
using nextflow_detail::rounded_size;
using nextflow_detail::settle;
using nextflow_detail::settle_start;
using nextflow_detail::size_too_large;
using nextflow_detail::SubmitComplete;

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
  char delimiter() const { return delim_; }

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

// The columns a trace may name, found from its header (the first of a repeated name wins);
// any may be absent.
struct Columns {
  std::optional<size_t> task, hash, process, tag, name, status, cpus, time, memory, peak, submit,
      start, complete, queue, script, user, duration, rss, rchar, realtime, exit;

  // How many of these the header names.
  size_t named() const {
    size_t n = 0;
    for (const auto* col : {&task, &hash, &process, &tag, &name, &status, &cpus, &time, &memory, &peak,
                            &submit, &start, &complete, &queue, &script, &user, &duration, &rss,
                            &rchar, &realtime, &exit}) {
      n += col->has_value() ? 1 : 0;
    }
    return n;
  }
};

// The columns that place a task in time: submit, and complete or duration. A narrower
// trace.fields may leave them out; the tasks are then read without times.
bool places_in_time(const Columns& c) { return c.submit && (c.complete || c.duration); }

Columns find_columns(const std::vector<std::string>& header) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < header.size(); ++i) index.emplace(lower(trim(header[i])), i);
  auto find = [&](const char* name) -> std::optional<size_t> {
    auto it = index.find(name);
    if (it == index.end()) return std::nullopt;
    return it->second;
  };
  Columns c;
  c.task = find("task_id");
  c.hash = find("hash");
  c.process = find("process");
  c.tag = find("tag");
  c.name = find("name");
  c.status = find("status");
  c.cpus = find("cpus");
  c.time = find("time");
  c.memory = find("memory");
  c.peak = find("peak_rss");
  c.submit = find("submit");
  c.start = find("start");
  c.complete = find("complete");
  c.queue = find("queue");
  c.script = find("script");
  c.user = find("user");
  c.duration = find("duration");
  c.rss = find("rss");
  c.rchar = find("rchar");
  c.realtime = find("realtime");
  c.exit = find("exit");
  return c;
}

// The columns a header line names when split on `delim`.
size_t named_columns(std::string_view header, char delim) {
  std::vector<std::string> names;
  for (std::string_view n : split(header, delim)) names.emplace_back(n);
  return find_columns(names).named();
}

// Delimiter from the header line, the first that is not blank (next_record() skips blank lines
// to it): of tab (Nextflow's default), comma and semicolon (trace.sep may be any), the one that
// splits it into the most trace column names; on a tie, tab unless commas dominate.
char header_delimiter(std::string_view text) {
  std::string_view first;
  while (!text.empty() && trim(first).empty()) {
    const size_t nl = text.find('\n');
    first = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  const size_t tabs = static_cast<size_t>(std::count(first.begin(), first.end(), '\t'));
  const size_t commas = static_cast<size_t>(std::count(first.begin(), first.end(), ','));
  // Tried in the order that breaks a tie: the separator the header's characters suggest, then
  // the other of tab and comma, then semicolon; each header split once.
  const char guess = tabs > 0 && tabs >= commas ? '\t' : ',';
  char best = guess;  // when no split names a column
  size_t best_named = 0;
  for (char delim : {guess, guess == '\t' ? ',' : '\t', ';'}) {
    if (const size_t n = named_columns(first, delim); n > best_named) {
      best = delim;
      best_named = n;
    }
  }
  return best;
}

// The next record that is not a blank line; false at the end.
bool next_record(RecordReader& reader, std::vector<std::string>& row, size_t& line) {
  while (reader.next(row, line)) {
    if (!(row.size() == 1 && trim(row[0]).empty())) return true;
  }
  return false;
}

// A rejected field of a row: its name as the message gives it, and why.
struct FieldError {
  const char* field;
  std::string why;
};

// One task row, read through the header's columns.
struct TaskRow {
  const std::vector<std::string>& fields;
  const Columns& c;
  // The trimmed value; empty when the column is absent.
  std::string_view get(const std::optional<size_t>& col) const {
    if (!col || *col >= fields.size()) return {};
    return trim(fields[*col]);
  }
};

std::string shown(std::string_view v) { return "'" + std::string(v) + "'"; }

// What a row adds to its trace's notes, counted once the row is kept.
struct RowTally {
  size_t unread = 0;                  // malformed values left unset (sizey_rows)
  std::vector<const char*> rounded;   // columns whose value Nextflow rounded (its human form)
  std::vector<const char*> unmeasured;  // peak_rss or rss of 0, left unset
};

// A time column's instants; a missing value is `missing_why`.
std::optional<FieldError> read_instants(const TaskRow& row, const std::optional<size_t>& col,
                                        const char* field, const char* missing_why,
                                        const TimeZone* zone, Instants& out) {
  if (missing(row.get(col))) return FieldError{field, missing_why};
  Result<Instants> t = parse_time(row.get(col), zone);
  if (!t) return FieldError{field, t.status().message()};
  out = *t;
  return std::nullopt;
}

// When the task ran: submit, complete (or submit + duration), start. A wall-clock time in the
// hour `zone`'s clocks showed twice is settled by the duration, and the start by the realtime
// (settle, settle_start).
std::optional<FieldError> read_times(const TaskRow& row, const TimeZone* zone,
                                     std::optional<int64_t> latest_complete, Job& job,
                                     RowTally& tally) {
  const Columns& c = row.c;
  // Times first: a task that cannot be placed in time is useless to the history.
  Instants submit;
  if (auto e = read_instants(row, c.submit, "submit", "missing", zone, submit)) return e;
  // The duration, when the row has one: complete - submit, to the millisecond (raw) or rounded.
  std::optional<Duration> d;
  if (!missing(row.get(c.duration))) d = parse_duration(row.get(c.duration), true);
  // The recorded end lies in [lo, hi]: a point for `complete` and a raw duration, a range for a
  // duration Nextflow rounded.
  int64_t lo = 0;
  int64_t hi = 0;
  int64_t submitted = submit.earlier;
  if (c.complete) {
    Instants complete;
    if (auto e = read_instants(row, c.complete, "complete", "missing (task not finished)", zone,
                               complete)) {
      return e;
    }
    const SubmitComplete at = settle(submit, complete, d ? std::optional<double>(d->ms) : std::nullopt, latest_complete);
    submitted = at.submit;
    lo = hi = at.complete;
  } else {
    // Nextflow's default trace has no 'complete': duration runs from submission to completion
    // (complete - submit: negative when an end recorded to the second falls before a submit
    // recorded to the millisecond). A submit shown twice is the reading whose end the row order
    // says (settle, step 2); for the first row, the earlier reading, and the latest end either
    // allows.
    if (!d) {
      return FieldError{"duration", missing(row.get(c.duration))
                                        ? "missing (task not finished)"
                                        : "not a duration: " + shown(row.get(c.duration))};
    }
    if (d->rounded()) tally.rounded.push_back("duration");
    const auto mid = static_cast<int64_t>(std::llround(d->ms));
    if (auto end = nextflow_detail::by_row_order({submit.earlier + mid, submit.later + mid}, latest_complete)) {
      submit.earlier = submit.later = *end - mid;
    }
    submitted = submit.earlier;
    lo = submit.earlier + static_cast<int64_t>(std::floor(d->ms - d->below));
    hi = submit.later + static_cast<int64_t>(std::ceil(d->ms + d->above));
  }
  // Nextflow records submit to the millisecond (its own clock) but start and complete often to
  // the second (".000": the executor's timestamps, e.g. a Kubernetes pod's finishedAt, which are
  // truncated): the task ended somewhere in that second. Its end is taken as the latest it can
  // have been (that second's last millisecond; for a rounded duration, the latest its rounding
  // allows), so that a task submitted before then never counts it among the jobs that had ended
  // before it (it may still have been running). A task done within the second of its submission
  // then ends at its submission at the earliest.
  int64_t end = nextflow_detail::latest_end(lo, hi);
  if (end < submitted && submitted - end < kMsPerSecond) end = submitted;
  if (end < submitted) {
    if (c.complete) return FieldError{"complete", "before submit"};
    return FieldError{"duration", "negative: " + shown(row.get(c.duration)) +
                                      " (the task would end over a second before its submission)"};
  }
  job.submit_ms = submitted;
  job.end_ms = end;
  if (!missing(row.get(c.start))) {
    Instants start;
    if (auto e = read_instants(row, c.start, "start", "missing", zone, start)) return e;
    std::optional<int64_t> realtime;
    if (!missing(row.get(c.realtime))) {
      if (auto r = parse_duration(row.get(c.realtime))) realtime = std::llround(r->ms);
    }
    job.start_ms = std::clamp(settle_start(start, end, realtime), job.submit_ms, job.end_ms);
  }
  return std::nullopt;
}

// The Job state from Nextflow's status (lower case) and exit code; `killed` when a failure is
// taken as OUT_OF_MEMORY.
std::string task_state(const std::string& status, std::string_view exit, bool& killed) {
  killed = false;
  if (status.empty() || status == "completed" || status == "-") return "COMPLETED";
  if (status == "failed" && exit == "137") {
    // Killed (128 + SIGKILL): on a memory-limited executor, the memory limit. nf-core retries
    // these with more memory (the retry is a new row); this attempt's label is a lower bound.
    killed = true;
    return "OUT_OF_MEMORY";
  }
  if (status == "failed") return "FAILED";
  if (status == "aborted") return "CANCELLED";
  return normalize_state(status);
}

// What the task asked for and used: cpus, time, memory sizes, realtime. A malformed value
// rejects the row, except with `sizey_rows` where Sizey's evaluation code would keep the row:
// in a column it does not read (cpus, time) or reads with pandas' to_numeric(errors='coerce')
// and keeps as NaN (memory, peak_rss). That field is left unset and counted in the tally.
std::optional<FieldError> read_resources(const TaskRow& row, Job& job, bool sizey_rows,
                                         RowTally& tally) {
  const Columns& c = row.c;
  // A malformed value: the row's rejection, or, where Sizey keeps the row, nothing (counted).
  auto malformed = [&](FieldError e, bool needed_by_sizey) -> std::optional<FieldError> {
    if (!sizey_rows || needed_by_sizey) return e;
    ++tally.unread;
    return std::nullopt;
  };
  if (!missing(row.get(c.cpus))) {
    auto cpus = parse_double(row.get(c.cpus));
    if (cpus && *cpus >= 0 && *cpus <= kMaxCount) {
      job.req_cpus = *cpus;
    } else if (auto e = malformed({"cpus", "not a CPU count: " + shown(row.get(c.cpus))}, false)) {
      return e;
    }
  }
  if (!missing(row.get(c.time))) {
    auto d = parse_duration(row.get(c.time));
    if (d) {
      job.req_time_s = std::llround(d->ms / 1000.0);
      if (d->rounded()) tally.rounded.push_back("time");
    } else if (auto e = malformed({"time", "not a duration: " + shown(row.get(c.time))}, false)) {
      return e;
    }
  }
  // rss: a row without a number is dropped by Sizey too; rchar: its regression needs one.
  for (auto [col, field, target, needed_by_sizey] :
       {std::tuple{c.memory, "memory", &job.req_mem_bytes, false},
        std::tuple{c.peak, "peak_rss", &job.peak_mem_bytes, false},
        std::tuple{c.rss, "rss", &job.rss_bytes, true},
        std::tuple{c.rchar, "rchar", &job.read_bytes, true}}) {
    if (missing(row.get(col))) continue;
    auto bytes = parse_size(row.get(col));
    if (bytes && *bytes == 0 && (target == &job.peak_mem_bytes || target == &job.rss_bytes)) {
      // Nextflow prints 0 when its sampler caught nothing (a task shorter than its sampling
      // interval), not a measured zero: no label; the task's other fields are kept.
      tally.unmeasured.push_back(field);
    } else if (bytes) {
      *target = *bytes;
      if (rounded_size(row.get(col))) tally.rounded.push_back(field);
    } else if (auto e = malformed({field, size_too_large(row.get(col))
                                              ? "too large: " + shown(row.get(col)) +
                                                    " (out of range: the limit is 1.8e19 bytes)"
                                              : "not a memory size: " + shown(row.get(col))},
                                  needed_by_sizey)) {
      return e;
    }
  }
  if (!missing(row.get(c.realtime))) {
    auto d = parse_duration(row.get(c.realtime));
    if (!d) return FieldError{"realtime", "not a duration: " + shown(row.get(c.realtime))};
    job.realtime_ms = std::llround(d->ms);
    if (d->rounded()) tally.rounded.push_back("realtime");
  }
  return std::nullopt;
}

// Nextflow never quotes a field: under trace.sep=',' a tag holding a comma ('X, lane1') splits
// its row into more fields than the header names, in `tag` and again in `name`, which repeats it
// ("PROC (X, lane1)"). The extra fields are joined back into those two columns when exactly one
// way of doing so leaves a name that ends with "(tag)" (a trace with `name` and no `tag`: a name
// that opens its " (" before the first comma and ends with ")"). nullopt when there is no such
// way, or more than one: the row is then skipped.
std::optional<std::vector<std::string>> rejoin_commas(const std::vector<std::string>& fields,
                                                      const Columns& c, size_t header_size) {
  if (fields.size() <= header_size || !c.name || *c.name >= header_size) return std::nullopt;
  const bool with_tag = c.tag && *c.tag < header_size;
  const size_t extra = fields.size() - header_size;
  std::optional<std::vector<std::string>> found;
  for (size_t to_tag = 0; to_tag <= (with_tag ? extra : 0); ++to_tag) {
    std::vector<std::string> row;
    row.reserve(header_size);
    size_t at = 0;
    for (size_t col = 0; col < header_size; ++col) {
      size_t take = 1 + (col == *c.name ? extra - to_tag : 0) + (with_tag && col == *c.tag ? to_tag : 0);
      std::string v = fields[at++];
      while (--take > 0) v += "," + fields[at++];
      row.push_back(std::move(v));
    }
    const std::string_view name = trim(row[*c.name]);
    const bool consistent =
        with_tag ? name.ends_with("(" + std::string(trim(row[*c.tag])) + ")")
                 : name.ends_with(")") && name.find(" (") < name.find(',');
    if (!consistent) continue;
    if (found) return std::nullopt;  // ambiguous
    found = std::move(row);
  }
  return found;
}

// Reads the task rows of one trace into Jobs, keeping the counts behind its notes.
class TaskReader {
 public:
  TaskReader(const std::string& name, const ReadOptions& o, const TimeZone* zone, const Columns& cols,
             size_t header_size, char delim, Trace& out)
      : name_(name),
        o_(o),
        zone_(zone),
        c_(cols),
        header_size_(header_size),
        delim_(delim),
        out_(out),
        run_(run_name_from_path(name)),
        default_user_(o.user.empty() ? run_ : o.user) {}

  // One row: a Job, a CACHED task left out, or a malformed row skipped (an error when the
  // options say malformed rows are fatal).
  Status read(const std::vector<std::string>& split_fields, size_t line, bool unterminated) {
    ++out_.stats.lines;
    if (unterminated) {
      return reject(line, {"row", "unterminated quoted field (runs to the end of the file)"});
    }
    std::optional<std::vector<std::string>> rejoined;
    if (delim_ == ',' && split_fields.size() > header_size_) {
      rejoined = rejoin_commas(split_fields, c_, header_size_);
    }
    const std::vector<std::string>& fields = rejoined ? *rejoined : split_fields;
    if (fields.size() != header_size_) {
      std::string why = "expected " + std::to_string(header_size_) + " columns, got " +
                        std::to_string(fields.size());
      if (delim_ == ',' && fields.size() > header_size_ && (c_.tag || c_.name)) {
        why += " (Nextflow does not quote fields: a comma in a tag splits its row under "
               "trace.sep=','; its default separator, a tab, does not)";
      }
      return reject(line, {"row", why});
    }
    const TaskRow row{fields, c_};
    std::string status = lower(row.get(c_.status));
    if (status == "cached") {
      // Not executed in this run: its figures repeat an earlier run's execution. Sizey's
      // protocol reads no status, so it takes them as any other row.
      ++cached_;
      if (!o_.sizey_rows) {
        ++out_.stats.ignored;
        return Status::ok();
      }
      status = "completed";
    }
    Job job;
    RowTally tally;
    if (places_in_time(c_) && !o_.sizey_rows) {
      if (auto e = read_times(row, zone_, latest_complete_, job, tally)) return reject(line, *e);
    }
    bool killed = false;
    job.state = task_state(status, row.get(c_.exit), killed);
    if (auto e = read_resources(row, job, o_.sizey_rows, tally)) return reject(line, *e);
    // Kept: its id and counts join the trace's (a rejected row would take a resumed run's task id
    // and count what was not read).
    identify(row, line, job);
    killed_ += killed ? 1 : 0;
    unread_ += tally.unread;
    for (const char* col : tally.rounded) ++rounded_[col];
    for (const char* col : tally.unmeasured) ++unmeasured_[col];
    rejoined_ += rejoined ? 1 : 0;
    if (places_in_time(c_) && !o_.sizey_rows) {
      latest_complete_ = std::max(latest_complete_.value_or(job.end_ms), job.end_ms);
    }
    out_.jobs.push_back(std::move(job));
    return Status::ok();
  }

  void add_notes() {
    if (users_from_file_name_ > 0) {
      out_.notes.push_back("Nextflow trace has no user column: all tasks attributed to user '" +
                           default_user_ + "' (from the file name; set it with --user)");
    }
    if (killed_ > 0) {
      out_.notes.push_back(std::to_string(killed_) +
                           " FAILED task(s) with exit 137 (killed) taken as OUT_OF_MEMORY: their "
                           "memory label is a lower bound (censored)");
    }
    if (cached_ > 0 && !o_.sizey_rows) {
      out_.notes.push_back(std::to_string(cached_) +
                           " CACHED tasks ignored: they were not executed in this run and repeat "
                           "an earlier run's figures");
    } else if (cached_ > 0) {
      out_.notes.push_back(std::to_string(cached_) +
                           " CACHED tasks kept, as Sizey's protocol reads them: their figures are an "
                           "earlier run's");
    }
    if (unread_ > 0) {
      out_.notes.push_back(std::to_string(unread_) +
                           " malformed value(s) in cpus, time, memory or peak_rss left unset: "
                           "Sizey's protocol keeps such rows");
    }
    if (rejoined_ > 0) {
      out_.notes.push_back(std::to_string(rejoined_) +
                           " row(s) whose tag holds a comma rejoined: Nextflow does not quote "
                           "fields, so under trace.sep=',' the tag and the name split their row");
    }
    add_rounding_note();
    add_unmeasured_note();
  }

 private:
  Status reject(size_t line, const FieldError& e) {
    return skip_line(out_, o_, name_ + ":" + std::to_string(line) + ": " + e.field + ": " + e.why);
  }

  // Who ran what: a unique job id, the user, the workload, name, queue and script.
  void identify(const TaskRow& row, size_t line, Job& job) {
    std::string task_id(row.get(c_.task));
    if (missing(task_id)) task_id = std::string(row.get(c_.hash));
    if (missing(task_id)) task_id = "line" + std::to_string(line);
    job.job_id = run_ + ":" + task_id;
    // Resumed runs can repeat a task id: keep ids unique.
    if (size_t n = seen_ids_[job.job_id]++; n > 0) job.job_id += "#" + std::to_string(n + 1);

    if (!missing(row.get(c_.user))) {
      job.user = std::string(row.get(c_.user));
    } else {
      job.user = default_user_;
      if (o_.user.empty()) ++users_from_file_name_;
    }
    if (!missing(row.get(c_.process))) {
      job.workload = std::string(row.get(c_.process));
    } else if (!missing(row.get(c_.name))) {
      // "PROC (tag)" -> "PROC"
      std::string_view n = row.get(c_.name);
      job.workload = std::string(trim(n.substr(0, n.find(" ("))));
    }
    if (!missing(row.get(c_.name))) job.job_name = std::string(row.get(c_.name));
    if (!missing(row.get(c_.queue))) job.partition = std::string(row.get(c_.queue));
    if (c_.script && *c_.script < row.fields.size() && !missing(row.fields[*c_.script])) {
      job.script = row.fields[*c_.script];
    }
  }

  // Nextflow's human-readable form rounds sizes and durations; the figures move with it (on mag,
  // simulate's waste ratio from 0.70x to 0.89x): name the columns, and the remedy.
  void add_rounding_note() {
    std::string counts;
    size_t total = 0;
    for (const char* col : {"duration", "realtime", "time", "memory", "peak_rss", "rss", "rchar"}) {
      auto it = rounded_.find(col);
      if (it == rounded_.end()) continue;
      counts += (counts.empty() ? "" : ", ") + std::string(col) + " " + std::to_string(it->second);
      total += it->second;
    }
    if (total == 0) return;
    out_.notes.push_back(
        std::to_string(total) + " value(s) in Nextflow's human-readable form, which it rounds (sizes "
        "to 0.1 of their unit, up to 5% off; durations to 0.1 s under a minute, else to the "
        "second): " + counts +
        (rounded_.count("duration") > 0 ? ". An end from a rounded duration is the latest it allows"
                                        : "") +
        ". For exact figures write the trace with `trace.raw = true`");
  }

  // A peak_rss or rss of 0 is no measurement (read_resources): say how many, and what it costs.
  void add_unmeasured_note() {
    if (unmeasured_.empty()) return;
    auto count = [&](const char* col) {
      auto it = unmeasured_.find(col);
      return it == unmeasured_.end() ? size_t{0} : it->second;
    };
    out_.notes.push_back(unmeasured_memory_note(
        {{"peak_rss", count("peak_rss")}, {"rss", count("rss")}},
        "Nextflow prints 0 when its sampler caught nothing (a task shorter than its sampling "
        "interval); the task keeps its other fields (Sizey's protocol drops an rss of 0 too)"));
  }

  const std::string& name_;
  const ReadOptions& o_;
  const TimeZone* zone_;  // where the human-form times were printed; nullptr: UTC
  std::optional<int64_t> latest_complete_;  // of the rows kept so far (settle's row order)
  const Columns& c_;
  const size_t header_size_;
  const char delim_;
  Trace& out_;
  const std::string run_;
  const std::string default_user_;
  size_t cached_ = 0;
  size_t unread_ = 0;  // malformed values left unset (sizey_rows)
  size_t killed_ = 0;
  size_t rejoined_ = 0;  // rows whose tag's commas were joined back
  std::map<std::string, size_t> rounded_;  // column -> values Nextflow rounded
  std::map<std::string, size_t> unmeasured_;  // peak_rss, rss -> zeros left unset
  size_t users_from_file_name_ = 0;
  std::map<std::string, size_t> seen_ids_;
};

// The columns that Nextflow's default trace.fields leaves out and peakcast reads: say what each
// one's absence costs, where it would otherwise surface only as an empty result.
void note_missing_columns(const Columns& c, Trace& out) {
  std::string why;
  std::string names;
  auto lacks = [&](const char* column, const char* cost) {
    why += std::string(why.empty() ? "" : "; no ") + "'" + column + "' (" + cost + ")";
    names += std::string(names.empty() ? "" : ",") + column;
  };
  if (!c.memory) {
    lacks("memory", "the task's memory request: without it no task has a utilization label, so "
                    "evaluate and train have nothing to score");
  }
  if (!c.rss) {
    lacks("rss", "Sizey's protocol, simulate's default for a Nextflow trace, replays each task's "
                 "rss and leaves out the tasks without one");
  }
  if (!c.rchar) {
    lacks("rchar", "Sizey's protocol takes it as each task's input size: its Witt-LR baselines "
                   "regress on it, and without it every input is 0");
  }
  if (why.empty()) return;
  out.notes.push_back("Nextflow trace has no " + why + ": add " + names +
                      " to Nextflow's trace.fields (e.g. trace.fields = 'task_id,hash,native_id,"
                      "process,name,status,exit,submit,start,complete,duration,realtime,%cpu,"
                      "peak_rss,peak_vmem,rchar,wchar,cpus,memory,rss', with trace.raw = true)");
}

}  // namespace

Status parse_nextflow(std::string_view text, const std::string& name, const ReadOptions& o,
                      Trace& out) {
  if (Status s = refuse_slurm_document(text, name); !s) return s;
  // ReadOptions::nextflow_timezone: a name that is not a zone fails the read, not each row.
  std::optional<TimeZone> zone;
  if (!o.nextflow_timezone.empty()) {
    Result<TimeZone> z = TimeZone::load(o.nextflow_timezone);
    if (!z) return z.status().with_context("--nextflow-timezone");
    zone = std::move(*z);
  }
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  RecordReader reader(text, header_delimiter(text));
  std::vector<std::string> row;
  size_t line = 0;
  if (!next_record(reader, row, line)) return Status::ok();  // empty file: no jobs
  const Columns cols = find_columns(row);
  // A file whose first line names none of a trace's columns is something else (sacct's `|`
  // columns, SWF, JSON Lines): reading its lines as tasks would invent jobs from them.
  if (!cols.task && !cols.hash && !cols.process && !cols.name && !cols.status && !cols.submit &&
      !cols.complete && !cols.memory && !cols.rss && !cols.peak) {
    return Status::invalid(name + ":" + std::to_string(line) +
                           ": header: not a Nextflow trace: its first line names none of the columns "
                           "a Nextflow trace has (task_id, hash, name, process, status, submit, "
                           "complete, memory, rss, peak_rss) when split on tabs, commas or "
                           "semicolons (a trace written with another trace.sep is not read)");
  }
  note_missing_columns(cols, out);
  // Sizey's protocol needs no times (`simulate --protocol sizey`); every event-time use refuses
  // a trace without them by has_submit_times, as it does an sacct dump without Submit.
  if (o.sizey_rows) {
    out.has_submit_times = false;  // not read: the protocol orders tasks by seed
  } else if (!places_in_time(cols)) {
    out.has_submit_times = false;
    out.notes.push_back(
        "no 'submit' column with 'complete' or 'duration': tasks are not placed in time, so only "
        "`peakcast simulate --protocol sizey` and `inspect` can use this trace (add submit and "
        "complete to Nextflow's trace.fields for the rest)");
  }
  TaskReader tasks(name, o, zone ? &*zone : nullptr, cols, row.size(), reader.delimiter(), out);
  const size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) +
                       (text.ends_with('\n') ? 0 : 1);
  while (next_record(reader, row, line)) {
    read_progress(o, line - 1, lines);
    if (Status s = tasks.read(row, line, reader.unterminated()); !s) return s;
  }
  read_progress(o, lines, lines);
  tasks.add_notes();
  return Status::ok();
}

}  // namespace peakcast::ingest
