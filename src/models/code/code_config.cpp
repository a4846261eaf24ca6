#include "peakcast/models/code/code_config.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace peakcast::models::code {
namespace {

using IntField = int64_t CodeModelConfig::*;
using UIntField = uint64_t CodeModelConfig::*;
using RealField = double CodeModelConfig::*;
using TextField = std::string CodeModelConfig::*;

// The declaration table: one row per option; defaults come from CodeModelConfig{} itself.
struct Spec {
  const char* name;
  std::variant<IntField, UIntField, RealField, TextField> field;
  double lo;
  double hi;
  const char* description;
  const char* choices = nullptr;  // text options: allowed values, "a|b|c" (nullptr: any text)
};

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<Spec>& specs() {
  static const std::vector<Spec> kSpecs = {
      {"encoder", &CodeModelConfig::encoder, 0, 0, "script encoder (registry name)"},
      {"token_dim", &CodeModelConfig::token_dim, 4, 1024, "token / n-gram embedding width"},
      {"hash_buckets", &CodeModelConfig::hash_buckets, 16, 1 << 24, "bag: hashed n-gram buckets"},
      {"seq_buckets", &CodeModelConfig::seq_buckets, 16, 1 << 22,
       "textcnn/bilstm: hashed token vocabulary (0 = padding)"},
      {"seq_max_tokens", &CodeModelConfig::seq_max_tokens, 8, 4096,
       "textcnn/bilstm: sequence cap (60% head, 40% tail)"},
      {"max_tokens", &CodeModelConfig::max_tokens, 8, 65536, "tokenizer budget (60% head, 40% tail)"},
      {"conv_filters", &CodeModelConfig::conv_filters, 1, 1024, "textcnn: filters per width 3/4/5"},
      {"lstm_hidden", &CodeModelConfig::lstm_hidden, 1, 1024, "bilstm: hidden size per direction"},
      {"user_dim", &CodeModelConfig::user_dim, 1, 1024, "user embedding width"},
      {"fused_dim", &CodeModelConfig::fused_dim, 8, 4096, "fused representation width"},
      {"dropout", &CodeModelConfig::dropout, 0, 0.9, "dropout in the fusion layers"},
      {"util_cap", &CodeModelConfig::util_cap, 1e-6, 100, "heads output sigmoid * cap"},
      {"min_user_jobs", &CodeModelConfig::min_user_jobs, 1, 1e9,
       "training users with fewer jobs map to the unknown-user row"},
      {"user_dropout", &CodeModelConfig::user_dropout, 0, 1,
       "share of training examples shown as the unknown user"},
      {"vram_weight", &CodeModelConfig::vram_weight, 0, 1000, "VRAM loss weight (memory = 1)"},
      {"smooth_l1_beta", &CodeModelConfig::smooth_l1_beta, 1e-6, 10, "Smooth L1 transition point"},
      {"lr", &CodeModelConfig::lr, 1e-7, 10, "AdamW learning rate"},
      {"embed_lr_scale", &CodeModelConfig::embed_lr_scale, 1e-3, 1e3,
       "learning-rate multiplier for the sparse token tables"},
      {"weight_decay", &CodeModelConfig::weight_decay, 0, 10, "AdamW weight decay"},
      {"batch_size", &CodeModelConfig::batch_size, 1, 1 << 20, "training batch size"},
      {"max_epochs", &CodeModelConfig::max_epochs, 1, 100000, "epoch limit"},
      {"patience", &CodeModelConfig::patience, 1, 100000,
       "epochs without validation improvement before stopping"},
      {"grad_clip", &CodeModelConfig::grad_clip, 0, kInf, "gradient L2 norm clip (0 = off)"},
      {"seed", &CodeModelConfig::seed, 0, 1.8e19, "random seed (weights, dropout, data order)"},
      {"seeds", &CodeModelConfig::seeds, 1, 1000, "models trained by train_code_models"},
      {"threads", &CodeModelConfig::threads, 0, 1024, "Torch intra-op threads (0 = leave as is)"},
      {"base", &CodeModelConfig::base, 0, 0, "qwen2: Hugging Face model folder (config.json, safetensors)"},
      {"tokenizer", &CodeModelConfig::tokenizer, 0, 0, "qwen2: tokenizer.json (empty: BASE/tokenizer.json)"},
      {"base_sha256", &CodeModelConfig::base_sha256, 0, 0,
       "qwen2: SHA-256 of the base weight files (set by training, checked at load)"},
      {"dtype", &CodeModelConfig::dtype, 0, 0, "qwen2: compute dtype (auto: float32 on cpu, bfloat16 on cuda)",
       "auto|float32|bfloat16|float16"},
      {"device", &CodeModelConfig::device, 0, 0, "qwen2: cpu, cuda or cuda:N"},
      {"pooling", &CodeModelConfig::pooling, 0, 0, "qwen2: script vector from the final hidden states",
       "mean|last|mean_last"},
      {"proj_dim", &CodeModelConfig::proj_dim, 1, 65536, "qwen2: projection width into the fusion"},
      {"lora_rank", &CodeModelConfig::lora_rank, 0, 4096, "qwen2: LoRA rank (0 = no adapters)"},
      {"lora_alpha", &CodeModelConfig::lora_alpha, 1e-6, 1e6, "qwen2: LoRA alpha (scale alpha/rank)"},
      {"lora_dropout", &CodeModelConfig::lora_dropout, 0, 0.9, "qwen2: dropout on the adapters' input"},
      {"lora_targets", &CodeModelConfig::lora_targets, 0, 0, "qwen2: adapted layers, of q,k,v,o,gate,up,down"},
      {"max_added_token_id", &CodeModelConfig::max_added_token_id, -1, 1e9,
       "qwen2: ignore tokenizer added tokens above this id (-1 = keep all)"},
      {"fold_ids", &CodeModelConfig::fold_ids, 0, 1, "qwen2: 1 = ids modulo vocab_size (small test models)"},
  };
  return kSpecs;
}

const Spec* find_spec(std::string_view name) {
  for (const auto& s : specs())
    if (name == s.name) return &s;
  return nullptr;
}

std::string valid_names() {
  std::string out;
  for (const auto& s : specs()) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

Status unknown_option(std::string_view name) {
  return Status::invalid(fmt::format("{}: unknown code-model option (valid: {})", name, valid_names()));
}

Status check_range(const Spec& s, double v) {
  if (!(v >= s.lo && v <= s.hi) || std::isnan(v))
    return Status::invalid(fmt::format("{}: {} is outside [{}, {}]", s.name, v, s.lo, s.hi));
  return Status::ok();
}

// Applies a JSON value to one field, checking type and bounds.
Status apply(CodeModelConfig& cfg, const Spec& s, const nlohmann::json& v) {
  return std::visit(
      [&](auto field) -> Status {
        using F = decltype(field);
        if constexpr (std::is_same_v<F, TextField>) {
          if (!v.is_string()) return Status::invalid(fmt::format("{}: expected a string", s.name));
          if (s.choices && ("|" + std::string(s.choices) + "|").find("|" + v.get<std::string>() + "|") ==
                               std::string::npos)
            return Status::invalid(fmt::format("{}: '{}' is not one of {}", s.name, v.get<std::string>(), s.choices));
          cfg.*field = v.get<std::string>();
          return Status::ok();
        } else {
          if (!v.is_number()) return Status::invalid(fmt::format("{}: expected a number", s.name));
          double d = v.get<double>();
          if constexpr (!std::is_same_v<F, RealField>) {
            if (!v.is_number_integer() && !v.is_number_unsigned())
              return Status::invalid(fmt::format("{}: expected an integer", s.name));
          }
          if (auto st = check_range(s, d); !st) return st;
          if constexpr (std::is_same_v<F, IntField>) cfg.*field = v.get<int64_t>();
          else if constexpr (std::is_same_v<F, UIntField>) cfg.*field = v.get<uint64_t>();
          else cfg.*field = d;
          return Status::ok();
        }
      },
      s.field);
}

nlohmann::json field_json(const CodeModelConfig& cfg, const Spec& s) {
  return std::visit([&](auto field) { return nlohmann::json(cfg.*field); }, s.field);
}

}  // namespace

Status CodeModelConfig::validate() const {
  for (const auto& s : specs()) {
    if (std::holds_alternative<TextField>(s.field)) continue;
    double v = field_json(*this, s).get<double>();
    if (auto st = check_range(s, v); !st) return st;
  }
  if (encoder.empty()) return Status::invalid("encoder: empty name");
  return Status::ok();
}

const std::vector<CodeOptionInfo>& code_config_options() {
  static const std::vector<CodeOptionInfo> kInfo = [] {
    std::vector<CodeOptionInfo> out;
    CodeModelConfig defaults;
    for (const auto& s : specs()) {
      auto dj = field_json(defaults, s);
      std::string bounds = std::holds_alternative<TextField>(s.field)
                               ? std::string(s.choices ? s.choices
                                                       : s.name == std::string_view("encoder")
                                                           ? "bag|textcnn|bilstm|qwen2"
                                                           : "text")
                               : fmt::format("[{}, {}]", s.lo, s.hi);
      out.push_back({s.name, dj.is_string() ? dj.get<std::string>() : dj.dump(), bounds,
                     s.description});
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

nlohmann::json to_json(const CodeModelConfig& cfg) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : specs()) j[s.name] = field_json(cfg, s);
  return j;
}

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
