// The accuracy acceptance on the real dev traces in ../shared/data (skipped when absent): one
// seed, the study's table on the 60/20/20 split and on 5 rolling-origin folds. On the split the
// cascade must be at or below every single method (each history expert, history_policy, xgboost,
// the code model alone), and on the fold means too (issue 7's acceptance: the same ordering on the
// folds; docs/evaluation.md has the measured margins, the narrowest 1.3% on gpumemnet). The
// figures are printed so a CI log shows them.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "eval/eval_fixtures.h"
#include "peakcast/eval/evaluate.h"
#include "peakcast/eval/folds.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/tools/learned_methods.h"

namespace peakcast::eval {
namespace {

const std::string& kData = testing::kSharedData;

struct Case {
  const char* file;
  Resource resource;
};

const std::vector<std::string> kSingles = {"hier_last1", "hier_median3", "hier_median5", "hier_ewma",
                                           "history_policy", "xgboost", "code_only"};

EvalConfig acceptance_config() {
  EvalConfig cfg;
  cfg.methods = kSingles;
  cfg.methods.push_back("cascade");
  cfg.bootstrap = 0;
  cfg.latency_jobs = 0;
  cfg.threads = 2;
  return cfg;
}

std::map<std::string, double> maes(const EvalReport& rep, Resource r) {
  std::map<std::string, double> out;
  for (const ResultRow& row : rep.results) {
    if (row.resource == r) out[row.method] = row.metrics.mae;
  }
  return out;
}

class Acceptance : public ::testing::TestWithParam<Case> {};

TEST_P(Acceptance, CascadeAtOrBelowEverySingleMethod) {
  const Case c = GetParam();
  const std::string path = kData + "/" + c.file;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "real data absent: " << path;
  Result<ingest::Trace> trace = ingest::read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  MethodRegistry reg;
  register_builtins(reg);
  register_learned(reg);
  const EvalConfig cfg = acceptance_config();

  Result<EvalReport> rep = evaluate(*trace, reg, cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  const auto split = maes(*rep, c.resource);
  ASSERT_TRUE(split.count("cascade"));
  const double cascade = split.at("cascade");
  for (const std::string& m : kSingles) {
    std::printf("%s split %-15s %.4f  cascade/method %.3f\n", c.file, m.c_str(), split.at(m),
                cascade / split.at(m));
    EXPECT_LE(cascade, split.at(m) + 1e-12) << c.file << ": cascade above " << m << " on the split";
  }

  FoldsConfig fc;
  fc.folds = 5;
  Result<FoldsReport> folds = evaluate_folds(trace->jobs, reg, cfg, fc);
  ASSERT_TRUE(folds.ok()) << folds.status().message();
  std::map<std::string, double> mean;
  for (const FoldSummary& s : folds->summary) {
    if (s.resource == c.resource) mean[s.method] = s.mean;
  }
  for (const std::string& m : kSingles) {
    std::printf("%s folds %-15s %.4f  cascade/method %.3f\n", c.file, m.c_str(), mean.at(m),
                mean.at("cascade") / mean.at(m));
    EXPECT_LE(mean.at("cascade"), mean.at(m))
        << c.file << ": cascade above " << m << " on the fold means";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shared, Acceptance,
    ::testing::Values(Case{"swf/LANL-CM5-1994-4.1-cln.first60pct.swf.gz", Resource::kMem},
                      Case{"nextflow/trace_chipseq.csv", Resource::kMem},
                      Case{"nextflow/trace_mag.csv", Resource::kMem},
                      Case{"nextflow/trace_eager.csv", Resource::kMem},
                      Case{"gpu/gpumemnet-timm-a100.dev.jsonl", Resource::kVram}),
    [](const auto& info) { return testing::trace_test_name(info.param.file); });

}  // namespace
}  // namespace peakcast::eval
