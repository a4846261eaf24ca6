// The Qwen2 forward against the fixtures' reference.json (HF modeling_qwen2 conventions), F32 and
// BF16, batching with padding, pooling and LoRA (fresh adapters change nothing; merge equals apply).
#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "models/qwen2_test_util.h"
#include "peakcast/core/io.h"
#include "peakcast/models/qwen2/model.h"

namespace peakcast::models::qwen2 {
namespace {

using testing::kQwen2Dir;

nlohmann::json reference(const std::string& folder) {
  auto text = read_file(kQwen2Dir + folder + "/reference.json");
  EXPECT_TRUE(text.ok());
  return nlohmann::json::parse(*text);
}

double max_diff(const torch::Tensor& got, const nlohmann::json& want) {
  auto w = torch::tensor(want.get<std::vector<double>>(), torch::kFloat64);
  return (got.to(torch::kFloat64).flatten() - w).abs().max().item<double>();
}

// Compares every input of `outputs` (a reference.json "inputs" list) within the tolerances.
void check_outputs(const Qwen2Model& m, const nlohmann::json& inputs, double tol_hidden,
                   double tol_pooled, double tol_logits) {
  torch::NoGradGuard no_grad;
  ASSERT_EQ(inputs.size(), 4u);
  for (const auto& in : inputs) {
    const auto ids = in["input_ids"].get<std::vector<int64_t>>();
    auto hidden = m.forward(ids);  // [T, H]
    ASSERT_EQ(hidden.size(0), static_cast<int64_t>(ids.size()));
    const auto positions = in["hidden_positions"].get<std::vector<int64_t>>();
    for (size_t i = 0; i < positions.size(); ++i)
      EXPECT_LT(max_diff(hidden[positions[i]], in["final_hidden"][i]), tol_hidden)
          << in["name"] << " position " << positions[i];
    auto len = torch::tensor({static_cast<int64_t>(ids.size())});
    auto [mean, last] = pool_hidden(hidden.unsqueeze(0), len);
    EXPECT_LT(max_diff(mean[0], in["mean_pooled"]), tol_pooled) << in["name"];
    EXPECT_LT(max_diff(last[0], in["last_token"]), tol_hidden) << in["name"];
    auto logits = m.logits(hidden[-1]).to(torch::kFloat32);
    EXPECT_LT(max_diff(logits.slice(0, 0, 16), in["logits_last_first16"]), tol_logits) << in["name"];
    EXPECT_NEAR(logits.to(torch::kFloat64).sum().item<double>(), in["logits_last_sum"].get<double>(),
                tol_logits * 2048) << in["name"];
  }
}

TEST(Qwen2Model, Float32MatchesReference) {
  REQUIRE_QWEN2_FIXTURES();
  auto m = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat32);
  ASSERT_TRUE(m.ok()) << m.status().message();
  check_outputs(*m, reference("tiny-f32")["inputs"], 1e-5, 1e-5, 1e-6);
}

TEST(Qwen2Model, Bfloat16MatchesReference) {
  REQUIRE_QWEN2_FIXTURES();
  auto m = Qwen2Model::load(kQwen2Dir + "tiny-bf16", torch::kBFloat16);
  ASSERT_TRUE(m.ok()) << m.status().message();
  check_outputs(*m, reference("tiny-bf16")["inputs"], 0.05, 0.05, 0.005);
}

TEST(Qwen2Model, Bfloat16WeightsInFloat32MatchReference) {
  REQUIRE_QWEN2_FIXTURES();
  auto m = Qwen2Model::load(kQwen2Dir + "tiny-bf16", torch::kFloat32);
  ASSERT_TRUE(m.ok()) << m.status().message();
  check_outputs(*m, reference("tiny-bf16")["outputs_f32_compute"]["inputs"], 1e-5, 1e-5, 1e-6);
}

// float16 on the CPU: a LibTorch with half-precision CPU kernels runs it; one without (Debian's)
// refuses at load with the reason, not a LibTorch stack trace at the first record.
TEST(Qwen2Model, Float16OnTheCpuRunsOrIsRefusedAtLoadWithTheReason) {
  REQUIRE_QWEN2_FIXTURES();
  auto m = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat16);
  if (m.ok()) {
    torch::NoGradGuard no_grad;
    const torch::Tensor h = m->forward(std::vector<int64_t>{1, 2, 3});
    EXPECT_TRUE(torch::isfinite(h).all().item<bool>());
    return;
  }
  const std::string why = m.status().message();
  EXPECT_NE(why.find("float16"), std::string::npos) << why;
  EXPECT_NE(why.find("CPU"), std::string::npos) << why;
  EXPECT_NE(why.find("tiny-f32"), std::string::npos) << why;
}

