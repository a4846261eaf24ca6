// The built-in script encoders (bag, textcnn, bilstm), the registry, and the masked loss.
#include <algorithm>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>
#include <torch/nn.h>

#include "peakcast/features/tokenizer.h"
#include "peakcast/models/code/code_model.h"
#include "peakcast/models/code/encoder.h"

namespace peakcast::models::code {

EncoderFactory qwen2_encoder_factory();       // qwen2_encoder.cpp
EncoderOptionsCheck qwen2_options_check();     // qwen2_encoder.cpp

namespace {

// `bag`: hashed uni+bi-grams of the shell-aware tokens -> mean of their embeddings.
// Counting repeats is deliberate (a flag used twice weighs twice). Empty text -> zero vector.
class BagEncoder : public ScriptEncoder {
 public:
  explicit BagEncoder(const CodeModelConfig& cfg)
      : buckets_(cfg.hash_buckets), max_tokens_(static_cast<size_t>(cfg.max_tokens)) {
    bag_ = register_module("bag", torch::nn::EmbeddingBag(
        torch::nn::EmbeddingBagOptions(cfg.hash_buckets, cfg.token_dim).mode(torch::kMean).sparse(true)));
  }
  int64_t output_dim() const override { return bag_->options.embedding_dim(); }
  std::vector<torch::Tensor> sparse_parameters() override { return {bag_->weight}; }

  PreparedText prepare(const CodeText& text) const override {
    return {features::hashed_ngrams(code_tokens(text, max_tokens_), buckets_, /*bigrams=*/true)};
  }

  torch::Tensor encode(const std::vector<const PreparedText*>& texts) override {
    std::vector<int64_t> flat;
    std::vector<int64_t> offsets;  // [B]
    offsets.reserve(texts.size());
    for (const PreparedText* t : texts) {
      offsets.push_back(static_cast<int64_t>(flat.size()));
      flat.insert(flat.end(), t->ids.begin(), t->ids.end());
    }
    auto ids = torch::tensor(flat, torch::kInt64);      // [sum of lengths]
    auto offs = torch::tensor(offsets, torch::kInt64);  // [B]
    return bag_->forward(ids, offs);                    // [B, token_dim]
  }

 private:
  int64_t buckets_;
  size_t max_tokens_;
  torch::nn::EmbeddingBag bag_{nullptr};
};

// Shared by the sequence encoders: hashed token ids (0 = padding), capped to seq_max_tokens
// with the 60% head / 40% tail rule, padded into [B, T] with T >= min_len.
class SequenceEncoder : public ScriptEncoder {
 public:
  explicit SequenceEncoder(const CodeModelConfig& cfg)
      : buckets_(cfg.seq_buckets),
        max_tokens_(static_cast<size_t>(cfg.max_tokens)),
        seq_cap_(static_cast<size_t>(cfg.seq_max_tokens)) {
    emb_ = register_module("embedding", torch::nn::Embedding(
        torch::nn::EmbeddingOptions(cfg.seq_buckets, cfg.token_dim).padding_idx(0).sparse(true)));
  }
  std::vector<torch::Tensor> sparse_parameters() override { return {emb_->weight}; }

  PreparedText prepare(const CodeText& text) const override {
    auto ids = features::hashed_token_ids(code_tokens(text, max_tokens_), buckets_);
    return {head_tail(std::move(ids), seq_cap_)};
  }

 protected:
  // ids [B, T] (0-padded), lengths [B] (true lengths, may be 0).
  std::pair<torch::Tensor, torch::Tensor> pad(const std::vector<const PreparedText*>& texts,
                                              int64_t min_len) const {
    int64_t t_max = min_len;
    for (const PreparedText* t : texts) t_max = std::max<int64_t>(t_max, t->ids.size());
    const int64_t b = static_cast<int64_t>(texts.size());
    auto ids = torch::zeros({b, t_max}, torch::kInt64);  // [B, T]
    auto lengths = torch::empty({b}, torch::kInt64);     // [B]
    auto ids_a = ids.accessor<int64_t, 2>();
    auto len_a = lengths.accessor<int64_t, 1>();
    for (int64_t i = 0; i < b; ++i) {
      const auto& v = texts[static_cast<size_t>(i)]->ids;
      for (size_t j = 0; j < v.size(); ++j) ids_a[i][static_cast<int64_t>(j)] = v[j];
      len_a[i] = static_cast<int64_t>(v.size());
    }
    return {ids, lengths};
  }

