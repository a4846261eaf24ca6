// The qwen2 encoder inside the code model, on the tiny checkpoint: train -> save -> load ->
// predict bit-identical, only adapters and projection saved, the base pinned by SHA-256, batch
// results equal to batch-1, and clear errors for a missing base or a foreign tokenizer.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/code_test_data.h"
#include "models/qwen2_test_util.h"
#include "peakcast/core/io.h"
#include "peakcast/models/code/code_model.h"

namespace peakcast::models::code {
namespace {

namespace fs = std::filesystem;
using qwen2::testing::kQwen2Dir;
using testing::make_batch_size_jobs;
using testing::ptrs;

CodeModelConfig qwen2_config(const std::string& base = kQwen2Dir + "tiny-f32") {
  CodeModelConfig c;
  c.encoder = "qwen2";
  c.base = base;
  c.tokenizer = kQwen2Dir + "tokenizer.json.gz";
  c.max_added_token_id = 151664;
  c.fold_ids = 1;  // the fixture tokenizer's ids reach 151664; the tiny vocabulary is 2048
  c.lora_rank = 4;
  c.proj_dim = 16;
  c.user_dim = 8;
  c.fused_dim = 32;
  c.max_epochs = 2;
  c.batch_size = 16;
  c.threads = 1;
  return c;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(Qwen2Encoder, TrainSaveLoadPredictIsBitIdentical) {
  REQUIRE_QWEN2_FIXTURES();
  auto train = make_batch_size_jobs(48, 1);
  auto val = make_batch_size_jobs(16, 2);
  auto model = CodeModel::train(ptrs(train), ptrs(val), qwen2_config());
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_FALSE(model->config().base_sha256.empty());

  const std::string dir = qwen2::testing::fresh_dir("encoder_model");
  ASSERT_TRUE(model->save(dir).is_ok());
  // Only adapters, projection and fusion are saved: far less than the base's 0.96 MB.
  EXPECT_LT(fs::file_size(dir + "/weights.pt"), fs::file_size(kQwen2Dir + "tiny-f32/model.safetensors") / 2);
  auto manifest = nlohmann::json::parse(*read_file(dir + "/manifest.json"));
  EXPECT_EQ(manifest["config"]["base"], kQwen2Dir + "tiny-f32");
  EXPECT_NE(manifest["config"]["base_sha256"].get<std::string>().find("model.safetensors="), std::string::npos);

  auto loaded = CodeModel::load(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto probe = make_batch_size_jobs(8, 3);
  Job empty;
  empty.job_id = "empty";
  empty.user = "nobody";
  empty.script = "";
  probe.push_back(empty);
  for (const Job& j : probe) {
    auto a = model->predict(j), b = loaded->predict(j);
    for (int r = 0; r < kNumResources; ++r) EXPECT_TRUE(same_bits(a.util[r], b.util[r])) << j.job_id;
    auto ea = model->encode(j), eb = loaded->encode(j);
    ASSERT_EQ(ea.size(), 16u);
    EXPECT_EQ(0, std::memcmp(ea.data(), eb.data(), ea.size() * sizeof(float)));
  }
  // A batch gives each job what batch 1 gives it (script vectors are batch-1 forwards; only the
  // fusion layers' batched kernels may round the last bit differently).
  auto batch = loaded->predict_batch(ptrs(probe));
  for (size_t i = 0; i < probe.size(); ++i) {
    auto one = loaded->predict(probe[i]);
    for (int r = 0; r < kNumResources; ++r) EXPECT_NEAR(batch[i].util[r], one.util[r], 1e-5);
  }
  fs::remove_all(dir);
}

TEST(Qwen2Encoder, RefusesAdaptersOnADifferentBase) {
  REQUIRE_QWEN2_FIXTURES();
  auto train = make_batch_size_jobs(16, 5);
  auto cfg = qwen2_config();
  cfg.max_epochs = 1;
  auto model = CodeModel::train(ptrs(train), {}, cfg);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const std::string dir = qwen2::testing::fresh_dir("encoder_swap");
  ASSERT_TRUE(model->save(dir).is_ok());
  // Point the saved model at the bf16 folder (same shapes, other bytes).
  auto manifest = nlohmann::json::parse(*read_file(dir + "/manifest.json"));
  manifest["config"]["base"] = kQwen2Dir + "tiny-bf16";
  std::ofstream(dir + "/manifest.json") << manifest.dump();
  auto loaded = CodeModel::load(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("refusing"), std::string::npos) << loaded.status().message();
  fs::remove_all(dir);
}

// The weights alone do not make the base: its config.json (RoPE theta, RMSNorm eps, head
// shapes) and the tokenizer that turns scripts into ids decide what the adapters were trained on.
// A base folder whose config.json or tokenizer changed since training is refused, as a changed
// weight file is; a manifest written before these were pinned (weight files only) still loads.
TEST(Qwen2Encoder, RefusesAdaptersOnAChangedConfigOrTokenizer) {
  REQUIRE_QWEN2_FIXTURES();
  const std::string base = qwen2::testing::fresh_dir("encoder_pinned_base");
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(kQwen2Dir + "tiny-f32/" + f, base + "/" + f);
  fs::copy_file(kQwen2Dir + "tokenizer.json.gz", base + "/tokenizer.json.gz");
  auto cfg = qwen2_config(base);
  cfg.tokenizer = base + "/tokenizer.json.gz";
  cfg.max_epochs = 1;
  auto train = make_batch_size_jobs(16, 7);
  const std::string dir = qwen2::testing::fresh_dir("encoder_pinned_model");
  std::string pin;
  {  // Released before the files change: a process shares one loaded base per folder.
    auto model = CodeModel::train(ptrs(train), {}, cfg);
    ASSERT_TRUE(model.ok()) << model.status().message();
    pin = model->config().base_sha256;
    ASSERT_TRUE(model->save(dir).is_ok());
  }
  EXPECT_NE(pin.find("config.json="), std::string::npos) << pin;
  EXPECT_NE(pin.find("tokenizer.json.gz="), std::string::npos) << pin;
  ASSERT_TRUE(CodeModel::load(dir).ok());

  // Written before config.json and the tokenizer were pinned: weight files only.
  auto manifest = nlohmann::json::parse(*read_file(dir + "/manifest.json"));
  std::string weights_only;
  for (size_t at = 0; at < pin.size();) {
    const size_t end = std::min(pin.find(';', at), pin.size());
    const std::string entry = pin.substr(at, end - at);
    if (entry.rfind("model.safetensors=", 0) == 0) weights_only = entry;
    at = end + 1;
  }
  ASSERT_FALSE(weights_only.empty()) << pin;
  manifest["config"]["base_sha256"] = weights_only;
  std::ofstream(dir + "/manifest.json") << manifest.dump();
  ASSERT_TRUE(CodeModel::load(dir).ok());
  manifest["config"]["base_sha256"] = pin;
  std::ofstream(dir + "/manifest.json") << manifest.dump();

  // Same weight bytes, another RoPE theta.
  auto config = nlohmann::json::parse(*read_file(base + "/config.json"));
  const nlohmann::json original = config;
  config["rope_theta"] = config.value("rope_theta", 10000.0) * 2.0;
  std::ofstream(base + "/config.json") << config.dump();
  auto theta = CodeModel::load(dir);
  ASSERT_FALSE(theta.ok());
  EXPECT_NE(theta.status().message().find("config.json"), std::string::npos) << theta.status().message();
  std::ofstream(base + "/config.json") << original.dump();

  // Same weights and config, a tokenizer whose two tokens swapped their ids (a valid tokenizer
  // that turns the same script into other ids; read_file finds gzip by its magic, not the name).
  auto tokenizer = nlohmann::json::parse(*read_file(base + "/tokenizer.json.gz"));
  auto& vocab = tokenizer["model"]["vocab"];
  const nlohmann::json id_a = vocab["a"], id_b = vocab["b"];
  ASSERT_TRUE(id_a.is_number() && id_b.is_number());
  vocab["a"] = id_b;
  vocab["b"] = id_a;
  std::ofstream(base + "/tokenizer.json.gz") << tokenizer.dump();
  auto tok = CodeModel::load(dir);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("tokenizer.json.gz"), std::string::npos) << tok.status().message();
  fs::remove_all(dir);
  fs::remove_all(base);
}

TEST(Qwen2Encoder, ClearErrors) {
  REQUIRE_QWEN2_FIXTURES();
  auto train = make_batch_size_jobs(8, 6);
  auto no_base = qwen2_config("");
  auto a = CodeModel::train(ptrs(train), {}, no_base);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("base=DIR"), std::string::npos) << a.status().message();
  auto unfolded = qwen2_config();
  unfolded.fold_ids = 0;
  auto b = CodeModel::train(ptrs(train), {}, unfolded);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("vocab_size is 2048"), std::string::npos) << b.status().message();
  auto bad_targets = qwen2_config();
  bad_targets.lora_targets = "q,attn";
  EXPECT_FALSE(CodeModel::train(ptrs(train), {}, bad_targets).ok());
  EXPECT_FALSE(set_code_option(bad_targets, "pooling", "max").is_ok());
  EXPECT_TRUE(set_code_option(bad_targets, "pooling", "mean_last").is_ok());
}

TEST(Qwen2Encoder, LastAndBothPoolingTrain) {
  REQUIRE_QWEN2_FIXTURES();
  auto train = make_batch_size_jobs(16, 7);
  for (const char* pooling : {"last", "mean_last"}) {
    auto cfg = qwen2_config();
    cfg.pooling = pooling;
    cfg.max_epochs = 1;
    cfg.lora_targets = "q,v";
    auto m = CodeModel::train(ptrs(train), {}, cfg);
    ASSERT_TRUE(m.ok()) << pooling << ": " << m.status().message();
    EXPECT_EQ(m->encode(train[0]).size(), 16u);
  }
}

}  // namespace
}  // namespace peakcast::models::code
