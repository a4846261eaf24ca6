// The Qwen2 forward against the fixtures' reference.json (HF modeling_qwen2 conventions), F32 and
// BF16, batching with padding, pooling and LoRA (fresh adapters change nothing; merge equals apply).
#include <cmath>

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

TEST(Qwen2Lora, TargetsParse) {
  auto t = parse_lora_targets("q_proj,v,down");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size(), 3u);
  auto bad = parse_lora_targets("q,ffn");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ffn"), std::string::npos);
}

TEST(Qwen2Config, RealShapeParameterCount) {
  // Qwen2.5-Coder-1.5B: 1.54 B parameters (tied embeddings).
  const auto c = qwen25_coder_1p5b_config();
  EXPECT_EQ(c.parameter_count(), 1543714304);
  EXPECT_EQ(c.head_dim(), 128);
}

}  // namespace
}  // namespace peakcast::models::qwen2
