// What the trace readers share and reader.h does not promise its callers: the wording of the
// notes that every format gives.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "peakcast/ingest/reader.h"

namespace peakcast::ingest {

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
