#include "peakcast/models/code/code_config.h"

#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "peakcast/core/options.h"

namespace peakcast::models::code {
namespace {

using TextField = std::string CodeModelConfig::*;
using options::kInf;
// The declaration table: one row per option; defaults come from CodeModelConfig{} itself.
using Spec = options::OptionSpec<CodeModelConfig>;

const std::vector<Spec>& specs() {
  static const std::vector<Spec> kSpecs = {
      {"encoder", &CodeModelConfig::encoder, {0}, {0}, "script encoder (registry name)"},
      {"token_dim", &CodeModelConfig::token_dim, {4}, {1024}, "token / n-gram embedding width"},
      {"hash_buckets", &CodeModelConfig::hash_buckets, {16}, {1 << 24}, "bag: hashed n-gram buckets"},
      {"seq_buckets", &CodeModelConfig::seq_buckets, {16}, {1 << 22},
       "textcnn/bilstm: hashed token vocabulary (0 = padding)"},
      {"seq_max_tokens", &CodeModelConfig::seq_max_tokens, {8}, {4096},
       "textcnn/bilstm: sequence cap (60% head, 40% tail)"},
      {"max_tokens", &CodeModelConfig::max_tokens, {8}, {65536}, "tokenizer budget (60% head, 40% tail)"},
      {"conv_filters", &CodeModelConfig::conv_filters, {1}, {1024}, "textcnn: filters per width 3/4/5"},
      {"lstm_hidden", &CodeModelConfig::lstm_hidden, {1}, {1024}, "bilstm: hidden size per direction"},
      {"user_dim", &CodeModelConfig::user_dim, {1}, {1024}, "user embedding width"},
      {"fused_dim", &CodeModelConfig::fused_dim, {8}, {4096}, "fused representation width"},
      {"dropout", &CodeModelConfig::dropout, {0}, {0.9}, "dropout in the fusion layers"},
      {"util_cap", &CodeModelConfig::util_cap, {1e-6}, {100}, "heads output sigmoid * cap"},
      {"min_user_jobs", &CodeModelConfig::min_user_jobs, {1}, {1e9},
       "training users with fewer jobs map to the unknown-user row"},
      {"user_dropout", &CodeModelConfig::user_dropout, {0}, {1},
       "share of training examples shown as the unknown user"},
      {"vram_weight", &CodeModelConfig::vram_weight, {0}, {1000}, "VRAM loss weight (memory = 1)"},
      {"smooth_l1_beta", &CodeModelConfig::smooth_l1_beta, {1e-6}, {10}, "Smooth L1 transition point"},
      {"lr", &CodeModelConfig::lr, {1e-7}, {10}, "AdamW learning rate"},
      {"embed_lr_scale", &CodeModelConfig::embed_lr_scale, {1e-3}, {1e3},
       "learning-rate multiplier for the sparse token tables"},
      {"weight_decay", &CodeModelConfig::weight_decay, {0}, {10}, "AdamW weight decay"},
      {"batch_size", &CodeModelConfig::batch_size, {1}, {1 << 20}, "training batch size"},
      {"max_epochs", &CodeModelConfig::max_epochs, {1}, {100000}, "epoch limit"},
      {"patience", &CodeModelConfig::patience, {1}, {100000},
       "epochs without validation improvement before stopping"},
      {"grad_clip", &CodeModelConfig::grad_clip, {0}, {kInf}, "gradient L2 norm clip (0 = off)"},
      {"seed", &CodeModelConfig::seed, {0}, {1.8e19}, "random seed (weights, dropout, data order)"},
      {"seeds", &CodeModelConfig::seeds, {1}, {1000}, "models trained by train_code_models"},
      {"threads", &CodeModelConfig::threads, {0}, {1024}, "Torch intra-op threads (0 = leave as is)"},
      {"base", &CodeModelConfig::base, {0}, {0}, "qwen2: Hugging Face model folder (config.json, safetensors)"},
      {"tokenizer", &CodeModelConfig::tokenizer, {0}, {0}, "qwen2: tokenizer.json (empty: BASE/tokenizer.json)"},
      {"base_sha256", &CodeModelConfig::base_sha256, {0}, {0},
       "qwen2: SHA-256 of the base weight files (set by training, checked at load)"},
      {"dtype", &CodeModelConfig::dtype, {0}, {0}, "qwen2: compute dtype (auto: float32 on cpu, bfloat16 on cuda)",
       "auto|float32|bfloat16|float16"},
      {"device", &CodeModelConfig::device, {0}, {0}, "qwen2: cpu, cuda or cuda:N"},
      {"pooling", &CodeModelConfig::pooling, {0}, {0}, "qwen2: script vector from the final hidden states",
       "mean|last|mean_last"},
      {"proj_dim", &CodeModelConfig::proj_dim, {1}, {65536}, "qwen2: projection width into the fusion"},
      {"lora_rank", &CodeModelConfig::lora_rank, {0}, {4096}, "qwen2: LoRA rank (0 = no adapters)"},
      {"lora_alpha", &CodeModelConfig::lora_alpha, {1e-6}, {1e6}, "qwen2: LoRA alpha (scale alpha/rank)"},
      {"lora_dropout", &CodeModelConfig::lora_dropout, {0}, {0.9}, "qwen2: dropout on the adapters' input"},
      {"lora_targets", &CodeModelConfig::lora_targets, {0}, {0}, "qwen2: adapted layers, of q,k,v,o,gate,up,down"},
      {"max_added_token_id", &CodeModelConfig::max_added_token_id, {-1}, {1e9},
       "qwen2: ignore tokenizer added tokens above this id (-1 = keep all)"},
      {"fold_ids", &CodeModelConfig::fold_ids, {0}, {1}, "qwen2: 1 = ids modulo vocab_size (small test models)"},
  };
  return kSpecs;
}

const Spec* find_spec(std::string_view name) { return options::find(specs(), name); }

Status unknown_option(std::string_view name) {
  return Status::invalid(
      fmt::format("{}: unknown code-model option (valid: {})", name, options::names(specs())));
}

// Applies a JSON value to one option, checking its type, bounds and choices; cfg is left as it
// was when the value is refused.
Status apply(CodeModelConfig& cfg, const Spec& s, const nlohmann::json& v) {
  CodeModelConfig next = cfg;
  if (Status st = options::set_from_json(s, next, v); !st) return st;
  if (Status st = options::check(s, next); !st) return st;
  cfg = std::move(next);
  return Status::ok();
}

}  // namespace

Status CodeModelConfig::validate() const {
  if (Status st = options::validate(specs(), *this); !st) return st;
  if (encoder.empty()) return Status::invalid("encoder: empty name");
  return Status::ok();
}

const std::vector<CodeOptionInfo>& code_config_options() {
  static const std::vector<CodeOptionInfo> kInfo = [] {
    std::vector<CodeOptionInfo> out;
    CodeModelConfig defaults;
    for (const auto& s : specs()) {
      const nlohmann::json dj = options::to_json(std::vector<Spec>{s}, defaults)[s.name];
      std::string bounds = std::holds_alternative<TextField>(s.field)
                               ? std::string(s.choices ? s.choices
                                                       : s.name == std::string_view("encoder")
                                                           ? "bag|textcnn|bilstm|qwen2"
                                                           : "text")
                               : options::bounds_text(s.lo, s.hi);
      out.push_back({s.name, dj.is_string() ? dj.get<std::string>() : dj.dump(), bounds,
                     s.help});
    }
    return out;
  }();
  return kInfo;
}

Status set_code_option(CodeModelConfig& cfg, std::string_view name, std::string_view value) {
  const Spec* s = find_spec(name);
  if (!s) return unknown_option(name);
  if (std::holds_alternative<TextField>(s->field)) return apply(cfg, *s, std::string(value));
  auto parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_number())
    return Status::invalid(fmt::format("{}: '{}' is not a number", name, value));
  return apply(cfg, *s, parsed);
}

nlohmann::json to_json(const CodeModelConfig& cfg) { return options::to_json(specs(), cfg); }

Result<CodeModelConfig> code_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::invalid("code-model config: expected a JSON object");
  CodeModelConfig cfg;
  for (const auto& [key, value] : j.items()) {
    const Spec* s = find_spec(key);
    if (!s) return unknown_option(key);
    if (auto st = apply(cfg, *s, value); !st) return st;
  }
  if (auto st = cfg.validate(); !st) return st;
  return cfg;
}

}  // namespace peakcast::models::code
