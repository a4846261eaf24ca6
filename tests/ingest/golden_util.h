// Shared by the reader tests: where the golden files are, and a comparison of a trace's jobs with
// an expected canonical JSONL file (compared as JSON values, so key order and spacing don't matter).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "peakcast/core/io.h"
#include "peakcast/ingest/jsonl.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::ingest::test_util {

inline std::string golden(const std::string& name) {
  return std::string(PEAKCAST_SOURCE_DIR) + "/tests/ingest/golden/" + name;
}

inline std::string shared_data(const std::string& rel) {
  return std::string(PEAKCAST_SOURCE_DIR) + "/../shared/data/" + rel;
}

inline std::vector<nlohmann::json> expected_records(const std::string& path) {
  std::vector<nlohmann::json> out;
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << text.status().message();
  if (!text) return out;
  for (std::string_view line : split_lines(*text)) {
    if (trim(line).empty()) continue;
    out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// Every job equals the expected record, in order, both through job_to_json and through the
// one-line writer.
inline void expect_jobs_match(const Trace& trace, const std::string& expected_path) {
  const std::vector<nlohmann::json> want = expected_records(expected_path);
  ASSERT_EQ(trace.jobs.size(), want.size()) << expected_path;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(job_to_json(trace.jobs[i]), want[i]) << "record " << i + 1 << " of " << expected_path;
    EXPECT_EQ(nlohmann::json::parse(job_to_jsonl_line(trace.jobs[i])), want[i]) << "record " << i + 1;
  }
}

inline std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("peakcast_ingest_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline void write_text(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace peakcast::ingest::test_util
