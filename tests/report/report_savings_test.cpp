// The report's "what peakcastd's requests would have saved and cost" (report_internal.h,
// recommendation_outcome), checked on a toy block computed by hand.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "report/report_internal.h"

namespace peakcast::report {
namespace {

constexpr uint64_t kGB = 1'000'000'000;
constexpr int64_t kHourMs = 3'600'000;

Job job(int i, std::optional<uint64_t> request_gb, std::optional<uint64_t> peak_gb, int64_t hours,
        const std::string& partition = "cpu") {
  Job j;
  j.partition = partition;
  j.job_id = std::to_string(i);
  j.submit_ms = 1'700'000'000'000 + i * kHourMs;
  j.start_ms = j.submit_ms;
  j.end_ms = j.submit_ms + hours * kHourMs;
  if (request_gb) j.req_mem_bytes = *request_gb * kGB;
  if (peak_gb) j.peak_mem_bytes = *peak_gb * kGB;
  return j;
}

DaemonAnswer recommend(std::optional<uint64_t> gb) {
  DaemonAnswer a;
  if (gb) a.recommended_bytes = *gb * kGB;
  return a;
}

const sizing::SeedSummary& row(const SimResults& r, const std::string& policy) {
  for (const sizing::SeedSummary& s : r.results) {
    if (s.policy == policy) return s;
  }
  throw std::runtime_error("no row " + policy);
}

TEST(ReportSavings, EachJobAtItsRequestAndAtTheRecommendationAccountedAsSimulateDoes) {
  const std::vector<Job> test = {
      job(0, 8, 1, 2),              // held at 4: 3 x 2 h unused (7 x 2 h at its request)
      job(1, 8, 5, 1),              // 4 fails (4), then its request 8 holds (3): 7; at its request 3
      job(2, 8, 6, 2, "gpu"),       // no recommendation: its request, 2 x 2 h unused in both
      job(3, 4, 6, 1),              // above its request (the recommendation is it): 4 fails, 8 holds (2) in both
      job(4, std::nullopt, 3, 1),   // no request: left out
      job(5, 8, std::nullopt, 1),   // no peak (an OOM run): left out
  };
  const std::vector<DaemonAnswer> answers = {recommend(4), recommend(4), recommend(std::nullopt),
                                             recommend(4), recommend(2), recommend(4)};
  const std::optional<RecommendationOutcome> outcome = recommendation_outcome(test, answers);
  ASSERT_TRUE(outcome.has_value());
  const SimResults* r = &outcome->totals;
  ASSERT_EQ(r->results.size(), 2u);
  EXPECT_EQ(r->results.front().policy, "users' requests");  // the table's "saved vs" column is against it
  const sizing::SeedSummary& asked = row(*r, "users' requests");
  const sizing::SeedSummary& answered = row(*r, "peakcastd's");
  EXPECT_NEAR(asked.waste_gbh.mean, 14 + 3 + 4 + (4 + 2), 1e-9);
  EXPECT_EQ(asked.failures.mean, 1);
  EXPECT_EQ(asked.failed_jobs.mean, 1);
  EXPECT_EQ(asked.jobs.mean, 4);
  EXPECT_NEAR(answered.waste_gbh.mean, 6 + (4 + 3) + 4 + (4 + 2), 1e-9);
  EXPECT_EQ(answered.failures.mean, 2);
  EXPECT_EQ(answered.retries.mean, 2);
  EXPECT_EQ(answered.failed_jobs.mean, 2);
  EXPECT_EQ(answered.jobs.mean, 4);
  ASSERT_EQ(r->notes.size(), 2u);
  EXPECT_NE(r->notes[0].find("wasted 23.0 GB·h (15.0 reserved unused, 8.0 in 2 out-of-memory attempts "
                             "of 2 jobs) against 27.0 GB·h and 1 failed attempts"),
            std::string::npos)
      << r->notes[0];
  EXPECT_NE(r->notes[1].find("4 test jobs"), std::string::npos) << r->notes[1];
  EXPECT_NE(r->notes[1].find("3 of them had a recommendation (2 below the request)"), std::string::npos)
      << r->notes[1];
  // By partition: cpu's three jobs, then gpu's one; they add up to the totals.
  ASSERT_EQ(outcome->partitions.size(), 2u);
  const RecommendationOutcome::Partition& cpu = outcome->partitions[0];
  const RecommendationOutcome::Partition& gpu = outcome->partitions[1];
  EXPECT_EQ(cpu.name, "cpu");
  EXPECT_EQ(cpu.asked.jobs, 3u);
  EXPECT_NEAR(cpu.asked.waste_gbh, 14 + 3 + 6, 1e-9);
  EXPECT_NEAR(cpu.answered.waste_gbh, 6 + 7 + 6, 1e-9);
  EXPECT_EQ(cpu.answered.failures, 2u);
  EXPECT_EQ(gpu.name, "gpu");
  EXPECT_EQ(gpu.asked.jobs, 1u);
  EXPECT_NEAR(gpu.asked.waste_gbh, 4, 1e-9);
  EXPECT_NEAR(gpu.answered.waste_gbh, 4, 1e-9);
  const std::string table = partition_table(outcome->partitions);
  EXPECT_NE(table.find("<td>cpu</td><td>3</td><td>23.0</td><td>19.0</td><td>4.0</td><td>1 / 2</td><td>1 / 2</td>"),
            std::string::npos)
      << table;
}

// A job killed for memory recorded at most what it held (synth writes its peak at the request):
// what it needed is not known, so neither request's outcome can be told. It is left out, and a
// note says so; before, it "held" at the request it was killed at.
TEST(ReportSavings, AJobKilledForMemoryIsLeftOutWithANote) {
  Job killed = job(1, 8, 8, 3);
  killed.state = "OUT_OF_MEMORY";
  killed.censored = true;
  const std::vector<Job> test = {job(0, 8, 1, 2), killed};
  const std::optional<RecommendationOutcome> outcome =
      recommendation_outcome(test, {recommend(4), recommend(4)});
  ASSERT_TRUE(outcome.has_value());
  const sizing::SeedSummary& asked = row(outcome->totals, "users' requests");
  const sizing::SeedSummary& answered = row(outcome->totals, "peakcastd's");
  EXPECT_EQ(asked.jobs.mean, 1);
  EXPECT_NEAR(asked.waste_gbh.mean, 14, 1e-9);
  EXPECT_NEAR(answered.waste_gbh.mean, 6, 1e-9);
  EXPECT_EQ(answered.failures.mean, 0);
  ASSERT_EQ(outcome->totals.notes.size(), 3u);
  EXPECT_NE(outcome->totals.notes[2].find("1 test jobs killed for memory are left out"), std::string::npos)
      << outcome->totals.notes[2];
}

TEST(ReportSavings, PastTwentyPartitionsTheRestIsOneRow) {
  std::vector<Job> test;
  std::vector<DaemonAnswer> answers;
  for (int i = 0; i < 25; ++i) {  // partition pI wastes 8 - 1 = 7 x (i + 1) h at its request
    test.push_back(job(i, 8, 1, i + 1, "p" + std::to_string(i)));
    answers.push_back(recommend(4));
  }
  const std::optional<RecommendationOutcome> outcome = recommendation_outcome(test, answers);
  ASSERT_TRUE(outcome.has_value());
  ASSERT_EQ(outcome->partitions.size(), kPartitionRows);
  EXPECT_EQ(outcome->partitions.front().name, "p24") << "largest waste first";
  EXPECT_EQ(outcome->partitions[kPartitionRows - 2].name, "p6");
  const RecommendationOutcome::Partition& other = outcome->partitions.back();
  EXPECT_EQ(other.name, "other (6 partitions)");
  EXPECT_EQ(other.asked.jobs, 6u);
  EXPECT_NEAR(other.asked.waste_gbh, 7.0 * (1 + 2 + 3 + 4 + 5 + 6), 1e-9);
  EXPECT_NEAR(other.answered.waste_gbh, 3.0 * (1 + 2 + 3 + 4 + 5 + 6), 1e-9);
}

// The jobs without a partition and a partition called "(none)" are two rows the table tells apart
// (both were "(none)" until 2026-12-06); a partition called "(no partition)" too.
TEST(ReportSavings, JobsWithoutAPartitionAreNotAPartitionCalledNone) {
  const std::optional<RecommendationOutcome> outcome = recommendation_outcome(
      {job(0, 8, 1, 1, ""), job(1, 8, 1, 2, "(none)"), job(2, 8, 1, 3, "(no partition)")},
      {recommend(4), recommend(4), recommend(4)});
  ASSERT_TRUE(outcome.has_value());
  const std::string table = partition_table(outcome->partitions);
  EXPECT_NE(table.find("<td>(none)</td><td>1</td><td>14.0</td>"), std::string::npos) << table;
  EXPECT_NE(table.find("<td>(no partition)</td><td>1</td><td>21.0</td>"), std::string::npos) << table;
  EXPECT_NE(table.find("<td>(no partition)*</td><td>1</td><td>7.0</td>"), std::string::npos) << table;
}

// A partition literally called "other (6 partitions)" among the 19 named is not the row of the
// six others: that row takes a name no partition has.
TEST(ReportSavings, APartitionCalledLikeTheRestIsNotTheRest) {
  std::vector<Job> test;
  std::vector<DaemonAnswer> answers;
  for (int i = 0; i < 25; ++i) {  // partition pI wastes 8 - 1 = 7 x (i + 1) h at its request
    test.push_back(job(i, 8, 1, i + 1, i == 24 ? "other (6 partitions)" : "p" + std::to_string(i)));
    answers.push_back(recommend(4));
  }
  const std::optional<RecommendationOutcome> outcome = recommendation_outcome(test, answers);
  ASSERT_TRUE(outcome.has_value());
  ASSERT_EQ(outcome->partitions.size(), kPartitionRows);
  EXPECT_EQ(outcome->partitions.front().name, "other (6 partitions)");
  EXPECT_EQ(outcome->partitions.front().asked.jobs, 1u);
  EXPECT_EQ(outcome->partitions.back().name, "other (6 partitions)*");
  EXPECT_EQ(outcome->partitions.back().asked.jobs, 6u);
  const std::string table = partition_table(outcome->partitions);
  EXPECT_NE(table.find("<td>other (6 partitions)</td><td>1</td><td>175.0</td>"), std::string::npos) << table;
  EXPECT_NE(table.find("<td>other (6 partitions)*</td><td>6</td><td>147.0</td>"), std::string::npos) << table;
}

TEST(ReportSavings, OnePartitionNeedsNoPartitionTable) {
  const std::optional<RecommendationOutcome> outcome =
      recommendation_outcome({job(0, 8, 1, 1), job(1, 8, 2, 1)}, {recommend(4), recommend(4)});
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->partitions.size(), 1u);
  EXPECT_TRUE(partition_table(outcome->partitions).empty());
}

TEST(ReportSavings, NoJobWithARequestAndAPeakGivesNoSection) {
  const std::vector<Job> test = {job(0, std::nullopt, 3, 1), job(1, 8, std::nullopt, 1)};
  EXPECT_FALSE(recommendation_outcome(test, {recommend(4), recommend(4)}).has_value());
}

}  // namespace
}  // namespace peakcast::report
