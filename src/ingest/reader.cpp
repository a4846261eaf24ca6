// The format dispatcher: names, detection from content, the skip policy and the finishing pass
// (script keys and labels) shared by every reader.
#include "peakcast/ingest/reader.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

#include "peakcast/core/hash.h"
#include "peakcast/core/input_file.h"
#include "peakcast/core/io.h"
#include "peakcast/ingest/redact.h"
#include "peakcast/ingest/sacct.h"
#include "reader_internal.h"

namespace peakcast::ingest {
namespace {

constexpr std::pair<Format, std::string_view> kFormatNames[] = {
    {Format::kAuto, "auto"},
    {Format::kSwf, "swf"},
    {Format::kNextflow, "nextflow"},
    {Format::kSacct, "sacct"},
    {Format::kJsonl, "jsonl"},
};

bool is_swf_data_line(std::string_view line) {
  // 18 whitespace-separated numbers (SWF v2.2). Some logs drop trailing fields; accept >= 15.
  size_t fields = 0;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') {
      char c = line[j];
      if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.')) return false;
      ++j;
    }
    ++fields;
    i = j;
  }
  return fields >= 15 && fields <= 18;
}

bool header_has(std::string_view line, char delim, std::string_view name) {
  for (std::string_view f : split(line, delim)) {
    f = trim(f);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
    if (lower(f) == name) return true;
  }
  return false;
}

bool looks_like_sacct_row(std::string_view line, char delim) {
  // `sacct -P -n` output: '|'-separated (or by `--delimiter`), first field a job id (12345,
  // 12345_7, 12345.batch).
  if (line.find(delim) == std::string_view::npos) return false;
  std::string_view id = trim(split(line, delim).front());
  if (id.empty() || !std::isdigit(static_cast<unsigned char>(id.front()))) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' ||
           c == '[' || c == ']' || c == '-' || c == ',';
  });
}

Format format_from_name(const std::string& path) {
  std::string name = lower(std::filesystem::path(path).filename().string());
  if (name.size() > 3 && name.ends_with(".gz")) name.resize(name.size() - 3);
  if (name.ends_with(".swf")) return Format::kSwf;
  if (name.ends_with(".jsonl") || name.ends_with(".ndjson")) return Format::kJsonl;
  if (name.ends_with(".csv") || name.ends_with(".tsv")) return Format::kNextflow;
  return Format::kAuto;
}

}  // namespace

std::string_view format_name(Format f) {
  for (auto [fmt, name] : kFormatNames) {
    if (fmt == f) return name;
  }
  return "unknown";
}

std::string_view submit_times_remedy(Format f) {
  if (f == Format::kNextflow) return "write the trace with submit and complete in Nextflow's trace.fields";
  return "export sacct with the Submit, Start and End fields";
}

Result<Format> parse_format(std::string_view name) {
  const std::string n = lower(trim(name));
  for (auto [fmt, fname] : kFormatNames) {
    if (n == fname) return fmt;
  }
  if (n == "nf") return Format::kNextflow;
  if (n == "json" || n == "canonical") return Format::kJsonl;
  std::string valid;
  for (auto [fmt, fname] : kFormatNames) {
    if (!valid.empty()) valid += ", ";
    valid += fname;
  }
  return Status::invalid("format: unknown format '" + std::string(name) + "' (valid: " + valid + ")");
}

