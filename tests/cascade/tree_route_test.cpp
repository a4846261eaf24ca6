// The tree route's bag (tree_route.h, CascadeConfig::tree_bag): its boosters draw rows and columns
// from seeds of their own, their mean is the prediction, and a saved model keeps every booster
// while a manifest from before bags (one booster per resource) still loads.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cascade/cascade_policy.h"
#include "cascade_fixtures.h"
#include "peakcast/cascade/tree_route.h"
#include "peakcast/core/io.h"

namespace peakcast::cascade {
namespace {

using testing::make_input;
using testing::roles_by_share;
using testing::synth_jobs;
using testing::tiny_config;

// The train and test rows of the memory resource, from a small synthetic trace.
struct Rows {
  std::vector<Job> jobs;
  TrainingInput in;
  std::vector<TreeRoute::Row> train, test;
  std::vector<float> y;
};

Rows rows() {
  Rows r;
  r.jobs = synth_jobs(600, 5);
  r.in = make_input(r.jobs, roles_by_share(r.jobs.size(), 0.7, 0.0));
  for (const TrainingJob& t : r.in.jobs) {
    const TreeRoute::Row row{t.job, &t.views[static_cast<size_t>(idx(Resource::kMem))]};
    if (t.role == Role::kTrain) {
      r.train.push_back(row);
      r.y.push_back(static_cast<float>(t.job->label(Resource::kMem)));
    } else {
      r.test.push_back(row);
    }
  }
  return r;
}

models::GbdtParams params(uint64_t seed) {
  models::GbdtParams p = CascadeConfig::default_tree_params();
  p.n_rounds = 25;
  p.early_stopping_rounds = 0;
  p.nthread = 1;
  p.seed = seed;
  return p;
}

TreeRoute fitted(const Rows& r, uint64_t seed, size_t bag) {
  TreeRoute t(history::Expert::kCombined, r.in.fallback, {});
  std::vector<const Job*> jobs;
  for (const TreeRoute::Row& row : r.train) jobs.push_back(row.job);
  t.build_columns(jobs);
  t.fit(Resource::kMem, r.train, r.y, {}, {}, params(seed), bag);
  return t;
}

TEST(TreeRouteBag, ThePredictionIsTheMeanOfBoostersWithSeedsOfTheirOwn) {
  const Rows r = rows();
  const uint64_t seed = 7;
  const TreeRoute bag = fitted(r, seed, 3);
  ASSERT_EQ(bag.bag_size(Resource::kMem), 3u);
  EXPECT_EQ(bag.rounds(Resource::kMem), 25);
  std::vector<TreeRoute> single;
  for (uint64_t k = 0; k < 3; ++k) single.push_back(fitted(r, seed + k * TreeRoute::kBagSeedStep, 1));
  const std::vector<double> batch = bag.predict_batch(r.test, Resource::kMem);
  ASSERT_EQ(batch.size(), r.test.size());
  size_t members_differ = 0;
  for (size_t i = 0; i < r.test.size(); ++i) {
    const Job& job = *r.test[i].job;
    const TreeRoute::Row& row = r.test[i];
    double mean = 0;
    for (const TreeRoute& s : single) mean += s.predict(job, *row.view, Resource::kMem);
    mean /= 3;
    EXPECT_NEAR(bag.predict(job, *row.view, Resource::kMem), mean, 1e-6) << job.job_id;
    EXPECT_NEAR(batch[i], mean, 1e-6) << job.job_id;
    members_differ += single[0].predict(job, *row.view, Resource::kMem) !=
                      single[1].predict(job, *row.view, Resource::kMem);
  }
  EXPECT_GT(members_differ, 0u) << "the members drew the same rows and columns: one seed";
}

TEST(TreeRouteBag, ABagOfOneIsTheSingleBooster) {
  const Rows r = rows();
  const TreeRoute one = fitted(r, 3, 1);
  const TreeRoute none = fitted(r, 3, 0);  // 0 is taken as 1, never an unfitted route
  ASSERT_EQ(one.bag_size(Resource::kMem), 1u);
  ASSERT_EQ(none.bag_size(Resource::kMem), 1u);
  for (const TreeRoute::Row& row : r.test) {
    EXPECT_EQ(one.predict(*row.job, *row.view, Resource::kMem), none.predict(*row.job, *row.view, Resource::kMem));
  }
}

TEST(TreeRouteBag, CascadeConfigRefusesAnEmptyBag) {
  CascadeConfig c;
  EXPECT_EQ(c.tree_bag, 5u);
  c.tree_bag = 0;
  const Status st = c.validate();
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("tree_bag"), std::string::npos) << st.message();
  auto parsed = cascade_config_from_json({{"tree_bag", 0}});
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("tree_bag"), std::string::npos) << parsed.status().message();
  auto three = cascade_config_from_json({{"tree_bag", 3}});
  ASSERT_TRUE(three.ok()) << three.status().message();
  EXPECT_EQ(three->tree_bag, 3u);
}

