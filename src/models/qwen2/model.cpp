// Qwen2 forward: loading, embedding, blocks, final norm, pooling.
#include "peakcast/models/qwen2/model.h"

#include <charconv>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <torch/torch.h>

#include "peakcast/core/log.h"

namespace peakcast::models::qwen2 {
namespace {

// [out, in] of a target's weight.
std::pair<int64_t, int64_t> target_shape(const Qwen2Config& c, Target t) {
  const int64_t h = c.hidden_size, q = c.q_size(), kv = c.num_key_value_heads * c.head_dim(),
                i = c.intermediate_size;
  switch (t) {
    case Target::kQ: return {q, h};
    case Target::kO: return {h, q};
    case Target::kK: case Target::kV: return {kv, h};
    case Target::kGate: case Target::kUp: return {i, h};
    case Target::kDown: return {h, i};
  }
  return {0, 0};
}

// Warns of the checkpoint's layers past config.json's num_hidden_layers (`prefix` "model." or ""):
// they are not read, as transformers' from_pretrained does not read them (it warns of unused
// weights too), but a config edited down, or one of another model, would otherwise go unnoticed.
void warn_of_unread_layers(const Checkpoint& ckpt, const std::string& prefix, int64_t num_hidden_layers,
                           const std::string& dir) {
  const std::string layers = prefix + "layers.";
  std::set<int64_t> unread;
  size_t tensors = 0;
  for (const auto& [name, entry] : ckpt.tensors()) {
    if (!name.starts_with(layers)) continue;
    int64_t index = -1;
    const char* first = name.data() + layers.size();
    const auto [end, ec] = std::from_chars(first, name.data() + name.size(), index);
    if (ec != std::errc() || end == first || *end != '.' || index < num_hidden_layers) continue;
    unread.insert(index);
    ++tensors;
  }
  if (unread.empty()) return;
  const std::string which =
      unread.size() == 1 ? fmt::format("{}{}", layers, *unread.begin())
                         : fmt::format("{}{} to {}{}", layers, *unread.begin(), layers, *unread.rbegin());
  log(LogLevel::kWarn,
      fmt::format("{}: the checkpoint has {} layer{} past config.json's num_hidden_layers {} ({}, {} "
                  "tensors): ignored, not read",
                  dir, unread.size(), unread.size() == 1 ? "" : "s", num_hidden_layers, which, tensors));
}

// The dtype's most negative finite value (HF's finfo(dtype).min for the causal mask).
double lowest(torch::ScalarType t) {
  if (t == torch::kBFloat16) return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
  if (t == torch::kFloat16) return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
  return static_cast<double>(std::numeric_limits<float>::lowest());
}

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.slice(-1, half), x.slice(-1, 0, half)}, -1);
}

}  // namespace

const char* target_name(Target t) {
  static const char* kNames[] = {"q", "k", "v", "o", "gate", "up", "down"};
  return kNames[static_cast<int>(t)];
}

Result<std::vector<Target>> parse_lora_targets(std::string_view csv) {
  std::vector<Target> out;
  size_t start = 0;
  while (start <= csv.size()) {
    size_t end = csv.find(',', start);
    if (end == std::string_view::npos) end = csv.size();
    std::string name(csv.substr(start, end - start));
    if (name.size() > 5 && name.compare(name.size() - 5, 5, "_proj") == 0) name.resize(name.size() - 5);
    bool found = false;
    for (int t = 0; t < kNumTargets; ++t)
      if (name == target_name(static_cast<Target>(t))) {
        if (std::find(out.begin(), out.end(), static_cast<Target>(t)) == out.end())
          out.push_back(static_cast<Target>(t));
        found = true;
      }
    if (!found)
      return Status::invalid(fmt::format("lora_targets: '{}' is not one of q, k, v, o, gate, up, down", name));
    start = end + 1;
  }
  return out;
}

const torch::Tensor& LayerWeights::weight(Target t) const {
  switch (t) {
    case Target::kQ: return q_w;
    case Target::kK: return k_w;
    case Target::kV: return v_w;
    case Target::kO: return o_w;
    case Target::kGate: return gate_w;
    case Target::kUp: return up_w;
    case Target::kDown: return down_w;
  }
  return q_w;
}
torch::Tensor& LayerWeights::weight(Target t) {
  return const_cast<torch::Tensor&>(static_cast<const LayerWeights&>(*this).weight(t));
}

Result<Qwen2Model> Qwen2Model::load(const std::string& dir, torch::ScalarType dtype, torch::Device device) {
  auto cfg = read_qwen2_config(dir);
  if (!cfg) return cfg.status();
  auto ckpt = Checkpoint::open(dir);
  if (!ckpt) return ckpt.status();
  return load(*cfg, *ckpt, dir, dtype, device);
}

