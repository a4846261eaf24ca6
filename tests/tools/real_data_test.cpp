// Acceptance on the real traces in ../shared/data (skipped when absent): the harness's hier_last1
// MAE agrees with the README's plain-protocol figures, and with an independent reference of that
// protocol computed here. The sacct dumps carry no submit times: evaluate refuses them, inspect
// reads them.
#include <gtest/gtest.h>

#include <filesystem>

#include "eval/eval_fixtures.h"
#include "peakcast/eval/evaluate.h"
#include "peakcast/tools/inspect.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::eval {
namespace {

const std::string& kData = testing::kSharedData;

struct Case {
  const char* file;
  Resource resource;
  double readme_mae;  // ../shared/data/README.md, plain protocol, hierarchical Last-1
};

class RealTrace : public ::testing::TestWithParam<Case> {};

TEST_P(RealTrace, HierLast1AgreesWithReadme) {
  const Case c = GetParam();
  const std::string path = kData + "/" + c.file;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "real data absent: " << path;
  Result<ingest::Trace> trace = ingest::read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_TRUE(trace->has_submit_times);
  MethodRegistry reg;
  register_builtins(reg);
  EvalConfig cfg;
  cfg.methods = {"hier_last1", "history_policy"};
  cfg.bootstrap = 200;
  Result<EvalReport> rep = evaluate(*trace, reg, cfg);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  const ResultRow* row = nullptr;
  for (const ResultRow& r : rep->results) {
    if (r.method == "hier_last1" && r.resource == c.resource) row = &r;
  }
  ASSERT_NE(row, nullptr);
  EXPECT_GT(row->metrics.n, 0u);

  // The published figures take each end as recorded. The Nextflow reader takes an end recorded
  // to the second (every task of the nf-core traces) as that second's last millisecond, so that
  // a task submitted later in that second does not see it (docs/formats.md); the harness is
  // checked against the independent reference on the ends as read, and the reference on the
  // ends as recorded against the published figure.
  std::vector<Job> recorded = trace->jobs;
  if (trace->format == ingest::Format::kNextflow) {
    for (Job& j : recorded) {
      if (j.end_ms % 1000 == 999) j.end_ms -= 999;
    }
  }
  const double fallback = rep->fallback[idx(c.resource)];
  auto [recorded_mae, recorded_n] = testing::plain_last1_mae(recorded, c.resource, 0.8, fallback);
  EXPECT_EQ(recorded_n, row->metrics.n);
  EXPECT_NEAR(recorded_mae, c.readme_mae, 0.001) << c.file;  // millisecond event times
  // Like for like: the plain protocol takes its fallback from the first 60% without purge; the
  // harness from the purged train block.
  const double plain_fb = testing::plain_fallback(recorded, c.resource, 0.6);
  auto [plain_mae, plain_n] = testing::plain_last1_mae(recorded, c.resource, 0.8, plain_fb);
  EXPECT_EQ(plain_n, row->metrics.n);
  EXPECT_NEAR(plain_mae, c.readme_mae, 0.002) << c.file;
  auto [ref_mae, ref_n] = testing::plain_last1_mae(trace->jobs, c.resource, 0.8, fallback);
  // Not bit-identical: among jobs with equal end AND submit time the store orders by a job-id
  // hash and the reference by input order, so "the last one" can differ for a handful of jobs.
  EXPECT_NEAR(row->metrics.mae, ref_mae, 1e-5) << c.file << ": harness vs independent reference";
  // What the later ends cost Last-1: a little history, never much (chipseq 0.1291 -> 0.1304).
  EXPECT_NEAR(row->metrics.mae, c.readme_mae, 0.002) << c.file;
}

INSTANTIATE_TEST_SUITE_P(
    Shared, RealTrace,
    ::testing::Values(Case{"swf/LANL-CM5-1994-4.1-cln.first60pct.swf.gz", Resource::kMem, 0.133},
                      Case{"nextflow/trace_chipseq.csv", Resource::kMem, 0.129},
                      Case{"nextflow/trace_mag.csv", Resource::kMem, 0.054},
                      Case{"nextflow/trace_eager.csv", Resource::kMem, 0.079},
                      Case{"gpu/gpumemnet-timm-a100.dev.jsonl", Resource::kVram, 0.218}),
    [](const auto& info) { return testing::trace_test_name(info.param.file); });

TEST(RealSacct, EvaluateRefusesInspectReads) {
  const std::string path = kData + "/sacct/yale-grace-array-test.txt";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "real data absent: " << path;
  Result<ingest::Trace> trace = ingest::read_trace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_FALSE(trace->has_submit_times);
  MethodRegistry reg;
  register_builtins(reg);
  Result<EvalReport> rep = evaluate(*trace, reg, EvalConfig{});
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.status().kind(), ErrorKind::kInvalidInput);
  const TraceSummary s = summarize_trace(*trace);
  EXPECT_EQ(s.jobs, trace->jobs.size());
  EXPECT_GT(s.labelled[idx(Resource::kMem)], 0u);
  EXPECT_FALSE(s.exact_history_share.has_value());
  size_t oom = 0, preempted = 0;
  for (const Job& j : trace->jobs) {
    oom += j.state == "OUT_OF_MEMORY";
    preempted += j.state == "PREEMPTED";
  }
  EXPECT_EQ(s.oom, oom);
  EXPECT_EQ(s.preempted, preempted);
}

}  // namespace
}  // namespace peakcast::eval