// A saved model keeps every booster of the bag (the first under "files", as before bags, the
// others under "bag_files"), and loads to the same predictions; a manifest without "bag_files"
// (a model saved before bags) loads with its one booster.
TEST(TreeRouteBag, ASavedModelKeepsTheBagAndAnOldManifestLoads) {
  const std::vector<Job> jobs = synth_jobs(800, 9);
  const TrainingInput in = make_input(jobs, roles_by_share(jobs.size(), 0.6, 0.2));
  CascadeConfig cfg = tiny_config();
  cfg.q_source = "tree_route";
  cfg.allow_history_only = false;
  cfg.tree_bag = 3;
  auto trained = CascadeModel::train(in, cfg);
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("peakcast_tree_bag_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Status saved = trained->save(dir.string());
  ASSERT_TRUE(saved) << saved.message();
  auto text = read_file((dir / "manifest.json").string());
  ASSERT_TRUE(text.ok()) << text.status().message();
  nlohmann::json manifest = nlohmann::json::parse(*text);
  const nlohmann::json& tree = manifest.at("tree_route");
  ASSERT_TRUE(tree.at("files").at("mem").is_string());
  ASSERT_EQ(tree.at("bag_files").at("mem").size(), 2u);
  for (const auto& f : tree.at("bag_files").at("mem")) {
    EXPECT_TRUE(std::filesystem::exists(dir / f.get<std::string>())) << f;
  }

  auto loaded = CascadeModel::load(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  size_t tree_jobs = 0, differ = 0;
  // The same model, as a build before bags wrote it: its first booster alone.
  manifest["tree_route"].erase("bag_files");
  {
    std::ofstream out(dir / "manifest.json", std::ios::trunc);
    out << manifest.dump();
  }
  auto old = CascadeModel::load(dir.string());
  ASSERT_TRUE(old.ok()) << old.status().message();
  for (const TrainingJob& t : in.jobs) {
    if (t.role != Role::kTest) continue;
    const JobPrediction a = trained->predict_views(*t.job, t.views);
    const JobPrediction b = loaded->predict_views(*t.job, t.views);
    EXPECT_EQ(a.mem.util, b.mem.util) << t.job->job_id;
    if (a.mem.route != Route::kTree) continue;
    ++tree_jobs;
    differ += old->predict_views(*t.job, t.views).mem.util != a.mem.util;
  }
  ASSERT_GT(tree_jobs, 0u);
  EXPECT_GT(differ, 0u) << "one booster predicted as the bag of three";

  manifest["tree_route"]["bag_files"] = {{"mem", "tree_mem_1.ubj"}};
  {
    std::ofstream out(dir / "manifest.json", std::ios::trunc);
    out << manifest.dump();
  }
  auto bad = CascadeModel::load(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bag_files"), std::string::npos) << bad.status().message();
  std::filesystem::remove_all(dir);
}

// A burst that is still running when the policy set begins leaves the gate/fusion set empty
// (MA-DOS's folds): Q's source is then not chosen on anything, the code model stands, and the
// report says it was chosen on no job. The same trace with those jobs ended in time chooses on them.
TEST(QSourceEvidence, AGateFusionSetPurgedToNothingKeepsTheCodeModel) {
  std::vector<Job> jobs = synth_jobs(800, 9);
  const std::vector<Role> roles = roles_by_share(jobs.size(), 0.6, 0.2);
  const CascadeConfig cfg = tiny_config();
  const auto mem = static_cast<size_t>(idx(Resource::kMem));
  {
    const TrainingInput in = make_input(jobs, roles);
    auto trained = CascadeModel::train(in, cfg);
    ASSERT_TRUE(trained.ok()) << trained.status().message();
    EXPECT_GE(trained->report().q_n[mem], kMinLevelJobs);
    EXPECT_FALSE(trained->report().sets.gate_fusion.empty());
    // Enough jobs to compare the sources on: no note says the code model was kept by default.
    for (const std::string& note : trained->training_notes())
      EXPECT_EQ(note.find("mem: Q comes from the code model by default"), std::string::npos) << note;
  }
  std::vector<size_t> val;
  for (size_t i = 0; i < roles.size(); ++i) if (roles[i] == Role::kValidation) val.push_back(i);
  const int64_t never = jobs.back().submit_ms + 86'400'000;
  for (size_t k = 0; k < (val.size() + 1) / 2; ++k) jobs[val[k]].end_ms = never;  // still running
  const TrainingInput in = make_input(jobs, roles);
  auto trained = CascadeModel::train(in, cfg);
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  EXPECT_TRUE(trained->report().sets.gate_fusion.empty());
  EXPECT_EQ(trained->report().q_n[mem], 0u);
  EXPECT_EQ(trained->q_source()[mem], QSource::kCodeModel);
  // peakcast train says why: the gate/fusion set was purged to nothing, and Q's source had no
  // labelled job to be chosen on.
  const std::vector<std::string> notes = trained->training_notes();
  const std::string all = fmt::format("{}", fmt::join(notes, "\n"));
  EXPECT_NE(all.find(fmt::format("gate and fusion were fit on 0 validation jobs ({} more were still running",
                                 trained->report().sets.gate_fusion_purged)),
            std::string::npos) << all;
  EXPECT_GT(trained->report().sets.gate_fusion_purged, 0u);
  EXPECT_NE(all.find(fmt::format("with fewer than {} each is a constant", cfg.min_component_examples)),
            std::string::npos) << all;
  EXPECT_NE(all.find(fmt::format("mem: Q comes from the code model by default: the gate/fusion set held 0 jobs "
                                 "with a label to compare it and the tree route on (fewer than {})", kMinLevelJobs)),
            std::string::npos) << all;
}

}  // namespace
}  // namespace peakcast::cascade
