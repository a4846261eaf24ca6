// The recommended-request rule and its per-partition JSON settings (see the header).
#include "peakcast/sizing/recommend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/core/io.h"
#include "peakcast/core/json_error.h"
#include "peakcast/core/units.h"

namespace peakcast::sizing {
namespace {

using nlohmann::json;

Status field_error(const std::string& source, const std::string& field, const std::string& why) {
  return Status::invalid(source + ": " + field + ": " + why);
}

// A size: a non-negative number of bytes up to 1.8e19 (parse_size's and the readers' limit: the
// arithmetic on it stays below 2^64), or a string with a unit ("4G").
Result<uint64_t> read_size(const json& v, const std::string& source, const std::string& field) {
  constexpr uint64_t kMaxSize = 18'000'000'000'000'000'000ull;
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() <= kMaxSize) return v.get<uint64_t>();
    return field_error(source, field, "must be at most 1.8e19 bytes");
  }
  if (v.is_number()) {
    const double d = v.get<double>();
    // Not llround: its result past INT64_MAX (9.2e18) is unspecified.
    if (d >= 0 && d <= 1.8e19) return static_cast<uint64_t>(std::round(d));
    return field_error(source, field, "must be a non-negative size in bytes, at most 1.8e19");
  }
  if (v.is_string()) {
    if (auto b = parse_size(v.get<std::string>())) return *b;
    return field_error(source, field, "not a size: '" + v.get<std::string>() + "'");
  }
  return field_error(source, field, "must be a number of bytes or a size string such as \"4G\"");
}

Result<double> read_number(const json& v, const std::string& source, const std::string& field,
                           double lo, double hi) {
  if (!v.is_number()) return field_error(source, field, "must be a number");
  const double d = v.get<double>();
  if (!(d >= lo && d <= hi)) {
    return field_error(source, field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  return d;
}

Status read_settings(const json& obj, const std::string& source, const std::string& path,
                     RecommendSettings& s) {
  if (!obj.is_object()) return field_error(source, path, "must be an object");
  for (const auto& [key, v] : obj.items()) {
    const std::string field = path + "." + key;
    if (key == "margin_fraction" || key == "oom_factor") {
      auto d = read_number(v, source, field, key == "oom_factor" ? 1.0 : 0.0, 100.0);
      if (!d) return d.status();
      (key == "oom_factor" ? s.oom_factor : s.margin_fraction) = *d;
    } else if (key == "margin_bytes" || key == "granularity_bytes" || key == "floor_bytes") {
      auto b = read_size(v, source, field);
      if (!b) return b.status();
      (key == "margin_bytes" ? s.margin_bytes : key == "floor_bytes" ? s.floor_bytes : s.granularity_bytes) = *b;
    } else if (key == "limit_bytes") {
      if (v.is_null()) {
        s.limit_bytes.reset();
        continue;
      }
      auto b = read_size(v, source, field);
      if (!b) return b.status();
      if (*b == 0) return field_error(source, field, "must be > 0 (or null for no limit)");
      s.limit_bytes = *b;
    } else if (key == "allow_above_request") {
      if (!v.is_boolean()) return field_error(source, field, "must be true or false");
      s.allow_above_request = v.get<bool>();
    } else {
      return field_error(source, field, "unknown setting");
    }
  }
  return Status::ok();
}

}  // namespace

uint64_t round_up(double bytes, uint64_t granularity) {
  if (!(bytes > 0.0)) return 0;
  const double cap = static_cast<double>(std::numeric_limits<uint64_t>::max() / 2);
  const double b = std::min(std::ceil(bytes), cap);
  const auto whole = static_cast<uint64_t>(b);
  if (granularity <= 1) return whole;
  return (whole + granularity - 1) / granularity * granularity;
}

std::vector<std::string> partition_names(std::string_view partition) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= partition.size()) {
    size_t comma = partition.find(',', start);
    if (comma == std::string_view::npos) comma = partition.size();
    const std::string_view name = trim(partition.substr(start, comma - start));
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.emplace_back(name);
    start = comma + 1;
  }
  return out;
}

