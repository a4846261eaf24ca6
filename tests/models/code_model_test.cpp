// The code predictor through its Torch-free API: save/load round trips for every encoder,
// unknown users and empty scripts, format versioning, and learning a script-dependent label.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "code_test_data.h"
#include "peakcast/core/io.h"
#include "peakcast/models/code/code_model.h"

namespace peakcast::models::code {
namespace {

using testing::make_batch_size_jobs;
using testing::ptrs;

CodeModelConfig tiny_config(const std::string& encoder) {
  CodeModelConfig c;
  c.encoder = encoder;
  c.token_dim = 16;
  c.hash_buckets = 4096;
  c.seq_buckets = 4096;
  c.seq_max_tokens = 64;
  c.conv_filters = 8;
  c.lstm_hidden = 8;
  c.user_dim = 8;
  c.fused_dim = 32;
  c.max_epochs = 2;
  c.batch_size = 32;
  c.threads = 1;
  return c;
}

std::string temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("peakcast_code_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

Job odd_job(const std::string& user, bool with_script) {
  Job j;
  j.job_id = "odd";
  j.user = user;
  j.req_mem_bytes = 8 * testing::kGiB;
  if (with_script) j.script = "";  // present but empty
  return j;
}

class EveryEncoder : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryEncoder, SaveLoadPredictIsBitIdentical) {
  auto train = make_batch_size_jobs(120, 1);
  auto val = make_batch_size_jobs(40, 2);
  auto model = CodeModel::train(ptrs(train), ptrs(val), tiny_config(GetParam()));
  ASSERT_TRUE(model.ok()) << model.status().message();
  const std::string dir = temp_dir(GetParam());
  ASSERT_TRUE(model->save(dir).is_ok());
  auto loaded = CodeModel::load(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->config().encoder, GetParam());
  EXPECT_EQ(loaded->report().best_epoch, model->report().best_epoch);

  auto probe = make_batch_size_jobs(20, 3);
  probe.push_back(odd_job("never-seen-user", true));
  probe.push_back(odd_job("user1", false));
  for (const Job& j : probe) {
    auto a = model->predict(j), b = loaded->predict(j);
    for (int r = 0; r < kNumResources; ++r) EXPECT_TRUE(same_bits(a.util[r], b.util[r])) << j.job_id;
    EXPECT_EQ(a.script_absent, b.script_absent);
    auto ea = model->encode(j), eb = loaded->encode(j);
    ASSERT_EQ(ea.size(), eb.size());
    EXPECT_EQ(0, std::memcmp(ea.data(), eb.data(), ea.size() * sizeof(float)));
  }
  auto ba = model->predict_batch(ptrs(probe)), bb = loaded->predict_batch(ptrs(probe));
  ASSERT_EQ(ba.size(), probe.size());
  for (size_t i = 0; i < ba.size(); ++i)
    for (int r = 0; r < kNumResources; ++r) EXPECT_TRUE(same_bits(ba[i].util[r], bb[i].util[r]));
  std::filesystem::remove_all(dir);
}

TEST_P(EveryEncoder, UnknownUsersAndEmptyScriptsGetPredictionsInRange) {
  auto train = make_batch_size_jobs(80, 4);
  auto model = CodeModel::train(ptrs(train), {}, tiny_config(GetParam()));
  ASSERT_TRUE(model.ok()) << model.status().message();
  for (const Job& j : {odd_job("nobody", true), odd_job("nobody", false), odd_job("", false)}) {
    auto p = model->predict(j);
    EXPECT_TRUE(p.script_absent);
    for (float u : p.util) {
      EXPECT_TRUE(std::isfinite(u));
      EXPECT_GE(u, 0.0f);
      EXPECT_LE(u, 1.0f);
    }
    EXPECT_FALSE(model->encode(j).empty());
  }
  EXPECT_FALSE(model->predict(train[0]).script_absent);
  EXPECT_FALSE(model->trained_without_scripts());
}

TEST_P(EveryEncoder, BatchPredictionMatchesSinglePredictions) {
  // Padding and batch composition must not change a job's output (beyond float rounding).
  auto train = make_batch_size_jobs(80, 5);
  auto model = CodeModel::train(ptrs(train), {}, tiny_config(GetParam()));
  ASSERT_TRUE(model.ok());
  auto probe = make_batch_size_jobs(10, 6);
  probe[3].script = *probe[3].script + std::string(40, 'x') + " --long a b c d e f g h i j k\n";
  auto batch = model->predict_batch(ptrs(probe));
  for (size_t i = 0; i < probe.size(); ++i)
    for (int r = 0; r < kNumResources; ++r)
      EXPECT_NEAR(batch[i].util[r], model->predict(probe[i]).util[r], 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Encoders, EveryEncoder, ::testing::Values("bag", "textcnn", "bilstm"));

TEST(CodeModel, IdentityTextWhenNoScriptIsFlagged) {
  auto train = make_batch_size_jobs(60, 7);
  for (auto& j : train) {
    j.workload = "exe" + std::to_string(j.submit_ms % 7);
    j.script.reset();
  }
  auto model = CodeModel::train(ptrs(train), {}, tiny_config("bag"));
  ASSERT_TRUE(model.ok());
  EXPECT_TRUE(model->trained_without_scripts());
  EXPECT_TRUE(model->predict(train[0]).script_absent);
}

TEST(CodeModel, UnknownEncoderListsValidNames) {
  auto train = make_batch_size_jobs(10, 8);
  auto cfg = tiny_config("transformer9000");
  auto model = CodeModel::train(ptrs(train), {}, cfg);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().kind(), ErrorKind::kInvalidInput);
  for (const char* n : {"bag", "textcnn", "bilstm", "transformer9000"})
    EXPECT_NE(model.status().message().find(n), std::string::npos) << model.status().message();
}

TEST(CodeModel, NoValidLabelIsAnError) {
  auto train = make_batch_size_jobs(10, 9);
  for (auto& j : train) j.valid = {false, false};
  EXPECT_FALSE(CodeModel::train(ptrs(train), {}, tiny_config("bag")).ok());
}

TEST(CodeModel, LoadRefusesNewerFormatAndBrokenWeights) {
  auto train = make_batch_size_jobs(40, 10);
  auto model = CodeModel::train(ptrs(train), {}, tiny_config("bag"));
  ASSERT_TRUE(model.ok());
  const std::string dir = temp_dir("version");
  ASSERT_TRUE(model->save(dir).is_ok());
  const std::string manifest_path = dir + "/manifest.json";
  auto text = read_file(manifest_path);
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);