TEST(Qwen2Model, PaddedBatchEqualsBatchOne) {
  REQUIRE_QWEN2_FIXTURES();
  auto m = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat32);
  ASSERT_TRUE(m.ok()) << m.status().message();
  torch::NoGradGuard no_grad;
  const auto inputs = reference("tiny-f32")["inputs"];
  std::vector<std::vector<int64_t>> seqs;
  for (const auto& in : inputs) seqs.push_back(in["input_ids"].get<std::vector<int64_t>>());
  int64_t t_max = 0;
  for (const auto& s : seqs) t_max = std::max<int64_t>(t_max, static_cast<int64_t>(s.size()));
  auto ids = torch::full({static_cast<int64_t>(seqs.size()), t_max}, 7, torch::kInt64);  // pad id 7
  auto lengths = torch::empty({static_cast<int64_t>(seqs.size())}, torch::kInt64);
  for (size_t i = 0; i < seqs.size(); ++i) {
    ids[static_cast<int64_t>(i)].slice(0, 0, static_cast<int64_t>(seqs[i].size())) = torch::tensor(seqs[i]);
    lengths[static_cast<int64_t>(i)] = static_cast<int64_t>(seqs[i].size());
  }
  auto batched = m->forward(ids, lengths);
  auto [bmean, blast] = pool_hidden(batched, lengths);
  for (size_t i = 0; i < seqs.size(); ++i) {
    auto one = m->forward(seqs[i]);
    auto [mean, last] = pool_hidden(one.unsqueeze(0), lengths.slice(0, static_cast<int64_t>(i), static_cast<int64_t>(i) + 1));
    const auto ii = static_cast<int64_t>(i);
    // The fixtures' float32 tolerance: batched kernels may round the last bit differently.
    EXPECT_LT((bmean[ii] - mean[0]).abs().max().item<double>(), 1e-5) << i;
    EXPECT_LT((blast[ii] - last[0]).abs().max().item<double>(), 1e-5) << i;
    EXPECT_LT((batched[ii].slice(0, 0, lengths[ii].item<int64_t>()) - one).abs().max().item<double>(), 1e-5);
  }
}

TEST(Qwen2Model, CausalPrefixUnchanged) {
  REQUIRE_QWEN2_FIXTURES();
  auto m = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat32);
  ASSERT_TRUE(m.ok());
  torch::NoGradGuard no_grad;
  std::vector<int64_t> a = {5, 9, 100, 2000, 3, 4, 5, 6}, b = a;
  b[6] = 1234;
  b[7] = 42;
  auto ha = m->forward(a), hb = m->forward(b);
  EXPECT_TRUE(torch::equal(ha.slice(0, 0, 6), hb.slice(0, 0, 6)));
  EXPECT_GT((ha[7] - hb[7]).abs().max().item<double>(), 1e-3);
}

TEST(Qwen2Lora, FreshAdapterChangesNothingAndMergeEqualsApply) {
  REQUIRE_QWEN2_FIXTURES();
  auto m = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat32);
  ASSERT_TRUE(m.ok());
  torch::manual_seed(3);
  Lora lora(m->config(), LoraOptions{.rank = 4, .alpha = 8.0, .dropout = 0.0});
  lora.eval();
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> ids = {1, 2, 3, 500, 1999, 64, 7};
  auto base = m->forward(ids);
  EXPECT_TRUE(torch::allclose(m->forward(ids, &lora), base, 0, 1e-7));
  for (auto& p : lora.parameters()) p.normal_(0.0, 0.05);  // give B (and A) non-zero values
  auto adapted = m->forward(ids, &lora);
  EXPECT_GT((adapted - base).abs().max().item<double>(), 1e-3);
  auto merged = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat32);
  ASSERT_TRUE(merged.ok());
  merged->merge(lora);
  EXPECT_LT((merged->forward(ids) - adapted).abs().max().item<double>(), 1e-4);
  EXPECT_EQ(lora.parameters().size(), 2u * 7u * static_cast<size_t>(m->config().num_hidden_layers));
}

