// Policy names and the factory simulate uses.
#include <algorithm>

#include "peakcast/sizing/policy.h"

namespace peakcast::sizing {

RecommendConfig PolicyOptions::simulate_recommend_config() {
  RecommendConfig c;
  c.defaults.margin_fraction = 0.0;
  c.defaults.margin_bytes = 0;
  c.defaults.granularity_bytes = 1ull << 20;
  c.defaults.floor_bytes = 0;
  c.defaults.allow_above_request = false;
  c.defaults.oom_factor = 1.0;  // the policy's retry rule sets the step; the rule keeps it above the failure
  return c;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> kNames = {
      "presets", "witt_p95",   "witt_lr_std", "witt_lr_stdunder", "tovar",
      "max_so_far", "vpa",     "peakcast",    "peakcast_fixed90"};
  return kNames;
}

const std::vector<std::string>& default_policy_names() { return policy_names(); }

bool is_baseline(const std::string& policy) {
  const auto& names = policy_names();
  const auto own = std::find(names.begin(), names.end(), "peakcast");  // the first of peakcast's
  return std::find(names.begin(), own, policy) != own;
}

Result<std::unique_ptr<SizingPolicy>> make_policy(const std::string& name, const PolicyOptions& o) {
  if (name == "peakcast") return make_peakcast(o, true);
  if (name == "peakcast_fixed90") return make_peakcast(o, false);
  if (name == "presets") return make_presets();
  if (name == "witt_p95") return make_witt_percentile(0.95);
  if (name == "witt_lr_std") return make_witt_lr(false);
  if (name == "witt_lr_stdunder") return make_witt_lr(true);
  if (name == "tovar") return make_tovar();
  if (name == "max_so_far") return make_max_so_far();
  if (name == "vpa") return make_vpa();
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  return Status::invalid("unknown sizing policy '" + name + "' (known: " + known + ")");
}

}  // namespace peakcast::sizing
