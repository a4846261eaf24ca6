// The masked loss and the encoder registry (needs LibTorch directly).
#include <filesystem>

#include <gtest/gtest.h>
#include <torch/nn.h>

#include "peakcast/models/code/encoder.h"

namespace peakcast::models::code {
namespace {

TEST(MaskedSmoothL1, InvalidVramGetsNoGradient) {
  torch::manual_seed(0);
  torch::nn::Linear mem_head(6, 1), vram_head(6, 1);
  auto x = torch::randn({4, 6});
  auto pred = torch::sigmoid(torch::cat({mem_head(x), vram_head(x)}, 1));  // [4, 2]
  auto target = torch::full({4, 2}, 0.9f);
  auto mask = torch::tensor({1.f, 0.f, 1.f, 0.f, 1.f, 0.f, 1.f, 0.f}).view({4, 2});  // mem only
  auto loss = masked_smooth_l1(pred, target, mask, 2.0, 0.05);
  loss.backward();
  EXPECT_GT(loss.item<float>(), 0.0f);
  EXPECT_EQ(vram_head->weight.grad().abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(vram_head->bias.grad().abs().sum().item<float>(), 0.0f);
  EXPECT_GT(mem_head->weight.grad().abs().sum().item<float>(), 0.0f);
}

TEST(MaskedSmoothL1, VramWeightAndNormalisation) {
  auto pred = torch::tensor({0.5f, 0.5f}).view({1, 2});
  auto target = torch::tensor({1.0f, 1.0f}).view({1, 2});
  auto both = torch::ones({1, 2});
  // |err| = 0.5 > beta: per cell 0.5 - beta/2; weights 1 and 3, divided by 2 valid cells.
  const double cell = 0.5 - 0.05 / 2;
  EXPECT_NEAR(masked_smooth_l1(pred, target, both, 3.0, 0.05).item<double>(), (cell + 3 * cell) / 2, 1e-6);
  auto none = torch::zeros({1, 2});
  EXPECT_EQ(masked_smooth_l1(pred, target, none, 2.0, 0.05).item<double>(), 0.0);
}

// A censored (OOM) target is a lower bound: only a prediction below it is penalised.
TEST(MaskedSmoothL1, CensoredTargetIsOneSided) {
  auto target = torch::tensor({0.8f, 0.8f}).view({1, 2});
  auto mem_only = torch::tensor({1.f, 0.f}).view({1, 2});
  auto censored = torch::tensor({1.f, 0.f}).view({1, 2});
  auto above = torch::tensor({0.9f, 0.f}).view({1, 2}).requires_grad_(true);
  auto loss_above = masked_smooth_l1(above, target, mem_only, 2.0, 0.05, censored);
  loss_above.backward();
  EXPECT_EQ(loss_above.item<double>(), 0.0);
  EXPECT_EQ(above.grad().abs().sum().item<float>(), 0.0f);
  // The same prediction against a measured 0.8 is an error.
  EXPECT_GT(masked_smooth_l1(above.detach(), target, mem_only, 2.0, 0.05).item<double>(), 0.0);
  // Below the bound: the ordinary Smooth L1 (|err| = 0.3 > beta: 0.3 - beta / 2), pushing up.
  auto below = torch::tensor({0.5f, 0.f}).view({1, 2}).requires_grad_(true);
  auto loss_below = masked_smooth_l1(below, target, mem_only, 2.0, 0.05, censored);
  loss_below.backward();
  EXPECT_NEAR(loss_below.item<double>(), 0.3 - 0.025, 1e-6);
  EXPECT_LT(below.grad()[0][0].item<float>(), 0.0f);  // gradient descent raises the prediction
}

TEST(EncoderRegistry, BuiltinsAndUnknownNames) {
  auto names = EncoderRegistry::builtin().names();
  EXPECT_EQ(names, (std::vector<std::string>{"bag", "bilstm", "qwen2", "textcnn"}));
  CodeModelConfig cfg;
  cfg.encoder = "qwen3";
  auto r = EncoderRegistry::builtin().create(cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("textcnn"), std::string::npos);
  EncoderRegistry mine;
  register_builtins(mine);
  EXPECT_THROW(register_builtins(mine), std::logic_error);
}

TEST(EncoderRegistry, EveryEncoderHandlesEmptyTextAndDeclaresItsWidth) {
  CodeModelConfig cfg;
  cfg.hash_buckets = 1024;
  cfg.seq_buckets = 1024;
  for (const auto& name : EncoderRegistry::builtin().names()) {
    cfg.encoder = name;
    if (name == "qwen2") {  // needs a checkpoint: the tiny fixture, when ../shared/data is there
      const std::string q = PEAKCAST_SOURCE_DIR "/../shared/data/qwen2/";
      if (!std::filesystem::exists(q + "tiny-f32")) continue;
      cfg.base = q + "tiny-f32";
      cfg.tokenizer = q + "tokenizer.json.gz";
      cfg.fold_ids = 1;
    }
    auto enc = EncoderRegistry::builtin().create(cfg);
    ASSERT_TRUE(enc.ok()) << name;
    (*enc)->eval();
    torch::NoGradGuard no_grad;
    PreparedText empty = (*enc)->prepare(CodeText{"", false});
    PreparedText some = (*enc)->prepare(CodeText{"python train.py --batch-size 64\n", true});
    EXPECT_FALSE(some.ids.empty()) << name;
    auto out = (*enc)->encode({&empty, &some});
    ASSERT_EQ(out.dim(), 2) << name;
    EXPECT_EQ(out.size(0), 2) << name;
    EXPECT_EQ(out.size(1), (*enc)->output_dim()) << name;
    EXPECT_TRUE(torch::isfinite(out).all().item<bool>()) << name;
  }
}

}  // namespace
}  // namespace peakcast::models::code
