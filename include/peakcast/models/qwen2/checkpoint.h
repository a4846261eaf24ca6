// Hugging Face checkpoints of the Qwen2 kind: config.json, and the weights as one
// model.safetensors or shards listed in model.safetensors.index.json. Files are memory-mapped;
// tensors are read on request and converted to the compute dtype. Every error names the file and,
// where there is one, the tensor (unknown dtype, missing or mis-shaped tensor, offsets past the
// end of a truncated file).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <torch/types.h>

#include "peakcast/core/status.h"

namespace peakcast::models::qwen2 {

// The fields of config.json the forward needs (HF Qwen2Config names and defaults).
struct Qwen2Config {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads
  int64_t max_position_embeddings = 32768;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  // config.json's head_dim; 0 = absent, i.e. hidden_size / num_attention_heads (HF's default).
  int64_t explicit_head_dim = 0;

  int64_t head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : hidden_size / num_attention_heads; }
  // Width of the concatenated query heads: q_proj's rows and o_proj's columns.
  int64_t q_size() const { return num_attention_heads * head_dim(); }
  // Parameters of the transformer (embedding once, plus lm_head when untied).
  int64_t parameter_count() const;
  Status validate() const;
};

// The public shape of Qwen2.5-Coder-1.5B (for benches with random weights).
Qwen2Config qwen25_coder_1p5b_config();

Result<Qwen2Config> parse_qwen2_config(const std::string& json_text, const std::string& origin);
Result<Qwen2Config> read_qwen2_config(const std::string& dir);

// One tensor entry of a safetensors header.
struct TensorEntry {
  std::string dtype;            // "F32", "BF16", "F16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data section
  size_t file = 0;              // index into Checkpoint::files()
};

class MappedFile;

class Checkpoint {
 public:
  // DIR/model.safetensors, or the shards named by DIR/model.safetensors.index.json.
  static Result<Checkpoint> open(const std::string& dir);
  // One safetensors file on its own.
  static Result<Checkpoint> open_file(const std::string& path);

  Checkpoint();
  ~Checkpoint();
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;

  const std::vector<std::string>& files() const { return paths_; }
  const std::map<std::string, TensorEntry>& tensors() const { return entries_; }
  bool has(const std::string& name) const { return entries_.count(name) > 0; }
  // The mapped bytes of files()[i] (valid while this object lives).
  std::string_view file_bytes(size_t i) const;

  // The tensor as `dtype` (float32, bfloat16 or float16), checked against `shape`. The result
  // owns its memory (the mapping may be closed afterwards).
  Result<torch::Tensor> read(const std::string& name, const std::vector<int64_t>& shape,
                             torch::ScalarType dtype) const;

 private:
  Status add_file(const std::string& path);
  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<MappedFile>> maps_;
  std::map<std::string, TensorEntry> entries_;
};

// Lower-case hex SHA-256 of each weight file of the folder (what a LoRA manifest pins), by name.
Result<std::map<std::string, std::string>> weight_file_sha256(const std::string& dir);
// The same of a checkpoint already open: the bytes it maps, the ones its read() returns.
std::map<std::string, std::string> weight_file_sha256(const Checkpoint& ckpt);

}  // namespace peakcast::models::qwen2
