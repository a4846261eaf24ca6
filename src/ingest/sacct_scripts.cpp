// Job scripts for sacct traces: a folder of `<jobid>.sh` files, or concatenated `sacct -B` dumps.
#include <filesystem>
#include <string>
#include <system_error>

#include "peakcast/core/io.h"
#include "peakcast/ingest/sacct.h"

namespace peakcast::ingest::sacct {
namespace {

constexpr std::string_view kBatchHeader = "Batch Script for ";

bool is_dash_rule(std::string_view line) {
  line = trim(line);
  if (line.size() < 10) return false;
  for (char c : line) {
    if (c != '-') return false;
  }
  return true;
}

}  // namespace

std::unordered_map<std::string, std::string> parse_batch_script_dump(std::string_view text) {
  std::unordered_map<std::string, std::string> scripts;
  const std::vector<std::string_view> lines = split_lines(text);
  // A header is "Batch Script for N" followed by a dash rule; a script that happens to contain
  // such a line without the rule stays part of the script.
  auto is_header = [&lines](size_t i) {
    return lines[i].starts_with(kBatchHeader) && i + 1 < lines.size() && is_dash_rule(lines[i + 1]);
  };
  size_t i = 0;
  while (i < lines.size()) {
    if (!is_header(i)) {
      ++i;
      continue;
    }
    const std::string key(trim(lines[i].substr(kBatchHeader.size())));
    size_t j = i + 2;
    std::string body;
    while (j < lines.size() && !is_header(j)) {
      body.append(lines[j]);
      body.push_back('\n');
      ++j;
    }
    // sacct ends each dump with a newline or two; keep exactly one.
    while (body.size() >= 2 && body[body.size() - 1] == '\n' && body[body.size() - 2] == '\n') {
      body.pop_back();
    }
    if (!key.empty() && trim(body) != "NONE" && !trim(body).empty()) {
      scripts[key] = std::move(body);
    }
    i = j;
  }
  return scripts;
}

Result<ScriptFolder> ScriptFolder::open(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::not_found(dir + ": scripts folder: not a directory");
  }
  ScriptFolder folder;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status::io(dir + ": scripts folder: " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return Status::io(dir + ": scripts folder: " + ec.message());
    const fs::path& p = it->path();
    if (p.extension() != ".sh") continue;
    std::error_code fec;
    if (!it->is_regular_file(fec)) continue;
    folder.files_[p.stem().string()] = p.string();
  }
  return folder;
}

Result<std::optional<std::string>> ScriptFolder::find(const std::vector<std::string>& keys) const {
  for (const std::string& key : keys) {
    auto it = files_.find(key);
    if (it == files_.end()) continue;
    auto text = read_file(it->second);
    if (!text) return text.status();
    return std::optional<std::string>(std::move(text.value()));
  }
  return std::optional<std::string>();
}

Result<ScriptSources> ScriptSources::open(const ReadOptions& o) {
  ScriptSources s;
  if (!o.scripts_dump.empty()) {
    auto data = read_file(o.scripts_dump);
    if (!data) return data.status();
    s.dump_ = parse_batch_script_dump(*data);
  }
  if (!o.scripts_dir.empty()) {
    auto f = ScriptFolder::open(o.scripts_dir);
    if (!f) return f.status();
    s.folder_ = std::move(f.value());
  }
  return s;
}

Result<std::optional<std::string>> ScriptSources::find(const std::vector<std::string>& keys) const {
  for (const std::string& k : keys) {
    if (auto it = dump_.find(k); it != dump_.end()) return std::optional<std::string>(it->second);
  }
  if (folder_) return folder_->find(keys);
  return std::optional<std::string>();
}

}  // namespace peakcast::ingest::sacct
