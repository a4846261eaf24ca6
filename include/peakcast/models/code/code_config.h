// Configuration of the code predictor Q (docs/method.md §4): every option declared once, with its
// default, bounds and description (see code_config_options()). Unknown keys and out-of-range
// values are errors, never warnings. This header is Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/status.h"

namespace peakcast::models::code {

struct CodeModelConfig {
  // ---- architecture ----
  std::string encoder = "bag";       // registry name: bag | textcnn | bilstm | qwen2
  int64_t token_dim = 64;            // token / n-gram embedding width inside the encoders
  int64_t hash_buckets = 1 << 18;    // bag: hashed uni+bi-gram buckets
  int64_t seq_buckets = 1 << 16;     // textcnn / bilstm: hashed token-id vocabulary (0 = padding)
  int64_t seq_max_tokens = 256;      // textcnn / bilstm sequence cap (CPU speed; 60/40 head/tail)
  int64_t max_tokens = 4096;         // tokenizer budget for every encoder (60/40 head/tail)
  int64_t conv_filters = 64;         // textcnn: filters per width (widths 3, 4, 5)
  int64_t lstm_hidden = 64;          // bilstm: hidden size per direction
  int64_t user_dim = 64;             // user embedding width
  int64_t fused_dim = 256;           // fused representation width
  double dropout = 0.1;
  double util_cap = 1.0;             // heads output sigmoid(x) * util_cap

  // ---- qwen2 encoder (docs/qwen2.md): a Hugging Face Qwen2 folder with LoRA ----
  std::string base;                  // folder: config.json, model.safetensors[.index.json], tokenizer.json
  std::string tokenizer;             // tokenizer.json; empty: BASE/tokenizer.json
  std::string base_sha256;           // set by training ("file=sha256;...": weights, config.json, tokenizer); checked when loading
  std::string dtype = "auto";        // float32 | bfloat16 | float16 | auto (cpu f32, cuda bf16)
  std::string device = "cpu";        // cpu | cuda | cuda:N
  std::string pooling = "mean";      // mean | last | mean_last (both, concatenated)
  int64_t proj_dim = 256;            // projection of the pooled vector into the fusion
  int64_t lora_rank = 8;             // 0: no adapters (frozen base, only the projection trains)
  double lora_alpha = 16.0;
  double lora_dropout = 0.05;
  std::string lora_targets = "q,k,v,o,gate,up,down";
  int64_t max_added_token_id = -1;   // tokenizer: ignore added tokens above this id (-1: none)
  int64_t fold_ids = 0;              // 1: ids >= vocab_size taken modulo it (small test models)

  // ---- users ----
  int64_t min_user_jobs = 2;         // training users with fewer jobs share the unknown row 0
  double user_dropout = 0.05;        // share of training examples shown as the unknown user

  // ---- loss and optimisation ----
  double vram_weight = 2.0;          // VRAM term weight in the masked Smooth L1 (memory = 1)
  double smooth_l1_beta = 0.05;      // Smooth L1 transition point (small: close to L1 = MAE)
  double lr = 2e-3;                  // AdamW learning rate
  double embed_lr_scale = 10.0;      // sparse token tables learn at lr * this (lazy Adam)
  double weight_decay = 1e-4;        // AdamW decoupled weight decay
  int64_t batch_size = 128;
  int64_t max_epochs = 30;
  int64_t patience = 4;              // epochs without validation-loss improvement before stopping
  double grad_clip = 5.0;            // global L2 norm clip; 0 disables
  uint64_t seed = 42;                // torch::manual_seed and the data-order shuffle
  int64_t seeds = 1;                 // train_code_models(): models trained with seed, seed+1, ...
  // torch::set_num_threads during training; 0 leaves it as is. Default 1: these models are small,
  // and on the shared 2-core machine 2 OpenMP threads ran bag training 50x slower (LANL: 204 s vs
  // 4 s) whenever another process held a core. Raise it on an idle multi-core host.
  int64_t threads = 1;

  // Checks every bound; the message names the field.
  Status validate() const;
};

// One declared option (for --help text and generic "key=value" setting).
struct CodeOptionInfo {
  std::string name;
  std::string default_value;   // as text
  std::string bounds;          // e.g. "[1, 4096]" or "bag|textcnn|bilstm"
  std::string description;
};
const std::vector<CodeOptionInfo>& code_config_options();

// Sets one option from text ("lr", "3e-3"); unknown names list the valid ones.
Status set_code_option(CodeModelConfig& cfg, std::string_view name, std::string_view value);

nlohmann::json to_json(const CodeModelConfig& cfg);
// Every key must be known; missing keys keep their defaults; the result is validated.
Result<CodeModelConfig> code_config_from_json(const nlohmann::json& j);

}  // namespace peakcast::models::code
