// Script encoders of the code predictor (docs/method.md §4) behind one interface, selected by name
// through an explicit registry. This header includes LibTorch: include it only from code that
// builds or extends the network (src/models/code/, tests); users of the model include
// code_model.h, which is Torch-free.
//
// The contract the fusion network relies on, and all a new encoder (a transformer with LoRA,
// say) has to provide:
//   prepare(text)  text -> encoder-specific integer ids, done once per job on the CPU (cacheable
//                  across epochs); thread-safe, no tensors.
//   encode(batch)  prepared ids of B jobs -> script vectors [B, output_dim()].
//   trainable_parameters()  what the optimiser updates (an adapter encoder returns only its
//                  adapters), and sparse_parameters() the tables among them with sparse gradients.
// The fusion layers and heads never look inside an encoder.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "peakcast/core/status.h"
#include "peakcast/models/code/code_config.h"
#include "peakcast/models/code/code_text.h"

namespace peakcast::models::code {

// One job's text after the encoder's own tokenization (hashed n-grams, token ids, BPE ids...).
struct PreparedText {
  std::vector<int64_t> ids;
};

class ScriptEncoder : public torch::nn::Module {
 public:
  ~ScriptEncoder() override = default;
  virtual int64_t output_dim() const = 0;
  virtual PreparedText prepare(const CodeText& text) const = 0;
  // texts: B >= 1 non-null pointers. Returns [B, output_dim()], float32. Must not depend on which
  // other jobs share the batch (padding is masked), so a cached vector equals a fresh one.
  virtual torch::Tensor encode(const std::vector<const PreparedText*>& texts) = 0;
  virtual std::vector<torch::Tensor> trainable_parameters() { return parameters(); }
  // The subset of trainable_parameters() whose gradients are sparse (embedding tables built with
  // sparse=true). The trainer updates them with a lazy row-wise Adam: a batch touches a few
  // hundred of 2^18 rows, and a dense optimiser step over the whole table would dominate training.
  virtual std::vector<torch::Tensor> sparse_parameters() { return {}; }
  // Called once when training builds the encoder, before the config is saved: an encoder may pin
  // what it was built from (qwen2 records the SHA-256 of its base weights, and refuses to load
  // onto a different base).
  virtual void record_in_config(CodeModelConfig& cfg) const {}
};

using EncoderFactory =
    std::function<Result<std::shared_ptr<ScriptEncoder>>(const CodeModelConfig& cfg)>;
// An encoder's own check of its options, cheap (no weights read): the files it will open exist,
// the names it will parse parse. Empty: the declared bounds (CodeModelConfig::validate) suffice.
using EncoderOptionsCheck = std::function<Status(const CodeModelConfig& cfg)>;

// Name -> factory. No self-registering statics: register_builtins() adds bag, textcnn, bilstm,
// qwen2.
class EncoderRegistry {
 public:
  // Throws std::logic_error on a duplicate name (a programming error, not input).
  void add(const std::string& name, EncoderFactory factory, EncoderOptionsCheck check = {});
  // Unknown names come back as kInvalidInput listing the valid ones.
  Result<std::shared_ptr<ScriptEncoder>> create(const CodeModelConfig& cfg) const;
  // The named encoder's check of cfg (check_encoder_options, code_model.h); unknown names as create.
  Status check(const CodeModelConfig& cfg) const;
  std::vector<std::string> names() const;

  // The built-ins, registered once (thread-safe initialisation).
  static const EncoderRegistry& builtin();

 private:
  struct Entry {
    EncoderFactory factory;
    EncoderOptionsCheck check;
  };
  const Entry* find(const std::string& name, Status& unknown) const;
  std::map<std::string, Entry> entries_;
};

void register_builtins(EncoderRegistry& registry);

// The loss of docs/method.md §4: Smooth L1 per (job, resource), zero where mask is 0, the VRAM column
// weighted by vram_weight; summed and divided by the number of valid (job, resource) cells
// (at least 1). pred, target, mask: [B, 2] float (column 0 memory, 1 VRAM). Returns a scalar.
// censored (optional, [B, 2]): 1 where the target is a lower bound (an OOM job's label): there
// the loss is one-sided, zero (and no gradient) for a prediction at or above the target.
torch::Tensor masked_smooth_l1(const torch::Tensor& pred, const torch::Tensor& target,
                               const torch::Tensor& mask, double vram_weight, double beta,
                               const torch::Tensor& censored = {});

}  // namespace peakcast::models::code
