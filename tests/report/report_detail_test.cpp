// The report's per-job part (build_detail) against leakage: what it predicts for the test block
// may use only the labels a daemon started at the first test submission could have known.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "peakcast/report/report.h"
#include "peakcast/synth/synth.h"

namespace peakcast::report {
namespace {

std::vector<Job> synth_jobs() {
  synth::SynthOptions o;
  o.jobs = 1000;
  o.seed = 7;
  o.users = 10;
  o.days = 20.0;
  auto j = synth::generate_trace(o);
  if (!j) throw std::runtime_error(j.status().message());
  std::stable_sort(j->begin(), j->end(),
                   [](const Job& a, const Job& b) { return a.submit_ms < b.submit_ms; });
  return std::move(j).value();
}

DetailOptions small_model() {
  DetailOptions o;
  o.threads = 1;
  o.code_options = {{"token_dim", "8"}, {"user_dim", "8"}, {"fused_dim", "32"}, {"max_epochs", "3"}};
  return o;
}

// A job submitted before the test block that ends after its last submission is still running at
// every test submission: no test job's history holds it, and a daemon started at the first test
// submission could not have trained on it. Its peak must not move a single test prediction.
TEST(ReportDetail, ALabelNotKnownAtTheFirstTestSubmissionChangesNoPrediction) {
  std::vector<Job> low = synth_jobs();
  const DetailOptions o = small_model();
  const size_t cut = static_cast<size_t>(static_cast<double>(low.size()) * (1.0 - o.test_share));
  const int64_t last_submit = low.back().submit_ms;
  std::vector<Job> high = low;
  size_t late = 0;
  // The eight jobs submitted just before the test block with a memory request, made to end a day
  // after the last test submission; one copy peaks at 2% of the request, the other at 98%.
  for (size_t i = cut; i-- > 0 && late < 8;) {
    if (!low[i].req_mem_bytes || !low[i].peak_mem_bytes) continue;
    for (auto* v : {&low, &high}) {
      Job& j = (*v)[i];
      j.end_ms = last_submit + 86'400'000;
      j.peak_mem_bytes = static_cast<uint64_t>(static_cast<double>(*j.req_mem_bytes) *
                                               (v == &low ? 0.02 : 0.98));
      compute_labels(j);
    }
    ++late;
  }
  ASSERT_EQ(late, 8u);
  auto a = build_detail(low, o);
  auto b = build_detail(high, o);
  ASSERT_TRUE(a) << a.status().message();
  ASSERT_TRUE(b) << b.status().message();
  ASSERT_EQ(a->predictions.size(), b->predictions.size());
  ASSERT_GT(a->predictions.size(), 100u);
  size_t differ = 0;
  for (size_t i = 0; i < a->predictions.size(); ++i) {
    const PredictedJob& x = a->predictions[i];
    const PredictedJob& y = b->predictions[i];
    ASSERT_EQ(x.job_id, y.job_id);
    differ += x.predicted != y.predicted || x.upper != y.upper;
  }
  EXPECT_EQ(differ, 0u) << "test predictions moved with labels no test submission could know";
  // The note says how many were left out of the training.
  const bool noted = std::any_of(a->notes.begin(), a->notes.end(), [](const std::string& n) {
    return n.find("still running then left out") != std::string::npos;
  });
  EXPECT_TRUE(noted);
}

// Every test job killed for memory: none has a peak the savings accounting can run, so the page has
// no savings section. The page's notes must say why, not drop the count of killed jobs with it.
TEST(ReportDetail, WithEveryTestJobKilledForMemoryTheNotesSayWhyNoSavings) {
  std::vector<Job> jobs = synth_jobs();
  const DetailOptions o = small_model();
  const size_t cut = static_cast<size_t>(static_cast<double>(jobs.size()) * (1.0 - o.test_share));
  size_t killed = 0;
  for (size_t i = cut; i < jobs.size(); ++i) {
    if (jobs[i].submit_ms < jobs[cut].submit_ms || !jobs[i].req_mem_bytes) continue;
    jobs[i].state = "OUT_OF_MEMORY";
    jobs[i].peak_mem_bytes = jobs[i].req_mem_bytes;
    compute_labels(jobs[i]);
    killed += jobs[i].censored ? 1 : 0;
  }
  ASSERT_GT(killed, 50u);
  auto d = build_detail(jobs, o);
  ASSERT_TRUE(d) << d.status().message();
  EXPECT_FALSE(d->recommendations) << "nothing to run at either request";
  const bool noted = std::any_of(d->notes.begin(), d->notes.end(), [&](const std::string& n) {
    return n.find("no savings section") != std::string::npos &&
           n.find(std::to_string(killed) + " killed for memory") != std::string::npos;
  });
  EXPECT_TRUE(noted) << "the notes: " << [&] {
    std::string all;
    for (const std::string& n : d->notes) all += n + "\n";
    return all;
  }();
}

// Past max_usage_points the usage section keeps the most recent whole days: its table as well as
// its plots (both read Detail::usage), and the page's note must say so, or the table's job counts
// and group ranking read as the whole trace's.
TEST(ReportDetail, TheUsageCapNoteNamesTheTableToo) {
  DetailOptions o = small_model();
  o.max_usage_points = 100;
  auto d = build_detail(synth_jobs(), o);
  ASSERT_TRUE(d) << d.status().message();
  EXPECT_LE(d->usage.size(), 100u);
  EXPECT_GT(d->usage.size(), 0u);
  const auto note = std::find_if(d->notes.begin(), d->notes.end(), [](const std::string& n) {
    return n.find("usage plots") != std::string::npos;
  });
  ASSERT_NE(note, d->notes.end());
  EXPECT_NE(note->find("table"), std::string::npos) << *note;
  EXPECT_NE(note->find("the most recent whole days that fit in 100 jobs"), std::string::npos) << *note;
}

// The usage plots sum the jobs that ended each day: a cap that kept the last submitted jobs cut
// the first day it kept, which drew as a false low day. Every day kept holds all its jobs.
TEST(ReportDetail, TheUsageCapKeepsWholeDays) {
  DetailOptions o = small_model();
  o.max_usage_points = 100;
  const std::vector<Job> jobs = synth_jobs();
  auto d = build_detail(jobs, o);
  ASSERT_TRUE(d) << d.status().message();
  ASSERT_GT(d->usage.size(), 0u);
  constexpr int64_t kDaySeconds = 86400;
  std::map<int64_t, size_t> in_trace, kept;
  for (const Job& j : jobs) {
    if (j.req_mem_bytes && j.peak_mem_bytes) ++in_trace[j.end_ms / 1000 / kDaySeconds];
  }
  for (const UsagePoint& p : d->usage) ++kept[p.end_time_s / kDaySeconds];
  for (const auto& [day, n] : kept) EXPECT_EQ(n, in_trace[day]) << "day " << day << " cut";
  // And they are the most recent days: the next one back would not have fitted.
  const auto before = in_trace.find(kept.begin()->first - 1);
  ASSERT_NE(before, in_trace.end());
  EXPECT_GT(d->usage.size() + before->second, o.max_usage_points);
}

// Slurm keeps the id of a job it requeues and resets its submit time: an earlier run of a test
// job's id is another run, and the request peakcastd would have recommended to the test job's run
// is not drawn on it (it was, when the usage section looked recommendations up by job id).
TEST(ReportDetail, ARecommendationIsDrawnOnItsOwnRunOnly) {
  std::vector<Job> jobs = synth_jobs();
  std::vector<size_t> with_usage;  // the jobs the usage section draws, in its order
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].req_mem_bytes && jobs[i].peak_mem_bytes) with_usage.push_back(i);
  }
  ASSERT_GT(with_usage.size(), 2u);
  const size_t earlier = with_usage.front(), later = with_usage.back();  // a training job, a test job
  jobs[earlier].job_id = jobs[later].job_id;
  auto d = build_detail(jobs, small_model());
  ASSERT_TRUE(d) << d.status().message();
  ASSERT_EQ(d->usage.size(), with_usage.size());
  ASSERT_TRUE(d->usage.back().recommended_gb) << "the test job's run has a recommendation";
  EXPECT_FALSE(d->usage.front().recommended_gb) << "the earlier run took the test run's recommendation";
}


