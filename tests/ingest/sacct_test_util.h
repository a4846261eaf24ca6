// What the sacct reader's tests share (sacct_test.cpp, sacct_sources_test.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "peakcast/ingest/reader.h"

namespace peakcast::ingest::sacct_testing {

inline constexpr uint64_t kK = 1024, kM = kK * kK, kG = kM * kK;

inline ReadOptions sacct_options() {
  ReadOptions o;
  o.format = Format::kSacct;
  return o;
}

inline bool has_note(const Trace& t, std::string_view needle) {
  return std::any_of(t.notes.begin(), t.notes.end(),
                     [&](const std::string& n) { return n.find(needle) != std::string::npos; });
}

inline const Job* find_job(const Trace& t, std::string_view id) {
  for (const Job& j : t.jobs) {
    if (j.job_id == id) return &j;
  }
  return nullptr;
}

}  // namespace peakcast::ingest::sacct_testing
