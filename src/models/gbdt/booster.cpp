#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/gbdt/flat_forest.h"
#include "models/gbdt/xgb_check.h"

namespace peakcast::models {

std::string_view objective_name(GbdtObjective o) {
  switch (o) {
    case GbdtObjective::kBinaryLogistic: return "binary:logistic";
    case GbdtObjective::kRegSquaredError: return "reg:squarederror";
    case GbdtObjective::kRegLogistic: return "reg:logistic";
  }
  return "reg:squarederror";
}

namespace {

std::string fmt_double(double v) { return fmt::format("{:.17g}", v); }

// "[3]\tvalid-rmse:0.1234" -> 0.1234
double parse_eval(const char* text) {
  std::string s(text);
  auto colon = s.rfind(':');
  if (colon == std::string::npos) throw XgbError("XGBoost: unexpected evaluation text: " + s);
  return std::strtod(s.c_str() + colon + 1, nullptr);
}

}  // namespace

Booster::Booster(void* h) : h_(h) {}

Booster Booster::train(const GbdtParams& p, const DMatrix& train, const DMatrix* valid,
                       TrainReport* report) {
  if (Status s = p.validate(); !s) throw std::invalid_argument(s.message());
  detail::install_xgb_log_sink();
  std::vector<DMatrixHandle> cache = {train.handle()};
  if (valid != nullptr) cache.push_back(valid->handle());
  BoosterHandle raw = nullptr;
  XGB_CHECK(XGBoosterCreate(cache.data(), cache.size(), &raw));
  Booster b(raw);
  BoosterHandle h = b.h_.get();
  const std::string metric = p.objective == GbdtObjective::kBinaryLogistic ? "logloss" : "rmse";
  const std::pair<const char*, std::string> kv[] = {
      {"objective", std::string(objective_name(p.objective))},
      {"eval_metric", metric},
      {"max_depth", std::to_string(p.max_depth)},
      {"eta", fmt_double(p.eta)},
      {"nthread", std::to_string(p.nthread)},
      {"seed", std::to_string(p.seed)},
      {"subsample", fmt_double(p.subsample)},
      {"colsample_bytree", fmt_double(p.colsample_bytree)},
      {"min_child_weight", fmt_double(p.min_child_weight)},
      {"lambda", fmt_double(p.lambda)},
      {"tree_method", "hist"},
      {"verbosity", "1"},
  };
  for (const auto& [k, v] : kv) XGB_CHECK(XGBoosterSetParam(h, k, v.c_str()));

  TrainReport rep;
  rep.metric = metric;
  int since_best = 0;
  for (int round = 0; round < p.n_rounds; ++round) {
    XGB_CHECK(XGBoosterUpdateOneIter(h, round, train.handle()));
    rep.rounds_trained = round + 1;
    if (valid == nullptr) continue;
    DMatrixHandle dm[] = {valid->handle()};
    const char* names[] = {"valid"};
    const char* out = nullptr;
    XGB_CHECK(XGBoosterEvalOneIter(h, round, dm, names, 1, &out));
    double score = parse_eval(out);
    rep.valid_history.push_back(score);
    if (rep.best_round < 0 || score < rep.best_score) {
      rep.best_round = round;
      rep.best_score = score;
      since_best = 0;
    } else if (p.early_stopping_rounds > 0 && ++since_best >= p.early_stopping_rounds) {
      break;
    }
  }
  if (p.early_stopping_rounds > 0 && rep.best_round >= 0 && rep.best_round + 1 < rep.rounds_trained) {
    BoosterHandle sliced = nullptr;
    XGB_CHECK(XGBoosterSlice(h, 0, rep.best_round + 1, 1, &sliced));
    b = Booster(sliced);
  }
  b.prepare();
  if (report != nullptr) *report = std::move(rep);
  return b;
}

void Booster::prepare() {
  bst_ulong n = 0;
  XGB_CHECK(XGBoosterGetNumFeature(h_.get(), &n));
  num_features_ = n;
  inplace_config_ =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, )"
      R"("strict_shape": false, "cache_id": 0, "missing": NaN})";
  // First prediction configures the learner (a mutation); do it now, before sharing.
  std::vector<float> row(num_features_ == 0 ? 1 : num_features_, kMissing);
  float out = 0;
  if (num_features_ > 0) predict_dense_xgboost(row, 1, std::span<float>(&out, 1));
  if (auto f = detail::FlatForest::from_ubj(save_buffer(ModelFormat::kUbj));
      f && f->num_features() == num_features_) {
    flat_ = std::make_shared<const detail::FlatForest>(std::move(*f));
  }
}

