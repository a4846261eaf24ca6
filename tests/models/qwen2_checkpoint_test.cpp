// The safetensors loader: the fixtures' files, shards, untied heads, and every error naming the
// tensor and the file (unknown dtype, missing tensor, wrong shape, truncated file).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/qwen2_test_util.h"
#include "peakcast/core/io.h"
#include "peakcast/core/log.h"
#include "peakcast/models/qwen2/model.h"

namespace peakcast::models::qwen2 {
namespace {

namespace fs = std::filesystem;
using testing::kQwen2Dir;
using testing::RawTensor;

// All tensors of the tiny F32 checkpoint as raw entries.
std::map<std::string, RawTensor> tiny_tensors() {
  auto c = Checkpoint::open(kQwen2Dir + "tiny-f32");
  EXPECT_TRUE(c.ok()) << c.status().message();
  std::map<std::string, RawTensor> out;
  const std::string_view bytes = c->file_bytes(0);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  for (const auto& [name, e] : c->tensors())
    out[name] = {e.dtype, e.shape, std::string(bytes.substr(8 + n + e.begin, e.end - e.begin))};
  return out;
}

// A folder with the tiny config and the given tensors in one file.
std::string folder_with(const std::string& name, const std::map<std::string, RawTensor>& t,
                        const std::string& config_edit_key = "", const nlohmann::json& value = {}) {
  const std::string dir = testing::fresh_dir(name);
  auto cfg = nlohmann::json::parse(*read_file(kQwen2Dir + "tiny-f32/config.json"));
  if (!config_edit_key.empty()) cfg[config_edit_key] = value;
  std::ofstream(dir + "/config.json") << cfg.dump();
  testing::write_safetensors(dir + "/model.safetensors", t);
  return dir;
}

std::string load_error(const std::string& dir) {
  auto m = Qwen2Model::load(dir, torch::kFloat32);
  return m.ok() ? std::string("(loaded)") : m.status().message();
}

TEST(Qwen2Checkpoint, ReadsFixtureHeaders) {
  REQUIRE_QWEN2_FIXTURES();
  for (const char* d : {"tiny-f32", "tiny-bf16"}) {
    auto c = Checkpoint::open(kQwen2Dir + d);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ(c->tensors().size(), 26u);
    EXPECT_EQ(c->tensors().at("model.embed_tokens.weight").shape, (std::vector<int64_t>{2048, 64}));
  }
  // BF16 read as float32 equals the F32 file's values rounded to bfloat16.
  auto f = Checkpoint::open(kQwen2Dir + "tiny-f32");
  auto b = Checkpoint::open(kQwen2Dir + "tiny-bf16");
  auto wf = f->read("model.norm.weight", {64}, torch::kFloat32);
  auto wb = b->read("model.norm.weight", {64}, torch::kFloat32);
  ASSERT_TRUE(wf.ok() && wb.ok());
  EXPECT_TRUE(torch::equal(wf->to(torch::kBFloat16).to(torch::kFloat32), *wb));
}

TEST(Qwen2Checkpoint, ShardedEqualsSingleFile) {
  REQUIRE_QWEN2_FIXTURES();
  const auto all = tiny_tensors();
  const std::string dir = testing::fresh_dir("sharded");
  fs::copy_file(kQwen2Dir + "tiny-f32/config.json", dir + "/config.json");
  std::map<std::string, RawTensor> s1, s2;
  nlohmann::json map;
  for (const auto& [name, t] : all) {
    const bool first = name.find("layers.1.") == std::string::npos;
    (first ? s1 : s2)[name] = t;
    map[name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  testing::write_safetensors(dir + "/model-00001-of-00002.safetensors", s1);
  testing::write_safetensors(dir + "/model-00002-of-00002.safetensors", s2);
  std::ofstream(dir + "/model.safetensors.index.json") << nlohmann::json{{"weight_map", map}}.dump();
  auto sharded = Qwen2Model::load(dir, torch::kFloat32);
  auto single = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat32);
  ASSERT_TRUE(sharded.ok()) << sharded.status().message();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(sharded->forward({1, 2, 3}), single->forward({1, 2, 3})));
  auto sums = weight_file_sha256(dir);
  ASSERT_TRUE(sums.ok());
  EXPECT_EQ(sums->size(), 2u);
}

// A checkpoint opened once is hashed and loaded from the same bytes (the encoder pins the hash
// beside the adapters): weights moved over the folder's file in between (as a download tool
// replaces a file) change neither.
TEST(Qwen2Checkpoint, AnOpenCheckpointLoadsTheBytesItHashed) {
  REQUIRE_QWEN2_FIXTURES();
  const std::string dir = testing::fresh_dir("replaced");
  fs::copy_file(kQwen2Dir + "tiny-f32/config.json", dir + "/config.json");
  fs::copy_file(kQwen2Dir + "tiny-f32/model.safetensors", dir + "/model.safetensors");
  auto cfg = read_qwen2_config(dir);
  auto ckpt = Checkpoint::open(dir);
  ASSERT_TRUE(cfg.ok() && ckpt.ok());
  const std::map<std::string, std::string> pinned = weight_file_sha256(*ckpt);
  auto other = tiny_tensors();
  RawTensor& norm = other.at("model.norm.weight");
  for (size_t i = 0; i < norm.bytes.size(); i += 4) norm.bytes[i + 3] ^= 0x01;  // perturb
  testing::write_safetensors(dir + "/other.safetensors", other);
  fs::rename(dir + "/other.safetensors", dir + "/model.safetensors");
  auto now = weight_file_sha256(dir);
  ASSERT_TRUE(now.ok());
  EXPECT_NE(*now, pinned) << "the folder holds other weights now";
  EXPECT_EQ(pinned, *weight_file_sha256(kQwen2Dir + "tiny-f32"));
  auto m = Qwen2Model::load(*cfg, *ckpt, dir, torch::kFloat32);
  auto original = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat32);
  auto replaced = Qwen2Model::load(dir, torch::kFloat32);
  ASSERT_TRUE(m.ok() && original.ok() && replaced.ok()) << m.status().message();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(m->forward({1, 2, 3}), original->forward({1, 2, 3})));
  EXPECT_FALSE(torch::equal(replaced->forward({1, 2, 3}), original->forward({1, 2, 3})));
}

