// `qwen2`: the study's script encoder (docs/method.md §4): byte-level BPE ids (4,096-token budget,
// 60% head / 40% tail) -> frozen Qwen2 (Qwen2.5-Coder-1.5B) with LoRA adapters -> pooled final
// hidden states -> linear projection. Only the adapters and the projection are parameters of
// the module, so the saved model holds those and the config names the base folder and pins the
// SHA-256 of its weight files, config.json and tokenizer. docs/qwen2.md.
#include <filesystem>
#include <map>
#include <mutex>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>
#include <torch/nn.h>

#include "peakcast/core/hash.h"
#include "peakcast/core/io.h"
#include "peakcast/features/bpe_tokenizer.h"
#include "peakcast/models/code/encoder.h"
#include "peakcast/models/qwen2/model.h"

namespace peakcast::models::code {
namespace {

using qwen2::Qwen2Model;

// What a base folder resolves to; shared between encoders of one process (several seeds, the
// cascade's folds) since the base is never modified.
struct Base {
  std::shared_ptr<const Qwen2Model> model;
  std::shared_ptr<const features::BpeTokenizer> tokenizer;
  std::string sha256;  // "file=sha256;file=sha256"
};

Result<torch::ScalarType> parse_dtype(const std::string& name, const torch::Device& device) {
  if (name == "float32") return torch::kFloat32;
  if (name == "bfloat16") return torch::kBFloat16;
  if (name == "float16") return torch::kFloat16;
  if (name == "auto") return device.is_cuda() ? torch::kBFloat16 : torch::kFloat32;
  return Status::invalid(fmt::format("dtype: '{}' is not float32, bfloat16, float16 or auto", name));
}

Result<torch::Device> parse_device(const std::string& name) {
  try {
    torch::Device d(name);
    if (d.is_cuda() && !torch::cuda::is_available())
      return Status::unsupported(fmt::format("device: '{}' asked for, but this LibTorch sees no CUDA device", name));
    return d;
  } catch (const c10::Error&) {
    return Status::invalid(fmt::format("device: '{}' is not cpu, cuda or cuda:N", name));
  }
}

// Where the base runs and in what precision: the device and dtype options, read the same way by
// the early check and by open_base.
struct Placement {
  torch::Device device;
  torch::ScalarType dtype;
};

Result<Placement> placement_of(const CodeModelConfig& cfg) {
  auto device = parse_device(cfg.device);
  if (!device) return device.status();
  auto dtype = parse_dtype(cfg.dtype, *device);
  if (!dtype) return dtype.status();
  return Placement{*device, *dtype};
}

constexpr std::string_view kNeedsBase = "encoder qwen2: needs base=DIR (a Hugging Face Qwen2 folder)";

// What open_base and the adapters will read, looked at without reading it: commands run this
// before they read a trace, so that a missing base is not found after minutes of reading.
Status check_options(const CodeModelConfig& cfg) {
  namespace fs = std::filesystem;
  if (cfg.base.empty()) return Status::invalid(std::string(kNeedsBase));
  if (auto placement = placement_of(cfg); !placement) return placement.status();
  if (auto targets = qwen2::parse_lora_targets(cfg.lora_targets); !targets) return targets.status();
  std::error_code ec;
  const fs::path base(cfg.base);
  if (!fs::is_directory(base, ec)) {
    return Status::not_found(fmt::format("encoder qwen2: base={}: {}", cfg.base,
                                         fs::exists(base, ec) ? "not a folder (a Hugging Face Qwen2 folder)"
                                                              : "no such folder"));
  }
  std::vector<std::string> missing;
  if (!fs::exists(base / "model.safetensors", ec) && !fs::exists(base / "model.safetensors.index.json", ec))
    missing.push_back("model.safetensors (or model.safetensors.index.json)");
  if (!fs::exists(base / "config.json", ec)) missing.push_back("config.json");
  if (cfg.tokenizer.empty() && !fs::exists(base / "tokenizer.json", ec))
    missing.push_back("tokenizer.json (or give tokenizer=FILE)");
  if (!missing.empty()) {
    return Status::not_found(fmt::format("encoder qwen2: base={} has no {}", cfg.base, fmt::join(missing, ", ")));
  }
  if (!cfg.tokenizer.empty() && !fs::is_regular_file(cfg.tokenizer, ec))
    return Status::not_found(fmt::format("encoder qwen2: tokenizer={}: no such file", cfg.tokenizer));
  return Status::ok();
}

Result<std::shared_ptr<const Base>> open_base(const CodeModelConfig& cfg) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<const Base>> cache;
  if (cfg.base.empty()) return Status::invalid(std::string(kNeedsBase));
  auto placement = placement_of(cfg);
  if (!placement) return placement.status();
  const torch::ScalarType dtype = placement->dtype;
  const std::string tok_path = cfg.tokenizer.empty() ? cfg.base + "/tokenizer.json" : cfg.tokenizer;
  const std::string key = fmt::format("{}|{}|{}|{}|{}", cfg.base, tok_path, cfg.max_added_token_id,
                                      cfg.device, static_cast<int>(dtype));
  std::lock_guard<std::mutex> lock(mu);
  if (auto hit = cache[key].lock()) return hit;
  // Each file is read once, for its hash and for what is loaded from it, so the pin says what
  // loaded even if the folder changes meanwhile: the weights are hashed from the checkpoint's own
  // mapping (until 2026-12-06 they were opened twice, as config.json was read twice).
  auto ckpt = qwen2::Checkpoint::open(cfg.base);
  if (!ckpt) return ckpt.status().with_context("encoder qwen2: base");
  std::map<std::string, std::string> sums = qwen2::weight_file_sha256(*ckpt);
  // The config (RoPE theta, norm eps, shapes) and the tokenizer decide what the adapters saw as
  // much as the weights do: pinned beside them, by file name. The tokenizer's text is read (and
  // gunzipped) once, for its hash and its parse (until 2026-12-06 BpeTokenizer::load read it again).
  const std::string config_path = cfg.base + "/config.json";
  std::string config_text, tok_text;
  for (const std::string& path : {config_path, tok_path}) {
    auto bytes = read_file(path);
    if (!bytes) return bytes.status().with_context("encoder qwen2: base");
    sums[std::filesystem::path(path).filename().string()] = sha256_hex(*bytes);
    if (path == config_path) config_text = *bytes;
    if (path == tok_path) tok_text = std::move(bytes).value();
  }
  auto qcfg = qwen2::parse_qwen2_config(config_text, config_path);
  if (!qcfg) return qcfg.status().with_context("encoder qwen2: base");
  auto model = Qwen2Model::load(*qcfg, *ckpt, cfg.base, dtype, placement->device);
  if (!model) return model.status().with_context("encoder qwen2: base");
  auto tok = features::BpeTokenizer::from_json(tok_text, tok_path, {.max_added_token_id = cfg.max_added_token_id});
  if (!tok) return tok.status().with_context("encoder qwen2: tokenizer");
  auto base = std::make_shared<Base>();
  for (const auto& [file, sha] : sums) base->sha256 += (base->sha256.empty() ? "" : ";") + file + "=" + sha;
  base->model = std::make_shared<const Qwen2Model>(std::move(model).value());
  base->tokenizer = std::make_shared<const features::BpeTokenizer>(std::move(tok).value());
  cache[key] = base;
  return std::shared_ptr<const Base>(base);
}

// "file=sha256;file=sha256" -> {file: sha256}.
std::map<std::string, std::string> parse_pin(const std::string& pin) {
  std::map<std::string, std::string> out;
  for (size_t at = 0; at < pin.size();) {
    const size_t end = std::min(pin.find(';', at), pin.size());
    const std::string entry = pin.substr(at, end - at);
    if (const size_t eq = entry.rfind('='); eq != std::string::npos) out[entry.substr(0, eq)] = entry.substr(eq + 1);
    at = end + 1;
  }
  return out;
}

// The files a saved model pinned must hash now as they did then. Weight files are compared
// both ways (a file added or removed is another base); config.json and the tokenizer only when
// the pin has them (models saved before they were pinned name the weight files alone).
Status check_pin(const std::string& saved, const std::string& now, const std::string& dir) {
  if (saved.empty()) return Status::ok();
  const auto then = parse_pin(saved), current = parse_pin(now);
  std::vector<std::string> differ;
  for (const auto& [file, sha] : current) {
    const auto it = then.find(file);
    if (it == then.end()) {
      if (file.ends_with(".safetensors")) differ.push_back(fmt::format("{} (not in the pin)", file));
    } else if (it->second != sha) {
      differ.push_back(fmt::format("{} ({} then, {} now)", file, it->second, sha));
    }
  }
  for (const auto& [file, sha] : then) {
    if (!current.contains(file)) differ.push_back(fmt::format("{} (pinned, not found)", file));
  }
  if (differ.empty()) return Status::ok();
  return Status::invalid(fmt::format(
      "encoder qwen2: the adapters were trained on another base than {}: {} changed; refusing to "
      "load them onto a different base", dir, fmt::join(differ, ", ")));
}

class Qwen2Encoder : public ScriptEncoder {
 public:
  Qwen2Encoder(const CodeModelConfig& cfg, std::shared_ptr<const Base> base, qwen2::LoraOptions lora)
      : base_(std::move(base)),
        max_tokens_(static_cast<size_t>(cfg.max_tokens)),
        fold_ids_(cfg.fold_ids != 0),
        pooling_(cfg.pooling),
        proj_dim_(cfg.proj_dim) {
    const int64_t h = base_->model->config().hidden_size;
    const int64_t pooled = pooling_ == "mean_last" ? 2 * h : h;
    if (lora.rank > 0) {
      lora_ = register_module("lora", std::make_shared<qwen2::Lora>(base_->model->config(), lora));
      lora_->to(base_->model->device());
    }
    proj_ = register_module("proj", torch::nn::Linear(pooled, cfg.proj_dim));
  }

