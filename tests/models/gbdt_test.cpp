#include "peakcast/models/gbdt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

namespace pm = peakcast::models;

namespace {

struct Data {
  std::vector<float> x;  // [rows, cols]
  std::vector<float> y;  // [rows]
  size_t rows = 0, cols = 0;
};

// y = sin(x0) + x1^2 / 4 + 0.5 * [x2 > 0] + noise; a tenth of x3 is missing.
Data make_regression(size_t rows, size_t cols, uint32_t seed, double noise = 0.05) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n01(0, 1);
  Data d{std::vector<float>(rows * cols), std::vector<float>(rows), rows, cols};
  for (size_t r = 0; r < rows; ++r) {
    float* row = &d.x[r * cols];
    for (size_t c = 0; c < cols; ++c) row[c] = n01(rng);
    if (cols > 3 && r % 10 == 0) row[3] = pm::kMissing;
    d.y[r] = std::sin(row[0]) + row[1] * row[1] / 4 + (row[2] > 0 ? 0.5f : 0.0f) +
             static_cast<float>(noise) * n01(rng);
  }
  return d;
}

pm::DMatrix to_dmatrix(const Data& d) {
  auto m = pm::DMatrix::from_dense(d.x, d.rows, d.cols);
  m.set_labels(d.y);
  return m;
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s / a.size());
}

double stddev(const std::vector<float>& v) {
  double m = 0, s = 0;
  for (float x : v) m += x;
  m /= v.size();
  for (float x : v) s += (x - m) * (x - m);
  return std::sqrt(s / v.size());
}

pm::GbdtParams small_params() {
  pm::GbdtParams p;
  p.n_rounds = 60;
  p.max_depth = 4;
  p.eta = 0.2;
  p.seed = 7;
  return p;
}

}  // namespace

TEST(Gbdt, RegressionLearnsAndDmatrixShape) {
  auto train = make_regression(2000, 6, 1);
  auto test = make_regression(500, 6, 2);
  auto dtrain = to_dmatrix(train);
  EXPECT_EQ(dtrain.rows(), 2000u);
  EXPECT_EQ(dtrain.cols(), 6u);
  auto b = pm::Booster::train(small_params(), dtrain);
  EXPECT_EQ(b.num_features(), 6u);
  EXPECT_EQ(b.num_rounds(), 60);
  auto pred = b.predict(pm::DMatrix::from_dense(test.x, test.rows, test.cols));
  ASSERT_EQ(pred.size(), test.rows);
  EXPECT_LT(rmse(pred, test.y), 0.4 * stddev(test.y));
}

TEST(Gbdt, InplaceRowPredictionMatchesDmatrix) {
  auto train = make_regression(1000, 5, 3);
  auto b = pm::Booster::train(small_params(), to_dmatrix(train));
  auto test = make_regression(50, 5, 4);
  auto batch = b.predict(pm::DMatrix::from_dense(test.x, test.rows, test.cols));
  std::vector<float> inplace(test.rows);
  b.predict_dense(test.x, test.rows, inplace);
  for (size_t r = 0; r < test.rows; ++r) {
    std::span<const float> row(&test.x[r * test.cols], test.cols);
    EXPECT_EQ(b.predict_row(row), batch[r]) << r;  // rows with NaN in x3 included
    EXPECT_EQ(inplace[r], batch[r]) << r;
  }
  std::vector<float> wrong(4);
  EXPECT_THROW(b.predict_row(wrong), std::invalid_argument);
  EXPECT_THROW(b.predict_dense_xgboost(wrong, 1, inplace), std::invalid_argument);
}