Result<Qwen2Model> Qwen2Model::load(const Qwen2Config& config, const Checkpoint& checkpoint,
                                    const std::string& dir, torch::ScalarType dtype, torch::Device device) {
  if (auto st = config.validate(); !st) return st.with_context(dir + "/config.json");
  const Checkpoint* ckpt = &checkpoint;
  Qwen2Model m;
  m.cfg_ = config;
  m.dtype_ = dtype;
  m.device_ = device;
  const Qwen2Config& c = m.cfg_;
  const int64_t h = c.hidden_size, q = c.q_size(), kv = c.num_key_value_heads * c.head_dim();
  Status err;
  auto read = [&](const std::string& name, std::vector<int64_t> shape) -> torch::Tensor {
    if (!err) return {};
    auto t = ckpt->read(name, shape, dtype);
    if (!t) {
      err = t.status();
      return {};
    }
    return t->to(device);
  };
  torch::NoGradGuard no_grad;
  // Qwen2ForCausalLM's names start with "model."; a bare Qwen2Model's (save_pretrained of the
  // base model) do not. from_pretrained accepts either; so do we.
  const std::string base =
      !ckpt->has("model.embed_tokens.weight") && ckpt->has("embed_tokens.weight") ? "" : "model.";
  m.embed_ = read(base + "embed_tokens.weight", {c.vocab_size, h});
  m.final_norm_ = read(base + "norm.weight", {h});
  // A bare Qwen2Model has no head at all: its hidden states (all the encoder reads) load without one.
  if (!c.tie_word_embeddings && (!base.empty() || ckpt->has("lm_head.weight")))
    m.lm_head_ = read("lm_head.weight", {c.vocab_size, h});
  for (int64_t i = 0; i < c.num_hidden_layers && err; ++i) {
    const std::string p = fmt::format("{}layers.{}.", base, i);
    LayerWeights w;
    w.input_norm = read(p + "input_layernorm.weight", {h});
    w.q_w = read(p + "self_attn.q_proj.weight", {q, h});
    w.q_b = read(p + "self_attn.q_proj.bias", {q});
    w.k_w = read(p + "self_attn.k_proj.weight", {kv, h});
    w.k_b = read(p + "self_attn.k_proj.bias", {kv});
    w.v_w = read(p + "self_attn.v_proj.weight", {kv, h});
    w.v_b = read(p + "self_attn.v_proj.bias", {kv});
    w.o_w = read(p + "self_attn.o_proj.weight", {h, q});
    w.post_norm = read(p + "post_attention_layernorm.weight", {h});
    w.gate_w = read(p + "mlp.gate_proj.weight", {c.intermediate_size, h});
    w.up_w = read(p + "mlp.up_proj.weight", {c.intermediate_size, h});
    w.down_w = read(p + "mlp.down_proj.weight", {h, c.intermediate_size});
    m.layers_.push_back(std::move(w));
  }
  if (!err) return err;
  warn_of_unread_layers(*ckpt, base, c.num_hidden_layers, dir);
  // Not every LibTorch has half-precision kernels on the CPU (Debian's has no float16 matrix
  // product there). One token through the model finds out now, with a reason, instead of at the
  // first record with a LibTorch stack trace.
  if (device.is_cpu() && dtype != torch::kFloat32) {
    try {
      (void)m.forward(std::vector<int64_t>{0});
    } catch (const c10::Error&) {
      return Status::unsupported(fmt::format(
          "{}: dtype {}: this LibTorch cannot run it on the CPU (no half-precision kernels there); "
          "use float32 or bfloat16 on the CPU, float16 on a CUDA device",
          dir, dtype == torch::kFloat16 ? "float16" : dtype == torch::kBFloat16 ? "bfloat16" : c10::toString(dtype)));
    }
  }
  return m;
}

Qwen2Model Qwen2Model::random(const Qwen2Config& c, torch::ScalarType dtype, torch::Device device,
                              uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed);
  auto opts = torch::TensorOptions().dtype(torch::kFloat32);
  if (device.is_cuda()) torch::manual_seed(seed);
  auto normal = [&](std::vector<int64_t> shape) {
    if (device.is_cuda())  // drawn on the GPU: the CPU generator takes minutes for 1.5 B values
      return torch::randn(shape, opts.device(device)).mul_(0.02).to(dtype);
    return at::normal(0.0, 0.02, shape, gen, opts).to(device, dtype);
  };
  auto ones = [&](int64_t n) { return torch::ones({n}, opts).to(device, dtype); };
  Qwen2Model m;
  m.cfg_ = c;
  m.dtype_ = dtype;
  m.device_ = device;
  const int64_t h = c.hidden_size, q = c.q_size(), kv = c.num_key_value_heads * c.head_dim(),
                i = c.intermediate_size;
  m.embed_ = normal({c.vocab_size, h});
  m.final_norm_ = ones(h);
  if (!c.tie_word_embeddings) m.lm_head_ = normal({c.vocab_size, h});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerWeights w;
    w.input_norm = ones(h);
    w.q_w = normal({q, h});
    w.q_b = normal({q});
    w.k_w = normal({kv, h});
    w.k_b = normal({kv});
    w.v_w = normal({kv, h});
    w.v_b = normal({kv});
    w.o_w = normal({h, q});
    w.post_norm = ones(h);
    w.gate_w = normal({i, h});
    w.up_w = normal({i, h});
    w.down_w = normal({h, i});
    m.layers_.push_back(std::move(w));
  }
  return m;
}

