// CascadeConfig: defaults, bounds and the JSON form (unknown keys are errors).
#include "peakcast/cascade/cascade_config.h"

#include <cmath>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace peakcast::cascade {
namespace {

bool in_open01(double v) { return std::isfinite(v) && v > 0.0 && v < 1.0; }

Status check_grid(const std::vector<double>& g, const char* name, double lo, double hi) {
  if (g.empty()) return Status::invalid(std::string(name) + ": needs at least one value");
  for (double v : g) {
    if (!std::isfinite(v) || v < lo || v > hi) {
      return Status::invalid(std::string(name) + ": " + std::to_string(v) + " out of range [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
  }
  return Status::ok();
}

template <typename T>
Status read_number(const nlohmann::json& v, const std::string& key, T& out) {
  if (!v.is_number()) return Status::invalid(key + ": expected a number");
  if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer() || (std::is_unsigned_v<T> && v.get<int64_t>() < 0))
      return Status::invalid(key + ": expected a non-negative integer");
  }
  out = v.get<T>();
  return Status::ok();
}

Status read_grid(const nlohmann::json& v, const std::string& key, std::vector<double>& out) {
  if (!v.is_array()) return Status::invalid(key + ": expected an array of numbers");
  out.clear();
  for (const auto& x : v) {
    if (!x.is_number()) return Status::invalid(key + ": expected an array of numbers");
    out.push_back(x.get<double>());
  }
  return Status::ok();
}

}  // namespace

models::code::CodeModelConfig CascadeConfig::default_code_config() {
  // The bag encoder sized for two CPU cores: 2^16 hashed buckets x 32 dims, batch 256, at most
  // 12 epochs (patience 3). 30 epochs let the GPU trace's model improve (code_only fold means
  // 0.1686 -> 0.1590) but made the cascade worse there (0.1324 -> 0.1372): Q's source, chosen on
  // a ~200-job half, then took the code model in a fold the tree route wins (docs/evaluation.md). Measured on the 73k-job LANL SWF log (tests/cascade/real_data_test,
  // 2 cores shared with other builds): ~900 training jobs/s, early stop after 7 epochs, code
  // model 213 s, whole cascade 252 s -- inside the 10-minute budget with room for a busy machine.
  // On an idle machine (bench/cascade_bench, 1 thread) the whole cascade took 5.2 s.
  models::code::CodeModelConfig c;
  c.encoder = "bag";
  c.token_dim = 32;
  c.hash_buckets = 1 << 16;
  c.user_dim = 64;
  c.fused_dim = 256;
  c.batch_size = 256;
  c.max_epochs = 12;
  c.patience = 3;
  c.threads = 2;
  return c;
}

models::GbdtParams CascadeConfig::default_gate_params() {
  models::GbdtParams p;
  p.objective = models::GbdtObjective::kBinaryLogistic;
  p.max_depth = 4;
  p.eta = 0.1;
  p.n_rounds = 80;
  p.min_child_weight = 5.0;
  p.subsample = 1.0;
  p.nthread = 2;
  return p;
}

models::GbdtParams CascadeConfig::default_fusion_params() {
  models::GbdtParams p;
  // reg:logistic keeps gamma in [0, 1]; labels are clipped gamma* (see cascade_train.cpp).
  p.objective = models::GbdtObjective::kRegLogistic;
  p.max_depth = 4;
  p.eta = 0.1;
  p.n_rounds = 80;
  p.min_child_weight = 5.0;
  p.nthread = 2;
  return p;
}

models::GbdtParams CascadeConfig::default_tree_params() {
  // The `xgboost` baseline's settings: deep enough for the token columns, early-stopped.
  models::GbdtParams p;
  p.objective = models::GbdtObjective::kRegSquaredError;
  p.max_depth = 6;
  p.eta = 0.1;
  p.n_rounds = 300;
  p.early_stopping_rounds = 20;
  p.subsample = 0.8;
  p.colsample_bytree = 0.8;
  p.min_child_weight = 1.0;
  p.nthread = 2;
  return p;
}

