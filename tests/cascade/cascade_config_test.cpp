// CascadeConfig's settings from the command line (`--cascade-option KEY=VALUE`,
// set_cascade_option): each reaches its field through the same table as the JSON form, a refused
// setting leaves the configuration as it was and says why.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "peakcast/cascade/cascade_config.h"

namespace peakcast::cascade {
namespace {

// The message of a refused setting, "" when it was accepted.
std::string refusal(CascadeConfig& c, const std::string& key, const std::string& value) {
  const Status s = set_cascade_option(c, key, value);
  return s ? std::string() : s.message();
}

TEST(CascadeOption, SetsNumbersTextBooleansAndGrids) {
  CascadeConfig c;
  ASSERT_EQ(refusal(c, "tree_bag", "1"), "");
  EXPECT_EQ(c.tree_bag, 1u);
  ASSERT_EQ(refusal(c, "coverage", "0.95"), "");
  EXPECT_DOUBLE_EQ(c.coverage, 0.95);
  ASSERT_EQ(refusal(c, "q_source", "tree_route"), "");  // text, not JSON
  EXPECT_EQ(c.q_source, "tree_route");
  ASSERT_EQ(refusal(c, "allow_history_only", "false"), "");
  EXPECT_FALSE(c.allow_history_only);
  ASSERT_EQ(refusal(c, "tau_grid", "0.5,0.9,1.01"), "");  // as a shell user writes a list
  EXPECT_EQ(c.tau_grid, (std::vector<double>{0.5, 0.9, 1.01}));
  ASSERT_EQ(refusal(c, "trust_floor_grid", "[0.1]"), "");  // and as JSON
  EXPECT_EQ(c.trust_floor_grid, std::vector<double>{0.1});
  // Everything else kept its default.
  const CascadeConfig d;
  EXPECT_EQ(c.history_margin_se, d.history_margin_se);
  EXPECT_EQ(to_json(c.gate).dump(), to_json(d.gate).dump());
}

TEST(CascadeOption, SetsOneXgboostParameterOfAMember) {
  CascadeConfig c;
  const CascadeConfig d;
  ASSERT_EQ(refusal(c, "tree.max_depth", "8"), "");
  ASSERT_EQ(refusal(c, "gate.n_rounds", "40"), "");
  EXPECT_EQ(c.tree.max_depth, 8);
  EXPECT_EQ(c.gate.n_rounds, 40);
  EXPECT_EQ(c.tree.eta, d.tree.eta);
  EXPECT_EQ(c.fusion.n_rounds, d.fusion.n_rounds);
  EXPECT_EQ(c.tree.objective, d.tree.objective);
}

TEST(CascadeOption, RefusalsSayWhyAndChangeNothing) {
  CascadeConfig c;
  const std::string before = to_json(c).dump();
  const auto refused = [&](const std::string& key, const std::string& value, const std::string& why) {
    const std::string m = refusal(c, key, value);
    EXPECT_NE(m.find(why), std::string::npos) << key << "=" << value << ": " << m;
    EXPECT_NE(m.find("--cascade-option " + key), std::string::npos) << m;
    EXPECT_EQ(to_json(c).dump(), before) << key;
  };
  refused("tree_bags", "1", "valid: ");           // a typo lists the valid keys
  refused("tree_bag", "0", "outside [1, 64]");    // bounds from the table
  refused("tree_bag", "65", "outside [1, 64]");
  refused("tree_bag", "two", "expected a number");
  refused("coverage", "1", "outside");
  refused("q_source", "code", "not one of");
  refused("tau_grid", "", "expected an array");
  refused("code", "{}", "--code-option");
  refused("tree", "{}", "tree.max_depth");       // a member is set one parameter at a time
  refused("coverage.x", "1", "has no parts");
  refused("tree.depth", "6", "unknown XGBoost parameter");
  refused("tree.seed", "7", "--seed");
  refused("gate.nthread", "4", "--threads");
  refused("fusion.objective", "\"reg:squarederror\"", "objective");
  refused("tree.max_depth", "0", "max_depth");
}

TEST(CascadeOption, HelpNamesEverySettableKeyWithItsDefault) {
  const std::vector<std::string> lines = cascade_option_help();
  std::string all;
  for (const std::string& l : lines) all += l + "\n";
  for (const char* key : {"tree_bag", "coverage", "q_source", "tau_grid", "history_margin_se", "MEMBER.KEY"}) {
    EXPECT_NE(all.find(key), std::string::npos) << key << "\n" << all;
  }
  EXPECT_NE(all.find("(default 5)"), std::string::npos) << all;             // tree_bag's
  EXPECT_NE(all.find("(default 0.5,0.6,0.7"), std::string::npos) << all;   // a grid, as typed
  EXPECT_EQ(all.find("\ncode "), std::string::npos) << all;                // --code-option's
  EXPECT_NE(all.rfind("code ", 0), 0u) << all;
  // Every key the help names (before the first blank) is accepted with its own default.
  for (const std::string& l : lines) {
    const std::string key = l.substr(0, l.find(' '));
    if (key.find('.') != std::string::npos) continue;
    const std::string def = l.substr(l.rfind("(default ") + 9, l.size() - l.rfind("(default ") - 10);
    CascadeConfig c;
    EXPECT_EQ(refusal(c, key, def), "") << l;
    EXPECT_EQ(to_json(c).dump(), to_json(CascadeConfig{}).dump()) << l;
  }
}

// Q-source settings that would change nothing are refused when the configuration is checked (after
// every option is set, in any order), naming the setting: a margin with a forced source, a
// fallback without a margin.
TEST(CascadeOption, QSourceSettingsThatWouldChangeNothingAreRefused) {
  const auto check = [](const std::vector<std::pair<std::string, std::string>>& opts) {
    CascadeConfig c;
    for (const auto& [k, v] : opts) {
      if (Status st = set_cascade_option(c, k, v); !st) return "set: " + st.message();
    }
    const Status st = c.validate();
    return st ? std::string() : st.message();
  };
  EXPECT_EQ(check({{"q_source_margin_se", "2"}, {"q_source_unclear", "mean"}}), "");
  EXPECT_EQ(check({{"q_source_unclear", "mean"}, {"q_source_margin_se", "2"}}), "");  // either order
  EXPECT_EQ(check({{"q_source", "mean"}}), "");
  EXPECT_EQ(check({{"q_source_margin_se", "2"}}), "");
  EXPECT_NE(check({{"q_source_unclear", "mean"}}).find("q_source_unclear: applies to q_source=auto with "
                                                       "q_source_margin_se > 0"),
            std::string::npos);
  EXPECT_NE(check({{"q_source", "tree_route"}, {"q_source_margin_se", "2"}}).find(
                "q_source_margin_se: applies to q_source=auto only (q_source is tree_route)"),
            std::string::npos);
  EXPECT_NE(check({{"q_source", "code_model"}, {"q_source_margin_se", "1"}, {"q_source_unclear", "mean"}}),
            "");
}

}  // namespace
}  // namespace peakcast::cascade