// The native tree walker must give XGBoost's floats exactly, for every objective we train.
TEST(Gbdt, NativePredictorMatchesXgboostBitForBit) {
  for (auto obj : {pm::GbdtObjective::kRegSquaredError, pm::GbdtObjective::kBinaryLogistic,
                   pm::GbdtObjective::kRegLogistic}) {
    auto d = make_regression(3000, 8, 16);
    if (obj != pm::GbdtObjective::kRegSquaredError) {
      for (auto& y : d.y) y = y > 0.6f ? 1.0f : 0.0f;
    }
    auto p = small_params();
    p.objective = obj;
    p.n_rounds = 100;
    p.max_depth = 6;
    auto b = pm::Booster::train(p, to_dmatrix(d));
    ASSERT_TRUE(b.native_predictor()) << pm::objective_name(obj);
    auto probe = make_regression(2000, 8, 17);
    for (size_t i = 0; i < probe.x.size(); i += 13) probe.x[i] = pm::kMissing;  // scattered NaN
    auto want = b.predict(pm::DMatrix::from_dense(probe.x, probe.rows, probe.cols));
    std::vector<float> native(probe.rows), xgb(probe.rows);
    for (size_t r = 0; r < probe.rows; ++r) {  // row by row: the native path
      native[r] = b.predict_row(std::span<const float>(&probe.x[r * probe.cols], probe.cols));
    }
    b.predict_dense_xgboost(probe.x, probe.rows, xgb);
    size_t differ = 0;
    for (size_t r = 0; r < probe.rows; ++r) differ += native[r] != want[r];
    EXPECT_EQ(differ, 0u) << pm::objective_name(obj);
    EXPECT_EQ(xgb, want) << pm::objective_name(obj);
    // And after a save/load round trip.
    auto loaded = pm::Booster::load_buffer(b.save_buffer());
    ASSERT_TRUE(loaded.ok());
    std::vector<float> again(probe.rows);
    for (size_t r = 0; r < probe.rows; ++r) {
      again[r] = loaded->predict_row(std::span<const float>(&probe.x[r * probe.cols], probe.cols));
    }
    EXPECT_EQ(again, native);
  }
}

TEST(Gbdt, BinaryLogisticGivesProbabilities) {
  auto d = make_regression(2000, 4, 5);
  for (auto& y : d.y) y = y > 0.6f ? 1.0f : 0.0f;
  auto p = small_params();
  p.objective = pm::GbdtObjective::kBinaryLogistic;
  auto b = pm::Booster::train(p, to_dmatrix(d));
  auto test = make_regression(500, 4, 6);
  auto prob = b.predict(pm::DMatrix::from_dense(test.x, test.rows, test.cols));
  size_t correct = 0;
  for (size_t i = 0; i < prob.size(); ++i) {
    ASSERT_TRUE(prob[i] >= 0 && prob[i] <= 1);
    correct += (prob[i] > 0.5f) == (test.y[i] > 0.6f);
  }
  EXPECT_GT(correct, prob.size() * 8 / 10);
}

TEST(Gbdt, SaveLoadIsBitIdentical) {
  auto d = make_regression(800, 5, 8);
  auto b = pm::Booster::train(small_params(), to_dmatrix(d));
  auto probe = make_regression(100, 5, 9);
  auto dprobe = pm::DMatrix::from_dense(probe.x, probe.rows, probe.cols);
  auto want = b.predict(dprobe);
  for (auto fmt : {pm::ModelFormat::kJson, pm::ModelFormat::kUbj}) {
    auto bytes = b.save_buffer(fmt);
    auto loaded = pm::Booster::load_buffer(bytes);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->predict(dprobe), want);
    std::vector<float> inplace(probe.rows);
    loaded->predict_dense(probe.x, probe.rows, inplace);
    EXPECT_EQ(inplace, want);
    EXPECT_EQ(loaded->save_buffer(fmt), bytes);  // and the artifact itself is stable
  }
  const std::string path = std::string(PEAKCAST_BINARY_DIR) + "/gbdt_test_model.ubj";
  ASSERT_TRUE(b.save_file(path).is_ok());
  auto from_file = pm::Booster::load_file(path);
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_EQ(from_file->predict(dprobe), want);
  std::remove(path.c_str());
}