Status CascadeConfig::validate() const {
  if (auto st = code.validate(); !st) return st.with_context("code");
  if (!(std::isfinite(code_holdout_share) && code_holdout_share > 0.0 && code_holdout_share <= 0.5))
    return Status::invalid("code_holdout_share: must be in (0, 0.5]");
  if (!in_open01(fit_share_of_validation))
    return Status::invalid("fit_share_of_validation: must be in (0, 1)");
  if (!(std::isfinite(agreement_tol) && agreement_tol > 0.0))
    return Status::invalid("agreement_tol: must be > 0");
  if (auto st = gate.validate(); !st) return st.with_context("gate");
  if (auto st = fusion.validate(); !st) return st.with_context("fusion");
  if (auto st = tree.validate(); !st) return st.with_context("tree");
  if (tree.objective != models::GbdtObjective::kRegSquaredError)
    return Status::invalid("tree.objective: must be reg:squarederror");
  if (!(std::isfinite(history_margin_se) && history_margin_se >= 0.0))
    return Status::invalid("history_margin_se: must be >= 0");
  if (q_source != "auto" && q_source != "code_model" && q_source != "tree_route")
    return Status::invalid("q_source: must be auto, code_model or tree_route");
  if (gate.objective != models::GbdtObjective::kBinaryLogistic)
    return Status::invalid("gate.objective: must be binary:logistic");
  if (fusion.objective != models::GbdtObjective::kRegLogistic)
    return Status::invalid("fusion.objective: must be reg:logistic (gamma in [0, 1])");
  if (min_component_examples < 2) return Status::invalid("min_component_examples: must be >= 2");
  if (auto st = check_grid(tau_grid, "tau_grid", 0.0, 2.0); !st) return st;
  if (auto st = check_grid(trust_coef_grid, "trust_coef_grid", 0.0, 1e9); !st) return st;
  if (auto st = check_grid(trust_floor_grid, "trust_floor_grid", 0.0, 1e6); !st) return st;
  if (!in_open01(coverage)) return Status::invalid("coverage: must be in (0, 1)");
  if (min_conformal < 1) return Status::invalid("min_conformal: must be >= 1");
  return Status::ok();
}

nlohmann::json to_json(const models::GbdtParams& p) {
  return {{"objective", std::string(models::objective_name(p.objective))},
          {"max_depth", p.max_depth}, {"eta", p.eta}, {"n_rounds", p.n_rounds},
          {"nthread", p.nthread}, {"seed", p.seed}, {"subsample", p.subsample},
          {"colsample_bytree", p.colsample_bytree}, {"min_child_weight", p.min_child_weight},
          {"lambda", p.lambda}, {"early_stopping_rounds", p.early_stopping_rounds}};
}

Result<models::GbdtParams> gbdt_params_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::invalid("expected an object");
  models::GbdtParams p;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    Status st;
    if (k == "objective") {
      const std::string name = it->is_string() ? it->get<std::string>() : "";
      bool found = false;
      for (auto o : {models::GbdtObjective::kBinaryLogistic, models::GbdtObjective::kRegSquaredError,
                     models::GbdtObjective::kRegLogistic}) {
        if (models::objective_name(o) == name) { p.objective = o; found = true; }
      }
      if (!found) st = Status::invalid("objective: unknown (valid: binary:logistic, reg:squarederror, reg:logistic)");
    } else if (k == "max_depth") { st = read_number(*it, k, p.max_depth);
    } else if (k == "eta") { st = read_number(*it, k, p.eta);
    } else if (k == "n_rounds") { st = read_number(*it, k, p.n_rounds);
    } else if (k == "nthread") { st = read_number(*it, k, p.nthread);
    } else if (k == "seed") { st = read_number(*it, k, p.seed);
    } else if (k == "subsample") { st = read_number(*it, k, p.subsample);
    } else if (k == "colsample_bytree") { st = read_number(*it, k, p.colsample_bytree);
    } else if (k == "min_child_weight") { st = read_number(*it, k, p.min_child_weight);
    } else if (k == "lambda") { st = read_number(*it, k, p.lambda);
    } else if (k == "early_stopping_rounds") { st = read_number(*it, k, p.early_stopping_rounds);
    } else {
      st = Status::invalid(k + ": unknown key (valid: objective, max_depth, eta, n_rounds, nthread, "
                           "seed, subsample, colsample_bytree, min_child_weight, lambda, "
                           "early_stopping_rounds)");
    }
    if (!st) return st;
  }
  if (auto st = p.validate(); !st) return st;
  return p;
}