// LoRA as PEFT computes it, without fixtures: y + (alpha / r) * B A dropout(x), on the adapted
// targets only, dropout only in training.
TEST(Qwen2Lora, AppliesAlphaOverRankTimesBAToTheTargetsOnly) {
  Qwen2Config c;
  c.vocab_size = 10;
  c.hidden_size = 8;
  c.intermediate_size = 12;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  torch::manual_seed(5);
  Lora lora(c, LoraOptions{.rank = 2, .alpha = 6.0, .dropout = 0.5, .targets = {Target::kK, Target::kDown}});
  EXPECT_TRUE(lora.adapts(Target::kK));
  EXPECT_FALSE(lora.adapts(Target::kQ));
  for (auto& p : lora.parameters()) p.data().normal_(0.0, 1.0);
  const auto params = lora.named_parameters();
  const auto a = params["layers_1_down_A"], b = params["layers_1_down_B"];  // [2, 12], [8, 2]
  ASSERT_EQ(a.sizes(), (std::vector<int64_t>{2, 12}));
  ASSERT_EQ(b.sizes(), (std::vector<int64_t>{8, 2}));
  lora.eval();
  torch::NoGradGuard no_grad;
  auto x = torch::randn({3, 12}), y = torch::randn({3, 8});
  const auto want = y + 3.0 * torch::matmul(torch::matmul(x, a.t()), b.t());  // alpha / r = 6 / 2
  EXPECT_LT((lora.apply(1, Target::kDown, x, y) - want).abs().max().item<double>(), 1e-5);
  EXPECT_LT((lora.delta(1, Target::kDown) - 3.0 * torch::matmul(b, a)).abs().max().item<double>(), 1e-5);
  auto xq = torch::randn({3, 8}), yq = torch::randn({3, 8});
  EXPECT_TRUE(torch::equal(lora.apply(0, Target::kQ, xq, yq), yq));  // not a target: unchanged
  lora.train();  // dropout 0.5 on the input: the output moves
  EXPECT_GT((lora.apply(1, Target::kDown, x, y) - want).abs().max().item<double>(), 1e-3);
}

TEST(Qwen2Lora, TargetsParse) {
  auto t = parse_lora_targets("q_proj,v,down");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size(), 3u);
  auto bad = parse_lora_targets("q,ffn");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ffn"), std::string::npos);
}

// A checkpoint of another shape than the fixtures' (3 query heads per kv head, head_dim 10 given
// explicitly and not hidden/heads, untied lm_head, theta 5e5, eps 1e-5), written here with random
// weights and run against a float64 loop implementation of HF's Qwen2 written out below: GQA h / 3,
// rotate_half RoPE, q/k/v bias, causal softmax, RMSNorm with eps inside the root, SwiGLU.
struct LoopRef {
  int64_t vocab = 97, hidden = 32, inter = 40, layers = 2, nh = 6, nkv = 2, hd = 10;
  double theta = 5e5, eps = 1e-5;
  std::map<std::string, std::vector<double>> w;  // name -> row-major values