namespace {

// XGBoost's own readers trust the bytes: a UBJSON model cut short (a copy interrupted, a full
// disk) crashed it or made it allocate without bound. The two formats saved here (UBJSON and
// JSON) are parsed first, with bounded, checked parsers; only a complete document reaches it.
bool complete_model_document(std::string_view bytes) {
  const bool ubj = bytes.size() > 1 && bytes[0] == '{' && bytes[1] != '"' &&
                   bytes[1] != ' ' && bytes[1] != '\n' && bytes[1] != '\r' && bytes[1] != '\t' &&
                   bytes[1] != '}';
  const auto j = ubj ? nlohmann::json::from_ubjson(bytes, true, false)
                     : nlohmann::json::parse(bytes, nullptr, false);
  return !j.is_discarded() && j.is_object();
}

// Every caller reads one value per row (predict_dense copies `rows` floats), so a model with
// several outputs (multi-class, multi-target) would hand a row another row's value.
Status one_output_per_row(BoosterHandle h) {
  bst_ulong len = 0;
  const char* text = nullptr;
  XGB_CHECK(XGBoosterSaveJsonConfig(h, &len, &text));
  const auto config = nlohmann::json::parse(text, text + len, nullptr, false);
  const nlohmann::json* mp = nullptr;
  if (config.is_object() && config.contains("learner") && config["learner"].is_object() &&
      config["learner"].contains("learner_model_param"))
    mp = &config["learner"]["learner_model_param"];
  const auto count = [&](const char* key) -> long {
    if (mp == nullptr || !mp->is_object() || !mp->contains(key) || !(*mp)[key].is_string()) return 1;
    return std::strtol((*mp)[key].get<std::string>().c_str(), nullptr, 10);
  };
  const long classes = count("num_class"), targets = count("num_target");
  if (classes > 1 || targets > 1) {
    return Status::unsupported(fmt::format(
        "gbdt model: {} outputs per row (num_class {}, num_target {}); peakcast's boosters have one",
        std::max(classes, 1L) * std::max(targets, 1L), classes, targets));
  }
  return Status::ok();
}

}  // namespace

Result<Booster> Booster::load_buffer(std::string_view bytes) {
  detail::install_xgb_log_sink();
  if (!bytes.empty() && !complete_model_document(bytes)) {
    return Status::invalid("gbdt model: not a complete XGBoost model (UBJSON or JSON): cut short "
                           "or corrupt");
  }
  BoosterHandle raw = nullptr;
  XGB_CHECK(XGBoosterCreate(nullptr, 0, &raw));
  Booster b(raw);
  if (bytes.empty() || XGBoosterLoadModelFromBuffer(raw, bytes.data(), bytes.size()) != 0) {
    return Status::invalid(std::string("gbdt model: not a readable XGBoost model: ") +
                           (bytes.empty() ? "empty" : detail::last_xgb_error()));
  }
  if (Status st = one_output_per_row(raw); !st) return st;
  b.prepare();
  return b;
}

Result<Booster> Booster::load_file(const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::not_found(path + ": cannot open gbdt model" +
                             (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  auto r = load_buffer(ss.str());
  if (!r.ok()) return r.status().with_context(path);
  return r;
}

std::string Booster::save_buffer(ModelFormat format) const {
  const char* cfg = format == ModelFormat::kJson ? R"({"format": "json"})" : R"({"format": "ubj"})";
  bst_ulong len = 0;
  const char* data = nullptr;
  XGB_CHECK(XGBoosterSaveModelToBuffer(h_.get(), cfg, &len, &data));
  return std::string(data, len);
}

Status Booster::save_file(const std::string& path, ModelFormat format) const {
  std::string bytes = save_buffer(format);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::io(path + ": cannot open for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Status::io(path + ": write failed");
  return Status::ok();
}

std::vector<float> Booster::predict(const DMatrix& m) const {
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  static const char* kConfig =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
  XGB_CHECK(XGBoosterPredictFromDMatrix(h_.get(), m.handle(), kConfig, &shape, &dim, &result));
  size_t n = 1;
  for (bst_ulong d = 0; d < dim; ++d) n *= shape[d];
  return std::vector<float>(result, result + n);  // the buffer is XGBoost's, per thread: copy
}

void Booster::predict_dense(std::span<const float> data, size_t rows, std::span<float> out) const {
  // Native for few rows (no per-call set-up); XGBoost's block kernel is faster on big batches.
  constexpr size_t kNativeMaxRows = 32;
  if (flat_ == nullptr || rows > kNativeMaxRows) return predict_dense_xgboost(data, rows, out);
  if (data.size() != rows * num_features_ || out.size() != rows) {
    throw std::invalid_argument("Booster::predict_dense: expected [" + std::to_string(rows) + ", " +
                                std::to_string(num_features_) + "] input and [" +
                                std::to_string(rows) + "] output");
  }
  for (size_t r = 0; r < rows; ++r) out[r] = flat_->predict(data.data() + r * num_features_);
}

void Booster::predict_dense_xgboost(std::span<const float> data, size_t rows,
                                    std::span<float> out) const {
  if (data.size() != rows * num_features_ || out.size() != rows) {
    throw std::invalid_argument("Booster::predict_dense: expected [" + std::to_string(rows) + ", " +
                                std::to_string(num_features_) + "] input and [" +
                                std::to_string(rows) + "] output");
  }
  if (rows == 0) return;
  // __array_interface__ (version 3) pointing at the caller's floats: nothing is copied.
  char iface[160];
  std::snprintf(iface, sizeof iface,
                R"({"data": [%llu, true], "shape": [%zu, %zu], "typestr": "<f4", "version": 3})",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(data.data())), rows,
                num_features_);
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  XGB_CHECK(XGBoosterPredictFromDense(h_.get(), iface, inplace_config_.c_str(), nullptr, &shape,
                                      &dim, &result));
  size_t n = 1;
  for (bst_ulong d = 0; d < dim; ++d) n *= shape[d];
  if (n != rows) {  // load_buffer refuses such models; this guards the invariant
    throw XgbError(fmt::format("XGBoost: {} outputs for {} rows: the model is not single-output", n, rows));
  }
  std::copy(result, result + rows, out.begin());
}

float Booster::predict_row(std::span<const float> row) const {
  float out = 0;
  predict_dense(row, 1, std::span<float>(&out, 1));
  return out;
}

int Booster::num_rounds() const {
  int n = 0;
  XGB_CHECK(XGBoosterBoostedRounds(h_.get(), &n));
  return n;
}

}  // namespace peakcast::models
