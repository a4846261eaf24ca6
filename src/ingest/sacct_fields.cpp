// Field-level pieces of the sacct reader: job ids, ReqMem, TRES strings, GPU types.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/core/io.h"
#include "peakcast/core/units.h"
#include "peakcast/ingest/sacct.h"

namespace peakcast::ingest::sacct {
namespace {

constexpr uint64_t kMiB = 1024ull * 1024ull;
constexpr uint64_t kGiB = 1024ull * kMiB;

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Multiplies with a saturation check; nullopt on overflow.
std::optional<uint64_t> times(uint64_t a, double b) {
  if (!(b > 0) || !std::isfinite(b)) return std::nullopt;
  const double v = static_cast<double>(a) * b;
  if (v > 1.8e19) return std::nullopt;
  return static_cast<uint64_t>(v + 0.5);
}

}  // namespace

std::string answer_id_in_comment(std::string_view comment) {
  constexpr size_t kMaxComment = 64 * 1024;  // the hook writes at most 4 KiB
  comment = trim(comment);
  if (comment.empty() || comment.front() != '{' || comment.size() > kMaxComment ||
      comment.find("\"answer_id\"") == std::string_view::npos) {
    return {};
  }
  const nlohmann::json j = nlohmann::json::parse(comment, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return {};
  const auto it = j.find("answer_id");
  if (it == j.end() || !it->is_string()) return {};
  const std::string& id = it->get_ref<const std::string&>();
  const bool well_formed = !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
  return well_formed ? id : std::string();
}

JobIdParts split_job_id(std::string_view job_id) {
  job_id = trim(job_id);
  const size_t dot = job_id.find('.');
  if (dot == std::string_view::npos) return {job_id, {}};
  return {job_id.substr(0, dot), job_id.substr(dot + 1)};
}

std::vector<std::string> script_keys(std::string_view job_id, std::string_view job_id_raw) {
  std::vector<std::string> keys;
  auto add = [&keys](std::string_view k) {
    k = trim(k);
    if (k.empty()) return;
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.emplace_back(k);
  };
  const std::string_view job = split_job_id(job_id).job;
  add(job);
  add(split_job_id(job_id_raw).job);
  // Array tasks and hetjob components share their parent's script.
  const size_t cut = job.find_first_of("_+");
  if (cut != std::string_view::npos) add(job.substr(0, cut));
  return keys;
}

std::optional<ReqMem> parse_req_mem(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  ReqMem m;
  // Up to 20.11 the value ends with a lower-case n (per node) or c (per CPU).
  if (text.back() == 'n' || text.back() == 'c') {
    m.per = text.back() == 'n' ? ReqMem::Per::kNode : ReqMem::Per::kCpu;
    text.remove_suffix(1);
    if (text.empty()) return std::nullopt;
  }
  // The remaining unit, if any, must be a single letter (K/M/G/T/P) after the number.
  if (!is_digit(text.back()) && (text.size() < 2 || !is_digit(text[text.size() - 2]))) {
    return std::nullopt;
  }
  auto bytes = parse_size(text, kMiB);
  if (!bytes) return std::nullopt;
  m.bytes = *bytes;
  return m;
}

std::optional<uint64_t> req_mem_total(const ReqMem& m, std::optional<int64_t> nodes,
                                      std::optional<double> cpus) {
  switch (m.per) {
    case ReqMem::Per::kJob:
      return m.bytes;
    case ReqMem::Per::kNode: {
      const int64_t n = nodes && *nodes > 0 ? *nodes : 1;
      return times(m.bytes, static_cast<double>(n));
    }
    case ReqMem::Per::kCpu:
      if (!cpus || !(*cpus > 0)) return std::nullopt;
      return times(m.bytes, *cpus);
  }
  return std::nullopt;
}

std::optional<std::string_view> tres_value(std::string_view tres, std::string_view key) {
  for (std::string_view item : split(tres, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    if (trim(item.substr(0, eq)) == key) return trim(item.substr(eq + 1));
  }
  return std::nullopt;
}

std::optional<int> tres_gpus(std::string_view tres) {
  auto count = [](std::string_view v) -> std::optional<int> {
    auto n = parse_int(v);
    if (!n || *n < 0 || *n > std::numeric_limits<int>::max()) return std::nullopt;
    return static_cast<int>(*n);
  };
  if (auto v = tres_value(tres, "gres/gpu")) return count(*v);
  std::optional<int64_t> total;
  for (std::string_view item : split(tres, ',')) {
    item = trim(item);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || !item.starts_with("gres/gpu:")) continue;
    auto n = count(item.substr(eq + 1));
    if (!n) return std::nullopt;
    total = total.value_or(0) + *n;
    if (*total > std::numeric_limits<int>::max()) return std::nullopt;
  }
  if (!total) return std::nullopt;
  return static_cast<int>(*total);
}

namespace {

// A GRES string's items: split at the ',' outside an item's `(IDX:...)`, which holds ',' itself;
// each without its indexes.
std::vector<std::string_view> gres_items(std::string_view gres) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= gres.size(); ++i) {
    const char c = i < gres.size() ? gres[i] : ',';
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (c != ',' || depth > 0) continue;
    std::string_view item = gres.substr(start, i - start);
    item = trim(item.substr(0, item.find('(')));
    if (item.starts_with("gres/")) item.remove_prefix(5);
    items.push_back(item);
    start = i + 1;
  }
  return items;
}

}  // namespace

