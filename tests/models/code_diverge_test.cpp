// Training whose predictions are not finite (a diverged run, a float16 overflow in the qwen2
// encoder) must fail with a reason: never hand back a model that predicts NaN, and never read a
// NaN validation loss as "there was no validation data".
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "code_test_data.h"
#include "peakcast/models/code/code_model.h"
#include "peakcast/models/code/encoder.h"

namespace peakcast::models::code {
namespace {

using testing::make_batch_size_jobs;
using testing::ptrs;

// The script vector is NaN for scripts that mention "overflow", as a half-precision encoder's
// hidden states become when they overflow.
class OverflowEncoder : public ScriptEncoder {
 public:
  OverflowEncoder() { w_ = register_parameter("w", torch::ones({4})); }
  int64_t output_dim() const override { return 4; }
  PreparedText prepare(const CodeText& text) const override {
    return {{text.text.find("overflow") != std::string::npos ? 1 : 0}};
  }
  torch::Tensor encode(const std::vector<const PreparedText*>& texts) override {
    std::vector<torch::Tensor> rows;
    for (const PreparedText* t : texts)
      rows.push_back(t->ids[0] ? w_ * std::numeric_limits<float>::quiet_NaN() : w_ * 0.5);
    return torch::stack(rows);  // [B, 4]
  }

 private:
  torch::Tensor w_;
};

const EncoderRegistry& overflow_registry() {
  static const EncoderRegistry kRegistry = [] {
    EncoderRegistry r;
    r.add("overflow", [](const CodeModelConfig&) -> Result<std::shared_ptr<ScriptEncoder>> {
      return std::shared_ptr<ScriptEncoder>(std::make_shared<OverflowEncoder>());
    });
    return r;
  }();
  return kRegistry;
}

CodeModelConfig overflow_config() {
  CodeModelConfig c;
  c.encoder = "overflow";
  c.user_dim = 4;
  c.fused_dim = 8;
  c.max_epochs = 3;
  c.batch_size = 16;
  c.threads = 1;
  return c;
}

std::vector<Job> jobs_with_overflow(size_t n, uint64_t seed, bool overflow) {
  auto jobs = make_batch_size_jobs(n, seed);
  if (overflow)
    for (auto& j : jobs) *j.script += "echo overflow\n";
  return jobs;
}

TEST(CodeModelDivergence, NanValidationLossIsAnErrorNotMissingValidation) {
  const auto train = jobs_with_overflow(48, 1, false);
  const auto val = jobs_with_overflow(16, 2, true);
  auto m = CodeModel::train(ptrs(train), ptrs(val), overflow_config(), {}, &overflow_registry());
  ASSERT_FALSE(m.ok()) << "a model whose validation predictions are NaN was accepted";
  EXPECT_NE(m.status().message().find("diverged"), std::string::npos) << m.status().message();
}

TEST(CodeModelDivergence, NonFiniteWeightsWithoutValidationAreAnError) {
  const auto train = jobs_with_overflow(48, 1, true);
  auto m = CodeModel::train(ptrs(train), {}, overflow_config(), {}, &overflow_registry());
  ASSERT_FALSE(m.ok()) << "a model with NaN weights was accepted";
  EXPECT_NE(m.status().message().find("not finite"), std::string::npos) << m.status().message();
}

TEST(CodeModelDivergence, FiniteTrainingStillTrains) {
  const auto train = jobs_with_overflow(48, 1, false);
  const auto val = jobs_with_overflow(16, 2, false);
  auto m = CodeModel::train(ptrs(train), ptrs(val), overflow_config(), {}, &overflow_registry());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(std::isfinite(m->report().best_val_loss));
  EXPECT_TRUE(std::isfinite(m->predict(train.front()).util[0]));
}

}  // namespace
}  // namespace peakcast::models::code
