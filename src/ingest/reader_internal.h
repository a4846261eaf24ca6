// What the trace readers share and reader.h does not promise its callers: the wording of the
// notes that every format gives, and the refusal of Slurm's job documents.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {

// Slurm's own job documents (`sacct --json`, `sacct --yaml`) are no trace: where `text` is one,
// an error naming `name`, the form and the `sacct -P` export to use; OK otherwise. Every parser
// in reader.h calls it before its first line, so that a caller of parse_sacct() or parse_jsonl()
// hears the one reason rather than a JSON error on every line; read_trace() calls it too where it
// cannot tell a file's format (a YAML document is of none).
Status refuse_slurm_document(std::string_view text, const std::string& name);

// ReadOptions::progress, when set: `done` of `total` lines of the text read.
void read_progress(const ReadOptions& o, size_t done, size_t total);

// The note for host-memory peaks of 0 read as not measured (no label), in one wording for every
// reader, so that "read as not measured" finds it whatever the format:
//   "memory of 0 read as not measured (peak_rss in 3 job(s), rss in 2): <why>. No memory label:
//   evaluate and train do not score them, simulate does not replay them"
// `zeros` counts the jobs per field, each field named in the format's own words (an
// administrator greps for them); a count of 0 is left out. `why`: why a 0 is no measurement
// there, as a clause.
std::string unmeasured_memory_note(std::initializer_list<std::pair<std::string_view, size_t>> zeros,
                                   std::string_view why);

}  // namespace peakcast::ingest