RecommendConfig::Resolved RecommendConfig::for_partition(std::string_view partition) const {
  std::vector<std::string> names = partition_names(partition);
  const bool by_default = names.empty() && !default_partition.empty();
  if (by_default) names.push_back(default_partition);
  // Only the partitions with settings of their own differ from the defaults.
  bool any_own = false;
  for (const std::string& n : names) any_own = any_own || partitions.count(n) > 0;
  if (!any_own) return {defaults, "default"};
  if (names.size() == 1) {
    return {partitions.at(names[0]),
            "partition " + names[0] + (by_default ? " (the default partition)" : "")};
  }
  // The job may run in any of them: the strictest of each setting (see the header).
  Resolved out;
  std::string list;
  bool first = true;
  for (const std::string& n : names) {
    auto it = partitions.find(n);
    const RecommendSettings& p = it != partitions.end() ? it->second : defaults;
    list += (first ? "" : ",") + n;
    if (first) {
      out.settings = p;
      first = false;
      continue;
    }
    RecommendSettings& s = out.settings;
    s.margin_fraction = std::max(s.margin_fraction, p.margin_fraction);
    s.margin_bytes = std::max(s.margin_bytes, p.margin_bytes);
    s.granularity_bytes = std::max(s.granularity_bytes, p.granularity_bytes);
    s.floor_bytes = std::max(s.floor_bytes, p.floor_bytes);
    s.allow_above_request = s.allow_above_request && p.allow_above_request;
    if (p.limit_bytes) s.limit_bytes = std::min(s.limit_bytes.value_or(*p.limit_bytes), *p.limit_bytes);
    s.oom_factor = std::max(s.oom_factor, p.oom_factor);
  }
  out.prefix = "partitions " + list + " (strictest)";
  return out;
}

Result<RecommendConfig> parse_recommend_config(const std::string& json_text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    // Where and why, not what: nlohmann's message echoes the bytes it last read ("last read:
    // '...'", raw), which peakcastd would write to its log. e.byte counts from 1 as the parser
    // counts: lines end at '\n', and a column is the bytes read on its line.
    const std::string_view read(json_text.data(), std::min<size_t>(e.byte, json_text.size()));
    const size_t newline = read.rfind('\n');
    const size_t line = 1 + static_cast<size_t>(std::count(read.begin(), read.end(), '\n'));
    const size_t column = newline == std::string_view::npos ? e.byte : e.byte - newline - 1;
    return Status::invalid(source + ":" + std::to_string(line) + ": not valid JSON: " +
                           json_error_reason(e.what(), JsonQuote::kNumber) + " (column " +
                           std::to_string(column) + ")");
  } catch (const json::exception& e) {
    // out_of_range for a number no double holds ("1e400", named: the admin's own file).
    return Status::invalid(source + ": not valid JSON: " + json_error_reason(e.what(), JsonQuote::kNumber));
  }
  if (!doc.is_object()) return field_error(source, "(top level)", "must be an object");
  RecommendConfig cfg;
  for (const auto& [key, v] : doc.items()) {
    if (key != "default" && key != "partitions" && key != "default_partition") {
      return field_error(source, key, "unknown key (expected 'default', 'partitions' or 'default_partition')");
    }
  }
  if (doc.contains("default_partition")) {
    const json& v = doc["default_partition"];
    const std::string name = v.is_string() ? v.get<std::string>() : std::string();
    const std::vector<std::string> names = partition_names(name);
    if (names.size() != 1 || names[0] != name) {
      return field_error(source, "default_partition",
                         "must be one partition name (slurm.conf's Default=YES partition), without commas or blanks");
    }
    cfg.default_partition = name;
  }
  if (doc.contains("default")) {
    if (Status s = read_settings(doc["default"], source, "default", cfg.defaults); !s) return s;
  }
  if (doc.contains("partitions")) {
    const json& parts = doc["partitions"];
    if (!parts.is_object()) return field_error(source, "partitions", "must be an object of partition names");
    for (const auto& [name, v] : parts.items()) {
      RecommendSettings s = cfg.defaults;
      if (Status st = read_settings(v, source, "partitions." + name, s); !st) return st;
      cfg.partitions.emplace(name, s);
    }
  }
  return cfg;
}

