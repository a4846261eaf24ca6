// The Slurm `sacct -P` reader: the header and its columns, row repair, the job-step join and the
// notes. The rules are in include/peakcast/ingest/sacct.h; one row's fields and a record's final
// Job are read in sacct_record.cpp (sacct_internal.h lists the reader's files).
#include <algorithm>
#include <cctype>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "reader_internal.h"
#include "sacct_internal.h"

namespace peakcast::ingest {
namespace {

using namespace sacct_detail;

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
    {"exitcode", kExitCode},   {"cluster", kCluster},         {"reqgres", kReqGres},
    {"allocgres", kAllocGres}, {"reqnodes", kReqNodes}};

constexpr std::string_view kDisplayNames[kNumCols] = {
    "JobID", "JobIDRaw", "JobName", "User", "Account", "Partition", "State", "Submit", "Start",
    "End", "Elapsed", "ElapsedRaw", "Timelimit", "TimelimitRaw", "NCPUS", "ReqCPUS", "NNodes",
    "ReqMem", "ReqTRES", "AllocTRES", "MaxRSS", "TRESUsageInTot", "TRESUsageInMax",
    "Comment", "AdminComment", "ExitCode", "Cluster", "ReqGRES", "AllocGRES", "ReqNodes"};

// Columns whose text is free and may contain '|'.
constexpr std::string_view kFreeText[] = {"jobname", "comment", "admincomment", "systemcomment",
                                          "submitline", "workdir", "constraints"};

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

// The delimiter of a first line that names sacct's columns with another delimiter than '|' or the
// unit separator (`sacct -P --delimiter=X` prints X between names): the character after its first
// name; nullopt when the line starts with no name or holds nothing else.
std::optional<char> first_name_delimiter(std::string_view line) {
  line = trim(line);
  size_t i = 0;
  while (i < line.size() && std::isalnum(static_cast<unsigned char>(line[i]))) ++i;
  if (i == 0 || i == line.size()) return std::nullopt;
  return line[i];
}

// Whether a delimiter can only occur in the free-text fields, as '|' (names, comments): a tab or
// punctuation no field sacct fills holds. TRES strings hold ',', '=', '/' and ':'; times '-', ':'
// and '.'; job ids '_', '+', '.', '[', ']', '%' and '-'; NodeList ',', '[', ']'; "CANCELLED by 0"
// a space; user names '@', '.', '-', '_'.
bool free_text_only(char d) {
  if (d == '\t') return true;
  if (!std::ispunct(static_cast<unsigned char>(d))) return false;
  return std::string_view(",=/:.-_+[]%()@'\"").find(d) == std::string_view::npos;
}

std::vector<std::string> header_names(std::vector<std::string_view> fields, bool& trailing) {
  trailing = fields.size() > 1 && trim(fields.back()).empty();
  if (trailing) fields.pop_back();
  std::vector<std::string> names;
  for (auto f : fields) names.emplace_back(trim(f));
  return names;
}

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

std::string where(const std::string& name, size_t line) {
  return name + ":" + std::to_string(line);
}

// A delimiter as a note names it: "'|'", "a tab", "the unit separator".
std::string delimiter_name(char d) {
  if (d == '\t') return "a tab";
  if (d == sacct::kUnitSeparator) return "the unit separator";
  return "'" + std::string(1, d) + "'";
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
  auto add_counted = [&out](std::initializer_list<std::pair<size_t, std::string>> counted) {
    for (const auto& [count, what] : counted) {
      if (count) out.notes.push_back("sacct: " + std::to_string(count) + what);
    }
  };
  add_counted({
      {t.over_memory_kill, " job(s) FAILED 0:9 with a step CANCELLED by 0 (killed by "
                           "OverMemoryKill) taken as OUT_OF_MEMORY: their memory label is a lower "
                           "bound (censored)"},
      {t.unfinished, " job(s) still running or pending (End=Unknown) left out, first " +
                         t.first_unfinished},
      {t.unknown_state, " job(s) with a State that is no Slurm job state, read as finished: a "
                        "label from a job still running or cut short would be wrong; first " +
                            t.first_unknown_state},
      {t.one_node_assumed, " job(s) with a per-node ReqMem (`n` suffix) and no node count (no NNodes, "
                           "AllocNodes or ReqNodes column, or an empty or 0 one): taken as one node"},
      {t.no_cpu_count, " job(s) with a per-CPU ReqMem (`c` suffix) and no CPU count "
                       "(NCPUS/ReqCPUS): memory request unknown"},
      {t.zero_req_mem, " job(s) with ReqMem 0 (no limit): memory request unknown"}});
  if (t.zero_peak) {
    out.notes.push_back("sacct: " + unmeasured_memory_note(
                                        {{"MaxRSS/TRESUsageIn mem= of every step", t.zero_peak}},
                                        "no sample caught them (a job shorter than "
                                        "JobAcctGatherFrequency)"));
  }
  add_counted({
      {t.peak_below_unit, " job(s) with a memory peak printed as 0 in a unit (MaxRSS 0.00G under "
                          "--units=G): a peak above 0 below the unit's last decimal (5.12 MiB "
                          "under G), its size unknown, so no memory label; export with "
                          "--noconvert (bytes) for those jobs' labels"},
      {t.vram_below_unit, " job(s) with a gres/gpumem peak printed as 0 in a unit (0.00G under "
                          "--units=G): a peak above 0 too small for the unit, its size unknown, "
                          "so no VRAM label; export with --noconvert (bytes) for those jobs' "
                          "labels"},
      {t.zero_vram_peak, " job(s) with a gres/gpumem peak of 0 (every step): no GPU memory "
                         "caught by jobacct_gather's samples (JobAcctGatherFrequency), or none "
                         "NVML reads per process (MIG, some GPUs); not told from a GPU left "
                         "unused, so no VRAM label"},
      {t.superseded, " earlier record(s) of requeued jobs replaced by the job's last record"},
      {t.repaired, " row(s) had " + delimiter_name(first.delimiter) + " inside a free-text "
                   "field; the extra fields were joined back into it"},
      {t.jobstats_used, " job(s) labelled from jobstats summaries in AdminComment (VRAM: the "
                        "busiest GPU's share, or the memory used on more GPUs than requested; host "
                        "memory where sacct had none)"},
      {t.jobstats_empty, " job(s) with AdminComment JS1:Short or JS1:None (jobstats had no "
                         "samples): labels from sacct alone"},
      {t.jobstats_bad, " malformed jobstats summary(ies) in AdminComment skipped (labels from "
                       "sacct alone), first " + t.first_jobstats_bad},
      {t.gpu_no_capacity, " GPU job(s) have a gres/gpumem peak but no known per-GPU memory (GPU "
                          "type not recognised): no VRAM label"},
      {t.gpus_beyond_request, " job(s) allocated more GPUs than their ReqTRES states (--exclusive "
                              "or an OverSubscribe=EXCLUSIVE partition gives a job every GPU of "
                              "its nodes): their GPU count, the VRAM capacity, is the request's, "
                              "the one the Slurm hook sends"},
      {t.vram_beyond_request, " job(s) used more GPU memory (gres/gpumem) than the GPUs their "
                              "ReqTRES states hold (the GPUs --exclusive gave them): their VRAM "
                              "label, a share of the requested GPUs' memory, is clipped at "
                              "--util-cap"},
      {t.jobstats_beyond_request,
       " job(s) used more GPUs than their ReqTRES states (jobstats saw memory used on the GPUs "
       "--exclusive gave them): their VRAM label is the memory used on all of them over the "
       "requested GPUs' memory, clipped at --util-cap, not the busiest GPU's share; first " +
           t.first_jobstats_beyond}});
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
    delimiter_open_ = columns.size() > 1;
    return Status::ok();
  }

