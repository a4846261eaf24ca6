// The tree route (tree_route.h): sparse rows of gate features + user + script n-grams.
#include "peakcast/cascade/tree_route.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "peakcast/features/tokenizer.h"
#include "peakcast/models/code/code_text.h"

namespace peakcast::cascade {
namespace {

constexpr size_t kUserBuckets = size_t{1} << 16;
constexpr size_t kTokenBuckets = size_t{1} << 18;
constexpr size_t kUserOffset = 0;  // hashed-column space, before renumbering
constexpr size_t kTokenOffset = kUserOffset + kUserBuckets;
constexpr size_t kMaxTokens = 4096;

}  // namespace

TreeRoute::TreeRoute(history::Expert h_expert, std::array<double, kNumResources> fallback,
                     std::array<history::ExpertPriors, kNumResources> priors)
    : h_expert_(h_expert), fallback_(fallback), priors_(priors) {}

std::vector<uint32_t> TreeRoute::hashed_columns(const Job& job) {
  std::vector<uint32_t> cols;
  if (!job.user.empty()) {
    cols.push_back(static_cast<uint32_t>(
        kUserOffset + static_cast<size_t>(features::token_bucket(
                          "user:" + job.user, static_cast<int64_t>(kUserBuckets)))));
  }
  const auto tokens = models::code::code_tokens(models::code::code_text(job), kMaxTokens);
  for (int64_t id : features::hashed_ngrams(tokens, static_cast<int64_t>(kTokenBuckets))) {
    cols.push_back(static_cast<uint32_t>(kTokenOffset + static_cast<size_t>(id)));
  }
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  return cols;
}

void TreeRoute::build_columns(std::span<const Job* const> jobs) {
  std::map<uint32_t, size_t> seen;  // ordered: the numbering does not depend on hashing order
  for (const Job* j : jobs) {
    for (uint32_t c : hashed_columns(*j)) ++seen[c];
  }
  columns_.clear();
  for (const auto& [c, n] : seen) {
    if (n >= kMinColumnJobs) {
      columns_.emplace(c, static_cast<uint32_t>(kGateFeatures + columns_.size()));
    }
  }
}

void TreeRoute::add_row(models::CsrMatrix& m, const Row& row, Resource r) const {
  const auto ri = static_cast<size_t>(idx(r));
  const GateFeatures g = gate_features(*row.job, *row.view, h_expert_, fallback_[ri], priors_[ri]);
  std::vector<uint32_t> index;
  std::vector<float> value;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) continue;  // missing
    index.push_back(static_cast<uint32_t>(i));
    value.push_back(g[i]);
  }
  const size_t first = index.size();
  for (uint32_t c : hashed_columns(*row.job)) {
    auto it = columns_.find(c);
    if (it == columns_.end()) continue;  // too rare when the columns were built: not a feature
    index.push_back(it->second);
  }
  std::sort(index.begin() + static_cast<std::ptrdiff_t>(first), index.end());
  value.resize(index.size(), 1.0f);
  m.add_row(index, value);
}

models::TrainReport TreeRoute::fit(Resource r, std::span<const Row> train, std::span<const float> y,
                                   std::span<const Row> valid, std::span<const float> y_valid,
                                   models::GbdtParams params, size_t bag) {
  const auto ri = static_cast<size_t>(idx(r));
  models::TrainReport report;
  boosters_[ri].clear();
  if (train.size() < 2) return report;
  models::CsrMatrix mt;
  mt.cols = width();
  for (const Row& row : train) add_row(mt, row, r);
  models::DMatrix dtrain = models::DMatrix::from_csr(mt);
  dtrain.set_labels(y);
  std::optional<models::DMatrix> dvalid;
  if (!valid.empty() && params.early_stopping_rounds > 0) {
    models::CsrMatrix mv;
    mv.cols = width();
    for (const Row& row : valid) add_row(mv, row, r);
    dvalid.emplace(models::DMatrix::from_csr(mv));
    dvalid->set_labels(y_valid);
  } else {
    params.early_stopping_rounds = 0;
  }
  const uint64_t seed = params.seed;
  for (size_t k = 0; k < std::max<size_t>(bag, 1); ++k) {
    params.seed = seed + k * kBagSeedStep;
    models::TrainReport rk;
    boosters_[ri].push_back(models::Booster::train(params, dtrain, dvalid ? &*dvalid : nullptr, &rk));
    if (k == 0) report = std::move(rk);
  }
  return report;
}

