#include "peakcast/core/units.h"

#include <cctype>
#include <climits>
#include <charconv>
#include <cmath>
#include <limits>
#include <ctime>
#include <string>

#include "peakcast/core/io.h"

namespace peakcast {

std::optional<double> parse_double(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_int(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> parse_size(std::string_view text, uint64_t bare_unit) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  auto num = parse_double(text.substr(0, i));
  if (!num || *num < 0) return std::nullopt;
  std::string_view unit = trim(text.substr(i));
  double mult = static_cast<double>(bare_unit);
  if (!unit.empty()) {
    std::string u;
    for (char c : unit) u.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    // Accept K, KB, KIB (and the same for M/G/T/P), and a bare B.
    if (u == "B") {
      mult = 1;
    } else {
      const std::string letters = "KMGTP";
      size_t pow = letters.find(u[0]);
      if (pow == std::string::npos) return std::nullopt;
      std::string rest = u.substr(1);
      if (!(rest.empty() || rest == "B" || rest == "IB")) return std::nullopt;
      mult = std::pow(1024.0, static_cast<double>(pow + 1));
    }
  }
  double bytes = *num * mult;
  if (!std::isfinite(bytes) || bytes > 1.8e19) return std::nullopt;
  // llround would overflow past INT64_MAX; uint64 holds up to the 1.8e19 checked above.
  return static_cast<uint64_t>(std::round(bytes));
}

namespace {

// The longest duration taken as one (100 years): a larger Elapsed or Timelimit is garbage, and
// refusing it before the arithmetic keeps every product below INT64_MAX.
constexpr int64_t kMaxDurationS = 36525LL * 86400;

// A run of 1 to 12 decimal digits, nothing else (no sign, exponent or spaces): a piece of a
// Slurm duration. Twelve digits cannot overflow, and any piece that long is out of range anyway.
std::optional<int64_t> duration_digits(std::string_view text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Seconds, whole or with a fraction ("05", "05.123"); the fraction is dropped.
std::optional<int64_t> duration_seconds(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos) return duration_digits(text);
  if (!duration_digits(text.substr(dot + 1))) return std::nullopt;
  return duration_digits(text.substr(0, dot));
}

}  // namespace

std::optional<int64_t> parse_slurm_duration(std::string_view text) {
  text = trim(text);
  if (text.empty() || text == "UNLIMITED" || text == "Partition_Limit" || text == "INVALID") {
    return std::nullopt;
  }
  // Every piece is bounded before it is multiplied: "213503982334602-00" overflowed the product
  // and came back as 17 hours, and "1e300" was cast from a double out of int64's range.
  int64_t days = 0;
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    auto d = duration_digits(text.substr(0, dash));
    if (!d || *d > kMaxDurationS / 86400) return std::nullopt;
    days = *d;
    text = text.substr(dash + 1);
    auto parts = split(text, ':');
    if (parts.size() > 3) return std::nullopt;
    int64_t v[3] = {0, 0, 0};  // hours, minutes, seconds
    for (size_t k = 0; k < parts.size(); ++k) {
      auto x = duration_digits(parts[k]);
      if (!x || *x > kMaxDurationS) return std::nullopt;
      v[k] = *x;
    }
    const int64_t s = ((days * 24 + v[0]) * 60 + v[1]) * 60 + v[2];
    return s <= kMaxDurationS ? std::optional<int64_t>(s) : std::nullopt;
  }
  auto parts = split(text, ':');
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  std::vector<int64_t> v;
  for (size_t k = 0; k < parts.size(); ++k) {
    // Elapsed may carry fractional seconds ("00:00.123"), in its seconds piece only.
    const bool seconds = parts.size() > 1 && k + 1 == parts.size();
    auto x = seconds ? duration_seconds(parts[k]) : duration_digits(parts[k]);
    if (!x || *x > kMaxDurationS) return std::nullopt;
    v.push_back(*x);
  }
  int64_t s = 0;
  switch (v.size()) {
    case 1: s = v[0] * 60; break;                       // minutes
    case 2: s = v[0] * 60 + v[1]; break;                // MM:SS
    default: s = (v[0] * 60 + v[1]) * 60 + v[2]; break;  // HH:MM:SS
  }
  return s <= kMaxDurationS ? std::optional<int64_t>(s) : std::nullopt;
}

std::optional<Timestamp> parse_timestamp(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  size_t digits = 0, dots = 0;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) ++digits;
    else if (c == '.') ++dots;
  }
  if (digits == text.size()) {
    auto v = parse_int(text);
    if (!v) return std::nullopt;
    if (text.size() >= 13) return Timestamp{*v, false};  // epoch milliseconds
    if (*v > INT64_MAX / 1000) return std::nullopt;
    return Timestamp{*v * 1000, false};
  }
  if (dots == 1 && digits + 1 == text.size() && text.front() != '.' && text.back() != '.') {
    auto v = parse_double(text);  // fractional epoch seconds
    if (!v || *v >= 9.2e15) return std::nullopt;
    return Timestamp{static_cast<int64_t>(std::floor(*v * 1000.0 + 0.5)), false};
  }
  // YYYY-MM-DD[(T| )HH:MM[:SS[.fff]][Z|+HH:MM|-HH:MM]], read by hand: sscanf stopped at the
  // last field it knew and took "2023-01-23T10:00:00garbage" for a time.
  size_t i = 0;
  // 1 to `max` digits at i (the calendar fields are zero-padded, but were never required to be).
  auto number = [&](size_t max) -> std::optional<int> {
    const size_t from = i;
    int v = 0;
    while (i < text.size() && i - from < max && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i++] - '0');
    }
    return i > from ? std::optional<int>(v) : std::nullopt;
  };
  auto take = [&](char c) {
    if (i >= text.size() || text[i] != c) return false;
    ++i;
    return true;
  };
  const size_t year_from = i;
  const auto y = number(4);
  if (!y || i - year_from != 4 || !take('-')) return std::nullopt;
  const auto mo = number(2);
  if (!mo || !take('-')) return std::nullopt;
  const auto d = number(2);
  if (!d) return std::nullopt;
  int h = 0, mi = 0, sec = 0;
  int64_t frac_ms = 0;
  std::optional<int64_t> zone_s;  // the offset from UTC the text itself gives
  if (i < text.size()) {
    if (text[i] != 'T' && text[i] != ' ') return std::nullopt;
    ++i;
    const auto hh = number(2);
    if (!hh || !take(':')) return std::nullopt;
    const auto mm = number(2);
    if (!mm) return std::nullopt;
    h = *hh;
    mi = *mm;
    if (take(':')) {
      const auto ss = number(2);
      if (!ss) return std::nullopt;
      sec = *ss;
      if (take('.')) {
        const size_t frac_from = i;
        double scale = 100.0, ms = 0.0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
          ms += (text[i++] - '0') * scale;
          scale /= 10.0;
        }
        if (i == frac_from) return std::nullopt;
        frac_ms = static_cast<int64_t>(std::floor(ms + 0.5));
      }
    }
    if (take('Z')) {
      zone_s = 0;
    } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
      const int sign = text[i++] == '-' ? -1 : 1;
      const size_t zone_from = i;
      const auto zh = number(2);
      if (!zh || i - zone_from != 2 || !take(':')) return std::nullopt;
      const size_t minutes_from = i;
      const auto zm = number(2);
      if (!zm || i - minutes_from != 2 || *zh > 23 || *zm > 59) return std::nullopt;
      zone_s = sign * (*zh * 3600 + *zm * 60);
    }
    if (i != text.size()) return std::nullopt;  // trailing text
  }
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > 31 || h > 23 || mi > 59 || sec > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *y - 1900;
  tm.tm_mon = *mo - 1;
  tm.tm_mday = *d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  // Without a zone in the text (sacct and Nextflow print local time bare) the wall clock as if it
  // were UTC: the caller knows the zone.
  const int64_t ms = (static_cast<int64_t>(timegm(&tm)) - zone_s.value_or(0)) * 1000 + frac_ms;
  return Timestamp{ms, !zone_s.has_value()};
}

std::optional<int64_t> parse_timestamp_ms(std::string_view text, int64_t utc_offset_s) {
  std::optional<Timestamp> t = parse_timestamp(text);
  if (!t) return std::nullopt;
  return t->wall_clock ? t->ms - utc_offset_s * 1000 : t->ms;
}

uint64_t bytes_from_double(double bytes) {
  if (!(bytes > 0)) return 0;
  if (bytes >= 18446744073709551616.0) return std::numeric_limits<uint64_t>::max();  // 2^64
  return static_cast<uint64_t>(std::round(bytes));  // doubles this large are whole: no rounding up to 2^64
}

}  // namespace peakcast