// A model file cut short (an interrupted copy, a full disk) is an error at load, at any length:
// XGBoost's reader, given such bytes, crashed or allocated without bound.
TEST(Gbdt, AModelCutShortIsStatusNotCrash) {
  auto d = make_regression(800, 5, 8);
  auto b = pm::Booster::train(small_params(), to_dmatrix(d));
  for (auto fmt : {pm::ModelFormat::kUbj, pm::ModelFormat::kJson}) {
    const std::string bytes = b.save_buffer(fmt);
    ASSERT_GT(bytes.size(), 2000u);
    size_t refused = 0, cuts = 0;
    for (size_t n = 1; n < bytes.size(); n += 1 + n / 7, ++cuts) {
      auto r = pm::Booster::load_buffer(std::string_view(bytes).substr(0, n));
      EXPECT_FALSE(r.ok()) << "cut at " << n << " of " << bytes.size();
      refused += !r.ok();
    }
    EXPECT_EQ(refused, cuts);
    EXPECT_TRUE(pm::Booster::load_buffer(bytes).ok());
  }
}

TEST(Gbdt, BadModelBytesAreStatusNotCrash) {
  auto r = pm::Booster::load_buffer("this is not a model");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().kind(), peakcast::ErrorKind::kInvalidInput);
  EXPECT_FALSE(pm::Booster::load_buffer("").ok());
  auto missing = pm::Booster::load_file("/nonexistent/dir/model.ubj");
  EXPECT_EQ(missing.status().kind(), peakcast::ErrorKind::kNotFound);
}

