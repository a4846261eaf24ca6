// A method left out of the evaluation because it refuses its blocks as input
// (EvalConfig::leave_out_refusals, `peakcast evaluate` and `peakcast report`): the JSON, the table
// and the markdown name it with its reason; in the folds, a method every fold refuses is left out
// of them and named, and a fold only some refuse is still skipped for every method.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "eval/eval_fixtures.h"
#include "eval/picky.h"
#include "peakcast/eval/folds.h"
#include "peakcast/eval/report.h"

namespace peakcast::eval {
namespace {

using testing::picky_registry;
using testing::random_trace;

EvalConfig leaving_out(std::vector<std::string> methods) {
  EvalConfig c;
  c.methods = std::move(methods);
  c.bootstrap = 0;
  c.latency_jobs = 0;
  c.leave_out_refusals = true;
  return c;
}

const std::string kWhy = "fitting picky: picky: the train block needs at least 100000 jobs";

TEST(LeftOut, TheJsonTableAndMarkdownNameTheMethodAndWhy) {
  auto r = evaluate_jobs(random_trace(300, 3), picky_registry(100000), leaving_out({"hier_last1", "picky"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const nlohmann::json j = to_json(*r);
  ASSERT_TRUE(j.contains("left_out")) << j.dump(2).substr(0, 400);
  ASSERT_EQ(j["left_out"].size(), 1u);
  EXPECT_EQ(j["left_out"][0]["method"], "picky");
  EXPECT_EQ(j["left_out"][0]["reason"].get<std::string>().rfind(kWhy, 0), 0u) << j["left_out"];
  for (const auto& e : j["results"]) EXPECT_EQ(e["method"], "hier_last1");

  const std::string line = "picky: left out: it could not be trained on this trace's training blocks (" + kWhy;
  const std::string table = render_table(*r);
  EXPECT_NE(table.find("\n" + line), std::string::npos) << table;
  const std::string markdown = render_markdown(*r);
  EXPECT_NE(markdown.find("\n- " + line), std::string::npos) << markdown;
}

// Scripts read left_out without checking for it: an empty list when nothing was left out.
TEST(LeftOut, TheJsonHasAnEmptyListWhenEveryMethodWasScored) {
  auto r = evaluate_jobs(random_trace(300, 3), picky_registry(0), leaving_out({"hier_last1", "picky"}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const nlohmann::json j = to_json(*r);
  ASSERT_TRUE(j.contains("left_out"));
  EXPECT_TRUE(j["left_out"].is_array());
  EXPECT_TRUE(j["left_out"].empty());
  EXPECT_EQ(render_table(*r).find("left out"), std::string::npos);
}

// A seeded method that refuses its blocks from seed `refuse_from` on, as one seed's cascade may
// refuse blocks another seed's accepted.
class RefusesLaterSeeds : public Method {
 public:
  RefusesLaterSeeds(uint64_t seed, uint64_t refuse_from, std::unique_ptr<Method> inner)
      : seed_(seed), refuse_from_(refuse_from), inner_(std::move(inner)) {}
  std::string_view name() const override { return "late_picky"; }
  bool seeded() const override { return true; }
  Status fit(const EvalData& data, const ProgressFn& progress) override {
    if (seed_ >= refuse_from_) return Status::invalid(fmt::format("late_picky: refuses seed {}", seed_));
    return inner_->fit(data, progress);
  }
  Prediction predict(const Job& job, const HistoryViews& view) const override {
    return inner_->predict(job, view);
  }

 private:
  uint64_t seed_, refuse_from_;
  std::unique_ptr<Method> inner_;
};

MethodRegistry late_picky_registry(uint64_t refuse_from) {
  MethodRegistry r;
  register_builtins(r);
  r.add("late_picky", "global_median refusing later seeds (test)", [=](const MethodOptions& o) {
    MethodRegistry builtins;
    register_builtins(builtins);
    return std::make_unique<RefusesLaterSeeds>(o.seed, refuse_from,
                                               std::move(builtins.create("global_median", o)).value());
  });
  return r;
}

// With several seeds, a method the second seed refuses is left out, and the bound walk has none
// of its lines: the first seed's walk used to be passed on before the second was fitted, so
// --bound-walk named a method the report said was left out. Scored at every seed, it is walked.
TEST(LeftOut, AMethodALaterSeedRefusesHasNoBoundWalk) {
  const std::vector<Job> jobs = random_trace(300, 3);
  for (const uint64_t refuse_from : {uint64_t{43}, uint64_t{1000}}) {
    EvalConfig c = leaving_out({"hier_last1", "late_picky"});
    c.seed = 42;
    c.seeds = 3;
    std::set<std::string> walked;
    c.on_bound_walk = [&](const std::string& method, Resource, std::span<const WalkRecord> walk) {
      if (!walk.empty()) walked.insert(method);
    };
    auto r = evaluate_jobs(jobs, late_picky_registry(refuse_from), c);
    ASSERT_TRUE(r.ok()) << r.status().message();
    if (refuse_from == 43) {
      ASSERT_EQ(r->left_out.size(), 1u);
      EXPECT_EQ(r->left_out[0].first, "late_picky");
      EXPECT_NE(r->left_out[0].second.find("refuses seed 43"), std::string::npos) << r->left_out[0].second;
      EXPECT_EQ(walked, (std::set<std::string>{"hier_last1"}));
    } else {
      EXPECT_TRUE(r->left_out.empty());
      EXPECT_EQ(walked, (std::set<std::string>{"hier_last1", "late_picky"}));
    }
  }
}

// A seeded method whose named choice depends on its seed (every third seed picks "b"), with a
// number among its choices that differs every seed.
class ChoosesBySeed : public Method {
 public:
  ChoosesBySeed(uint64_t seed, std::unique_ptr<Method> inner) : seed_(seed), inner_(std::move(inner)) {}
  std::string_view name() const override { return "by_seed"; }
  bool seeded() const override { return true; }
  Status fit(const EvalData& data, const ProgressFn& progress) override { return inner_->fit(data, progress); }
  Prediction predict(const Job& job, const HistoryViews& view) const override { return inner_->predict(job, view); }
  std::vector<std::pair<std::string, std::string>> choices() const override {
    return {{"pick", seed_ % 3 == 0 ? "b" : "a"}, {"same", "x y"}, {"score", fmt::format("{:.3f}", 0.1 * seed_)}};
  }

 private:
  uint64_t seed_;
  std::unique_ptr<Method> inner_;
};

// With several seeds the choices shown are the first seed's; a named choice the seeds did not all
// make alike also says how many seeds made each (on a short history one seed's Q source decided
// the test block, and the first seed's choice alone hid it). Numbers and agreed choices get none.
TEST(SeedChoices, ANamedChoiceTheSeedsDisagreeOnIsCounted) {
  MethodRegistry reg;
  register_builtins(reg);
  reg.add("by_seed", "global_median with seed-dependent choices (test)", [](const MethodOptions& o) {
    MethodRegistry builtins;
    register_builtins(builtins);
    return std::make_unique<ChoosesBySeed>(o.seed, std::move(builtins.create("global_median", o)).value());
  });
  const auto choices_of = [&](uint64_t seed, size_t seeds) {
    EvalConfig c = leaving_out({"hier_last1", "by_seed"});
    c.seed = seed;
    c.seeds = seeds;
    auto r = evaluate_jobs(random_trace(300, 3), reg, c);
    EXPECT_TRUE(r.ok()) << r.status().message();
    std::map<std::string, std::string> out;
    if (!r.ok()) return out;
    for (const auto& [method, list] : r->choices) {
      if (method == "by_seed") out.insert(list.begin(), list.end());
    }
    return out;
  };
  const auto three = choices_of(42, 3);  // 42: b, 43: a, 44: a
  EXPECT_EQ(three.at("pick"), "b");       // the first seed's, as before
  EXPECT_EQ(three.at("pick.seeds"), "a:2,b:1");
  EXPECT_EQ(three.count("score.seeds"), 0u);
  EXPECT_EQ(three.count("same.seeds"), 0u);
  EXPECT_EQ(three.at("choices_from_seed"), "42");
  const auto agreed = choices_of(43, 2);  // 43: a, 44: a
  EXPECT_EQ(agreed.count("pick.seeds"), 0u);
  EXPECT_EQ(choices_of(42, 1).count("pick.seeds"), 0u);
}

// A method every fold refuses is left out of the folds, with the first fold's reason, and the
// folds are the other methods': none skipped, no empty cell, no NaN.
TEST(LeftOutOfFolds, AMethodEveryFoldRefusesIsNamedAndTheOthersAreScored) {
  FoldsConfig fc;
  fc.folds = 3;
  auto r = evaluate_folds(random_trace(300, 3), picky_registry(100000), leaving_out({"hier_last1", "picky"}), fc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->skipped.empty());
  EXPECT_EQ(r->fold_numbers, (std::vector<size_t>{1, 2, 3}));
  ASSERT_FALSE(r->summary.empty());
  for (const FoldSummary& s : r->summary) {
    EXPECT_EQ(s.method, "hier_last1");
    EXPECT_EQ(s.folds_scored, 3u);
    for (double v : s.mae) EXPECT_FALSE(std::isnan(v));
  }
  const nlohmann::json j = to_json(*r);
  ASSERT_TRUE(j.contains("left_out"));
  ASSERT_EQ(j["left_out"].size(), 1u);
  EXPECT_EQ(j["left_out"][0]["method"], "picky");
  EXPECT_EQ(j["left_out"][0]["reason"].get<std::string>().rfind("fold 1/3: " + kWhy, 0), 0u) << j["left_out"];
  EXPECT_TRUE(j["skipped_folds"].empty());
  const std::string table = render_folds_table(*r);
  EXPECT_NE(table.find("picky: left out of the folds: it could not be trained on any fold's training blocks "
                       "(fold 1/3: " + kWhy),
            std::string::npos) << table;
  EXPECT_EQ(table.find("nan"), std::string::npos) << table;
}

// A method only some folds refuse: those folds are skipped for every method, as without
// leave_out_refusals, and the JSON names the method that refused each.
TEST(LeftOutOfFolds, AFoldSomeMethodRefusesIsSkippedForEveryMethodAndSaysWhich) {
  const std::vector<Job> jobs = random_trace(600, 7);
  FoldsConfig fc;
  fc.folds = 4;
  auto all = evaluate_folds(jobs, picky_registry(0), leaving_out({"hier_last1"}), fc);
  ASSERT_TRUE(all.ok()) << all.status().message();
  const size_t first_train = all->folds[0].split.train;
  ASSERT_LT(first_train, all->folds[1].split.train);
  EvalConfig c = leaving_out({"hier_last1", "picky"});
  auto r = evaluate_folds(jobs, picky_registry(first_train + 1), c, fc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0].fold, 1u);
  EXPECT_EQ(r->fold_numbers, (std::vector<size_t>{2, 3, 4}));
  // The same folds and figures as without leave_out_refusals.
  c.leave_out_refusals = false;
  auto strict = evaluate_folds(jobs, picky_registry(first_train + 1), c, fc);
  ASSERT_TRUE(strict.ok()) << strict.status().message();
  EXPECT_EQ(strict->fold_numbers, r->fold_numbers);
  ASSERT_EQ(strict->summary.size(), r->summary.size());
  for (size_t i = 0; i < r->summary.size(); ++i) {
    EXPECT_EQ(strict->summary[i].method, r->summary[i].method);
    EXPECT_EQ(strict->summary[i].mean, r->summary[i].mean);
  }
  const nlohmann::json j = to_json(*r);
  ASSERT_EQ(j["skipped_folds"].size(), 1u);
  EXPECT_EQ(j["skipped_folds"][0].value("method", nlohmann::json()), "picky") << j["skipped_folds"];
  ASSERT_TRUE(j.contains("left_out"));
  EXPECT_TRUE(j["left_out"].empty());
}

}  // namespace
}  // namespace peakcast::eval
