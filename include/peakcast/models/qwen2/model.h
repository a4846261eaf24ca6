// The Qwen2 transformer (HF modeling_qwen2.py, eager attention) in LibTorch, frozen, with optional
// LoRA adapters: embedding, pre-norm blocks (RMSNorm, rotary attention with q/k/v bias and
// grouped-query heads, SwiGLU MLP), final norm. Conventions and tolerances: ../shared/data/qwen2/
// README.md §B. In bfloat16 every op rounds as HF's bfloat16 path does; RMSNorm and softmax run
// in float32 inside. Works on any device LibTorch has (cpu, cuda).
//
// The base weights are plain tensors, not module parameters: they never train, never go into a
// saved model (only the adapters do), and a LoRA module can be swapped or merged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "peakcast/core/status.h"
#include "peakcast/models/qwen2/checkpoint.h"

namespace peakcast::models::qwen2 {

// The linear layers LoRA may adapt (PEFT names: q_proj, k_proj, ...).
enum class Target { kQ = 0, kK, kV, kO, kGate, kUp, kDown };
inline constexpr int kNumTargets = 7;
const char* target_name(Target t);  // "q", "k", ..., "down"

struct LoraOptions {
  int64_t rank = 8;
  double alpha = 16.0;    // scale = alpha / rank
  double dropout = 0.05;  // on the adapter's input, training only
  std::vector<Target> targets = {Target::kQ, Target::kK, Target::kV, Target::kO,
                                 Target::kGate, Target::kUp, Target::kDown};
};
// "q,k,v,o,gate,up,down" (also "q_proj"...); unknown or empty names are errors.
Result<std::vector<Target>> parse_lora_targets(std::string_view csv);

struct LayerWeights {
  torch::Tensor input_norm, q_w, q_b, k_w, k_b, v_w, v_b, o_w, post_norm, gate_w, up_w, down_w;
  const torch::Tensor& weight(Target t) const;
  torch::Tensor& weight(Target t);
};

class Lora;

class Qwen2Model {
 public:
  // Reads DIR/config.json and the weights (single file or shards) as `dtype` (float32, bfloat16,
  // float16) onto `device`. lm_head.weight is read when the config says untied
  // (a bare Qwen2Model's folder, names without "model.", may have none).
  static Result<Qwen2Model> load(const std::string& dir, torch::ScalarType dtype,
                                 torch::Device device = torch::kCPU);
  // The same from a config and a checkpoint already read (`dir` names them in messages): a caller
  // that also hashes the files (the encoder pins them) reads each once, so what it pins is what
  // it loaded, even if the folder's files are replaced in between.
  static Result<Qwen2Model> load(const Qwen2Config& cfg, const Checkpoint& ckpt, const std::string& dir,
                                 torch::ScalarType dtype, torch::Device device = torch::kCPU);
  // Random weights of the given shape (benches): N(0, 0.02) matrices and biases, norms 1.
  static Qwen2Model random(const Qwen2Config& cfg, torch::ScalarType dtype, torch::Device device,
                           uint64_t seed);

  const Qwen2Config& config() const { return cfg_; }
  torch::ScalarType dtype() const { return dtype_; }
  torch::Device device() const { return device_; }

  // ids [B, T] int64 right-padded, lengths [B] (each 1..T): final hidden states after the last
  // norm, [B, T, H] in dtype(). Positions past a row's length are padding: no valid position
  // attends to them, so valid rows equal the batch-1 forward up to kernel rounding.
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& lengths,
                        Lora* lora = nullptr) const;
  // Batch 1 without padding: ids (1..T) -> [T, H].
  torch::Tensor forward(const std::vector<int64_t>& ids, Lora* lora = nullptr) const;
  // hidden [..., H] -> logits [..., vocab] with lm_head (the embedding when tied). Throws for a bare
  // Qwen2Model checkpoint (names without "model.") that is untied and has no lm_head.weight.
  torch::Tensor logits(const torch::Tensor& hidden) const;

  // W += scale * B A for every adapted layer (inference; the adapters must not be applied again).
  void merge(const Lora& lora);

 private:
  torch::Tensor attention(const LayerWeights& w, int layer, const torch::Tensor& h,
                          const torch::Tensor& cos, const torch::Tensor& sin,
                          const torch::Tensor& mask, Lora* lora) const;
  torch::Tensor mlp(const LayerWeights& w, int layer, const torch::Tensor& h, Lora* lora) const;
  torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w) const;

  Qwen2Config cfg_;
  torch::ScalarType dtype_ = torch::kFloat32;
  torch::Device device_ = torch::kCPU;
  torch::Tensor embed_, final_norm_, lm_head_;  // lm_head_ undefined when tied
  std::vector<LayerWeights> layers_;
};

// Mean over each row's valid positions and the last valid position, in float32: [B, H] each.
std::pair<torch::Tensor, torch::Tensor> pool_hidden(const torch::Tensor& hidden,
                                                    const torch::Tensor& lengths);

// Low-rank adapters for the chosen targets of every layer: y += (alpha/r) B A dropout(x), in
// float32 (B starts at zero, A Kaiming-uniform as PEFT does, so a fresh adapter changes nothing).
class Lora : public torch::nn::Module {
 public:
  Lora(const Qwen2Config& cfg, const LoraOptions& opts);
  bool adapts(Target t) const { return enabled_[static_cast<int>(t)]; }
  // y + the adapter's output for (layer, target) from input x; y unchanged when not adapted.
  torch::Tensor apply(int layer, Target t, const torch::Tensor& x, const torch::Tensor& y);
  // scale * B A for (layer, target), [out, in] float32.
  torch::Tensor delta(int layer, Target t) const;
  const LoraOptions& options() const { return opts_; }

 private:
  LoraOptions opts_;
  double scale_;
  std::array<bool, kNumTargets> enabled_{};
  std::vector<std::array<torch::Tensor, kNumTargets>> a_, b_;  // [layer][target]
};

}  // namespace peakcast::models::qwen2