TEST(Qwen2Checkpoint, UntiedHeadIsRead) {
  REQUIRE_QWEN2_FIXTURES();
  auto t = tiny_tensors();
  auto missing = folder_with("untied_missing", t, "tie_word_embeddings", false);
  EXPECT_NE(load_error(missing).find("lm_head.weight: missing"), std::string::npos) << load_error(missing);
  RawTensor head = t.at("model.embed_tokens.weight");
  for (size_t i = 0; i < head.bytes.size(); i += 4) head.bytes[i + 3] ^= 0x01;  // perturb
  t["lm_head.weight"] = head;
  auto dir = folder_with("untied", t, "tie_word_embeddings", false);
  auto m = Qwen2Model::load(dir, torch::kFloat32);
  auto tied = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat32);
  ASSERT_TRUE(m.ok()) << m.status().message();
  torch::NoGradGuard no_grad;
  auto h = m->forward({4, 5});
  EXPECT_TRUE(torch::equal(h, tied->forward({4, 5})));           // the body is the same
  EXPECT_FALSE(torch::equal(m->logits(h), tied->logits(h)));     // the head is not
}

// A bare Qwen2Model's save_pretrained writes its names without "model." (and no lm_head).
TEST(Qwen2Checkpoint, BaseModelNamesWithoutThePrefixAreRead) {
  REQUIRE_QWEN2_FIXTURES();
  std::map<std::string, RawTensor> bare;
  for (const auto& [name, t] : tiny_tensors()) {
    ASSERT_EQ(name.rfind("model.", 0), 0u) << name;
    bare[name.substr(6)] = t;
  }
  auto m = Qwen2Model::load(folder_with("bare", bare), torch::kFloat32);
  auto full = Qwen2Model::load(kQwen2Dir + "tiny-f32", torch::kFloat32);
  ASSERT_TRUE(m.ok()) << m.status().message();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(m->forward({3, 1, 4, 1, 5}), full->forward({3, 1, 4, 1, 5})));
  // Untied and headless (a base model has no lm_head): the hidden states load, logits refuse.
  auto headless = Qwen2Model::load(folder_with("bare_untied", bare, "tie_word_embeddings", false), torch::kFloat32);
  ASSERT_TRUE(headless.ok()) << headless.status().message();
  auto h = headless->forward({3, 1, 4});
  EXPECT_TRUE(torch::equal(h, full->forward({3, 1, 4})));
  EXPECT_THROW(headless->logits(h), c10::Error);
  // A bare folder missing a layer tensor names it as the file spells it.
  bare.erase("layers.1.mlp.up_proj.weight");
  const auto msg = load_error(folder_with("bare_missing", bare));
  EXPECT_NE(msg.find("layers.1.mlp.up_proj.weight"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("model.layers.1"), std::string::npos) << msg;
}

