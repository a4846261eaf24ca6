// Rolling-origin folds (`peakcast evaluate --folds K`): the blocks, the summary over them, and a
// fold that a method cannot learn from; a method left out when it cannot (leave_out_refusals).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "eval/eval_fixtures.h"
#include "eval/picky.h"
#include "peakcast/eval/folds.h"

namespace peakcast::eval {
namespace {

using testing::random_trace;

// The built-in methods, "last1_twin" and "picky", which refuses a train block of fewer than
// `min_train` jobs (eval/picky.h).
MethodRegistry registry(size_t min_train, ErrorKind kind = ErrorKind::kInvalidInput) {
  return testing::picky_registry(min_train, kind);
}

EvalConfig config(std::vector<std::string> methods) {
  EvalConfig c;
  c.methods = std::move(methods);
  c.bootstrap = 0;
  c.latency_jobs = 0;
  return c;
}

const FoldSummary& row(const FoldsReport& r, std::string_view method, Resource res) {
  for (const FoldSummary& s : r.summary) {
    if (s.method == method && s.resource == res) return s;
  }
  throw std::runtime_error("no summary row for " + std::string(method));
}

TEST(Folds, BlocksTileTheTailAndEachFitsOnWhatCameBefore) {
  const std::vector<Job> jobs = random_trace(600, 7);
  FoldsConfig fc;
  fc.folds = 4;
  auto r = evaluate_folds(jobs, registry(0), config({"hier_last1", "global_median"}), fc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->folds.size(), 4u);
  EXPECT_TRUE(r->skipped.empty());
  for (size_t k = 0; k < 4; ++k) {
    const SplitCounts& s = r->folds[k].split;
    EXPECT_EQ(r->fold_numbers[k], k + 1);
    EXPECT_EQ(s.test, 75u) << "the last 300 jobs in 4 equal blocks";
    EXPECT_EQ(s.train + s.validation + s.purged_train + s.purged_validation, 300u + 75u * k)
        << "fold " << k + 1 << " fits on every job before its block";
  }
  for (Resource res : kResources) {
    const FoldSummary& s = row(*r, "hier_last1", res);
    ASSERT_EQ(s.mae.size(), 4u);
    double sum = 0.0;
    for (size_t k = 0; k < 4; ++k) {
      for (const ResultRow& x : r->folds[k].results) {
        if (x.method == "hier_last1" && x.resource == res) {
          EXPECT_EQ(s.mae[k], x.metrics.mae);
        }
      }
      sum += s.mae[k];
    }
    EXPECT_NEAR(s.mean, sum / 4.0, 1e-12);
    EXPECT_EQ(s.folds_won + row(*r, "global_median", res).folds_won, 4u);
  }
}

// CPU jobs only, then (the last `gpu` of them) GPU jobs with a VRAM label: a resource the
// first fold's block has no valid job for.
std::vector<Job> gpu_jobs_last(size_t n, size_t gpu, uint64_t seed) {
  std::vector<Job> jobs = random_trace(n, seed);
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> util(0.1, 0.9);
  for (size_t i = 0; i < n; ++i) {
    Job& j = jobs[i];
    const std::string key = j.script_key;
    j.req_gpus = 0;
    j.gpu_mem_bytes = std::nullopt;
    j.peak_vram_bytes = std::nullopt;
    compute_labels(j);
    j.script_key = key;
    if (i >= n - gpu) j = testing::with_vram(std::move(j), util(rng));
  }
  return jobs;
}

TEST(Folds, APairAbsentFromTheFirstFoldIsSummarizedOverTheFoldsThatScoredIt) {
  const std::vector<Job> jobs = gpu_jobs_last(400, 60, 11);
  FoldsConfig fc;
  fc.folds = 2;
  auto r = evaluate_folds(jobs, registry(0), config({"hier_last1", "hier_median3"}), fc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->folds.size(), 2u);
  for (const ResultRow& x : r->folds[0].results) EXPECT_EQ(x.resource, Resource::kMem) << x.method;
  // Every pair, in the requested order, mem before vram.
  ASSERT_EQ(r->summary.size(), 4u);
  const std::vector<std::pair<std::string, Resource>> want = {{"hier_last1", Resource::kMem},
                                                              {"hier_last1", Resource::kVram},
                                                              {"hier_median3", Resource::kMem},
                                                              {"hier_median3", Resource::kVram}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(r->summary[i].method, want[i].first) << i;
    EXPECT_EQ(r->summary[i].resource, want[i].second) << i;
  }
  size_t vram_wins = 0;
  for (const char* m : {"hier_last1", "hier_median3"}) {
    const FoldSummary& s = row(*r, m, Resource::kVram);
    ASSERT_EQ(s.mae.size(), 2u);
    EXPECT_TRUE(std::isnan(s.mae[0])) << "fold 1 has no VRAM job";
    double fold2 = std::numeric_limits<double>::quiet_NaN();
    for (const ResultRow& x : r->folds[1].results) {
      if (x.method == m && x.resource == Resource::kVram) fold2 = x.metrics.mae;
    }
    ASSERT_FALSE(std::isnan(fold2));
    EXPECT_EQ(s.mae[1], fold2);
    EXPECT_EQ(s.folds_scored, 1u);
    EXPECT_EQ(s.mean, fold2) << "the mean is over the fold that scored it";
    EXPECT_EQ(s.sd, 0.0);
    EXPECT_LE(s.folds_won, 1u);
    vram_wins += s.folds_won;
    EXPECT_EQ(row(*r, m, Resource::kMem).folds_scored, 2u);
  }
  EXPECT_GE(vram_wins, 1u) << "fold 2 is won by someone";

  const nlohmann::json j = to_json(*r);
  ASSERT_EQ(j["summary"].size(), 4u);
  EXPECT_EQ(j["summary"][1]["resource"], "vram");
  EXPECT_TRUE(j["summary"][1]["mae"][0].is_null());
  EXPECT_EQ(j["summary"][1]["folds_scored"], 1);
  EXPECT_EQ(j["summary"][0]["folds_scored"], 2);
  const std::string table = render_folds_table(*r);
  EXPECT_NE(table.find("hier_median3  vram"), std::string::npos) << table;
}

// The header and the rows of the folds table, one string per line.
std::vector<std::string> table_lines(const std::string& table) {
  std::vector<std::string> lines;
  size_t at = table.find('\n') + 1;  // past the title
  while (at < table.size()) {
    const size_t end = table.find('\n', at);
    const std::string line = table.substr(at, end - at);
    if (line.rfind("fold ", 0) == 0 || line.rfind("folds:", 0) == 0) break;  // the notes
    lines.push_back(line);
    at = end + 1;
  }
  return lines;
}

TEST(Folds, TheTableKeepsItsColumnsWithAnAbsentFoldAndASkippedOne) {
  FoldsConfig fc;
  fc.folds = 2;
  auto absent = evaluate_folds(gpu_jobs_last(400, 60, 11), registry(0), config({"hier_last1", "hier_median3"}), fc);
  ASSERT_TRUE(absent.ok()) << absent.status().message();
  fc.folds = 4;
  const std::vector<Job> jobs = random_trace(600, 7);
  auto all = evaluate_folds(jobs, registry(0), config({"hier_last1"}), fc);
  ASSERT_TRUE(all.ok()) << all.status().message();
  auto skipped = evaluate_folds(jobs, registry(all->folds[0].split.train + 1), config({"hier_last1", "picky"}), fc);
  ASSERT_TRUE(skipped.ok()) << skipped.status().message();
  ASSERT_EQ(skipped->skipped.size(), 1u);
  for (const FoldsReport* r : {&*absent, &*skipped}) {
    const std::string table = render_folds_table(*r);
    const std::vector<std::string> lines = table_lines(table);
    ASSERT_EQ(lines.size(), r->summary.size() + 1) << table;
    // Every column right-aligned to one width from the third on: the same length for every line,
    // and the header's MAE column ends where the values' do.
    const size_t mae_end = lines[0].find("MAE mean +- s.d.") + std::string("MAE mean +- s.d.").size();
    for (size_t i = 1; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].size(), lines[0].size()) << table;
      EXPECT_EQ(lines[i].find(fmt::format("{:.4f}", r->summary[i - 1].sd)) + 6, mae_end) << table;
    }
    EXPECT_NE(lines[0].find("fold 1"), std::string::npos) << table;
    EXPECT_NE(table.find("a tie counts as won by each tied method"), std::string::npos) << table;
  }
}