namespace {

// detect_format() on a prefix of the content: nullopt when the prefix ends before a decision (or
// inside the line that would decide it) and `complete` is false, so more must be read.
std::optional<Format> detect_in(std::string_view content, bool complete) {
  // Skip a UTF-8 byte-order mark and blank lines; decide on the first meaningful line, looking a
  // little further only for SWF (whose header is all comments).
  if (content.starts_with("\xEF\xBB\xBF")) {
    content.remove_prefix(3);
  } else if (!complete && content.size() < 3 && std::string_view("\xEF\xBB\xBF").starts_with(content)) {
    return std::nullopt;
  }
  size_t pos = 0;
  int examined = 0;
  bool swf_comment_seen = false;
  while (pos < content.size() && examined < 200) {
    size_t nl = content.find('\n', pos);
    if (nl == std::string_view::npos && !complete) return std::nullopt;  // the line may go on
    std::string_view line =
        trim(content.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? content.size() : nl + 1;
    if (line.empty()) continue;
    ++examined;
    if (line.front() == ';') {
      swf_comment_seen = true;
      continue;
    }
    if (line.front() == '{') return Format::kJsonl;
    if (is_swf_data_line(line)) return Format::kSwf;
    if (swf_comment_seen) return Format::kAuto;  // a comment header followed by non-SWF data
    // sacct's '|', or the ASCII unit separator slurm-sync asks for (`--delimiter=$'\x1f'`),
    // which no other format holds.
    for (char delim : {sacct::kUnitSeparator, '|'}) {
      if (line.find(delim) == std::string_view::npos) continue;
      if (header_has(line, delim, "jobid") || header_has(line, delim, "jobidraw") ||
          looks_like_sacct_row(line, delim)) {
        return Format::kSacct;
      }
      return Format::kAuto;
    }
    // sacct with another `--delimiter`, or without -P (columns padded with spaces): its reader
    // takes the first where it can, and says why it cannot otherwise.
    for (char delim : {'\t', ';', ',', ' '}) {
      if (header_has(line, delim, "jobid") || header_has(line, delim, "jobidraw")) return Format::kSacct;
    }
    // Nextflow's trace.sep: a tab by default, often a comma, at times a semicolon.
    for (char delim : {'\t', ',', ';'}) {
      if (line.find(delim) == std::string_view::npos) continue;
      // Nextflow's trace columns; its default set has no `process`, so count several.
      int known = 0;
      for (std::string_view col : {"task_id", "hash", "native_id", "process", "name", "status",
                                   "exit", "submit", "duration", "realtime", "peak_rss", "%cpu",
                                   "complete", "memory"}) {
        known += header_has(line, delim, col) ? 1 : 0;
      }
      const bool key = header_has(line, delim, "task_id") || header_has(line, delim, "process") ||
                       header_has(line, delim, "hash");
      if (key && known >= 3) return Format::kNextflow;
    }
    return Format::kAuto;
  }
  if (examined < 200 && !complete) return std::nullopt;  // more lines may follow
  return swf_comment_seen ? Format::kSwf : Format::kAuto;
}

// The form of Slurm's own job documents, which are no trace: "sacct --json" for a JSON object
// whose first key is "jobs" or "meta" (23.02+ data_parser puts the jobs first, openapi/dbv0.0.37
// of 21.08 its meta) and which holds meta's "plugin" and "version" keys; "sacct --yaml" for a
// `---` document whose first key is `jobs:` or `meta:`. Empty for anything else: a JSONL trace's
// first object holds a job's own keys first.
std::string_view slurm_document_form(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  text.remove_prefix(first);
  if (text.front() == '{') {
    std::string_view rest = text.substr(1);
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t\r\n")));
    const bool slurm_key = rest.starts_with("\"jobs\"") || rest.starts_with("\"meta\"");
    const auto holds = [text](std::string_view key) {
      return text.find(key) != std::string_view::npos;
    };
    if (slurm_key && holds("\"jobs\"") && holds("\"meta\"") && holds("\"plugin\"") &&
        holds("\"version\"")) {
      return "sacct --json";
    }
    return {};
  }
  const size_t nl = text.find('\n');
  if (nl == std::string_view::npos || trim(text.substr(0, nl)) != "---") return {};
  std::string_view lines = text.substr(nl + 1);
  lines.remove_prefix(std::min(lines.size(), lines.find_first_not_of(" \t\r\n")));
  if (lines.starts_with("jobs:") || lines.starts_with("meta:")) return "sacct --yaml";
  return {};
}

}  // namespace

Format detect_format(std::string_view content) { return *detect_in(content, true); }

Status refuse_slurm_document(std::string_view text, const std::string& name) {
  const std::string_view form = slurm_document_form(text);
  if (form.empty()) return Status::ok();
  return Status::invalid(
      name + ": " + std::string(form) +
      " output (Slurm's job document), which peakcast does not read; export the jobs as a "
      "sacct table: sacct -P --format=JobID,JobName,User,Account,Partition,"
      "State,Submit,Start,End,NCPUS,NNodes,ReqMem,ReqTRES,AllocTRES,MaxRSS,TRESUsageInTot,"
      "TimelimitRaw (docs/formats.md, \"Slurm sacct -P\", says what each field gives)");
}

namespace {

// read_trace() reads this much to detect the format, and more, up to kDetectMaxBytes, only while
// the lines that decide are not complete (a long first line, a long SWF comment header).
constexpr size_t kDetectBytes = size_t{1} << 16;
constexpr size_t kDetectMaxBytes = size_t{1} << 24;
// A gzip whose prefix is of no format is inflated on (and discarded) to this much text in all:
// to its end if it ends before, so that corruption past the prefix says "corrupt or truncated
// gzip data"; no further, so that a long one (1 GB of gzipped zeros) costs a bounded time.
constexpr size_t kNoFormatGzipCheckBytes = size_t{64} << 20;

// Reads a prefix of `in` into `text` and detects the format from it; at kDetectMaxBytes the
// prefix is taken as it is.
Result<Format> detect_from_prefix(InputFile& in, std::string& text) {
  size_t want = kDetectBytes;
  while (true) {
    if (Status s = in.read(text, want - std::min(want, text.size())); !s) return s;
    const bool complete = in.at_end() || text.size() >= kDetectMaxBytes;
    if (std::optional<Format> f = detect_in(text, complete)) return *f;
    want = std::min(want * 2, kDetectMaxBytes);
  }
}

}  // namespace

std::string unmeasured_memory_note(std::initializer_list<std::pair<std::string_view, size_t>> zeros,
                                   std::string_view why) {
  std::string counts;
  for (auto [field, count] : zeros) {
    if (count == 0) continue;
    counts += counts.empty() ? std::string(field) + " in " + std::to_string(count) + " job(s)"
                             : ", " + std::string(field) + " in " + std::to_string(count);
  }
  return "memory of 0 read as not measured (" + counts + "): " + std::string(why) +
         ". No memory label: evaluate and train do not score them, simulate does not replay them";
}

Status skip_line(Trace& out, const ReadOptions& o, const std::string& reason) {
  ++out.stats.skipped;
  if (out.stats.reasons.size() < o.max_reasons) out.stats.reasons.push_back(reason);
  if (o.strict) return Status::invalid(reason);
  return Status::ok();
}

void read_progress(const ReadOptions& o, size_t done, size_t total) {
  if (o.progress) o.progress("read lines", std::min(done, total), total);
}

void finalize_job(Job& job, double util_cap) {
  // The identity text is redacted here, where every job enters (trace readers, slurm-sync, the
  // daemon's requests), so every consumer reads what peakcastd's store keeps: the same tokens
  // for a model trained on a trace, on the store (`train --db`) or asked through /v1/predict.
  // redact_script() is idempotent, so text that was redacted before is left as it is.
  if (job.script) job.script = redact_script(*job.script);
  if (job.workload) job.workload = redact_script(*job.workload);
  job.job_name = redact_script(job.job_name);
  if (job.script && !job.script->empty()) {
    job.script_key = sha256_hex(*job.script);
  } else if (job.workload && !job.workload->empty()) {
    job.script_key = workload_key(*job.workload);
  } else {
    job.script_key.clear();
  }
  compute_labels(job, util_cap);
}

void finalize_trace(Trace& trace, double util_cap, const ProgressFn& progress) {
  ReadStats& st = trace.stats;
  st.jobs = trace.jobs.size();
  st.labelled = {0, 0};
  st.clipped = {0, 0};
  st.censored = 0;
  trace.has_scripts = false;
  size_t done = 0;
  for (Job& job : trace.jobs) {
    if (progress) progress("read jobs", done++, trace.jobs.size());
    finalize_job(job, util_cap);
    if (job.script && !job.script->empty()) trace.has_scripts = true;
    for (Resource r : kResources) {
      if (job.valid[idx(r)]) ++st.labelled[idx(r)];
      if (job.clipped[idx(r)]) ++st.clipped[idx(r)];
    }
    if (job.censored) ++st.censored;
  }
  if (progress) progress("read jobs", trace.jobs.size(), trace.jobs.size());
}

Result<Trace> read_trace(const std::string& path, const ReadOptions& options) {
  if (!(options.util_cap > 0.0)) {
    return Status::invalid("util_cap: must be > 0 (got " + std::to_string(options.util_cap) + ")");
  }
  Result<InputFile> in = InputFile::open(path);
  if (!in) return in.status();
  std::string text;

  Trace trace;
  trace.path = path;
  Format format = options.format;
  if (format == Format::kAuto) {
    // Detected from a prefix: a file that is no trace fails before the rest is read.
    Result<Format> detected = detect_from_prefix(*in, text);
    if (!detected) return detected.status();
    format = *detected;
    if (format == Format::kAuto && !options.columns.empty()) format = Format::kSacct;
    if (format == Format::kAuto) format = format_from_name(path);
    if (format == Format::kAuto) {
      // A gzip whose text is of no format may be one whose data is corrupt past the prefix:
      // that is the truer answer, and gzip tells it only at its end; past the bound, the
      // message says how much was judged.
      if (Status s = refuse_slurm_document(text, path); !s) return s;
      std::string judged = "its content";
      if (in->compressed()) {
        const size_t left = kNoFormatGzipCheckBytes - std::min(kNoFormatGzipCheckBytes, text.size());
        Result<size_t> skipped = in->skip(left + 1);
        if (!skipped) return skipped.status();
        if (*skipped > left) {
          judged = "the first " + std::to_string(kNoFormatGzipCheckBytes >> 20) +
                   " MiB of its content (the rest was not read, so gzip damage in it would not "
                   "show)";
        }
      }
      return Status::invalid(path + ": cannot tell the trace format from " + judged +
                             "; pass --format (swf, nextflow, sacct, jsonl)");
    }
  }
  if (Status s = in->read_rest(text); !s) return s;
  trace.format = format;

  Status st;
  switch (format) {
    case Format::kSwf: st = parse_swf(text, path, options, trace); break;
    case Format::kNextflow: st = parse_nextflow(text, path, options, trace); break;
    case Format::kSacct: st = parse_sacct(text, path, options, trace); break;
    case Format::kJsonl: st = parse_jsonl(text, path, options, trace); break;
    case Format::kAuto: st = Status::internal("read_trace: format still auto"); break;
  }
  if (!st) return st;
  finalize_trace(trace, options.util_cap, options.progress);
  if (trace.stats.lines > 0 && trace.jobs.empty()) {
    trace.notes.push_back("no job could be read: every record was skipped (first reasons above)");
  }
  return trace;
}

}  // namespace peakcast::ingest