  std::vector<double> linear(const std::string& name, const std::vector<double>& x, int64_t out,
                             bool bias) const {
    const auto& m = w.at(name + ".weight");
    const int64_t in = static_cast<int64_t>(x.size());
    std::vector<double> y(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
      double s = bias ? w.at(name + ".bias")[static_cast<size_t>(o)] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += m[static_cast<size_t>(o * in + i)] * x[static_cast<size_t>(i)];
      y[static_cast<size_t>(o)] = s;
    }
    return y;
  }
  std::vector<double> norm(const std::string& name, const std::vector<double>& x) const {
    double ms = 0;
    for (double v : x) ms += v * v;
    const double r = 1.0 / std::sqrt(ms / static_cast<double>(x.size()) + eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * w.at(name)[i];
    return y;
  }
  void rope(std::vector<double>& v, int64_t heads, int64_t pos) const {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t j = 0; j < hd / 2; ++j) {
        const double a = static_cast<double>(pos) / std::pow(theta, 2.0 * static_cast<double>(j) / static_cast<double>(hd));
        double& x0 = v[static_cast<size_t>(h * hd + j)];
        double& x1 = v[static_cast<size_t>(h * hd + j + hd / 2)];
        const double r0 = x0 * std::cos(a) - x1 * std::sin(a), r1 = x1 * std::cos(a) + x0 * std::sin(a);
        x0 = r0;
        x1 = r1;
      }
  }
  // Final hidden states [T][hidden] of one sequence.
  std::vector<std::vector<double>> forward(const std::vector<int64_t>& ids) const {
    const auto t_len = static_cast<int64_t>(ids.size());
    std::vector<std::vector<double>> x;
    for (int64_t id : ids) {
      const auto& e = w.at("model.embed_tokens.weight");
      x.emplace_back(e.begin() + id * hidden, e.begin() + (id + 1) * hidden);
    }
    for (int64_t l = 0; l < layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      std::vector<std::vector<double>> q, k, v;
      for (int64_t t = 0; t < t_len; ++t) {
        auto h = norm(p + "input_layernorm.weight", x[static_cast<size_t>(t)]);
        q.push_back(linear(p + "self_attn.q_proj", h, nh * hd, true));
        k.push_back(linear(p + "self_attn.k_proj", h, nkv * hd, true));
        v.push_back(linear(p + "self_attn.v_proj", h, nkv * hd, true));
        rope(q.back(), nh, t);
        rope(k.back(), nkv, t);
      }
      for (int64_t t = 0; t < t_len; ++t) {
        std::vector<double> att(static_cast<size_t>(nh * hd), 0.0);
        for (int64_t h = 0; h < nh; ++h) {
          const int64_t g = h / (nh / nkv);
          std::vector<double> s;
          double mx = -1e300;
          for (int64_t u = 0; u <= t; ++u) {
            double d = 0;
            for (int64_t i = 0; i < hd; ++i)
              d += q[static_cast<size_t>(t)][static_cast<size_t>(h * hd + i)] * k[static_cast<size_t>(u)][static_cast<size_t>(g * hd + i)];
            s.push_back(d / std::sqrt(static_cast<double>(hd)));
            mx = std::max(mx, s.back());
          }
          double z = 0;
          for (double& e : s) z += (e = std::exp(e - mx));
          for (int64_t u = 0; u <= t; ++u)
            for (int64_t i = 0; i < hd; ++i)
              att[static_cast<size_t>(h * hd + i)] += s[static_cast<size_t>(u)] / z * v[static_cast<size_t>(u)][static_cast<size_t>(g * hd + i)];
        }
        auto o = linear(p + "self_attn.o_proj", att, hidden, false);
        for (int64_t i = 0; i < hidden; ++i) x[static_cast<size_t>(t)][static_cast<size_t>(i)] += o[static_cast<size_t>(i)];
        auto h = norm(p + "post_attention_layernorm.weight", x[static_cast<size_t>(t)]);
        auto gate = linear(p + "mlp.gate_proj", h, inter, false), up = linear(p + "mlp.up_proj", h, inter, false);
        for (int64_t i = 0; i < inter; ++i) {
          const double gi = gate[static_cast<size_t>(i)];
          gate[static_cast<size_t>(i)] = gi / (1.0 + std::exp(-gi)) * up[static_cast<size_t>(i)];
        }
        auto down = linear(p + "mlp.down_proj", gate, hidden, false);
        for (int64_t i = 0; i < hidden; ++i) x[static_cast<size_t>(t)][static_cast<size_t>(i)] += down[static_cast<size_t>(i)];
      }
    }
    for (auto& row : x) row = norm("model.norm.weight", row);
    return x;
  }
};