  int64_t output_dim() const override { return proj_dim_; }

  PreparedText prepare(const CodeText& text) const override {
    auto ids = base_->tokenizer->encode(text.text);
    const int64_t vocab = base_->model->config().vocab_size;
    if (fold_ids_)
      for (auto& id : ids) id %= vocab;
    return {features::head_tail_ids(ids, max_tokens_)};
  }

  torch::Tensor encode(const std::vector<const PreparedText*>& texts) override {
    // One forward per script, batch 1: no padding work on the CPU, and a script's vector never
    // depends on its batch neighbours (the exact cache may keep it).
    const int64_t h = base_->model->config().hidden_size;
    std::vector<torch::Tensor> rows;
    for (const PreparedText* t : texts) {
      if (t->ids.empty()) {  // empty text: a zero vector
        rows.push_back(torch::zeros({pooling_ == "mean_last" ? 2 * h : h}));
        continue;
      }
      auto hidden = base_->model->forward(t->ids, lora_ ? lora_.get() : nullptr).unsqueeze(0);  // [1, T, H]
      auto len = torch::tensor({static_cast<int64_t>(t->ids.size())}, torch::kInt64);
      auto [mean, last] = qwen2::pool_hidden(hidden, len);  // [1, H] float32
      torch::Tensor v = pooling_ == "mean" ? mean : pooling_ == "last" ? last : torch::cat({mean, last}, 1);
      rows.push_back(v.squeeze(0).to(torch::kCPU));
    }
    return proj_->forward(torch::stack(rows));  // [B, proj_dim]
  }

