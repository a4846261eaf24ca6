#include "peakcast/models/code/code_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "peakcast/core/hash.h"
#include "peakcast/features/tokenizer.h"

namespace peakcast::models::code {
namespace {

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

}  // namespace

CodeText code_text(const Job& job) {
  if (job.script && !blank(*job.script)) return {*job.script, true};
  std::string text;
  if (job.workload && !job.workload->empty()) text += "workload=" + *job.workload + "\n";
  if (!job.job_name.empty()) text += "job_name=" + job.job_name + "\n";
  return {std::move(text), false};
}

std::vector<std::string> code_tokens(const CodeText& text, size_t max_tokens) {
  features::TokenizerOptions opts;
  opts.max_tokens = max_tokens;
  std::vector<std::string> tokens = features::tokenize_script(text.text, opts);
  if (!text.is_script) {
    size_t start = 0;
    while (start < text.text.size()) {
      size_t end = text.text.find('\n', start);
      if (end == std::string::npos) end = text.text.size();
      if (end > start) tokens.push_back("identity:" + text.text.substr(start, end - start));
      start = end + 1;
    }
  }
  return tokens;
}

std::vector<int64_t> head_tail(std::vector<int64_t> ids, size_t budget, double head_share) {
  if (ids.size() <= budget) return ids;
  size_t head = static_cast<size_t>(static_cast<double>(budget) * head_share);
  size_t tail = budget - head;
  std::vector<int64_t> out(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(head));
  out.insert(out.end(), ids.end() - static_cast<std::ptrdiff_t>(tail), ids.end());
  return out;
}

UserVocab UserVocab::fit(const std::vector<const Job*>& train, int64_t min_jobs) {
  // std::map: rows are assigned in hash order, independent of the order of `train`.
  std::map<uint64_t, int64_t> counts;
  for (const Job* j : train) ++counts[fnv1a64(j->user)];
  UserVocab v;
  for (const auto& [h, n] : counts)
    if (n >= min_jobs) v.rows_.emplace(h, static_cast<int64_t>(v.rows_.size()) + 1);
  return v;
}

int64_t UserVocab::row(const std::string& user) const {
  auto it = rows_.find(fnv1a64(user));
  return it == rows_.end() ? 0 : it->second;
}

nlohmann::json UserVocab::to_json() const {
  // Array index + 1 = row; hashes as hex strings (JSON numbers lose 64-bit precision elsewhere).
  std::vector<std::string> by_row(rows_.size());
  for (const auto& [h, r] : rows_) by_row[static_cast<size_t>(r - 1)] = fmt::format("{:016x}", h);
  return by_row;
}

Result<UserVocab> UserVocab::from_json(const nlohmann::json& j) {
  if (!j.is_array()) return Status::invalid("users: expected an array of hex hashes");
  UserVocab v;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) return Status::invalid(fmt::format("users[{}]: expected a string", i));
    const std::string s = j[i].get<std::string>();
    uint64_t h = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), h, 16);
    if (s.size() != 16 || ec != std::errc() || end != s.data() + s.size())
      return Status::invalid(fmt::format("users[{}]: '{}' is not a 64-bit hex hash", i, s));
    if (!v.rows_.emplace(h, static_cast<int64_t>(i) + 1).second)
      return Status::invalid(fmt::format("users[{}]: duplicate hash", i));
  }
  return v;
}

}  // namespace peakcast::models::code