// A trace that records VRAM only (the GPUMemNet jobs: a memory request, no memory peak) has no
// usage section, and the page said nothing of why.
TEST(ReportDetail, WithoutAMemoryPeakTheNotesSayWhyNoUsageSection) {
  std::vector<Job> jobs;
  for (int i = 0; i < 5; ++i) {
    Job j;
    j.job_id = "g" + std::to_string(i);
    j.user = "u01";
    j.submit_ms = i * 1000;
    j.end_ms = i * 1000 + 60'000;
    j.req_mem_bytes = uint64_t{32} << 30;
    j.req_gpus = 1;
    j.gpu_mem_bytes = uint64_t{40} << 30;
    j.peak_vram_bytes = uint64_t{10} << 30;
    jobs.push_back(j);
  }
  auto d = build_detail(jobs, small_model());  // too few to train: only the usage is tried
  ASSERT_TRUE(d) << d.status().message();
  EXPECT_TRUE(d->usage.empty());
  const auto note = std::find_if(d->notes.begin(), d->notes.end(),
                                 [](const std::string& n) { return n.starts_with("no usage section"); });
  ASSERT_NE(note, d->notes.end());
  EXPECT_NE(note->find("none of the 5 jobs has both a memory request and a recorded memory peak"), std::string::npos) << *note;
  EXPECT_NE(note->find("VRAM only"), std::string::npos) << *note;
}

// Where no test job got a memory recommendation, the notes say why rather than "0 memory
// recommendations, 0 of them by their workload's own sizing policy, the others from the bound".
TEST(ReportDetail, WithoutAMemoryRequestTheNotesSayWhyNoRecommendation) {
  std::vector<Job> jobs = synth_jobs();
  for (Job& j : jobs) j.req_mem_bytes.reset();
  auto d = build_detail(jobs, small_model());
  ASSERT_TRUE(d) << d.status().message();
  const auto note = std::find_if(d->notes.begin(), d->notes.end(), [](const std::string& n) {
    return n.starts_with("upper bounds and recommended requests");
  });
  ASSERT_NE(note, d->notes.end());
  EXPECT_NE(note->find("no memory recommendation for any of the "), std::string::npos) << *note;
  EXPECT_NE(note->find("(none has a memory request: a recommendation lowers one)"), std::string::npos) << *note;
  EXPECT_EQ(note->find("0 memory recommendations"), std::string::npos) << *note;
}

}  // namespace
}  // namespace peakcast::report
