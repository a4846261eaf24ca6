// CascadeConfig: defaults, bounds and the JSON form (unknown keys are errors), each option
// declared once in the tables below (core/options.h).
#include "peakcast/cascade/cascade_config.h"

#include <string>
#include <type_traits>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "peakcast/core/options.h"

namespace peakcast::cascade {
namespace {

using options::Custom;
using options::kInf;
using options::open;
using CascadeSpec = options::OptionSpec<CascadeConfig>;

template <models::GbdtParams CascadeConfig::*M>
const char* member_name() {
  return M == &CascadeConfig::gate ? "gate" : M == &CascadeConfig::fusion ? "fusion" : "tree";
}

// A GbdtParams member of the cascade (gate, fusion, tree): its JSON form, its reading and its
// check, with the objective the cascade needs.
template <models::GbdtParams CascadeConfig::*M, models::GbdtObjective kObjective>
Custom<CascadeConfig> gbdt_member() {
  return {[](const CascadeConfig& c) { return to_json(c.*M); },
          [](CascadeConfig& c, const nlohmann::json& v) -> Status {
            auto p = gbdt_params_from_json(v);
            if (!p) return p.status().with_context(member_name<M>());
            c.*M = *p;
            return Status::ok();
          },
          [](const CascadeConfig& c) -> Status {
            const std::string n = member_name<M>();
            if (Status st = (c.*M).validate(); !st) return st.with_context(n);
            if ((c.*M).objective != kObjective) {
              return Status::invalid(n + ".objective: must be " +
                                     std::string(models::objective_name(kObjective)));
            }
            return Status::ok();
          }};
}

const std::vector<CascadeSpec>& cascade_specs() {
  using C = CascadeConfig;
  using models::GbdtObjective;
  static const std::vector<CascadeSpec> kSpecs = {
      {"code",
       Custom<C>{[](const C& c) { return models::code::to_json(c.code); },
                 [](C& c, const nlohmann::json& v) -> Status {
                   auto cc = models::code::code_config_from_json(v);
                   if (!cc) return cc.status().with_context("code");
                   c.code = *cc;
                   return Status::ok();
                 },
                 [](const C& c) { return c.code.validate().with_context("code"); }},
       {-kInf}, {kInf}, "the code model Q's configuration"},
      {"code_holdout_share", &C::code_holdout_share, open(0), {0.5},
       "share of the train block held out for the code model's early stopping"},
      {"fit_share_of_validation", &C::fit_share_of_validation, open(0), open(1),
       "share of the validation block gate and fusion are fit on"},
      {"agreement_tol", &C::agreement_tol, open(0), {kInf}, "gate label: |H_e - Q| <= this"},
      {"gate", gbdt_member<&C::gate, GbdtObjective::kBinaryLogistic>(), {-kInf}, {kInf},
       "XGBoost parameters of the gate C_{r,e}"},
      {"fusion", gbdt_member<&C::fusion, GbdtObjective::kRegLogistic>(), {-kInf}, {kInf},
       "XGBoost parameters of the fusion G_{r,e} (reg:logistic: gamma in [0, 1])"},
      {"tree", gbdt_member<&C::tree, GbdtObjective::kRegSquaredError>(), {-kInf}, {kInf},
       "XGBoost parameters of the tree route"},
      {"tree_bag", &C::tree_bag, {1}, {64}, "boosters averaged in the tree route, each with its own seed"},
      {"history_margin_se", &C::history_margin_se, {0}, {kInf},
       "standard errors the fused policy must win by over history alone"},
      {"allow_history_only", &C::allow_history_only, {-kInf}, {kInf},
       "false: the policy is always a grid entry"},
      {"q_source", &C::q_source, {-kInf}, {kInf}, "Q's source", "auto|code_model|tree_route|mean"},
      {"q_source_margin_se", &C::q_source_margin_se, {0}, {kInf},
       "auto: standard errors a Q source must win by over the other (0: lower MAE)"},
      {"q_source_unclear", &C::q_source_unclear, {-kInf}, {kInf},
       "auto with a margin: Q's source where neither wins by it", "code_model|mean"},
      {"min_component_examples", &C::min_component_examples, {2}, {kInf},
       "fewer examples: a constant instead of a booster"},
      {"tau_grid", &C::tau_grid, {0}, {2}, "gate thresholds tried (> 1: never bypass)"},
      {"trust_coef_grid", &C::trust_coef_grid, {0}, {1e9}, "trust-region MAD coefficients tried"},
      {"trust_floor_grid", &C::trust_floor_grid, {0}, {1e6}, "trust-region floors tried"},
      {"cache_capacity", &C::cache_capacity, {0}, {kInf}, "exact-cache entries (0 = off)"},
      {"coverage", &C::coverage, open(0), open(1), "split-conformal coverage of the upper bound"},
      {"min_conformal", &C::min_conformal, {1}, {kInf},
       "fewer residuals in a route class: pooled per resource"},
  };
  return kSpecs;
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

namespace {

// Gate and fusion: the same small boosters (a few thousand rows each), objectives apart.
models::GbdtParams small_booster(models::GbdtObjective objective) {
  models::GbdtParams p;
  p.objective = objective;
  p.max_depth = 4;
  p.eta = 0.1;
  p.n_rounds = 80;
  p.min_child_weight = 5.0;
  p.nthread = 2;
  return p;
}

}  // namespace

models::GbdtParams CascadeConfig::default_gate_params() {
  return small_booster(models::GbdtObjective::kBinaryLogistic);
}

models::GbdtParams CascadeConfig::default_fusion_params() {
  // reg:logistic keeps gamma in [0, 1]; labels are clipped gamma* (see cascade_train.cpp).
  return small_booster(models::GbdtObjective::kRegLogistic);
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
  if (Status st = options::validate(cascade_specs(), *this); !st) return st;
  // Settings that would be silently ignored: refused, so that a run says what it measured.
  if (q_source != "auto" && q_source_margin_se > 0.0) {
    return Status::invalid("q_source_margin_se: applies to q_source=auto only (q_source is " + q_source + ")");
  }
  if (q_source_unclear != "code_model" && (q_source != "auto" || q_source_margin_se <= 0.0)) {
    return Status::invalid("q_source_unclear: applies to q_source=auto with q_source_margin_se > 0 only (without a "
                           "margin the lower error always decides)");
  }
  return Status::ok();
}

nlohmann::json to_json(const models::GbdtParams& p) {
  return options::to_json(models::gbdt_param_specs(), p);
}

Result<models::GbdtParams> gbdt_params_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::invalid("expected an object");
  models::GbdtParams p;
  if (Status st = options::from_json(models::gbdt_param_specs(), j, p, "gbdt params"); !st) {
    return st;
  }
  return p;
}

nlohmann::json to_json(const CascadeConfig& c) { return options::to_json(cascade_specs(), c); }

namespace {

constexpr std::string_view kMembers[] = {"gate", "fusion", "tree"};

bool is_member(std::string_view name) {
  for (std::string_view m : kMembers) {
    if (name == m) return true;
  }
  return false;
}

// The XGBoost parameters a --cascade-option may set: not the objective (each booster's is the
// cascade's), nor seed and nthread (--seed and --threads).
std::string member_keys() {
  std::string out;
  for (const auto& p : models::gbdt_param_specs()) {
    const std::string_view n = p.name;
    if (n == "objective" || n == "seed" || n == "nthread") continue;
    out += (out.empty() ? "" : ", ") + std::string(n);
  }
  return out;
}

// VALUE as JSON where it is JSON; "0.5,0.9" as a list of numbers (a grid written for a shell);
// anything else as text.
nlohmann::json option_value(std::string_view value) {
  nlohmann::json v = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!v.is_discarded()) return v;
  if (value.find(',') != std::string_view::npos) {
    v = nlohmann::json::parse("[" + std::string(value) + "]", nullptr, false);
    if (!v.is_discarded()) return v;
  }
  return std::string(value);
}

}  // namespace

Status set_cascade_option(CascadeConfig& cfg, std::string_view key, std::string_view value) {
  const size_t dot = key.find('.');
  const std::string_view name = key.substr(0, dot);
  const std::string_view sub = dot == std::string_view::npos ? std::string_view{} : key.substr(dot + 1);
  const auto refuse = [&](const std::string& why) {
    return Status::invalid(fmt::format("--cascade-option {}: {}", key, why));
  };
  if (name == "code") return refuse("the code model's settings are --code-option KEY=VALUE");
  if (!is_member(name) && !options::find(cascade_specs(), name)) {
    return refuse(fmt::format("unknown cascade option (valid: {}; {}.KEY for XGBoost parameters)",
                              options::names(cascade_specs()), fmt::join(kMembers, ".KEY, ")));
  }
  if (is_member(name) != (dot != std::string_view::npos)) {
    return refuse(is_member(name)
                      ? fmt::format("{0} is a set of XGBoost parameters: give one, e.g. {0}.max_depth=6", name)
                      : fmt::format("{} has no parts", name));
  }
  if (sub == "seed" || sub == "nthread") {
    return refuse(fmt::format("the boosters' {} is {}", sub, sub == "seed" ? "--seed's" : "--threads'"));
  }
  if (sub == "objective") return refuse("each booster's objective is the cascade's own");
  nlohmann::json j = to_json(cfg);
  if (is_member(name)) {
    if (!options::find(models::gbdt_param_specs(), sub)) {
      return refuse(fmt::format("unknown XGBoost parameter (valid: {})", member_keys()));
    }
    j[std::string(name)][std::string(sub)] = option_value(value);
  } else {
    j[std::string(name)] = option_value(value);
  }
  Result<CascadeConfig> next = cascade_config_from_json(j);
  if (!next) return refuse(next.status().message());
  cfg = std::move(*next);
  return Status::ok();
}

std::vector<std::string> cascade_option_help() {
  const CascadeConfig defaults;
  const nlohmann::json dj = to_json(defaults);
  std::vector<std::string> out;
  for (const CascadeSpec& s : cascade_specs()) {
    if (s.name == std::string_view("code") || is_member(s.name)) continue;
    const std::string bounds = std::visit(
        [&](auto field) -> std::string {
          using F = decltype(field);
          if constexpr (std::is_same_v<F, std::string CascadeConfig::*>) {
            return s.choices ? s.choices : "text";
          } else if constexpr (std::is_same_v<F, bool CascadeConfig::*>) {
            return "true|false";
          } else if constexpr (std::is_same_v<F, std::vector<double> CascadeConfig::*>) {
            return "list in " + options::bounds_text(s.lo, s.hi);
          } else {
            return options::bounds_text(s.lo, s.hi);
          }
        },
        s.field);
    const nlohmann::json& d = dj[s.name];
    std::string shown = d.is_string() ? d.get<std::string>() : d.dump();
    if (d.is_array()) shown = shown.substr(1, shown.size() - 2);  // written as it is typed: a,b,c
    out.push_back(fmt::format("{:<24} {:<16} {} (default {})", s.name, bounds, s.help, shown));
  }
  const auto tree = to_json(defaults.tree), gate = to_json(defaults.gate);
  out.push_back(fmt::format(
      "{:<24} {:<16} one XGBoost parameter of the gate, the fusion or the tree route (MEMBER: gate, "
      "fusion, tree; KEY: {}; defaults: tree max_depth {}, eta {}, n_rounds {}; gate and fusion "
      "max_depth {}, n_rounds {})",
      "MEMBER.KEY", "number", member_keys(), tree["max_depth"].dump(), tree["eta"].dump(),
      tree["n_rounds"].dump(), gate["max_depth"].dump(), gate["n_rounds"].dump()));
  return out;
}

Result<CascadeConfig> cascade_config_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Status::invalid("cascade config: expected a JSON object");
  CascadeConfig c;
  if (Status st = options::from_json(cascade_specs(), j, c, "cascade config"); !st) return st;
  return c;
}

}  // namespace peakcast::cascade