  // `sacct -n` output read by --columns has no header to tell its delimiter: the first row that
  // is no header tells it, under the header's rules. The unit separator or '|' where the row
  // holds one; else a tab or ';' (which only free text holds, as for a header); a row with none
  // of them is refused saying why: padded with spaces (sacct without -P), or delimited by what
  // sacct's own fields hold (',').
  Status settle_delimiter(std::string_view line, size_t lineno) {
    if (!delimiter_open_ || trim(line).empty()) return Status::ok();
    for (char d : {sacct::kUnitSeparator, '|', '\t', ';', ','}) {
      if (line.find(d) == std::string_view::npos || !looks_like_header(split(line, d))) continue;
      // The listing has its header after all: read_line reads it in its delimiter (and
      // check_columns holds it to --columns), which settles the delimiter.
      if (!free_text_only(d) && d != '|' && d != sacct::kUnitSeparator) {
        return delimiter_refused(where(name_, lineno) + ": header: ", d);
      }
      layout_->delimiter = d;
      return Status::ok();
    }
    delimiter_open_ = false;
    for (char d : {sacct::kUnitSeparator, '|', '\t', ';'}) {
      if (line.find(d) != std::string_view::npos) {
        layout_->delimiter = d;
        return Status::ok();
      }
    }
    const std::string at = where(name_, lineno) + ": row: ";
    if (trim(line).find("  ") != std::string_view::npos) return padded_refused(at);
    if (line.find(',') != std::string_view::npos) return delimiter_refused(at, ',');
    return Status::invalid(at + "no '|' (nor a tab, ';' or the unit separator) between the " +
                           std::to_string(layout_->ncols) + " --columns; export with sacct -P");
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
      if (std::optional<char> d = first_name_delimiter(text)) {
        return read_other_header(text, *d, lineno);
      }
      return no_header(lineno);
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
    // `sacct -L` (or -M a,b) lists several clusters, whose job ids overlap: a job is its id on
    // its cluster, where the listing names it; not a requeued record of another cluster's job.
    std::string key(parts.job);
    if (std::string_view cluster = row.get(kCluster); !cluster.empty()) (key += '@') += cluster;
    if (parts.step.empty()) return read_job(row, parts.job, key, lineno);
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
  Status no_header(size_t lineno) const {
    return Status::invalid(where(name_, lineno) +
                           ": header: the first line is not a sacct header (no JobID column)" +
                           std::string(hint_));
  }

  // A first line naming sacct's columns with another delimiter `d` than '|' or the unit separator
  // (`sacct -P --delimiter`), or padded with spaces (sacct without -P): read where only free text
  // can hold `d` (a tab, a ';'), refused saying why otherwise.
  Status read_other_header(std::string_view text, char d, size_t lineno) {
    if (d == ' ') {
      const std::vector<std::string_view> words = split(text, ' ');
      const bool named = std::any_of(words.begin(), words.end(), [](std::string_view f) {
        const std::string k = column_key(f);
        return k == "jobid" || k == "jobidraw";
      });
      if (!named) return no_header(lineno);
      return padded_refused(where(name_, lineno) + ": header: ");
    }
    std::vector<std::string_view> fields = split(text, d);
    if (!looks_like_header(fields)) return no_header(lineno);
    if (free_text_only(d)) return read_header(fields, lineno, d);
    return delimiter_refused(where(name_, lineno) + ": header: ", d);
  }

  // A listing whose columns are padded with spaces, or delimited by `d`, which sacct's fields
  // hold; `at` is "file:line: header: " or "... row: ".
  static Status padded_refused(const std::string& at) {
    return Status::invalid(at + "columns padded with spaces (sacct without -P or -p), which cuts a "
                                "field at its width (a '+' marks the cut) and cannot be split "
                                "back; export with sacct -P");
  }
  static Status delimiter_refused(const std::string& at, char d) {
    return Status::invalid(at + "fields delimited by '" + std::string(1, d) +
                           "' (sacct --delimiter), which sacct's own fields hold (TRES strings "
                           "such as cpu=1,mem=1G, times, job ids, node lists), so the rows cannot "
                           "be split; export with sacct -P (its '|'), or --delimiter set to a tab "
                           "or $'\\x1f'");
  }

  Status read_header(const std::vector<std::string_view>& fields, size_t lineno, char delimiter) {
    bool trailing = false;
    std::vector<std::string> names = header_names(fields, trailing);
    if (Status s = check_columns(names, lineno); !s) return s;
    auto l = make_layout(names, trailing, where(name_, lineno), hint_);
    if (!l) return l.status();
    l->delimiter = delimiter;
    layout_ = *l;
    delimiter_open_ = false;
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

  Status read_job(const Row& row, std::string_view job_id, const std::string& key, size_t lineno) {
    Record r;
    r.line = lineno;
    r.job.job_id = std::string(job_id);
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
    if (r.unknown_state && tally_.unknown_state++ == 0) {
      tally_.first_unknown_state =
          where(name_, r.line) + " " + j.job_id + " (" + quoted(j.state) + ")";
    }
    if (r.jobstats_beyond_request && tally_.jobstats_beyond_request++ == 0) {
      tally_.first_jobstats_beyond = where(name_, r.line) + " " + j.job_id;
    }
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
  bool delimiter_open_ = false;  // --columns: the delimiter is still to be told (settle_delimiter)
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
  // `sacct --json`/`--yaml` whatever --format says: no header or row of it is a table's.
  if (Status s = refuse_slurm_document(text, name); !s) return s;
  // Scripts next: a bad --scripts path should fail before any work.
  auto scripts = sacct::ScriptSources::open(o);
  if (!scripts) return scripts.status();
  std::optional<TimeZone> zone;  // ReadOptions::sacct_timezone; a name that is not a zone fails the read
  if (!o.sacct_timezone.empty()) {
    Result<TimeZone> z = TimeZone::load(o.sacct_timezone);
    if (!z) return z.status().with_context("--sacct-timezone");
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
    read_progress(o, i, lines.size());
    std::string_view row = lines[i];
    if (Status s = reader.settle_delimiter(row, i + 1); !s) return s;
    const size_t last = reader.row_end(lines, i);
    if (last > i) {
      std::string& r = rejoined.emplace_back(lines[i]);
      for (size_t k = i + 1; k <= last; ++k) (r += '\n') += lines[k];
      row = r;
    }
    if (Status s = reader.read_line(row, i + 1); !s) return s;
    i = last;
  }
  read_progress(o, lines.size(), lines.size());
  return reader.finish(so, *scripts);
}

}  // namespace peakcast::ingest
