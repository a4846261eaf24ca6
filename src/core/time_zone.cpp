#include "peakcast/core/time_zone.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <fmt/format.h>

#include "peakcast/core/io.h"

namespace peakcast {
namespace {

constexpr int64_t kDayS = 86400;

// A big-endian two's-complement integer of n bytes (4 or 8) at `at`.
int64_t be_int(std::string_view s, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t k = 0; k < n; ++k) v = (v << 8) | static_cast<unsigned char>(s[at + k]);
  if (n == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

struct Counts {
  size_t isut, isstd, leap, time, type, chars;
};

// The counts of a TZif header at `at` (RFC 8536 section 3.1), or nullopt when it is not one.
std::optional<Counts> header(std::string_view s, size_t at) {
  if (s.size() < at + 44 || s.substr(at, 4) != "TZif") return std::nullopt;
  // Four-octet unsigned counts: at most 2^32 - 1 each, so block_size stays far below 2^64.
  auto count = [&](size_t k) {
    return static_cast<size_t>(static_cast<uint32_t>(be_int(s, at + 20 + 4 * k, 4)));
  };
  return Counts{count(0), count(1), count(2), count(3), count(4), count(5)};
}

size_t block_size(const Counts& c, size_t time_bytes) {
  return c.time * time_bytes + c.time + c.type * 6 + c.chars + c.leap * (time_bytes + 4) + c.isstd +
         c.isut;
}

}  // namespace

Result<TimeZone> TimeZone::load(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.find("..") != std::string_view::npos) {
    return Status::invalid(fmt::format("time zone '{}': give a tz database name such as Europe/Berlin or UTC",
                                       name));
  }
  const char* dir = std::getenv("TZDIR");
  const std::string path = fmt::format("{}/{}", dir != nullptr && *dir != '\0' ? dir : "/usr/share/zoneinfo", name);
  Result<std::string> data = read_file(path);
  if (!data) {
    return Status::not_found(fmt::format("unknown time zone '{}': no {} in the system's tz database", name, path));
  }
  const std::string_view s = *data;
  auto bad = [&](std::string_view why) {
    return Status::invalid(fmt::format("time zone '{}': {} is not a usable TZif file ({})", name, path, why));
  };
  std::optional<Counts> c = header(s, 0);
  if (!c) return bad("no TZif header");
  size_t at = 44;
  size_t time_bytes = 4;
  // Version 2+ files repeat the data with 64-bit times after the version 1 block; read those.
  if (s[4] >= '2') {
    const size_t second = 44 + block_size(*c, 4);
    c = header(s, second);
    if (!c) return bad("no second header");
    at = second + 44;
    time_bytes = 8;
  }
  if (c->type == 0) return bad("no local time types");
  if (c->leap != 0) return bad("it counts leap seconds, which sacct's clock does not");
  if (s.size() < at + block_size(*c, time_bytes)) return bad("truncated");

  TimeZone z;
  z.name_ = std::string(name);
  const size_t types_at = at + c->time * time_bytes + c->time;
  auto utoff = [&](size_t type) { return static_cast<int32_t>(be_int(s, types_at + 6 * type, 4)); };
  z.initial_offset_ = utoff(0);
  for (size_t k = 0; k < c->time; ++k) {
    const int64_t t = be_int(s, at + k * time_bytes, time_bytes);
    const auto type = static_cast<unsigned char>(s[at + c->time * time_bytes + k]);
    if (type >= c->type) return bad("a transition names a time type it does not have");
    if (!z.transitions_.empty() && t <= z.transitions_.back()) return bad("transitions out of order");
    z.transitions_.push_back(t);
    z.offset_after_.push_back(utoff(type));
  }
  // The footer (version 2+): a POSIX TZ string for times after the last transition. One with a
  // rule (a ',') means the offset keeps changing there, which only the footer says.
  if (time_bytes == 8) {
    const size_t footer_at = at + block_size(*c, 8);
    const size_t end = s.find('\n', footer_at + 1);
    if (footer_at < s.size() && end != std::string_view::npos) {
      z.rules_after_last_ = s.substr(footer_at + 1, end - footer_at - 1).find(',') != std::string_view::npos;
    }
  }
  return z;
}

int64_t TimeZone::offset_at(int64_t utc_s) const {
  auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc_s);
  if (it == transitions_.begin()) return initial_offset_;
  return offset_after_[static_cast<size_t>(it - transitions_.begin() - 1)];
}

Result<int64_t> TimeZone::utc_of_local(int64_t local_s, TwiceShown twice) const {
  // Offsets stay within a day of UTC: the offsets in force within two days of local_s are every
  // candidate; a candidate holds when the instant it gives has that very offset.
  std::vector<int64_t> offsets = {offset_at(local_s - 2 * kDayS)};
  auto from = std::upper_bound(transitions_.begin(), transitions_.end(), local_s - 2 * kDayS);
  auto to = std::upper_bound(transitions_.begin(), transitions_.end(), local_s + 2 * kDayS);
  for (auto it = from; it != to; ++it) offsets.push_back(offset_after_[static_cast<size_t>(it - transitions_.begin())]);
  std::optional<int64_t> utc;
  for (int64_t o : offsets) {
    const int64_t t = local_s - o;
    if (offset_at(t) != o) continue;
    if (!utc || (twice == TwiceShown::kEarlier ? t < *utc : t > *utc)) utc = t;
  }
  if (!utc) {
    return Status::invalid(fmt::format("no such local time in {} (the clocks skipped it)", name_));
  }
  if (rules_after_last_ && (transitions_.empty() || *utc >= transitions_.back())) {
    std::string until = "none";
    if (!transitions_.empty()) {
      const auto last = static_cast<std::time_t>(transitions_.back());
      std::tm tm{};
      gmtime_r(&last, &tm);
      until = std::to_string(tm.tm_year + 1900);
    }
    return Status::unsupported(fmt::format(
        "{}'s zone file lists transitions up to {} (later ones are rules in its footer, which this "
        "reader does not evaluate; a \"slim\" tz database lists few: install the \"fat\" one)",
        name_, until));
  }
  return *utc;
}

}  // namespace peakcast
