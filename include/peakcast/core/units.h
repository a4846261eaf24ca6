// Parsing of the size and time notations traces use. Every parser returns nullopt on garbage;
// callers turn that into a Status naming the file, line and field.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace peakcast {

// "4096", "4K", "1.50G", "2.5 GB", "1.2 MB", "512 KiB", "4000M" -> bytes. Bare numbers are
// multiplied by `bare_unit` (1 for bytes, 1024*1024 for Slurm MB fields). Suffixes are binary
// (K = 1024), as Slurm and Nextflow print them.
std::optional<uint64_t> parse_size(std::string_view text, uint64_t bare_unit = 1);

// Slurm durations: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS" (seconds may have a
// fraction, dropped); "UNLIMITED" -> nullopt. Returns seconds. Pieces are digits only (no sign or
// exponent), and a duration over 100 years is nullopt: no garbage reaches the arithmetic.
std::optional<int64_t> parse_slurm_duration(std::string_view text);

// Timestamps -> epoch milliseconds: epoch seconds ("1674490103", "1674490103.249"), epoch ms
// (13 digits or more), ISO "2026-11-30T07:57:35", "2023-01-23 10:00:00.123", optionally with a
// zone, "Z", "+02:00" or "-05:30", which is applied. Calendar forms without a zone are read as UTC
// unless `utc_offset_s` is given; fractions of a second are kept to the millisecond. Any other
// text after the time is nullopt.
std::optional<int64_t> parse_timestamp_ms(std::string_view text, int64_t utc_offset_s = 0);

// parse_timestamp_ms's reading, saying whether the text gave the instant (epoch forms, a zone) or
// only a wall-clock time (a calendar form without a zone: `ms` reads it as if it were UTC, for
// the caller to place in its zone; TimeZone::utc_of_local).
struct Timestamp {
  int64_t ms = 0;
  bool wall_clock = false;
};
std::optional<Timestamp> parse_timestamp(std::string_view text);

std::optional<double> parse_double(std::string_view text);
std::optional<int64_t> parse_int(std::string_view text);

// A byte count from a double (a utilization times a capacity): rounded to the nearest byte, 0
// for NaN and anything not above 0, UINT64_MAX at or above 2^64. Converting a double out of an
// integer type's range is undefined behaviour, and std::llround's result out of range is
// unspecified (LLONG_MIN on x86-64, which read as unsigned is 2^63 bytes).
uint64_t bytes_from_double(double bytes);

}  // namespace peakcast