std::optional<int> gres_gpus(std::string_view gres) {
  int64_t total = 0;
  for (std::string_view item : gres_items(gres)) {
    const std::vector<std::string_view> parts = split(item, ':');
    if (parts.front() != "gpu") continue;
    int64_t n = 1;
    if (all_digits(parts.back()) && parts.size() > 1) {
      auto v = parse_int(parts.back());
      if (!v) return std::nullopt;
      n = *v;
    } else if (parts.size() > 2) {
      return std::nullopt;  // gpu:type:count with a count that is no number
    }
    total += n;
    if (total > std::numeric_limits<int>::max()) return std::nullopt;
  }
  return static_cast<int>(total);
}

std::optional<std::string> gres_gpu_type(std::string_view gres) {
  for (std::string_view item : gres_items(gres)) {
    const std::vector<std::string_view> parts = split(item, ':');
    if (parts.front() != "gpu" || parts.size() < 2 || all_digits(parts[1])) continue;
    if (!parts[1].empty()) return lower(parts[1]);
  }
  return std::nullopt;
}

std::optional<std::string> tres_gpu_type(std::string_view tres) {
  for (std::string_view item : split(tres, ',')) {
    item = trim(item);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || !item.starts_with("gres/gpu:")) continue;
    std::string_view type = item.substr(9, eq - 9);
    if (!type.empty()) return lower(type);
  }
  return std::nullopt;
}

std::optional<uint64_t> gpu_mem_from_type(std::string_view type) {
  const std::string t = lower(trim(type));
  if (t.empty()) return std::nullopt;
  // 1) A size written in the name: digits + "gb" (preferred) or digits + "g" that is not a MIG
  //    compute-slice count ("1g.10gb" is 10 GB, not 1).
  std::optional<uint64_t> gb_size, g_size;
  for (size_t i = 0; i < t.size();) {
    if (!is_digit(t[i])) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < t.size() && is_digit(t[i])) ++i;
    const bool sep_before = start == 0 || !std::isalnum(static_cast<unsigned char>(t[start - 1]));
    if (!sep_before || i >= t.size() || t[i] != 'g' || i - start > 4) continue;
    const uint64_t n = std::stoull(t.substr(start, i - start));
    size_t after = i + 1;
    const bool gb = after < t.size() && t[after] == 'b';
    if (gb) ++after;
    const bool sep_after = after >= t.size() || !std::isalnum(static_cast<unsigned char>(t[after]));
    if (!sep_after || n == 0 || n > 1024) continue;
    if (gb) {
      gb_size = n * kGiB;
    } else if (after >= t.size() || t[after] != '.') {
      g_size = n * kGiB;
    }
  }
  if (gb_size) return gb_size;
  if (g_size) return g_size;
  // 2) Types sold in one memory size only. Vendor words and separators are dropped first.
  std::string k;
  for (char c : t) {
    if (std::isalnum(static_cast<unsigned char>(c))) k.push_back(c);
  }
  for (std::string_view word : {"nvidia", "tesla", "quadro", "geforce"}) {
    if (k.starts_with(word)) k.erase(0, word.size());
  }
  static const std::pair<const char*, uint64_t> kOneSize[] = {
      {"t4", 16}, {"l4", 24}, {"a10", 24}, {"a10g", 24}, {"a30", 24}, {"a40", 48},
      {"l40", 48}, {"l40s", 48}, {"rtx8000", 48}, {"rtxa6000", 48}, {"a6000", 48},
      {"rtxa5000", 24}, {"a5000", 24}, {"rtxa4000", 16}, {"a4000", 16}, {"rtx2080ti", 11},
      {"2080ti", 11}, {"gtx1080ti", 11}, {"1080ti", 11}, {"titanv", 12}, {"titanrtx", 24},
      {"p40", 24}, {"h200", 141}, {"rtx3090", 24}, {"3090", 24}, {"rtx4090", 24}, {"4090", 24}};
  for (auto [name, gib] : kOneSize) {
    if (k == name) return gib * kGiB;
  }
  return std::nullopt;
}

}  // namespace peakcast::ingest::sacct
