// SHA-256 of a checkpoint's weight files (what a LoRA manifest pins). Apart from checkpoint.cpp
// and model.cpp because it needs core (OpenSSL), which the GPU bench build leaves out.
#include <filesystem>

#include "peakcast/core/hash.h"
#include "peakcast/models/qwen2/checkpoint.h"

namespace peakcast::models::qwen2 {

Result<std::map<std::string, std::string>> weight_file_sha256(const std::string& dir) {
  auto c = Checkpoint::open(dir);
  if (!c) return c.status();
  return weight_file_sha256(*c);
}

std::map<std::string, std::string> weight_file_sha256(const Checkpoint& ckpt) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < ckpt.files().size(); ++i) {
    out[std::filesystem::path(ckpt.files()[i]).filename().string()] = sha256_hex(ckpt.file_bytes(i));
  }
  return out;
}

}  // namespace peakcast::models::qwen2