// Writes LoopRef's shape with random weights (float32-exact values) to a fresh folder.
std::string write_loop_ref_checkpoint(LoopRef& r, const std::string& name) {
  const std::string dir = testing::fresh_dir(name);
  std::mt19937 rng(11);
  std::normal_distribution<float> n01(0, 1);
  std::map<std::string, testing::RawTensor> tensors;
  auto add = [&](const std::string& tname, std::vector<int64_t> shape, float scale, float offset) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& e : v) e = offset + scale * n01(rng);
    r.w[tname].assign(v.begin(), v.end());
    tensors[tname] = {"F32", shape, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4)};
  };
  const int64_t q = r.nh * r.hd, kv = r.nkv * r.hd;
  add("model.embed_tokens.weight", {r.vocab, r.hidden}, 0.5f, 0);
  add("lm_head.weight", {r.vocab, r.hidden}, 0.2f, 0);
  add("model.norm.weight", {r.hidden}, 0.1f, 1);
  for (int64_t l = 0; l < r.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {r.hidden}, 0.1f, 1);
    add(p + "post_attention_layernorm.weight", {r.hidden}, 0.1f, 1);
    add(p + "self_attn.q_proj.weight", {q, r.hidden}, 0.3f, 0);
    add(p + "self_attn.q_proj.bias", {q}, 0.3f, 0);
    add(p + "self_attn.k_proj.weight", {kv, r.hidden}, 0.3f, 0);
    add(p + "self_attn.k_proj.bias", {kv}, 0.3f, 0);
    add(p + "self_attn.v_proj.weight", {kv, r.hidden}, 0.3f, 0);
    add(p + "self_attn.v_proj.bias", {kv}, 0.3f, 0);
    add(p + "self_attn.o_proj.weight", {r.hidden, q}, 0.2f, 0);
    add(p + "mlp.gate_proj.weight", {r.inter, r.hidden}, 0.2f, 0);
    add(p + "mlp.up_proj.weight", {r.inter, r.hidden}, 0.2f, 0);
    add(p + "mlp.down_proj.weight", {r.hidden, r.inter}, 0.2f, 0);
  }
  testing::write_safetensors(dir + "/model.safetensors", tensors);
  nlohmann::json cfg = {{"architectures", {"Qwen2ForCausalLM"}}, {"model_type", "qwen2"},
                        {"vocab_size", r.vocab}, {"hidden_size", r.hidden}, {"intermediate_size", r.inter},
                        {"num_hidden_layers", r.layers}, {"num_attention_heads", r.nh},
                        {"num_key_value_heads", r.nkv}, {"head_dim", r.hd}, {"rope_theta", r.theta},
                        {"rms_norm_eps", r.eps}, {"tie_word_embeddings", false}, {"hidden_act", "silu"},
                        {"rope_scaling", nullptr}, {"use_sliding_window", false}};
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  return dir;
}

TEST(Qwen2Model, OtherShapeMatchesALoopImplementationBatchedAndAlone) {
  LoopRef ref;
  const std::string dir = write_loop_ref_checkpoint(ref, "loopref");
  auto m = Qwen2Model::load(dir, torch::kFloat32);
  ASSERT_TRUE(m.ok()) << m.status().message();
  torch::NoGradGuard no_grad;
  const std::vector<std::vector<int64_t>> seqs = {{3}, {5, 96, 0, 41, 41}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 90}};
  auto ids = torch::zeros({3, 13}, torch::kInt64);
  auto lengths = torch::tensor({1, 5, 13}, torch::kInt64);
  for (int64_t i = 0; i < 3; ++i)
    ids[i].slice(0, 0, static_cast<int64_t>(seqs[static_cast<size_t>(i)].size())) = torch::tensor(seqs[static_cast<size_t>(i)]);
  const auto batched = m->forward(ids, lengths);  // [3, 13, 32]
  for (size_t i = 0; i < seqs.size(); ++i) {
    const auto want = ref.forward(seqs[i]);
    const auto alone = m->forward(seqs[i]);  // [T, 32]
    double worst = 0, worst_batched = 0;
    for (size_t t = 0; t < want.size(); ++t)
      for (size_t c = 0; c < want[t].size(); ++c) {
        worst = std::max(worst, std::abs(alone[static_cast<int64_t>(t)][static_cast<int64_t>(c)].item<double>() - want[t][c]));
        worst_batched = std::max(worst_batched, std::abs(batched[static_cast<int64_t>(i)][static_cast<int64_t>(t)][static_cast<int64_t>(c)].item<double>() - want[t][c]));
      }
    EXPECT_LT(worst, 1e-4) << "sequence " << i;
    EXPECT_LT(worst_batched, 1e-4) << "sequence " << i << " in the padded batch";
    // The untied head: logits = lm_head . hidden.
    const auto logits = m->logits(alone[-1]);
    double worst_logit = 0;
    const auto& head = ref.w.at("lm_head.weight");
    for (int64_t vtok = 0; vtok < ref.vocab; ++vtok) {
      double s = 0;
      for (int64_t c = 0; c < ref.hidden; ++c) s += head[static_cast<size_t>(vtok * ref.hidden + c)] * want.back()[static_cast<size_t>(c)];
      worst_logit = std::max(worst_logit, std::abs(logits[vtok].item<double>() - s));
    }
    EXPECT_LT(worst_logit, 1e-4) << "sequence " << i;
  }
  std::filesystem::remove_all(dir);
}

TEST(Qwen2Config, RealShapeParameterCount) {
  // Qwen2.5-Coder-1.5B: 1.54 B parameters (tied embeddings).
  const auto c = qwen25_coder_1p5b_config();
  EXPECT_EQ(c.parameter_count(), 1543714304);
  EXPECT_EQ(c.head_dim(), 128);
}

}  // namespace
}  // namespace peakcast::models::qwen2
