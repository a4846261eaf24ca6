// On the nf-core traces of the Sizey paper in ../shared/data (chipseq, eager, mag), Sizey's
// protocol: the task types the notes count, the deterministic baselines against the notes' table
// (seed 1996), and issue 10's acceptance for peakcast over seeds 1996-2005. Skips when the data
// is absent.
#include <array>
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
constexpr uint32_t kSeeds = 10;  // 1996 .. 2005, as docs/sizing.md reports

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

TEST_P(SizeyTrace, DeterministicBaselinesMatchTheNotesTableAtSeed1996) {
  // The notes' re-derivation (section 5) of Witt-P95, Tovar, Witt-LR STD and STDUNDER, GB x h /
  // failures (Witt-LR with the error list Sizey's code shares across task types and variants:
  // simulate.cpp). Presets differ by design (Sizey charges memory - peak_rss, we charge as every
  // policy, against rss).
  const std::map<std::string, std::array<double, 8>> notes = {
      {"chipseq", {94.7, 114, 211.0, 102, 105.7, 232, 136.3, 337}},
      {"eager", {860.2, 65, 624.1, 39, 2628.0, 150, 3585.2, 229}},
      {"mag", {309.8, 232, 309.4, 762, 289.8, 813, 301.0, 978}}};
  SimulateOptions o;
  o.seed = kFirstSeed;
  o.policies = {"witt_p95", "tovar", "witt_lr_std", "witt_lr_stdunder"};
  auto out = simulate(load(GetParam()), o);
  ASSERT_TRUE(out.ok()) << out.status().message();
  const auto& n = notes.at(GetParam());
  for (size_t k = 0; k < o.policies.size(); ++k) {
    EXPECT_NEAR(out->results[k].total.waste_gbh, n[2 * k], 0.05) << o.policies[k];
    EXPECT_EQ(out->results[k].total.failures, static_cast<size_t>(n[2 * k + 1])) << o.policies[k];
  }
}

// Issue 10's acceptance: peakcast's waste at most 0.75x the best baseline's (the least waste
// among the baselines, summed over the seeds) with no more failures than that baseline.
// Measured (docs/sizing.md): 0.55 / 0.34 / 0.71 of the best baseline's waste with 16 / 1 / 158
// failed attempts per seed against 216 / 14 / 787 on chipseq / eager / mag.
TEST_P(SizeyTrace, PeakcastMeetsTheAcceptanceAgainstTheBestBaseline) {
  const auto tasks = load(GetParam());
  std::map<std::string, Tally> sum;
  for (uint32_t s = kFirstSeed; s < kFirstSeed + kSeeds; ++s) {
    SimulateOptions o;
    o.seed = s;
    o.policies = kBaselines;
    o.policies.push_back("peakcast");
    auto out = simulate(tasks, o);
    ASSERT_TRUE(out.ok()) << out.status().message();
    for (const auto& r : out->results) sum[r.policy].add(r.total);
  }
  std::string best;
  for (const auto& b : kBaselines) {
    if (best.empty() || sum[b].waste_gbh < sum[best].waste_gbh) best = b;
  }
  const Tally& pk = sum["peakcast"];
  std::printf("%s over %u seeds: peakcast %.1f GBh / %zu failures; best baseline %s %.1f GBh / %zu failures (ratio %.2f)\n",
              GetParam().c_str(), kSeeds, pk.waste_gbh, pk.failures, best.c_str(), sum[best].waste_gbh,
              sum[best].failures, pk.waste_gbh / sum[best].waste_gbh);
  EXPECT_LE(pk.waste_gbh, 0.75 * sum[best].waste_gbh) << "best baseline " << best;
  EXPECT_LE(pk.failures, sum[best].failures) << "best baseline " << best;
}

INSTANTIATE_TEST_SUITE_P(NfCore, SizeyTrace, ::testing::Values("chipseq", "eager", "mag"));

}  // namespace
}  // namespace peakcast::sizing