TEST(Qwen2Checkpoint, ErrorsNameTensorAndFile) {
  REQUIRE_QWEN2_FIXTURES();
  const auto all = tiny_tensors();
  {
    auto t = all;
    t.erase("model.layers.1.mlp.up_proj.weight");
    const auto msg = load_error(folder_with("missing", t));
    EXPECT_NE(msg.find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
  }
  {
    auto t = all;
    t["model.norm.weight"].dtype = "I32";
    const auto msg = load_error(folder_with("dtype", t));
    EXPECT_NE(msg.find("model.norm.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("I32"), std::string::npos) << msg;
  }
  {
    const auto msg = load_error(folder_with("shape", all, "intermediate_size", 170));
    EXPECT_NE(msg.find("model.layers.0.mlp.gate_proj.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[176, 64]"), std::string::npos) << msg;
  }
  {
    const std::string dir = folder_with("truncated", all);
    const auto size = fs::file_size(dir + "/model.safetensors");
    fs::resize_file(dir + "/model.safetensors", size - 100);
    const auto msg = load_error(dir);
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.safetensors"), std::string::npos) << msg;
    fs::resize_file(dir + "/model.safetensors", 5);
    EXPECT_NE(load_error(dir).find("truncated"), std::string::npos) << load_error(dir);
  }
  {
    const std::string dir = testing::fresh_dir("empty");
    fs::copy_file(kQwen2Dir + "tiny-f32/config.json", dir + "/config.json");
    EXPECT_NE(load_error(dir).find("no weights"), std::string::npos) << load_error(dir);
  }
  {
    const auto msg = load_error(folder_with("scaling", all, "rope_scaling", {{"type", "yarn"}}));
    EXPECT_NE(msg.find("rope_scaling"), std::string::npos) << msg;
    EXPECT_NE(msg.find("yarn"), std::string::npos) << msg;
  }
  // rope_type "default" is no scaling at all: read as null is.
  for (const char* key : {"rope_type", "type"})
    EXPECT_EQ(load_error(folder_with("scaling_default", all, "rope_scaling", {{key, "default"}})), "(loaded)") << key;
}

// A header whose shape's byte count overflows 64 bits (2^62 x 64 float32 = 2^70 bytes, 0 modulo
// 2^64) must not pass the size check with an empty data range: the loader then asked Torch for an
// impossible tensor and the load threw out of a Result-returning API instead of naming the file.
TEST(Qwen2Checkpoint, ShapeWhoseByteCountOverflowsIsRefused) {
  const std::string dir = testing::fresh_dir("overflow");
  const int64_t huge = int64_t{1} << 62;
  testing::write_safetensors(dir + "/model.safetensors",
                             {{"model.embed_tokens.weight", RawTensor{"F32", {huge, 64}, ""}},
                              {"model.norm.weight", RawTensor{"F32", {64}, std::string(256, '\0')}}});
  auto c = Checkpoint::open_file(dir + "/model.safetensors");
  ASSERT_FALSE(c.ok()) << "a 2^70-byte tensor in 0 bytes was accepted";
  EXPECT_NE(c.status().message().find("model.embed_tokens.weight"), std::string::npos) << c.status().message();
  // And through the model loader, with a config that asks for exactly that shape.
  nlohmann::json cfg = {{"model_type", "qwen2"}, {"vocab_size", huge}, {"hidden_size", 64},
                        {"intermediate_size", 176}, {"num_hidden_layers", 1}, {"num_attention_heads", 4},
                        {"num_key_value_heads", 2}, {"tie_word_embeddings", true}};
  std::ofstream(dir + "/config.json") << cfg.dump();
  std::string msg;
  EXPECT_NO_THROW(msg = load_error(dir));
  EXPECT_NE(msg.find("model.embed_tokens.weight"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(Qwen2Checkpoint, F16IsRead) {
  REQUIRE_QWEN2_FIXTURES();
  auto t = tiny_tensors();
  auto& n = t.at("model.norm.weight");
  auto f = torch::from_blob(n.bytes.data(), {64}, torch::kFloat32).to(torch::kFloat16).contiguous();
  n.dtype = "F16";
  n.bytes.assign(static_cast<const char*>(f.data_ptr()), 128);
  auto dir = folder_with("f16", t);
  auto c = Checkpoint::open(dir);
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto w = c->read("model.norm.weight", {64}, torch::kFloat32);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE(torch::equal(*w, f.to(torch::kFloat32)));
}

// config.json's head_dim, when it is not hidden_size / num_attention_heads (HF's Qwen2Attention
// reads getattr(config, "head_dim", ...); q_proj is then [nH*hd, H] and o_proj [H, nH*hd]). The
// folder holds tiny-f32's heads widened from 16 to 32: original rotary pair j sits at pair 2j (the
// same frequency, theta^(-2j/16) = theta^(-4j/32)), the odd pairs are zero, and q is scaled by
// sqrt(2) to undo the wider 1/sqrt(hd). Every score, and so every output, is tiny-f32's.
TEST(Qwen2Checkpoint, ExplicitHeadDimWiderThanHiddenOverHeads) {
  REQUIRE_QWEN2_FIXTURES();
  auto t = tiny_tensors();
  const int64_t hd = 16, wide = 32, nh = 4, nkv = 2;
  auto as_tensor = [](const RawTensor& r) {
    return torch::from_blob(const_cast<char*>(r.bytes.data()), r.shape, torch::kFloat32).clone();
  };
  auto as_raw = [](const torch::Tensor& x) {
    auto c = x.to(torch::kFloat32).contiguous();
    return RawTensor{"F32", c.sizes().vec(),
                     std::string(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(float))};
  };
  std::vector<int64_t> slot(hd);  // original dim -> widened dim within a head
  for (int64_t d = 0; d < hd; ++d) slot[d] = d < hd / 2 ? 2 * d : wide / 2 + 2 * (d - hd / 2);
  auto widen_rows = [&](const torch::Tensor& w, int64_t heads, double scale) {  // [heads*hd, ...]
    auto shape = w.sizes().vec();
    shape[0] = heads * wide;
    auto out = torch::zeros(shape);
    for (int64_t k = 0; k < heads; ++k)
      for (int64_t d = 0; d < hd; ++d) out[k * wide + slot[d]] = w[k * hd + d] * scale;
    return out;
  };
  const double s2 = std::sqrt(2.0);
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".self_attn.";
    t[p + "q_proj.weight"] = as_raw(widen_rows(as_tensor(t[p + "q_proj.weight"]), nh, s2));
    t[p + "q_proj.bias"] = as_raw(widen_rows(as_tensor(t[p + "q_proj.bias"]), nh, s2));
    for (const char* n : {"k_proj.weight", "k_proj.bias", "v_proj.weight", "v_proj.bias"})
      t[p + n] = as_raw(widen_rows(as_tensor(t[p + n]), nkv, 1.0));
    t[p + "o_proj.weight"] = as_raw(widen_rows(as_tensor(t[p + "o_proj.weight"]).t(), nh, 1.0).t());
  }
  const std::string dir = folder_with("head_dim32", t, "head_dim", wide);
  auto cfg = read_qwen2_config(dir);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->head_dim(), wide);
  EXPECT_EQ(cfg->q_size(), nh * wide);
  auto m = Qwen2Model::load(dir, torch::kFloat32);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto ref = nlohmann::json::parse(*read_file(kQwen2Dir + "tiny-f32/reference.json"));
  torch::NoGradGuard no_grad;
  for (const auto& in : ref["inputs"]) {
    const auto ids = in["input_ids"].get<std::vector<int64_t>>();
    auto hidden = m->forward(ids);
    auto len = torch::tensor({static_cast<int64_t>(ids.size())});
    auto [mean, last] = pool_hidden(hidden.unsqueeze(0), len);
    auto want = torch::tensor(in["mean_pooled"].get<std::vector<double>>(), torch::kFloat64);
    EXPECT_LT((mean[0].to(torch::kFloat64) - want).abs().max().item<double>(), 1e-5) << in["name"];
    want = torch::tensor(in["last_token"].get<std::vector<double>>(), torch::kFloat64);
    EXPECT_LT((last[0].to(torch::kFloat64) - want).abs().max().item<double>(), 1e-5) << in["name"];
  }
  // The same weights read as the default head_dim (64 / 4 = 16) do not fit, and say where.
  const std::string plain = folder_with("head_dim_absent", t);
  const auto msg = load_error(plain);
  EXPECT_NE(msg.find("q_proj.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[128, 64]"), std::string::npos) << msg;
  // A head_dim that is not a positive even integer is refused by name.
  for (const nlohmann::json& bad : {nlohmann::json(0), nlohmann::json(-8), nlohmann::json(15), nlohmann::json("32")}) {
    const auto e = load_error(folder_with("head_dim_bad", t, "head_dim", bad));
    EXPECT_NE(e.find("head_dim"), std::string::npos) << bad << ": " << e;
  }
}

// The warnings Qwen2Model::load logs for a folder.
std::vector<std::string> load_warnings(const std::string& dir) {
  std::vector<std::string> warnings;
  set_log_sink([&warnings](LogLevel level, std::string_view m) {
    if (level == LogLevel::kWarn) warnings.emplace_back(m);
  });
  auto m = Qwen2Model::load(dir, torch::kFloat32);
  set_log_sink({});
  EXPECT_TRUE(m.ok()) << m.status().message();
  return warnings;
}

// A checkpoint with more layers than config.json's num_hidden_layers loads the first ones, as
// transformers does, but says how many it left unread (transformers warns of unused weights).
TEST(Qwen2Checkpoint, LayersPastNumHiddenLayersAreIgnoredWithAWarning) {
  REQUIRE_QWEN2_FIXTURES();
  auto t = tiny_tensors();
  EXPECT_TRUE(load_warnings(kQwen2Dir + "tiny-f32").empty()) << "every layer read";
  auto one = load_warnings(folder_with("one_layer", t, "num_hidden_layers", 1));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_NE(one[0].find("1 layer past config.json's num_hidden_layers 1"), std::string::npos) << one[0];
  EXPECT_NE(one[0].find("model.layers.1"), std::string::npos) << one[0];
  EXPECT_NE(one[0].find("12 tensors"), std::string::npos) << one[0];
  // Bare names (no "model."), two layers past a config of two.
  std::map<std::string, RawTensor> bare;
  for (const auto& [name, r] : t) {
    bare[name.substr(6)] = r;
    if (name.starts_with("model.layers.1.")) {
      bare["layers.2." + name.substr(15)] = r;
      bare["layers.3." + name.substr(15)] = r;
    }
  }
  auto two = load_warnings(folder_with("four_layers", bare));
  ASSERT_EQ(two.size(), 1u);
  EXPECT_NE(two[0].find("2 layers past config.json's num_hidden_layers 2 (layers.2 to layers.3, 24 tensors)"),
            std::string::npos)
      << two[0];
}

}  // namespace
}  // namespace peakcast::models::qwen2