TEST(Folds, ATiedFoldIsWonByEachTiedMethod) {
  FoldsConfig fc;
  fc.folds = 3;
  auto r = evaluate_folds(random_trace(600, 7), registry(0), config({"hier_last1", "last1_twin", "global_median"}), fc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (Resource res : kResources) {
    const FoldSummary& first = row(*r, "hier_last1", res);
    const FoldSummary& twin = row(*r, "last1_twin", res);
    EXPECT_EQ(first.mae, twin.mae) << "the same method under two names";
    for (const FoldSummary* s : {&first, &twin, &row(*r, "global_median", res)}) {
      size_t lowest = 0;  // folds where no method's MAE is below this one's
      for (size_t k = 0; k < 3; ++k) {
        bool best = true;
        for (const FoldSummary& o : r->summary) best = best && (o.resource != res || !(o.mae[k] < s->mae[k]));
        lowest += best ? 1 : 0;
      }
      EXPECT_EQ(s->folds_won, lowest) << s->method;
    }
  }
  // Two methods only, tied in every fold: each wins every fold, not only the one listed first.
  auto tied = evaluate_folds(random_trace(600, 7), registry(0), config({"hier_last1", "last1_twin"}), fc);
  ASSERT_TRUE(tied.ok()) << tied.status().message();
  for (const FoldSummary& s : tied->summary) EXPECT_EQ(s.folds_won, 3u) << s.method << " " << resource_name(s.resource);
}

TEST(Folds, TheTailIsCutAsTheSplitCutsItsBlocks) {
  // (1 - 0.8) x 400 is 79.99999999999999 in doubles: a bare floor put 321 jobs in the tail.
  const std::vector<Job> jobs = random_trace(400, 5);
  FoldsConfig fc;
  fc.folds = 4;
  fc.test_share = 0.8;
  auto r = evaluate_folds(jobs, registry(0), config({"hier_last1"}), fc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->folds.size(), 4u);
  size_t tail = 0;
  for (const EvalReport& f : r->folds) tail += f.split.test;
  EXPECT_EQ(tail, 320u);
  for (const EvalReport& f : r->folds) EXPECT_EQ(f.split.test, 80u);
}

TEST(Folds, AFoldAMethodCannotLearnFromIsSkippedForEveryMethod) {
  const std::vector<Job> jobs = random_trace(600, 7);
  FoldsConfig fc;
  fc.folds = 4;
  auto all = evaluate_folds(jobs, registry(0), config({"hier_last1"}), fc);
  ASSERT_TRUE(all.ok()) << all.status().message();
  const size_t first_train = all->folds[0].split.train;
  ASSERT_LT(first_train, all->folds[1].split.train);

  auto r = evaluate_folds(jobs, registry(first_train + 1), config({"hier_last1", "picky"}), fc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0].fold, 1u);
  EXPECT_NE(r->skipped[0].reason.find("fitting picky: picky: the train block needs at least"), std::string::npos)
      << r->skipped[0].reason;
  EXPECT_EQ(r->fold_numbers, (std::vector<size_t>{2, 3, 4}));
  for (Resource res : kResources) {
    // hier_last1 could fit fold 1, but it is left out of its mean too: the methods' means
    // stay over the same blocks.
    const FoldSummary& with = row(*r, "hier_last1", res);
    const FoldSummary& without = row(*all, "hier_last1", res);
    ASSERT_EQ(with.mae.size(), 4u);
    EXPECT_TRUE(std::isnan(with.mae[0]));
    EXPECT_TRUE(std::isnan(row(*r, "picky", res).mae[0]));
    for (size_t k = 1; k < 4; ++k) EXPECT_EQ(with.mae[k], without.mae[k]);
    EXPECT_NEAR(with.mean, (without.mae[1] + without.mae[2] + without.mae[3]) / 3.0, 1e-12);
    EXPECT_EQ(with.folds_won + row(*r, "picky", res).folds_won, 3u);
  }

  const nlohmann::json j = to_json(*r);
  ASSERT_EQ(j["skipped_folds"].size(), 1u);
  EXPECT_EQ(j["skipped_folds"][0]["fold"], 1);
  EXPECT_EQ(j["fold_blocks"].size(), 3u);
  EXPECT_EQ(j["fold_blocks"][0]["fold"], 2);
  EXPECT_TRUE(j["summary"][0]["mae"][0].is_null());
  const std::string table = render_folds_table(*r);
  EXPECT_NE(table.find("fold 1/4 skipped (left out of every mean): fitting picky: picky:"), std::string::npos) << table;
}

