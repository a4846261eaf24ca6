// A named zone of the system's tz database, for reading files that print local wall-clock times
// without an offset (sacct run without TZ=UTC). The zone's rules are the database's own: its
// TZif file (RFC 8536) under $TZDIR, else /usr/share/zoneinfo, read once; no rule is written
// here. Immutable after load(): safe to share across threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "peakcast/core/status.h"

namespace peakcast {

class TimeZone {
 public:
  // "Europe/Berlin", "America/New_York", "UTC", ... Errors: a name that is empty, absolute or
  // climbs out of the database (".."), no such file, a file that is not TZif, or a zone file
  // with leap seconds ("right/..."), whose clock is not the one sacct prints.
  static Result<TimeZone> load(std::string_view name);

  const std::string& name() const { return name_; }

  // The offset from UTC, in seconds east, in force at a UTC instant (seconds since the epoch).
  int64_t offset_at(int64_t utc_s) const;

  // Which instant a time the clocks showed twice (the hour after a fall-back transition) is.
  enum class TwiceShown { kEarlier, kLater };

  // The UTC instant of a local wall-clock time, given as seconds since 1970-01-01 00:00:00 on
  // the zone's own calendar. A time the clocks showed twice is the instant `twice` names; a time
  // they never showed (skipped by a spring-forward transition) is an error, as is a time after
  // the last transition a "slim" zone file lists (its later rules are in a POSIX TZ footer this
  // reader does not evaluate).
  Result<int64_t> utc_of_local(int64_t local_s, TwiceShown twice = TwiceShown::kEarlier) const;

 private:
  std::string name_;
  std::vector<int64_t> transitions_;   // UTC seconds, ascending
  std::vector<int32_t> offset_after_;  // the offset in force from transitions_[k] on
  int32_t initial_offset_ = 0;         // before the first transition (RFC 8536: time type 0)
  bool rules_after_last_ = false;      // the footer has a DST rule: past the last transition is unknown
};

}  // namespace peakcast