  j["format_version"] = CodeModel::kFormatVersion + 1;
  ASSERT_TRUE(write_file_atomic(manifest_path, j.dump()).is_ok());
  auto newer = CodeModel::load(dir);
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().kind(), ErrorKind::kUnsupported);
  EXPECT_NE(newer.status().message().find("newer"), std::string::npos);
  j["format_version"] = (int64_t{1} << 32) + CodeModel::kFormatVersion;  // not the current format
  ASSERT_TRUE(write_file_atomic(manifest_path, j.dump()).is_ok());
  auto wrapped = CodeModel::load(dir);
  ASSERT_FALSE(wrapped.ok());
  EXPECT_EQ(wrapped.status().kind(), ErrorKind::kUnsupported);

  // A model trained on unredacted text (format 1) would read other tokens now: retrain.
  j["format_version"] = 1;
  ASSERT_TRUE(write_file_atomic(manifest_path, j.dump()).is_ok());
  auto older = CodeModel::load(dir);
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.status().kind(), ErrorKind::kUnsupported);
  EXPECT_NE(older.status().message().find("retrain"), std::string::npos) << older.status().message();

  j["format_version"] = CodeModel::kFormatVersion;
  j["config"]["hash_buckets"] = 8192;  // weights no longer fit the declared shape
  ASSERT_TRUE(write_file_atomic(manifest_path, j.dump()).is_ok());
  EXPECT_FALSE(CodeModel::load(dir).ok());

  j["config"]["hash_buckets"] = 4096;
  j["config"]["no_such_option"] = 1;
  ASSERT_TRUE(write_file_atomic(manifest_path, j.dump()).is_ok());
  EXPECT_FALSE(CodeModel::load(dir).ok());
  std::filesystem::remove_all(dir);
}

