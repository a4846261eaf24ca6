// Internals of the Nextflow trace reader (parse_nextflow, include/peakcast/ingest/reader.h),
// shared by its .cpp files; not part of the public contract:
//   nextflow.cpp         the header, its columns and delimiter, one task row, the notes
//   nextflow_values.cpp  values: durations and their rounding, timestamps, sizes, a task's end
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace peakcast::ingest::nextflow_detail {

// A duration as a trace gives it, in milliseconds. Raw milliseconds and the `ms` form are exact;
// the rest of Nextflow's human form is rounded (nextflow.util.Duration.toString: exact
// milliseconds under a second, half up to 0.1 s under a minute, else half up to the second), and
// the duration it stands for lies in [ms - below, ms + above] (half the unit, ties included).
struct Duration {
  double ms = 0;
  double below = 0;
  double above = 0;
  bool rounded() const { return above > 0 || below > 0; }
};

// Raw milliseconds ("14400000") or the human form ("4h", "1m 3s", "1d 2h 3m", "500ms", "2.5s").
// A leading '-' only with `allow_negative` (an end recorded before its submission).
std::optional<Duration> parse_duration(std::string_view v, bool allow_negative = false);

// Raw epoch milliseconds, or the human "2023-01-23 10:00:00.000" (read as UTC).
std::optional<int64_t> parse_time(std::string_view v);

// Raw bytes or Nextflow's "4 GB" / "1.2 MB" / "512 KB" (binary multiples).
std::optional<uint64_t> parse_size(std::string_view v);

// A size in a unit of KB or more: Nextflow (MemoryUnit.toString) printed it to one decimal of
// that unit, up to 5% off.
bool rounded_size(std::string_view v);

// The latest instant a task can have ended when its recorded end lies somewhere in [lo, hi]
// (epoch ms; lo == hi when it is known exactly). An end recorded to a whole second (".000":
// executors that time tasks to the second, such as Kubernetes) says only that the task ended
// within that second: it counts as that second's last millisecond.
int64_t latest_end(int64_t lo, int64_t hi);

}  // namespace peakcast::ingest::nextflow_detail