  void record_in_config(CodeModelConfig& cfg) const override { cfg.base_sha256 = base_->sha256; }

 private:
  std::shared_ptr<const Base> base_;
  size_t max_tokens_;
  bool fold_ids_;
  std::string pooling_;
  int64_t proj_dim_;
  std::shared_ptr<qwen2::Lora> lora_;
  torch::nn::Linear proj_{nullptr};
};

Result<std::shared_ptr<ScriptEncoder>> make_qwen2_encoder(const CodeModelConfig& cfg) {
  auto base = open_base(cfg);
  if (!base) return base.status();
  if (Status s = check_pin(cfg.base_sha256, (*base)->sha256, cfg.base); !s) return s;
  const auto& mc = (*base)->model->config();
  const int64_t limit = (*base)->tokenizer->id_limit();
  if (limit > mc.vocab_size && cfg.fold_ids == 0)
    return Status::invalid(fmt::format(
        "encoder qwen2: the tokenizer's ids reach {} but the model's vocab_size is {} (a tokenizer "
        "of another model? fold_ids=1 maps ids into a small test model)", limit - 1, mc.vocab_size));
  qwen2::LoraOptions lora;
  lora.rank = cfg.lora_rank;
  lora.alpha = cfg.lora_alpha;
  lora.dropout = cfg.lora_dropout;
  auto targets = qwen2::parse_lora_targets(cfg.lora_targets);
  if (!targets) return targets.status();
  lora.targets = *targets;
  try {
    return std::shared_ptr<ScriptEncoder>(std::make_shared<Qwen2Encoder>(cfg, *base, lora));
  } catch (const c10::Error& e) {
    return Status::internal(std::string("encoder qwen2: ") + e.what_without_backtrace());
  }
}

}  // namespace

EncoderFactory qwen2_encoder_factory() { return make_qwen2_encoder; }
EncoderOptionsCheck qwen2_options_check() { return check_options; }

}  // namespace peakcast::models::code