// save() replaces manifest.json and weights.pt one after the other: weights from another save
// (an interrupted one, a copied file) must be refused, not read with this manifest's user rows
// and request statistics (same shapes: nothing else would notice).
TEST(CodeModel, LoadRefusesWeightsFromAnotherSave) {
  auto train = make_batch_size_jobs(40, 10);
  auto cfg = tiny_config("bag");
  auto a = CodeModel::train(ptrs(train), {}, cfg);
  cfg.seed += 1;
  auto b = CodeModel::train(ptrs(train), {}, cfg);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string dir_a = temp_dir("hash_a"), dir_b = temp_dir("hash_b");
  ASSERT_TRUE(a->save(dir_a).is_ok());
  ASSERT_TRUE(b->save(dir_b).is_ok());
  ASSERT_TRUE(CodeModel::load(dir_a).ok());
  std::filesystem::copy_file(dir_b + "/weights.pt", dir_a + "/weights.pt",
                             std::filesystem::copy_options::overwrite_existing);
  auto mixed = CodeModel::load(dir_a);
  ASSERT_FALSE(mixed.ok()) << "weights of another save were loaded";
  EXPECT_EQ(mixed.status().kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(mixed.status().message().find("SHA-256"), std::string::npos) << mixed.status().message();
  std::filesystem::remove_all(dir_a);
  std::filesystem::remove_all(dir_b);
}

// A field of another JSON type than its reader expects is a clear error, not an exception
// (nlohmann's type_error reached `peakcast predict` as "internal error").
TEST(CodeModel, AFieldOfTheWrongTypeIsAnErrorNotAThrow) {
  auto model = CodeModel::train(ptrs(make_batch_size_jobs(40, 10)), {}, tiny_config("bag"));
  ASSERT_TRUE(model.ok());
  const std::string dir = temp_dir("wrong_type");
  ASSERT_TRUE(model->save(dir).is_ok());
  const std::string manifest_path = dir + "/manifest.json";
  auto text = read_file(manifest_path);
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  ASSERT_TRUE(j.contains("report"));
  j["report"]["train_jobs"] = "many";
  ASSERT_TRUE(write_file_atomic(manifest_path, j.dump()).is_ok());
  Result<CodeModel> loaded = Status::invalid("not run");
  ASSERT_NO_THROW(loaded = CodeModel::load(dir));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(loaded.status().message().find("wrong JSON type"), std::string::npos) << loaded.status().message();
  // A count out of range reads as 0: nlohmann converted 1e300 to size_t with a cast (undefined).
  j["report"]["train_jobs"] = 1e300;
  j["report"]["best_epoch"] = -1e300;
  ASSERT_TRUE(write_file_atomic(manifest_path, j.dump()).is_ok());
  auto huge = CodeModel::load(dir);
  ASSERT_TRUE(huge.ok()) << huge.status().message();
  EXPECT_EQ(huge->report().train_jobs, 0u);
  EXPECT_EQ(huge->report().best_epoch, 0);
  std::filesystem::remove_all(dir);
}

TEST(CodeModel, LearnsBatchSizeFromScriptsFarBelowMeanBaseline) {
  auto train = make_batch_size_jobs(1200, 11);
  auto val = make_batch_size_jobs(300, 12);
  auto test = make_batch_size_jobs(300, 13);
  CodeModelConfig cfg;  // default bag encoder, smaller tables for test speed
  cfg.hash_buckets = 1 << 14;
  cfg.max_epochs = 25;
  cfg.batch_size = 64;
  auto model = CodeModel::train(ptrs(train), ptrs(val), cfg);
  ASSERT_TRUE(model.ok()) << model.status().message();

  double mean = 0.0;
  for (const Job& j : train) mean += j.label(Resource::kMem);
  mean /= static_cast<double>(train.size());
  double mae_model = 0.0, mae_mean = 0.0;
  auto preds = model->predict_batch(ptrs(test));
  for (size_t i = 0; i < test.size(); ++i) {
    mae_model += std::abs(preds[i].util[0] - test[i].label(Resource::kMem));
    mae_mean += std::abs(mean - test[i].label(Resource::kMem));
  }
  mae_model /= static_cast<double>(test.size());
  mae_mean /= static_cast<double>(test.size());
  EXPECT_LT(mae_model, 0.35 * mae_mean) << "model " << mae_model << " vs mean " << mae_mean;
  EXPECT_LE(model->report().best_epoch, model->report().epochs_run);
  EXPECT_GT(model->report().jobs_per_s, 0.0);
}

TEST(CodeModel, SameSeedSameModelDifferentSeedDifferentModel) {
  auto train = make_batch_size_jobs(100, 14);
  auto cfg = tiny_config("bag");
  auto a = CodeModel::train(ptrs(train), {}, cfg);
  auto b = CodeModel::train(ptrs(train), {}, cfg);
  cfg.seed += 1;
  auto c = CodeModel::train(ptrs(train), {}, cfg);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto pa = a->predict(train[0]), pb = b->predict(train[0]), pc = c->predict(train[0]);
  EXPECT_TRUE(same_bits(pa.util[0], pb.util[0]));
  EXPECT_FALSE(same_bits(pa.util[0], pc.util[0]));
}

TEST(CodeModel, TrainCodeModelsTrainsOnePerSeed) {
  auto train = make_batch_size_jobs(60, 15);
  auto cfg = tiny_config("bag");
  cfg.seeds = 3;
  auto models = train_code_models(ptrs(train), {}, cfg);
  ASSERT_TRUE(models.ok());
  ASSERT_EQ(models->size(), 3u);
  EXPECT_EQ((*models)[2].config().seed, cfg.seed + 2);
}

TEST(CodeModel, UntrainedModelThrows) {
  CodeModel m;
  EXPECT_FALSE(m.trained());
  EXPECT_THROW(m.predict(odd_job("u", false)), std::logic_error);
}

}  // namespace
}  // namespace peakcast::models::code