TEST(Folds, EveryFoldSkippedIsAnErrorThatSaysWhy) {
  FoldsConfig fc;
  fc.folds = 3;
  auto r = evaluate_folds(random_trace(300, 3), registry(100000), config({"hier_last1", "picky"}), fc);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(r.status().message().find("every one of the 3 folds was skipped; fold 1/3: fitting picky: picky:"),
            std::string::npos)
      << r.status().message();
}

TEST(Folds, AnErrorOfAnotherKindIsNotSkipped) {
  FoldsConfig fc;
  fc.folds = 3;
  auto r = evaluate_folds(random_trace(300, 3), registry(100000, ErrorKind::kInternal),
                          config({"hier_last1", "picky"}), fc);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().kind(), ErrorKind::kInternal);
  EXPECT_EQ(r.status().message().rfind("fold 1/3: ", 0), 0u) << r.status().message();
}

// EvalConfig::leave_out_refusals (`peakcast report` on a young history): a method refusing its
// blocks as input is left out with its reason and the others are scored; without it, or for an
// error of another kind, the evaluation fails as before.
TEST(LeaveOutRefusals, ARefusingMethodIsLeftOutAndTheOthersScored) {
  EvalConfig c = config({"hier_last1", "picky", "hier_median3"});
  c.leave_out_refusals = true;
  auto r = evaluate_jobs(random_trace(300, 3), registry(100000), c);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->left_out.size(), 1u);
  EXPECT_EQ(r->left_out[0].first, "picky");
  EXPECT_NE(r->left_out[0].second.find("fitting picky: picky: the train block needs at least 100000 jobs"),
            std::string::npos) << r->left_out[0].second;
  for (const ResultRow& row : r->results) EXPECT_NE(row.method, "picky");
  EXPECT_TRUE(std::any_of(r->results.begin(), r->results.end(),
                          [](const ResultRow& row) { return row.method == "hier_median3"; }));

  c.leave_out_refusals = false;
  EXPECT_EQ(evaluate_jobs(random_trace(300, 3), registry(100000), c).status().kind(), ErrorKind::kInvalidInput);
  c.leave_out_refusals = true;
  EXPECT_EQ(evaluate_jobs(random_trace(300, 3), registry(100000, ErrorKind::kInternal), c).status().kind(),
            ErrorKind::kInternal);
}

}  // namespace
}  // namespace peakcast::eval