  int64_t buckets_;
  size_t max_tokens_;
  size_t seq_cap_;
  torch::nn::Embedding emb_{nullptr};
};

// `textcnn`: embedding -> Conv1d widths 3/4/5 -> ReLU -> max over valid windows.
// Sequences shorter than 5 are padded to 5 (those windows count as valid for everyone), and
// windows reaching into batch padding are masked, so the output does not depend on the batch.
class TextCnnEncoder : public SequenceEncoder {
 public:
  static constexpr std::array<int64_t, 3> kWidths = {3, 4, 5};

  explicit TextCnnEncoder(const CodeModelConfig& cfg) : SequenceEncoder(cfg) {
    for (int64_t w : kWidths)
      convs_.push_back(register_module(fmt::format("conv{}", w), torch::nn::Conv1d(
          torch::nn::Conv1dOptions(cfg.token_dim, cfg.conv_filters, w))));
    filters_ = cfg.conv_filters;
  }
  int64_t output_dim() const override { return filters_ * static_cast<int64_t>(kWidths.size()); }

  torch::Tensor encode(const std::vector<const PreparedText*>& texts) override {
    constexpr int64_t kMinLen = kWidths.back();
    auto [ids, lengths] = pad(texts, kMinLen);        // [B, T], [B]
    auto eff_len = lengths.clamp_min(kMinLen);        // [B]
    auto x = emb_->forward(ids).transpose(1, 2);      // [B, E, T]
    std::vector<torch::Tensor> pooled;
    for (size_t k = 0; k < convs_.size(); ++k) {
      auto h = torch::relu(convs_[k]->forward(x));   // [B, F, T - w + 1]
      const int64_t windows = h.size(2);
      auto pos = torch::arange(windows, torch::kInt64).unsqueeze(0);          // [1, W]
      auto valid = pos.lt((eff_len - kWidths[k] + 1).unsqueeze(1)).unsqueeze(1);  // [B, 1, W]
      // ReLU outputs are >= 0, so masking invalid windows with 0 cannot raise the maximum;
      // every sequence has at least one valid window.
      pooled.push_back(h.masked_fill(valid.logical_not(), 0.0).amax(2));     // [B, F]
    }
    return torch::cat(pooled, 1);  // [B, 3F]
  }

 private:
  std::vector<torch::nn::Conv1d> convs_;
  int64_t filters_ = 0;
};

// `bilstm`: embedding -> bidirectional LSTM over the packed (unpadded) sequence -> mean and max
// over time, concatenated. Empty text reads one padding token. The sequence cap (seq_max_tokens,
// default 256) keeps the recurrent pass affordable on the CPU.
class BiLstmEncoder : public SequenceEncoder {
 public:
  explicit BiLstmEncoder(const CodeModelConfig& cfg) : SequenceEncoder(cfg), hidden_(cfg.lstm_hidden) {
    lstm_ = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(cfg.token_dim, cfg.lstm_hidden)
                                                        .bidirectional(true)
                                                        .batch_first(true)));
  }
  int64_t output_dim() const override { return 4 * hidden_; }

  torch::Tensor encode(const std::vector<const PreparedText*>& texts) override {
    auto [ids, lengths] = pad(texts, 1);               // [B, T], [B]
    lengths = lengths.clamp_min(1);
    auto x = emb_->forward(ids);                       // [B, T, E]
    auto packed = torch::nn::utils::rnn::pack_padded_sequence(x, lengths, /*batch_first=*/true,
                                                              /*enforce_sorted=*/false);
    auto out_packed = std::get<0>(lstm_->forward_with_packed_input(packed));
    auto out = std::get<0>(torch::nn::utils::rnn::pad_packed_sequence(out_packed, true));  // [B, T', 2H]
    auto pos = torch::arange(out.size(1), torch::kInt64).unsqueeze(0);   // [1, T']
    auto valid = pos.lt(lengths.unsqueeze(1)).unsqueeze(2);              // [B, T', 1]
    auto validf = valid.to(torch::kFloat32);
    auto mean = (out * validf).sum(1) / lengths.to(torch::kFloat32).unsqueeze(1);  // [B, 2H]
    auto max = out.masked_fill(valid.logical_not(), -1e30).amax(1);               // [B, 2H]
    return torch::cat({mean, max}, 1);                                             // [B, 4H]
  }

