// GbdtParams' option table: bounds, help and JSON names of the XGBoost parameters, declared once.
#include <string>

#include "peakcast/core/options.h"
#include "peakcast/models/gbdt.h"

namespace peakcast::models {
namespace {

using options::Custom;
using options::kInf;
using options::open;

constexpr GbdtObjective kObjectives[] = {GbdtObjective::kBinaryLogistic,
                                         GbdtObjective::kRegSquaredError, GbdtObjective::kRegLogistic};

nlohmann::json get_objective(const GbdtParams& p) {
  return std::string(objective_name(p.objective));
}

Status set_objective(GbdtParams& p, const nlohmann::json& v) {
  const std::string name = v.is_string() ? v.get<std::string>() : "";
  for (GbdtObjective o : kObjectives) {
    if (objective_name(o) == name) {
      p.objective = o;
      return Status::ok();
    }
  }
  return Status::invalid("objective: unknown (valid: binary:logistic, reg:squarederror, reg:logistic)");
}

}  // namespace

const std::vector<options::OptionSpec<GbdtParams>>& gbdt_param_specs() {
  using P = GbdtParams;
  static const std::vector<options::OptionSpec<P>> kSpecs = {
      {"objective", Custom<P>{get_objective, set_objective}, {-kInf}, {kInf},
       "binary:logistic | reg:squarederror | reg:logistic"},
      {"max_depth", &P::max_depth, {1}, {32}, "tree depth"},
      {"eta", &P::eta, open(0), {1}, "learning rate"},
      {"n_rounds", &P::n_rounds, {1}, {kInf}, "boosting rounds"},
      {"nthread", &P::nthread, {0}, {kInf}, "threads (0 = all cores)"},
      // XGBoost parses seed as a signed 64-bit integer ("expect long"): 2^63 and up fail there.
      {"seed", &P::seed, {0}, open(9223372036854775808.0), "random seed (below 2^63)"},
      {"subsample", &P::subsample, open(0), {1}, "share of rows per tree"},
      {"colsample_bytree", &P::colsample_bytree, open(0), {1}, "share of columns per tree"},
      {"min_child_weight", &P::min_child_weight, {0}, {kInf}, "minimum hessian sum per leaf"},
      {"lambda", &P::lambda, {0}, {kInf}, "L2 regularization of leaf weights"},
      {"early_stopping_rounds", &P::early_stopping_rounds, {0}, {kInf},
       "stop after this many rounds without validation improvement (0 = off)"},
  };
  return kSpecs;
}

Status GbdtParams::validate() const {
  return options::validate(gbdt_param_specs(), *this).with_context("gbdt params");
}

}  // namespace peakcast::models
