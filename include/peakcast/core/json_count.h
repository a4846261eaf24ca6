// A count read from JSON (a manifest, a results file): one rule for every reader of such files.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace peakcast {

// The largest count a JSON number carries exactly as a double: 2^53.
inline constexpr uint64_t kMaxJsonCount = uint64_t{1} << 53;

// `v` as a count: a whole number from 0 to 2^53 (an integer, or a float with no fraction such as
// 12.0 or 1e3), or nullopt for anything else (negative, fractional, out of range, not a number).
// Each caller keeps its own policy for nullopt (an error naming the field, or 0). Reading a float
// with nlohmann's get<size_t>() instead is a cast, undefined out of the type's range (1e300).
inline std::optional<uint64_t> json_count(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    return u <= kMaxJsonCount ? std::optional<uint64_t>(u) : std::nullopt;
  }
  if (v.is_number_integer()) {
    const auto i = v.get<int64_t>();
    return i >= 0 && static_cast<uint64_t>(i) <= kMaxJsonCount ? std::optional<uint64_t>(static_cast<uint64_t>(i))
                                                              : std::nullopt;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 0 && d <= static_cast<double>(kMaxJsonCount) && d == std::floor(d)) return static_cast<uint64_t>(d);
  }
  return std::nullopt;
}

}  // namespace peakcast