TEST(Gbdt, XgboostErrorsCarryItsMessage) {
  auto d = make_regression(100, 3, 10);
  for (auto& y : d.y) y = 3.0f;  // out of [0, 1]: binary:logistic refuses
  auto p = small_params();
  p.objective = pm::GbdtObjective::kBinaryLogistic;
  try {
    (void)pm::Booster::train(p, to_dmatrix(d));
    FAIL() << "expected XgbError";
  } catch (const pm::XgbError& e) {
    EXPECT_NE(std::string(e.what()).find("XGBoosterUpdateOneIter"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("label"), std::string::npos) << e.what();
  }
  auto bad = small_params();
  bad.eta = 0;
  EXPECT_FALSE(bad.validate().is_ok());
  EXPECT_THROW((void)pm::Booster::train(bad, to_dmatrix(d)), std::invalid_argument);
  auto m = pm::DMatrix::from_dense(d.x, d.rows, d.cols);
  std::vector<float> short_labels(3);
  EXPECT_THROW(m.set_labels(short_labels), std::invalid_argument);
}

TEST(Gbdt, EarlyStoppingKeepsBestRound) {
  auto train = make_regression(300, 6, 11, 0.8);  // noisy and small: overfits quickly
  auto valid = make_regression(300, 6, 12, 0.8);
  auto p = small_params();
  p.n_rounds = 400;
  p.eta = 0.5;
  p.max_depth = 8;
  p.early_stopping_rounds = 10;
  pm::TrainReport rep;
  auto dvalid = to_dmatrix(valid);
  auto b = pm::Booster::train(p, to_dmatrix(train), &dvalid, &rep);
  EXPECT_EQ(rep.metric, "rmse");
  EXPECT_LT(rep.rounds_trained, 400);
  ASSERT_EQ(rep.valid_history.size(), static_cast<size_t>(rep.rounds_trained));
  EXPECT_EQ(rep.rounds_trained, rep.best_round + 1 + p.early_stopping_rounds);
  EXPECT_EQ(b.num_rounds(), rep.best_round + 1);
  for (double s : rep.valid_history) EXPECT_GE(s, rep.best_score);
  // The kept model scores the best round's metric on the validation data.
  auto pred = b.predict(dvalid);
  EXPECT_NEAR(rmse(pred, valid.y), rep.best_score, 1e-4);
}

TEST(Gbdt, SparseCsrTraining) {
  // Hashed-token style rows: label is 1 when bucket 7 is present.
  std::mt19937 rng(13);
  std::uniform_int_distribution<uint32_t> bucket(0, 63);
  pm::CsrMatrix m;
  m.cols = 64;
  std::vector<float> labels;
  for (int r = 0; r < 1500; ++r) {
    std::vector<uint32_t> idx;
    for (int k = 0; k < 6; ++k) idx.push_back(bucket(rng));
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    std::vector<float> val(idx.size(), 1.0f);
    labels.push_back(std::count(idx.begin(), idx.end(), 7u) ? 1.0f : 0.0f);
    m.add_row(idx, val);
  }
  auto d = pm::DMatrix::from_csr(m);
  EXPECT_EQ(d.rows(), 1500u);
  d.set_labels(labels);
  auto p = small_params();
  p.objective = pm::GbdtObjective::kRegLogistic;
  auto b = pm::Booster::train(p, d);
  auto pred = b.predict(d);
  for (size_t i = 0; i < pred.size(); ++i) EXPECT_NEAR(pred[i], labels[i], 0.2) << i;
  std::vector<uint32_t> bad_idx = {64};
  std::vector<float> one = {1.0f};
  EXPECT_THROW(m.add_row(bad_idx, one), std::invalid_argument);
}

TEST(Gbdt, SameSeedSameModelAndConcurrentPredictAgrees) {
  auto d = make_regression(1000, 5, 14);
  auto p = small_params();
  p.subsample = 0.7;
  p.colsample_bytree = 0.8;
  auto a = pm::Booster::train(p, to_dmatrix(d));
  auto b = pm::Booster::train(p, to_dmatrix(d));
  EXPECT_EQ(a.save_buffer(pm::ModelFormat::kJson), b.save_buffer(pm::ModelFormat::kJson));

  auto probe = make_regression(200, 5, 15);
  std::vector<float> serial(probe.rows);
  a.predict_dense(probe.x, probe.rows, serial);
  std::vector<std::vector<float>> got(4, std::vector<float>(probe.rows));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        for (size_t r = 0; r < probe.rows; ++r) {
          got[t][r] = a.predict_row(std::span<const float>(&probe.x[r * probe.cols], probe.cols));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(got[t], serial) << "thread " << t;
}

// The native walker against XGBoost on the inputs and models the random probe above never makes:
// values exactly on a split condition (`<`, not `<=`), infinities, whole rows missing, margins far
// past the sigmoid's float range, and a logistic base_score other than 0.5. The models are edited
// copies of a trained one (leaf values scaled, base_score changed), loaded back through XGBoost.
TEST(Gbdt, NativePredictorMatchesXgboostOnEdgeInputsAndModels) {
  auto d = make_regression(1500, 5, 21);
  for (auto& y : d.y) y = y > 0.6f ? 1.0f : 0.0f;
  auto p = small_params();
  p.objective = pm::GbdtObjective::kBinaryLogistic;
  p.n_rounds = 30;
  const auto trained = pm::Booster::train(p, to_dmatrix(d));
  const auto json = nlohmann::json::parse(trained.save_buffer(pm::ModelFormat::kJson));

  // Probe rows: random, then each split condition of every tree put exactly into its feature,
  // then +-inf and NaN in every column, then a row with everything missing.
  auto probe = make_regression(300, 5, 22);
  std::vector<float> rows = probe.x;
  const auto& trees = json["learner"]["gradient_booster"]["model"]["trees"];
  for (const auto& t : trees) {
    for (size_t i = 0; i < t["left_children"].size(); ++i) {
      if (t["left_children"][i].get<int>() < 0) continue;
      std::vector<float> row(rows.begin(), rows.begin() + 5);
      row[t["split_indices"][i].get<size_t>()] = t["split_conditions"][i].get<float>();
      rows.insert(rows.end(), row.begin(), row.end());
    }
  }
  for (float v : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  pm::kMissing}) {
    for (size_t c = 0; c < 5; ++c) {
      std::vector<float> row(rows.begin() + 5, rows.begin() + 10);
      row[c] = v;
      rows.insert(rows.end(), row.begin(), row.end());
    }
  }
  rows.insert(rows.end(), 5, pm::kMissing);
  const size_t n = rows.size() / 5;

  for (const double leaf_scale : {1.0, 400.0}) {
    for (const char* base_score : {"5E-1", "2E-1"}) {
      auto edited = json;
      for (auto& t : edited["learner"]["gradient_booster"]["model"]["trees"]) {
        for (size_t i = 0; i < t["left_children"].size(); ++i) {
          if (t["left_children"][i].get<int>() >= 0) continue;
          t["split_conditions"][i] = t["split_conditions"][i].get<double>() * leaf_scale;
        }
      }
      edited["learner"]["learner_model_param"]["base_score"] = base_score;
      auto b = pm::Booster::load_buffer(edited.dump());
      ASSERT_TRUE(b.ok()) << b.status().message();
      ASSERT_TRUE(b->native_predictor());
      std::vector<float> xgb(n);
      b->predict_dense_xgboost(rows, n, xgb);
      size_t differ = 0;
      for (size_t r = 0; r < n; ++r) {
        const float native = b->predict_row(std::span<const float>(&rows[r * 5], 5));
        if (std::memcmp(&native, &xgb[r], sizeof(float)) != 0 && ++differ <= 3) {
          ADD_FAILURE() << "leaf scale " << leaf_scale << ", base_score " << base_score << ", row " << r
                        << ": native " << native << ", XGBoost " << xgb[r];
        }
      }
      EXPECT_EQ(differ, 0u) << "leaf scale " << leaf_scale << ", base_score " << base_score;
    }
  }
}

// XGBoost reads `seed` as a signed 64-bit integer: a GbdtParams seed of 2^63 or more used to
// pass validate() and then fail inside training as an XgbError (a broken invariant), not as a
// bad parameter.
TEST(Gbdt, SeedOutsideXgboostsRangeIsABadParameter) {
  auto p = small_params();
  p.n_rounds = 2;
  p.seed = uint64_t{1} << 63;
  EXPECT_FALSE(p.validate().is_ok());
  auto d = make_regression(50, 3, 30);
  EXPECT_THROW((void)pm::Booster::train(p, to_dmatrix(d)), std::invalid_argument);
  p.seed = (uint64_t{1} << 62) + 12345;  // large but representable: trains
  EXPECT_TRUE(p.validate().is_ok());
  EXPECT_EQ(pm::Booster::train(p, to_dmatrix(d)).num_rounds(), 2);
}

// A model with several outputs per row (here a 3-class softprob model, made by editing a trained
// one) is not one peakcast can use: predict_dense read the first `rows` of rows x 3 values, so a
// row got another row's class probability. Loading refuses it instead.
TEST(Gbdt, AModelWithSeveralOutputsPerRowIsRefusedAtLoad) {
  auto d = make_regression(300, 4, 31);
  for (auto& y : d.y) y = y > 0.6f ? 1.0f : 0.0f;
  auto p = small_params();
  p.objective = pm::GbdtObjective::kBinaryLogistic;
  p.n_rounds = 6;
  const auto trained = pm::Booster::train(p, to_dmatrix(d));
  auto j = nlohmann::json::parse(trained.save_buffer(pm::ModelFormat::kJson));
  auto& learner = j["learner"];
  learner["learner_model_param"]["num_class"] = "3";
  learner["objective"] = {{"name", "multi:softprob"}, {"softmax_multiclass_param", {{"num_class", "3"}}}};
  auto& model = learner["gradient_booster"]["model"];
  for (size_t i = 0; i < model["tree_info"].size(); ++i) model["tree_info"][i] = static_cast<int>(i % 3);
  auto loaded = pm::Booster::load_buffer(j.dump());
  ASSERT_FALSE(loaded.ok()) << "a 3-output model was loaded as a one-output booster";
  EXPECT_NE(loaded.status().message().find("3"), std::string::npos) << loaded.status().message();
}