torch::Tensor Qwen2Model::rms_norm(const torch::Tensor& x, const torch::Tensor& w) const {
  auto h = x.to(torch::kFloat32);
  auto var = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * torch::rsqrt(var + cfg_.rms_norm_eps);
  return w * h.to(dtype_);
}

torch::Tensor Qwen2Model::attention(const LayerWeights& w, int layer, const torch::Tensor& x,
                                    const torch::Tensor& cos, const torch::Tensor& sin,
                                    const torch::Tensor& mask, Lora* lora) const {
  const int64_t b = x.size(0), t = x.size(1), nh = cfg_.num_attention_heads,
                nkv = cfg_.num_key_value_heads, hd = cfg_.head_dim();
  auto proj = [&](Target tg, const torch::Tensor& wt, const torch::Tensor& bias) {
    auto y = torch::linear(x, wt, bias);
    return lora ? lora->apply(layer, tg, x, y) : y;
  };
  auto q = proj(Target::kQ, w.q_w, w.q_b).view({b, t, nh, hd}).transpose(1, 2);   // [B, nH, T, hd]
  auto k = proj(Target::kK, w.k_w, w.k_b).view({b, t, nkv, hd}).transpose(1, 2);  // [B, nKV, T, hd]
  auto v = proj(Target::kV, w.v_w, w.v_b).view({b, t, nkv, hd}).transpose(1, 2);  // [B, nKV, T, hd]
  q = q * cos + rotate_half(q) * sin;
  k = k * cos + rotate_half(k) * sin;
  if (nh != nkv) {  // repeat_kv: query head h reads kv head h / (nH / nKV)
    k = k.repeat_interleave(nh / nkv, 1);
    v = v.repeat_interleave(nh / nkv, 1);
  }
  auto scores = torch::matmul(q, k.transpose(2, 3)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  scores = scores.masked_fill(mask, lowest(dtype_));                    // [B, nH, T, T]
  auto probs = torch::softmax(scores, -1, torch::kFloat32).to(dtype_);
  auto out = torch::matmul(probs, v).transpose(1, 2).reshape({b, t, nh * hd});  // [B, T, nH*hd]
  auto y = torch::linear(out, w.o_w);
  return lora ? lora->apply(layer, Target::kO, out, y) : y;
}

torch::Tensor Qwen2Model::mlp(const LayerWeights& w, int layer, const torch::Tensor& h, Lora* lora) const {
  auto lin = [&](Target tg, const torch::Tensor& wt, const torch::Tensor& x) {
    auto y = torch::linear(x, wt);
    return lora ? lora->apply(layer, tg, x, y) : y;
  };
  auto a = torch::silu(lin(Target::kGate, w.gate_w, h)) * lin(Target::kUp, w.up_w, h);
  return lin(Target::kDown, w.down_w, a);
}

torch::Tensor Qwen2Model::forward(const torch::Tensor& ids_in, const torch::Tensor& lengths_in,
                                  Lora* lora) const {
  const auto ids = ids_in.to(device_);
  const auto lengths = lengths_in.to(device_);
  const int64_t t = ids.size(1), hd = cfg_.head_dim();
  auto x = torch::embedding(embed_, ids);  // [B, T, H]
  // Rotary tables in float32 (as HF), cast to the model dtype.
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
  auto inv_freq = 1.0 / torch::pow(cfg_.rope_theta, torch::arange(0, hd, 2, f32) / static_cast<double>(hd));
  auto freqs = torch::outer(torch::arange(t, f32), inv_freq);  // [T, hd/2]
  auto emb = torch::cat({freqs, freqs}, -1);                    // [T, hd]
  auto cos = emb.cos().to(dtype_), sin = emb.sin().to(dtype_);
  // Masked: keys after the query (causal) and keys past the row's length (padding).
  auto pos = torch::arange(t, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  auto causal = pos.unsqueeze(0).gt(pos.unsqueeze(1));                         // [T, T]
  auto padded = pos.unsqueeze(0).ge(lengths.unsqueeze(1));                     // [B, T]
  auto mask = causal.unsqueeze(0).logical_or(padded.unsqueeze(1)).unsqueeze(1);  // [B, 1, T, T]
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerWeights& w = layers_[l];
    x = x + attention(w, static_cast<int>(l), rms_norm(x, w.input_norm), cos, sin, mask, lora);
    x = x + mlp(w, static_cast<int>(l), rms_norm(x, w.post_norm), lora);
  }
  return rms_norm(x, final_norm_);
}

torch::Tensor Qwen2Model::forward(const std::vector<int64_t>& ids, Lora* lora) const {
  auto t = torch::tensor(ids, torch::kInt64).unsqueeze(0);  // [1, T]
  auto len = torch::tensor({static_cast<int64_t>(ids.size())}, torch::kInt64);
  return forward(t, len, lora).squeeze(0);
}

torch::Tensor Qwen2Model::logits(const torch::Tensor& hidden) const {
  TORCH_CHECK(lm_head_.defined() || cfg_.tie_word_embeddings,
              "no logits: the checkpoint is a bare Qwen2Model with untied embeddings and no lm_head.weight");
  return torch::linear(hidden, lm_head_.defined() ? lm_head_ : embed_);
}

void Qwen2Model::merge(const Lora& lora) {
  torch::NoGradGuard no_grad;
  for (size_t l = 0; l < layers_.size(); ++l)
    for (int t = 0; t < kNumTargets; ++t) {
      const auto tg = static_cast<Target>(t);
      if (!lora.adapts(tg)) continue;
      auto& w = layers_[l].weight(tg);
      w = (w.to(torch::kFloat32) + lora.delta(static_cast<int>(l), tg).to(device_)).to(dtype_);
    }
}

std::pair<torch::Tensor, torch::Tensor> pool_hidden(const torch::Tensor& hidden, const torch::Tensor& lengths) {
  auto h = hidden.to(torch::kFloat32);  // [B, T, H]
  auto len = lengths.to(h.device());
  auto pos = torch::arange(h.size(1), torch::TensorOptions().dtype(torch::kInt64).device(h.device()));
  auto valid = pos.unsqueeze(0).lt(len.unsqueeze(1)).unsqueeze(2).to(torch::kFloat32);  // [B, T, 1]
  auto mean = (h * valid).sum(1) / len.clamp_min(1).to(torch::kFloat32).unsqueeze(1);    // [B, H]
  auto last_idx = (len - 1).clamp_min(0).view({-1, 1, 1}).expand({h.size(0), 1, h.size(2)});
  auto last = h.gather(1, last_idx).squeeze(1);                                           // [B, H]
  return {mean, last};
}

Lora::Lora(const Qwen2Config& cfg, const LoraOptions& opts)
    : opts_(opts), scale_(opts.alpha / static_cast<double>(opts.rank)) {
  for (Target t : opts.targets) enabled_[static_cast<int>(t)] = true;
  a_.resize(static_cast<size_t>(cfg.num_hidden_layers));
  b_.resize(static_cast<size_t>(cfg.num_hidden_layers));
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l)
    for (int t = 0; t < kNumTargets; ++t) {
      if (!enabled_[t]) continue;
      auto [out, in] = target_shape(cfg, static_cast<Target>(t));
      const std::string n = fmt::format("layers_{}_{}", l, target_name(static_cast<Target>(t)));
      auto a = torch::empty({opts.rank, in});
      torch::nn::init::kaiming_uniform_(a, std::sqrt(5.0));
      a_[static_cast<size_t>(l)][t] = register_parameter(n + "_A", a);
      b_[static_cast<size_t>(l)][t] = register_parameter(n + "_B", torch::zeros({out, opts.rank}));
    }
}

torch::Tensor Lora::apply(int layer, Target t, const torch::Tensor& x, const torch::Tensor& y) {
  const int ti = static_cast<int>(t);
  if (!enabled_[ti]) return y;
  auto& a = a_[static_cast<size_t>(layer)][ti];
  auto& b = b_[static_cast<size_t>(layer)][ti];
  auto in = x.to(a.device(), torch::kFloat32);
  if (is_training() && opts_.dropout > 0) in = torch::dropout(in, opts_.dropout, /*train=*/true);
  auto d = torch::linear(torch::linear(in, a), b) * scale_;
  return y + d.to(y.device(), y.scalar_type());
}

torch::Tensor Lora::delta(int layer, Target t) const {
  const int ti = static_cast<int>(t);
  return torch::matmul(b_[static_cast<size_t>(layer)][ti], a_[static_cast<size_t>(layer)][ti]) * scale_;
}

}  // namespace peakcast::models::qwen2
