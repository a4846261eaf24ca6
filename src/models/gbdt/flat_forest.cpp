#include "models/gbdt/flat_forest.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace peakcast::models::detail {

namespace {
float to_float(const nlohmann::json& v) {
  if (v.is_string()) return std::stof(v.get<std::string>());  // learner params are strings
  return static_cast<float>(v.get<double>());  // UBJ float32 read exactly into a double
}
}  // namespace

std::optional<FlatForest> FlatForest::from_ubj(std::string_view ubj_bytes) {
  try {
    auto j = nlohmann::json::from_ubjson(ubj_bytes);
    const auto& learner = j.at("learner");
    const auto& mp = learner.at("learner_model_param");
    if (std::stoi(mp.at("num_class").get<std::string>()) > 1) return std::nullopt;
    if (mp.contains("num_target") && std::stoi(mp.at("num_target").get<std::string>()) != 1) {
      return std::nullopt;
    }
    FlatForest f;
    f.num_features_ = std::stoul(mp.at("num_feature").get<std::string>());
    const float base_score = to_float(mp.at("base_score"));
    const std::string obj = learner.at("objective").at("name").get<std::string>();
    if (obj == "reg:squarederror") {
      f.transform_ = Transform::kIdentity;
      f.base_margin_ = base_score;
    } else if (obj == "binary:logistic" || obj == "reg:logistic") {
      f.transform_ = Transform::kSigmoid;
      f.base_margin_ = -std::log(1.0f / base_score - 1.0f);  // XGBoost's ProbToMargin, in float
    } else {
      return std::nullopt;
    }
    const auto& gb = learner.at("gradient_booster");
    if (gb.at("name").get<std::string>() != "gbtree") return std::nullopt;
    for (const auto& t : gb.at("model").at("trees")) {
      if (!t.at("categories_nodes").empty()) return std::nullopt;
      const auto& left = t.at("left_children");
      const auto& right = t.at("right_children");
      const auto& feat = t.at("split_indices");
      const auto& cond = t.at("split_conditions");
      const auto& defl = t.at("default_left");
      const size_t n = left.size();
      if (right.size() != n || feat.size() != n || cond.size() != n || defl.size() != n) {
        return std::nullopt;
      }
      const auto offset = static_cast<int32_t>(f.nodes_.size());
      f.roots_.push_back(static_cast<uint32_t>(offset));
      for (size_t i = 0; i < n; ++i) {
        Node node;
        int32_t l = left[i].get<int32_t>();
        int32_t r = right[i].get<int32_t>();
        if (l >= 0) {
          if (l >= static_cast<int32_t>(n) || r < 0 || r >= static_cast<int32_t>(n)) return std::nullopt;
          node.left = offset + l;
          node.right = offset + r;
          node.feature = feat[i].get<uint32_t>();
          if (node.feature >= f.num_features_) return std::nullopt;
          node.default_left = defl[i].get<int>() != 0;
        }
        node.value = to_float(cond[i]);
        f.nodes_.push_back(node);
      }
    }
    return f;
  } catch (const std::exception&) {
    return std::nullopt;  // a layout we do not know: XGBoost's own path stays in use
  }
}

float FlatForest::predict(const float* row) const {
  float margin = base_margin_;
  const Node* nodes = nodes_.data();
  for (uint32_t root : roots_) {
    const Node* n = nodes + root;
    while (n->left >= 0) {
      const float v = row[n->feature];
      const bool go_left = std::isnan(v) ? n->default_left : v < n->value;
      n = nodes + (go_left ? n->left : n->right);
    }
    margin += n->value;
  }
  if (transform_ == Transform::kSigmoid) {
    // XGBoost's common::Sigmoid, step for step: the exponent is capped at 88.7 (expf's float
    // range), so a margin below -88.7 gives 1/expf(88.7) = 3.0e-39, not 0.
    constexpr float kEps = 1e-16f;
    const float x = std::min(-margin, 88.7f);
    return 1.0f / (std::exp(x) + 1.0f + kEps);
  }
  return margin;
}

}  // namespace peakcast::models::detail
