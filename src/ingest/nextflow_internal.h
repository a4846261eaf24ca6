// Internals of the Nextflow trace reader (parse_nextflow, include/peakcast/ingest/reader.h),
// shared by its .cpp files; not part of the public contract:
//   nextflow.cpp         the header, its columns and delimiter, one task row, the notes
//   nextflow_values.cpp  values: durations and their rounding, timestamps, sizes, a task's end
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "peakcast/core/status.h"
#include "peakcast/core/time_zone.h"

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

// The instants a trace's time can be, in epoch milliseconds: `earlier` == `later` but for a
// wall-clock time in the hour its zone's clocks showed twice (after a fall-back change).
struct Instants {
  int64_t earlier = 0;
  int64_t later = 0;
};

// Raw epoch milliseconds or a time with an offset (the instant it says), or the human
// "2023-01-23 10:00:00.000": the wall clock of the JVM that wrote the trace, placed in `zone`
// (ReadOptions::nextflow_timezone; nullptr: read as UTC). The error says why: not a time ("not a
// timestamp: '...'"), or a wall-clock time `zone` never showed (its clocks skipped it) or cannot
// place (TimeZone::utc_of_local).
Result<Instants> parse_time(std::string_view v, const TimeZone* zone);

// A task's submit and complete from their instants, when a wall-clock time in the hour its zone's
// clocks showed twice has two readings:
// 1. the row's duration (Nextflow's complete - submit) settles them: the pairs of readings whose
//    complete - submit is nearest `duration_ms` hold;
// 2. where both readings of complete still hold (both times in the hour shown twice, or no
//    duration), the order Nextflow writes rows in settles it (a row is written when its task
//    completes): the earlier reading unless it falls more than kOutOfOrderMs before
//    `latest_complete`, the latest complete of the rows before (nullopt: none);
// 3. of what holds then, the earliest submit and the latest complete: a task is never taken to
//    have ended before it did, nor to have been submitted after it was (no leakage into the
//    history of the tasks around it).
struct SubmitComplete {
  int64_t submit = 0;
  int64_t complete = 0;
};
// How far before the latest complete so far a row's complete may lie and still be read as is:
// rows come out of completion order by up to 221 s in the nf-core traces (mag; chipseq 43 s,
// eager 72 s); a change of the clocks moves them by 30 minutes or more.
inline constexpr int64_t kOutOfOrderMs = 15 * 60 * 1000;
SubmitComplete settle(Instants submit, Instants complete, std::optional<double> duration_ms,
                      std::optional<int64_t> latest_complete);

// Step 2 of settle() for one time's two readings: the one the row order says, nullopt without a
// row before.
std::optional<int64_t> by_row_order(Instants t, std::optional<int64_t> latest_complete);

// A task's start from its instants: the reading nearest `realtime_ms` (the task's own run time)
// before `end`; without a realtime, or on a tie, the earlier.
int64_t settle_start(Instants start, int64_t end, std::optional<int64_t> realtime_ms);

// Raw bytes or Nextflow's "4 GB" / "1.2 MB" / "512 KB" (binary multiples).
std::optional<uint64_t> parse_size(std::string_view v);
// A size in parse_size's form (a number, a unit it knows) that parse_size refused for its bytes
// alone: more than kMaxBytes (1.8e19, below 2^64), e.g. '18446744073709551615' or '99999999 PB'.
bool size_too_large(std::string_view v);

// A size in a unit of KB or more: Nextflow (MemoryUnit.toString) printed it to one decimal of
// that unit, up to 5% off.
bool rounded_size(std::string_view v);

// The latest instant a task can have ended when its recorded end lies somewhere in [lo, hi]
// (epoch ms; lo == hi when it is known exactly). An end recorded to a whole second (".000":
// executors that time tasks to the second, such as Kubernetes) says only that the task ended
// within that second: it counts as that second's last millisecond.
int64_t latest_end(int64_t lo, int64_t hi);

}  // namespace peakcast::ingest::nextflow_detail