nlohmann::json to_json(const CascadeConfig& c) {
  return {{"code", models::code::to_json(c.code)},
          {"code_holdout_share", c.code_holdout_share},
          {"fit_share_of_validation", c.fit_share_of_validation},
          {"agreement_tol", c.agreement_tol},
          {"gate", to_json(c.gate)},
          {"fusion", to_json(c.fusion)},
          {"tree", to_json(c.tree)},
          {"history_margin_se", c.history_margin_se},
          {"allow_history_only", c.allow_history_only},
          {"q_source", c.q_source},
          {"min_component_examples", c.min_component_examples},
          {"tau_grid", c.tau_grid},
          {"trust_coef_grid", c.trust_coef_grid},
          {"trust_floor_grid", c.trust_floor_grid},
          {"cache_capacity", c.cache_capacity},
          {"coverage", c.coverage},
          {"min_conformal", c.min_conformal}};
}

Result<CascadeConfig> cascade_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::invalid("cascade config: expected a JSON object");
  CascadeConfig c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    Status st;
    if (k == "code") {
      auto cc = models::code::code_config_from_json(*it);
      if (!cc) return cc.status().with_context("code");
      c.code = *cc;
    } else if (k == "gate" || k == "fusion" || k == "tree") {
      auto p = gbdt_params_from_json(*it);
      if (!p) return p.status().with_context(k);
      (k == "gate" ? c.gate : k == "fusion" ? c.fusion : c.tree) = *p;
    } else if (k == "history_margin_se") { st = read_number(*it, k, c.history_margin_se);
    } else if (k == "allow_history_only") {
      if (!it->is_boolean()) return Status::invalid(k + ": expected true or false");
      c.allow_history_only = it->get<bool>();
    } else if (k == "q_source") {
      if (!it->is_string()) return Status::invalid(k + ": expected a string");
      c.q_source = it->get<std::string>();
    } else if (k == "code_holdout_share") { st = read_number(*it, k, c.code_holdout_share);
    } else if (k == "fit_share_of_validation") { st = read_number(*it, k, c.fit_share_of_validation);
    } else if (k == "agreement_tol") { st = read_number(*it, k, c.agreement_tol);
    } else if (k == "min_component_examples") { st = read_number(*it, k, c.min_component_examples);
    } else if (k == "tau_grid") { st = read_grid(*it, k, c.tau_grid);
    } else if (k == "trust_coef_grid") { st = read_grid(*it, k, c.trust_coef_grid);
    } else if (k == "trust_floor_grid") { st = read_grid(*it, k, c.trust_floor_grid);
    } else if (k == "cache_capacity") { st = read_number(*it, k, c.cache_capacity);
    } else if (k == "coverage") { st = read_number(*it, k, c.coverage);
    } else if (k == "min_conformal") { st = read_number(*it, k, c.min_conformal);
    } else {
      st = Status::invalid(k + ": unknown cascade config key (valid: code, code_holdout_share, "
                           "fit_share_of_validation, agreement_tol, gate, fusion, tree, history_margin_se, "
                           "allow_history_only, q_source, "
                           "min_component_examples, tau_grid, trust_coef_grid, trust_floor_grid, "
                           "cache_capacity, coverage, min_conformal)");
    }
    if (!st) return st;
  }
  if (auto st = c.validate(); !st) return st;
  return c;
}

}  // namespace peakcast::cascade
