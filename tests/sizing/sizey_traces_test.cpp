// On the nf-core traces of the Sizey paper in ../shared/data (chipseq, eager, mag), Sizey's
// protocol over seeds: the deterministic baselines against the notes' table (seed 1996), and
// issue 10's acceptance -- peakcast's waste at most 0.75x the best baseline's, with no more
// failures than that baseline. Skips when the data is absent.
#include <cstdio>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "peakcast/ingest/reader.h"
#include "peakcast/sizing/simulate.h"

namespace peakcast::sizing {
namespace {

const std::string kNextflow = PEAKCAST_SOURCE_DIR "/../shared/data/nextflow/";
const std::vector<std::string> kBaselines = {"presets", "witt_p95", "witt_lr_std", "witt_lr_stdunder",
                                             "tovar", "max_so_far", "vpa"};
constexpr uint32_t kFirstSeed = 1996;
constexpr uint32_t kSeeds = 3;

std::vector<SimTask> load(const std::string& wf) {
  auto trace = ingest::read_trace(kNextflow + "trace_" + wf + ".csv");
  if (!trace) ADD_FAILURE() << trace.status().message();
  return trace ? tasks_from_jobs(trace->jobs, true) : std::vector<SimTask>{};
}

class SizeyTrace : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kNextflow + "trace_" + GetParam() + ".csv")) {
      GTEST_SKIP() << "../shared/data/nextflow absent: the Sizey-trace checks need it";
    }
  }
};

TEST_P(SizeyTrace, TaskTypesAndOnlineInstancesAsTheNotesCount) {
  const std::map<std::string, std::pair<size_t, size_t>> expected = {
      {"chipseq", {30, 1720}}, {"eager", {13, 1102}}, {"mag", {8, 4034}}};
  const auto types = sizey_task_types(load(GetParam()), 34, nullptr);
  size_t online = 0;
  for (const auto& t : types) online += sizey_split(kFirstSeed, t.tasks.size()).online.size();
  EXPECT_EQ(types.size(), expected.at(GetParam()).first);
  EXPECT_EQ(online, expected.at(GetParam()).second);
}

TEST_P(SizeyTrace, PeakcastWastesAtMostThreeQuartersOfTheBestBaselineWithNoMoreFailures) {
  const auto tasks = load(GetParam());
  std::map<std::string, Tally> sum;
  for (uint32_t s = kFirstSeed; s < kFirstSeed + kSeeds; ++s) {
    SimulateOptions o;
    o.seed = s;
    o.policies = kBaselines;
    o.policies.push_back("peakcast");
    o.policies.push_back("peakcast_fixed90");
    auto out = simulate(tasks, o);
    ASSERT_TRUE(out.ok()) << out.status().message();
    for (const auto& r : out->results) sum[r.policy].add(r.total);
  }
  std::string best;
  for (const auto& b : kBaselines) {
    if (best.empty() || sum[b].waste_gbh < sum[best].waste_gbh) best = b;
  }
  for (const auto& [name, t] : sum) {
    std::printf("%-8s %-18s waste %10.2f GBh  failures %6zu  (sum over %u seeds)\n", GetParam().c_str(),
                name.c_str(), t.waste_gbh, t.failures, kSeeds);
  }
  EXPECT_LE(sum["peakcast"].waste_gbh, 0.75 * sum[best].waste_gbh) << "best baseline " << best;
  EXPECT_LE(sum["peakcast"].failures, sum[best].failures) << "best baseline " << best;
}

INSTANTIATE_TEST_SUITE_P(NfCore, SizeyTrace, ::testing::Values("chipseq", "eager", "mag"));

}  // namespace
}  // namespace peakcast::sizing