double TreeRoute::predict(const Job& job, const history::HistoryView& view, Resource r) const {
  const auto ri = static_cast<size_t>(idx(r));
  const std::vector<models::Booster>& bag = boosters_[ri];
  if (bag.empty()) return fallback_[ri];
  std::vector<float> dense(bag.front().num_features(), models::kMissing);  // one DMatrix: one width
  const GateFeatures g = gate_features(job, view, h_expert_, fallback_[ri], priors_[ri]);
  std::copy(g.begin(), g.end(), dense.begin());
  for (uint32_t c : hashed_columns(job)) {
    auto it = columns_.find(c);
    if (it != columns_.end() && it->second < dense.size()) dense[it->second] = 1.0f;
  }
  double sum = 0;
  for (const models::Booster& b : bag) {
    sum += static_cast<double>(b.predict_row(dense));
  }
  return sum / static_cast<double>(bag.size());
}

std::vector<double> TreeRoute::predict_batch(std::span<const Row> rows, Resource r) const {
  const auto ri = static_cast<size_t>(idx(r));
  std::vector<double> out(rows.size(), fallback_[ri]);
  const std::vector<models::Booster>& bag = boosters_[ri];
  if (bag.empty() || rows.empty()) return out;
  models::CsrMatrix m;
  m.cols = width();
  for (const Row& row : rows) add_row(m, row, r);
  const models::DMatrix dm = models::DMatrix::from_csr(m);
  std::vector<double> sum(rows.size(), 0.0);
  for (const models::Booster& b : bag) {
    const std::vector<float> y = b.predict(dm);
    for (size_t i = 0; i < rows.size(); ++i) sum[i] += static_cast<double>(y.at(i));
  }
  for (size_t i = 0; i < rows.size(); ++i) out[i] = sum[i] / static_cast<double>(bag.size());
  return out;
}

int TreeRoute::rounds(Resource r) const {
  const std::vector<models::Booster>& bag = boosters_[static_cast<size_t>(idx(r))];
  if (bag.empty()) return 0;
  int64_t sum = 0;
  for (const models::Booster& b : bag) sum += b.num_rounds();
  const auto n = static_cast<int64_t>(bag.size());
  return static_cast<int>((sum + n / 2) / n);
}

nlohmann::json TreeRoute::to_json() const {
  nlohmann::json j;
  j["h_expert"] = std::string(history::expert_name(h_expert_));
  j["fallback"] = fallback_;
  nlohmann::json priors = nlohmann::json::array();
  for (const history::ExpertPriors& p : priors_) priors.push_back({{"err", p.err}, {"n", p.n}});
  j["priors"] = priors;
  // Sorted pairs, so the file does not depend on the hash map's order.
  std::vector<std::pair<uint32_t, uint32_t>> cols(columns_.begin(), columns_.end());
  std::sort(cols.begin(), cols.end());
  j["columns"] = cols;
  return j;
}

std::vector<std::string> TreeRoute::booster_bytes(Resource r) const {
  std::vector<std::string> out;
  for (const models::Booster& b : boosters_[static_cast<size_t>(idx(r))]) out.push_back(b.save_buffer());
  return out;
}

Result<TreeRoute> TreeRoute::from_json(const nlohmann::json& j,
                                       std::array<std::vector<models::Booster>, kNumResources> boosters) {
  try {
    TreeRoute t;
    const auto e = history::parse_expert(j.at("h_expert").get<std::string>());
    if (!e) return Status::invalid("tree_route: unknown h_expert");
    t.h_expert_ = *e;
    t.fallback_ = j.at("fallback").get<std::array<double, kNumResources>>();
    const auto& priors = j.at("priors");
    if (!priors.is_array() || priors.size() != kNumResources) {
      return Status::invalid("tree_route: priors: expected one entry per resource");
    }
    for (size_t r = 0; r < kNumResources; ++r) {
      t.priors_[r].err = priors[r].at("err").get<std::array<std::array<double, history::kNumExperts>, 2>>();
      t.priors_[r].n = priors[r].at("n").get<std::array<size_t, 2>>();
    }
    for (const auto& [hashed, feature] : j.at("columns").get<std::vector<std::pair<uint32_t, uint32_t>>>()) {
      t.columns_.emplace(hashed, feature);
    }
    for (size_t r = 0; r < kNumResources; ++r) {
      for (models::Booster& b : boosters[r]) {
        if (b.num_features() > t.width()) {
          return Status::invalid("tree_route: booster reads more features than the column map has");
        }
        t.boosters_[r].push_back(std::move(b));
      }
    }
    return t;
  } catch (const nlohmann::json::exception& ex) {
    return Status::invalid(std::string("tree_route: ") + ex.what());
  }
}

}  // namespace peakcast::cascade