Result<RecommendConfig> load_recommend_config(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.status();
  return parse_recommend_config(*text, path);
}

Recommendation recommend_request(const RecommendInput& in, const RecommendConfig& config) {
  const RecommendConfig::Resolved resolved = config.for_partition(in.partition);
  const RecommendSettings& s = resolved.settings;
  const double upper = std::isfinite(in.upper_bytes) ? std::max(in.upper_bytes, 0.0) : 0.0;
  Recommendation r;
  r.bytes = round_up(upper * (1.0 + s.margin_fraction) + static_cast<double>(s.margin_bytes),
                     s.granularity_bytes);
  r.rule = "upper+margin";
  if (r.bytes < s.floor_bytes) {
    r.bytes = s.floor_bytes;
    r.rule = "floor";
  }
  // The cap at the user's request keeps a recommendation within what the user chose to ask
  // for. Once that request (or more) has run out of memory it is known to be too small, and
  // capping at it would throw the bound away: a retry would then only creep up by oom_factor.
  const bool request_failed =
      in.request_bytes && in.failed_request_bytes && *in.failed_request_bytes >= *in.request_bytes;
  if (in.request_bytes && !s.allow_above_request && !request_failed && r.bytes > *in.request_bytes) {
    r.bytes = *in.request_bytes;
    r.rule = "capped at request";
  }
  if (in.failed_request_bytes) {
    // At or below the failed request: raised above it. When the user's own request failed, the
    // bound (uncapped above) and the OOM step both hold as floors, as VPA's OOM bump does.
    const double failed = static_cast<double>(*in.failed_request_bytes);
    const uint64_t bump = round_up(std::max(failed * s.oom_factor, failed + 1.0), s.granularity_bytes);
    if ((r.bytes <= *in.failed_request_bytes || request_failed) && r.bytes < bump) {
      r.bytes = bump;
      r.rule = "oom: above failed request";
    }
  }
  // Lowering killed the script's last run: back to what its user asks for until a run completes.
  // (At the lowered limit plus the OOM step, the run after it would fail again wherever the
  // lowering had cut more than that step.)
  if (in.failed_at_lowered_limit && in.request_bytes && r.bytes < *in.request_bytes) {
    r.bytes = *in.request_bytes;
    r.rule = "oom at a lowered limit: the request";
  }
  if (s.limit_bytes && r.bytes > *s.limit_bytes) {
    r.bytes = *s.limit_bytes;
    r.rule = "capped at partition limit";
  }
  r.rule = resolved.prefix + ": " + r.rule;
  return r;
}

namespace {

// A run that shows the script can finish within its memory: it COMPLETED and its peak is known.
// Only such a run ends a chain of OOMs; a CANCELLED, TIMEOUT, FAILED, NODE_FAIL... run (or a
// COMPLETED one without a measured peak) says nothing about what the script needs, so the OOMs
// before it still stand.
bool completed_with_peak(const Job& j) { return j.state == "COMPLETED" && j.peak_mem_bytes.has_value(); }

}  // namespace

std::optional<uint64_t> trailing_oom_request(std::span<const Job* const> newest_first) {
  std::optional<uint64_t> out;
  for (const Job* j : newest_first) {
    if (completed_with_peak(*j)) break;
    if (!censored_for(*j, Resource::kMem)) continue;
    if (j->ran_mem_bytes) out = std::max(out.value_or(0), *j->ran_mem_bytes);
    else if (j->req_mem_bytes) out = std::max(out.value_or(0), *j->req_mem_bytes);
  }
  return out;
}

bool trailing_oom_lowered(std::span<const Job* const> newest_first) {
  for (const Job* j : newest_first) {
    if (completed_with_peak(*j)) break;
    if (censored_for(*j, Resource::kMem) && j->ran_mem_bytes) return true;
  }
  return false;
}

}  // namespace peakcast::sizing
