// The values of a Nextflow trace: durations (and how Nextflow rounded them), timestamps, sizes,
// and the latest end a task's recorded figures allow (nextflow_internal.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "nextflow_internal.h"
#include "peakcast/core/io.h"
#include "peakcast/core/job.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/bounds.h"

namespace peakcast::ingest::nextflow_detail {
namespace {

constexpr double kMaxMs = kMaxEpochSeconds * 1000 / 4;  // each duration alone; sums stay in range

// The human form's milliseconds; `exact` when every part is in ms.
std::optional<double> parse_human_ms(std::string_view v, bool& exact) {
  double total = 0;
  bool any = false;
  exact = true;
  size_t i = 0;
  while (i < v.size()) {
    while (i < v.size() && v[i] == ' ') ++i;
    if (i >= v.size()) break;
    size_t j = i;
    while (j < v.size() && (std::isdigit(static_cast<unsigned char>(v[j])) || v[j] == '.')) ++j;
    auto num = parse_double(v.substr(i, j - i));
    if (!num || *num < 0) return std::nullopt;
    size_t k = j;
    while (k < v.size() && std::isalpha(static_cast<unsigned char>(v[k]))) ++k;
    const std::string unit = lower(v.substr(j, k - j));
    double ms_per = 0;
    if (unit == "ms") ms_per = 1;
    else if (unit == "s" || unit == "sec") ms_per = 1e3;
    else if (unit == "m" || unit == "min") ms_per = 60e3;
    else if (unit == "h") ms_per = 3600e3;
    else if (unit == "d") ms_per = 86400e3;
    else return std::nullopt;
    exact = exact && ms_per == 1;
    total += *num * ms_per;
    any = true;
    i = k;
  }
  if (!any || total > kMaxMs) return std::nullopt;
  return total;
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view v, bool allow_negative) {
  v = trim(v);
  const bool negative = allow_negative && v.starts_with('-');
  if (negative) v.remove_prefix(1);
  // A digit or a point first: no second sign, no "inf" or "nan".
  if (v.empty() || !(std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '.')) return std::nullopt;
  Duration d;
  if (auto raw = parse_double(v)) {
    if (*raw > kMaxMs) return std::nullopt;
    d.ms = *raw;
  } else {
    bool exact = true;
    auto ms = parse_human_ms(v, exact);
    if (!ms) return std::nullopt;
    d.ms = *ms;
    // Half the printed unit on both sides, the tie included: Nextflow rounds half up, but under
    // a minute in float arithmetic (Math.round(ms / 1000 * 10 as float) / 10), which can take a
    // tie either way, and a tool that rewrites a trace may round half to even.
    if (!exact) d.below = d.above = *ms < 60e3 ? 50 : 500;
  }
  if (negative) {
    d.ms = -d.ms;
    std::swap(d.below, d.above);
  }
  return d;
}

Result<Instants> parse_time(std::string_view v, const TimeZone* zone) {
  v = trim(v);
  std::optional<Timestamp> t;
  if (all_digits(v)) {
    if (v.size() > 15) return Status::invalid("not a timestamp: '" + std::string(v) + "'");
    if (auto ms = parse_int(v)) t = Timestamp{*ms, false};
  } else {
    t = parse_timestamp(v);
  }
  auto in_range = [](int64_t ms) { return ms >= 0 && ms / 1000 <= kMaxEpochSeconds / 2; };
  if (!t || !in_range(t->ms)) return Status::invalid("not a timestamp: '" + std::string(v) + "'");
  if (!t->wall_clock || zone == nullptr) return Instants{t->ms, t->ms};
  const int64_t local_s = t->ms / 1000, ms = t->ms % 1000;  // t->ms >= 0
  Instants out;
  for (auto [twice, at] : {std::pair{TimeZone::TwiceShown::kEarlier, &out.earlier},
                           std::pair{TimeZone::TwiceShown::kLater, &out.later}}) {
    const Result<int64_t> utc_s = zone->utc_of_local(local_s, twice);
    if (!utc_s) return Status::invalid("'" + std::string(v) + "': " + utc_s.status().message());
    *at = *utc_s * 1000 + ms;
    if (!in_range(*at)) return Status::invalid("not a timestamp: '" + std::string(v) + "'");
  }
  return out;
}

std::optional<int64_t> by_row_order(Instants t, std::optional<int64_t> latest_complete) {
  if (!latest_complete) return std::nullopt;
  return t.earlier >= *latest_complete - kOutOfOrderMs ? t.earlier : t.later;
}

SubmitComplete settle(Instants submit, Instants complete, std::optional<double> duration_ms,
                      std::optional<int64_t> latest_complete) {
  std::vector<SubmitComplete> pairs;
  for (int64_t s : {submit.earlier, submit.later}) {
    for (int64_t c : {complete.earlier, complete.later}) pairs.push_back({s, c});
  }
  // 1. The pairs nearest the duration.
  if (duration_ms) {
    auto off = [&](const SubmitComplete& p) {
      return std::abs(static_cast<double>(p.complete - p.submit) - *duration_ms);
    };
    double nearest = off(pairs.front());
    for (const SubmitComplete& p : pairs) nearest = std::min(nearest, off(p));
    std::erase_if(pairs, [&](const SubmitComplete& p) { return off(p) > nearest; });
  }
  // 2. Both readings of complete left: the row order.
  const auto [lo, hi] = std::minmax_element(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
    return a.complete < b.complete;
  });
  if (lo->complete != hi->complete) {
    if (auto c = by_row_order({lo->complete, hi->complete}, latest_complete)) {
      std::erase_if(pairs, [&](const SubmitComplete& p) { return p.complete != *c; });
    }
  }
  // 3. The earliest submit, the latest complete.
  SubmitComplete out = pairs.front();
  for (const SubmitComplete& p : pairs) out = {std::min(out.submit, p.submit), std::max(out.complete, p.complete)};
  return out;
}

int64_t settle_start(Instants start, int64_t end, std::optional<int64_t> realtime_ms) {
  if (!realtime_ms || start.earlier == start.later) return start.earlier;
  auto off = [&](int64_t t) { return std::abs(end - t - *realtime_ms); };
  return off(start.later) < off(start.earlier) ? start.later : start.earlier;
}

std::optional<uint64_t> parse_size(std::string_view v) { return peakcast::parse_size(v, 1); }

bool size_too_large(std::string_view v) {
  v = trim(v);
  size_t i = 0;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) ++i;
  if (i == 0) return false;
  // A run of hundreds of digits reads as a huge double or infinity, both too large.
  const std::string number(v.substr(0, i));
  char* end = nullptr;
  const double d = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size()) return false;
  const std::optional<uint64_t> unit = peakcast::parse_size("1" + std::string(v.substr(i)), 1);
  if (!unit) return false;  // not a unit parse_size knows: not a size at all
  return !(d * static_cast<double>(*unit) <= kMaxBytes);
}

bool rounded_size(std::string_view v) {
  v = trim(v);
  size_t i = 0;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) ++i;
  const std::string unit = lower(trim(v.substr(i)));
  return !unit.empty() && unit != "b";
}

int64_t latest_end(int64_t lo, int64_t hi) {
  const int64_t second = hi - (((hi % kMsPerSecond) + kMsPerSecond) % kMsPerSecond);  // floor
  if (second >= lo) return second + kMsPerSecond - 1;
  return hi;
}

}  // namespace peakcast::ingest::nextflow_detail
