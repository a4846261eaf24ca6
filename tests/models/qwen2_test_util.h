// Shared by the qwen2 tests: where the fixtures are, and a small safetensors writer for
// hand-made (broken, sharded, untied) checkpoints.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace peakcast::models::qwen2::testing {

inline const std::string kQwen2Dir = PEAKCAST_SOURCE_DIR "/../shared/data/qwen2/";

#define REQUIRE_QWEN2_FIXTURES()                                                        \
  if (!std::filesystem::exists(::peakcast::models::qwen2::testing::kQwen2Dir + "tiny-f32")) \
  GTEST_SKIP() << "../shared/data/qwen2 absent"

struct RawTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// Writes a safetensors file (header padded to 8 bytes, data in name order).
inline void write_safetensors(const std::string& path, const std::map<std::string, RawTensor>& tensors) {
  nlohmann::json h = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t off = 0;
  std::string data;
  for (const auto& [name, t] : tensors) {
    h[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
    data += t.bytes;
  }
  std::string header = h.dump();
  while (header.size() % 8) header += ' ';
  const uint64_t n = header.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << data;
}

// A fresh empty folder under the test temp dir.
inline std::string fresh_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("peakcast_qwen2_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

}  // namespace peakcast::models::qwen2::testing