 private:
  int64_t hidden_;
  torch::nn::LSTM lstm_{nullptr};
};

template <typename E>
EncoderFactory factory_of() {
  return [](const CodeModelConfig& cfg) -> Result<std::shared_ptr<ScriptEncoder>> {
    return std::shared_ptr<ScriptEncoder>(std::make_shared<E>(cfg));
  };
}

}  // namespace

void EncoderRegistry::add(const std::string& name, EncoderFactory factory, EncoderOptionsCheck check) {
  if (!entries_.emplace(name, Entry{std::move(factory), std::move(check)}).second)
    throw std::logic_error("encoder registered twice: " + name);
}

const EncoderRegistry::Entry* EncoderRegistry::find(const std::string& name, Status& unknown) const {
  auto it = entries_.find(name);
  if (it != entries_.end()) return &it->second;
  std::string valid;
  for (const auto& n : names()) valid += (valid.empty() ? "" : ", ") + n;
  unknown = Status::invalid(fmt::format("encoder: unknown name '{}' (valid: {})", name, valid));
  return nullptr;
}

Result<std::shared_ptr<ScriptEncoder>> EncoderRegistry::create(const CodeModelConfig& cfg) const {
  Status unknown;
  const Entry* e = find(cfg.encoder, unknown);
  if (!e) return unknown;
  return e->factory(cfg);
}

Status EncoderRegistry::check(const CodeModelConfig& cfg) const {
  Status unknown;
  const Entry* e = find(cfg.encoder, unknown);
  if (!e) return unknown;
  return e->check ? e->check(cfg) : Status::ok();
}

std::vector<std::string> EncoderRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [n, e] : entries_) out.push_back(n);
  return out;
}

const EncoderRegistry& EncoderRegistry::builtin() {
  static const EncoderRegistry kBuiltin = [] {
    EncoderRegistry r;
    register_builtins(r);
    return r;
  }();
  return kBuiltin;
}

void register_builtins(EncoderRegistry& registry) {
  registry.add("bag", factory_of<BagEncoder>());
  registry.add("textcnn", factory_of<TextCnnEncoder>());
  registry.add("bilstm", factory_of<BiLstmEncoder>());
  registry.add("qwen2", qwen2_encoder_factory(), qwen2_options_check());
}

Status check_encoder_options(const CodeModelConfig& cfg) { return EncoderRegistry::builtin().check(cfg); }

torch::Tensor masked_smooth_l1(const torch::Tensor& pred, const torch::Tensor& target,
                               const torch::Tensor& mask, double vram_weight, double beta,
                               const torch::Tensor& censored) {
  // Not torch::nn::functional::smooth_l1_loss: LibTorch 1.13 ignores SmoothL1LossFuncOptions::beta
  // there (always 1.0); the ATen op takes beta directly.
  auto per_cell = torch::smooth_l1_loss(pred, target, at::Reduction::None, beta);  // [B, 2]
  if (censored.defined()) {
    // One-sided (hinge) where the target is a lower bound: a prediction at or above it is no error.
    per_cell = torch::where((censored > 0).logical_and(pred >= target), torch::zeros_like(per_cell),
                            per_cell);
  }
  auto weights = torch::tensor({1.0f, static_cast<float>(vram_weight)}).unsqueeze(0);  // [1, 2]
  // where() rather than a product: a masked cell contributes exactly zero loss and gradient
  // (callers still put finite placeholders, 0, in masked target cells).
  auto masked = torch::where(mask > 0, per_cell * weights, torch::zeros_like(per_cell));
  return masked.sum() / mask.sum().clamp_min(1.0);
}

}  // namespace peakcast::models::code
