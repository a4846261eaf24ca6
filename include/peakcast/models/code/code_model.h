// The code predictor Q (docs/method.md §4): script encoder -> script vector; 64-d user embedding
// (row 0 = unknown user); standardized request metadata -> fused 256-d -> two heads
// (memory, VRAM utilization) as sigmoid(x) * cap, so outputs lie in [0, cap].
// Training: masked Smooth L1 (VRAM weight 2), AdamW, early stopping on validation loss,
// fixed seeds and a deterministic data order. This header is Torch-free.
//
// Thread safety: a trained or loaded CodeModel is immutable; predict/predict_batch/encode may run
// concurrently from many threads (no gradients, per-call tensors). train() sets Torch's
// process-wide seed and thread count: do not run two trainings at once in one process.
#pragma once

#include <array>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/job.h"
#include "peakcast/core/log.h"
#include "peakcast/core/status.h"
#include "peakcast/models/code/code_config.h"

namespace peakcast::models::code {

class EncoderRegistry;

struct CodePrediction {
  std::array<float, kNumResources> util{};  // [mem, vram] in [0, cap]; vram meaningless w/o GPUs
  bool script_absent = false;               // the encoder read identity text, not a script
};

struct CodeTrainReport {
  size_t train_jobs = 0;      // jobs used (at least one valid resource)
  size_t val_jobs = 0;
  size_t users = 0;           // embedding rows besides the unknown row
  double script_share = 0.0;  // share of training jobs that had script text
  int64_t epochs_run = 0;
  int64_t best_epoch = 0;     // 1-based; the weights kept are from this epoch
  double best_val_loss = 0.0; // NaN when there was no validation data (then: last epoch kept)
  std::array<double, kNumResources> val_mae{};  // at best_epoch; NaN where no valid job
  double seconds = 0.0;       // wall time of train()
  double jobs_per_s = 0.0;    // training examples processed per second (excluding preparation)
};

class CodeModel {
 public:
  // Bumped when the saved layout or what the model reads changes; load() refuses anything newer,
  // and anything older than kOldestFormatVersion with a "retrain" message.
  // 2: the script, workload and job name are read redacted (ingest::finalize_job), as
  //    peakcastd's store keeps them.
  static constexpr int kFormatVersion = 2;
  static constexpr int kOldestFormatVersion = 2;

  CodeModel();
  ~CodeModel();
  CodeModel(CodeModel&&) noexcept;
  CodeModel& operator=(CodeModel&&) noexcept;
  CodeModel(const CodeModel&) = delete;
  CodeModel& operator=(const CodeModel&) = delete;

  // Trains on `train`, early-stops on `val` (may be empty: then max_epochs are run). Jobs without
  // any valid resource are skipped. Request statistics and the user vocabulary come from `train`
  // only. Errors: invalid config, unknown encoder, no trainable job. `registry` defaults to the
  // built-ins. progress("code_model", epoch, max_epochs) after each epoch.
  static Result<CodeModel> train(const std::vector<const Job*>& train,
                                 const std::vector<const Job*>& val, const CodeModelConfig& cfg,
                                 const ProgressFn& progress = {},
                                 const EncoderRegistry* registry = nullptr);

  bool trained() const { return impl_ != nullptr; }

  // Batch-1 forward. Requires trained() (throws std::logic_error otherwise).
  CodePrediction predict(const Job& job) const;
  // Same per-job results as predict() up to float rounding of batched kernels; chunks internally.
  std::vector<CodePrediction> predict_batch(const std::vector<const Job*>& jobs) const;
  // The script vector the heads see for this job (what an exact cache may keep).
  std::vector<float> encode(const Job& job) const;

  const CodeModelConfig& config() const;
  const CodeTrainReport& report() const;
  // True when no training job had script text: the model learned from identities only.
  bool trained_without_scripts() const { return report().script_share == 0.0; }

  // Writes DIR/manifest.json (format version, config, request statistics, user vocabulary, train
  // report, SHA-256 of the weights) and DIR/weights.pt (torch::save of parameters). Creates DIR;
  // each file is written atomically, and load() refuses weights whose hash is not the manifest's.
  Status save(const std::string& dir) const;
  static Result<CodeModel> load(const std::string& dir, const EncoderRegistry* registry = nullptr);
  // The same from streams (manifest JSON text, weights archive).
  static Result<CodeModel> load(std::istream& manifest, std::istream& weights,
                                const EncoderRegistry* registry = nullptr);

  struct Impl;  // opaque (defined in code_model.cpp, where the Torch types live)

 private:
  static Result<CodeModel> load_checked(const nlohmann::json& manifest, std::istream& weights,
                                        const EncoderRegistry* registry);
  explicit CodeModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// cfg.seeds models trained with seeds cfg.seed, cfg.seed + 1, ... (for mean ± s.d. reporting).
Result<std::vector<CodeModel>> train_code_models(const std::vector<const Job*>& train,
                                                 const std::vector<const Job*>& val,
                                                 const CodeModelConfig& cfg,
                                                 const ProgressFn& progress = {});

// Whether cfg.encoder is a registered encoder and its own options make sense (qwen2: base=DIR
// given and holding config.json, the weights and a tokenizer; device, dtype and LoRA targets
// parse), without building it or loading anything: the check a command makes before it reads a
// trace (minutes for a large one), so that training does not fail on an option after the read.
// Unknown names list the valid ones, as EncoderRegistry::create does.
Status check_encoder_options(const CodeModelConfig& cfg);

// Torch intra-op threads for this process (Debian's build defaults to one). n >= 1.
void set_torch_threads(int n);
int torch_threads();

}  // namespace peakcast::models::code
