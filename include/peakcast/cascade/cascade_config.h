// Configuration of the reliability-gated cascade (docs/method.md §4–7, §10): the code model's own
// config, the protocol shares that keep gate/fusion training out of the code model's sight, the
// XGBoost parameters of the gate C_{r,e} and fusion G_{r,e}, the grids the policy is chosen from on
// validation, the exact cache and the conformal upper bound. JSON keys equal the field names;
// unknown keys and out-of-range values are errors naming the field. Torch-free.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/core/status.h"
#include "peakcast/models/code/code_config.h"
#include "peakcast/models/gbdt.h"

namespace peakcast::cascade {

struct CascadeConfig {
  // The code predictor Q. Defaults for the cascade favour CPU training time (see cascade_model.h).
  models::code::CodeModelConfig code = default_code_config();

  // ---- protocol (see cascade_train.h) ----
  // Share of the train block (last jobs by submit order) held out for the code model's early
  // stopping. In (0, 0.5].
  double code_holdout_share = 0.1;
  // Share of the validation block (first jobs by submit order) on which gate and fusion are fit;
  // the rest chooses the policy and calibrates the upper bound. In (0, 1).
  double fit_share_of_validation = 0.5;

  // ---- gate and fusion ----
  double agreement_tol = 0.10;          // gate label: |H_e - Q| <= agreement_tol
  models::GbdtParams gate = default_gate_params();
  models::GbdtParams fusion = default_fusion_params();
  size_t min_component_examples = 30;   // fewer -> a constant instead of a booster
  // The tree route, Q's other candidate (tree_route.h): fit on the code model's fit set with
  // early stopping on its holdout; refit on train + validation for serving when chosen.
  models::GbdtParams tree = default_tree_params();
  // Boosters in the tree route's bag, seeds tree.seed + k * TreeRoute::kBagSeedStep, averaged.
  // 5 against 1 (the cascade, 5 seeds, split / fold means): gpumemnet 0.1174 -> 0.1151 /
  // 0.1301 -> 0.1297, chipseq 0.0877 / 0.0749 -> 0.0738, mag 0.0354 -> 0.0351 / 0.0444, eager
  // unchanged; the seeds' spread halves on gpumemnet; LANL 0.1027 -> 0.1040 / 0.1055 -> 0.1041
  // (docs/evaluation.md). `--cascade-option tree_bag=1` restores one booster's cost.
  size_t tree_bag = 5;

  // ---- policy grids (chosen jointly per resource on the policy half of validation) ----
  // tau > 1 means "never bypass".
  std::vector<double> tau_grid{0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.01};
  std::vector<double> trust_coef_grid{1.0, 2.0, 3.0, 5.0, 1e9};   // 1e9: no trust region
  std::vector<double> trust_floor_grid{0.02, 0.05, 0.1, 0.2};
  // The policy keeps history alone (history_only) unless the best grid entry's MAE on the policy
  // set is lower by more than this many standard errors of the paired per-job difference: a
  // choice on a small block must show a clear gain. 0 = plain lowest MAE.
  double history_margin_se = 2.0;
  bool allow_history_only = true;       // false: the policy is always a grid entry
  // Q's source: "auto" (the better on the gate/fusion set), "code_model", "tree_route" or
  // "mean" (of both).
  std::string q_source = "auto";
  // With "auto", how many cluster-robust standard errors (by script) a source's Q must beat the
  // other's by on the gate/fusion set to be chosen; 0 = the lower MAE.
  double q_source_margin_se = 0.0;
  // With "auto" and a margin, the source where neither wins by it: "code_model" or "mean".
  std::string q_source_unclear = "code_model";

  // ---- serving ----
  size_t cache_capacity = 65536;        // exact-cache entries (LRU); 0 disables the cache

  // ---- upper bound (docs/method.md §10) ----
  double coverage = 0.9;                // split-conformal coverage of upper_util; in (0, 1)
  size_t min_conformal = 30;            // fewer residuals in a route class -> pooled per resource

  static models::code::CodeModelConfig default_code_config();
  static models::GbdtParams default_gate_params();
  static models::GbdtParams default_fusion_params();
  static models::GbdtParams default_tree_params();

  Status validate() const;
};

// One `--cascade-option KEY=VALUE` setting (peakcast train / evaluate / report) over `cfg`:
// KEY is an option above (tree_bag, coverage, q_source, ...) or MEMBER.KEY for the XGBoost
// parameters of gate, fusion and tree (tree.max_depth=8). VALUE is read as JSON (numbers, true,
// false, [0.5, 0.9]), else as text (q_source=tree_route), and "a,b,c" as a list of numbers. Refused
// with a reason: unknown keys (the valid ones listed), values out of bounds, `code` (that is
// --code-option's), and MEMBER.seed / MEMBER.nthread (--seed and --threads set those). `cfg` is
// left as it was when the setting is refused; the result is validated.
Status set_cascade_option(CascadeConfig& cfg, std::string_view key, std::string_view value);
// Lines for --help: "NAME  BOUNDS  DEFAULT  DESCRIPTION" per settable option.
std::vector<std::string> cascade_option_help();

nlohmann::json to_json(const CascadeConfig& c);
// Missing keys keep their defaults; unknown keys are errors; the result is validated.
Result<CascadeConfig> cascade_config_from_json(const nlohmann::json& j);

nlohmann::json to_json(const models::GbdtParams& p);
Result<models::GbdtParams> gbdt_params_from_json(const nlohmann::json& j);

}  // namespace peakcast::cascade
