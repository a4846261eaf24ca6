// The history methods of src/eval/history_methods.cpp against references computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "eval/eval_fixtures.h"
#include "peakcast/eval/evaluate.h"

namespace peakcast::eval {
namespace {

using testing::make_job;

MethodRegistry builtins() {
  MethodRegistry r;
  register_builtins(r);
  return r;
}

// A job killed for memory at `killed_util` of its request: peakcastd's Slurm hook had lowered its
// limit (Job::ran_mem_bytes), so its label is that share and only a lower bound (not label_exact
// at any cap).
Job oom_under_lowered_limit(std::string id, std::string user, std::string key, int64_t submit,
                            int64_t end, double killed_util) {
  Job j = make_job(std::move(id), std::move(user), std::move(key), submit, end, 0.0);
  j.state = "OUT_OF_MEMORY";
  j.peak_mem_bytes.reset();
  j.ran_mem_bytes = static_cast<uint64_t>(killed_util * 1'000'000.0 + 0.5);
  const std::string k = j.script_key;
  compute_labels(j);
  j.script_key = k;
  return j;
}

// Alice's script s1 cycles 0.5, 0.5, 0.9 (exact-script history); between its runs come a run of
// a new script killed at 0.05 of its request under a lowered limit and a run of a new script that
// completes at 0.6 (both answered from alice's history). Jobs never overlap.
std::vector<Job> trace_with_lowered_limit_ooms(size_t cycles) {
  std::vector<Job> jobs;
  const double cycle[3] = {0.5, 0.5, 0.9};
  int64_t t = 0;
  for (size_t i = 0; i < cycles; ++i) {
    const std::string n = std::to_string(i);
    jobs.push_back(make_job("s" + n, "alice", "s1", t, t + 50, cycle[i % 3]));
    t += 100;
    jobs.push_back(oom_under_lowered_limit("o" + n, "alice", "oom" + n, t, t + 50, 0.05));
    t += 100;
    jobs.push_back(make_job("n" + n, "alice", "new" + n, t, t + 50, 0.6));
    t += 100;
  }
  return jobs;
}

// Priors from the train (and validation) jobs' exact labels, and the same with every label.
history::ExpertPriors reference_priors(const EvalData& data, Resource r, bool with_validation,
                                       bool exact_only) {
  history::ExpertPriorAccumulator acc;
  for (const JobContext& c : data.jobs) {
    const bool use = c.block == Block::kTrain || (with_validation && c.block == Block::kValidation);
    if (!use || !c.job->is_valid(r)) continue;
    if (exact_only && !label_exact(*c.job, r, data.util_cap)) continue;
    acc.add(c.view[idx(r)], c.job->label(r));
  }
  return acc.priors();
}

// A censored label is a lower bound, no measure of an expert's error: hier_combined's priors come
// from exact labels only, as the cascade's do (priors_of in cascade_train.cpp).
TEST(HierCombined, PriorsLeaveOutLowerBounds) {
  const std::vector<Job> jobs = trace_with_lowered_limit_ooms(120);
  Result<Split> split = make_split(jobs, SplitConfig{});
  ASSERT_TRUE(split.ok());
  const EvalData data = build_eval_data(*split, 1.0);
  const history::ExpertPriors want = reference_priors(data, Resource::kMem, true, true);
  const history::ExpertPriors all = reference_priors(data, Resource::kMem, true, false);

  auto method = builtins().create("hier_combined", {});
  ASSERT_TRUE(method.ok());
  ASSERT_TRUE((*method)->fit(data, {}).is_ok());
  size_t differ = 0, user_level = 0;
  for (const JobContext& c : data.jobs) {
    if (c.block != Block::kTest) continue;
    const history::HistoryView& v = c.view[0];
    const double expected = v.estimate(history::Expert::kCombined, data.fallback[0], want);
    EXPECT_NEAR((*method)->predict(*c.job, c.view).util[0], expected, 1e-12) << c.job->job_id;
    if (std::fabs(v.estimate(history::Expert::kCombined, data.fallback[0], all) - expected) > 1e-4) ++differ;
    user_level += v.level == history::Level::kUser ? 1 : 0;
  }
  ASSERT_GT(user_level, 0u);
  ASSERT_GT(differ, 0u) << "fixture: priors with the lower bounds should move some prediction";
}

// history_policy scores its validation jobs as the cascade's policy does (scored_error): an
// estimate at or above a lower bound made no known error, one below it missed by the difference.
TEST(HistoryPolicy, ScoresLowerBoundsOneSided) {
  const std::vector<Job> jobs = trace_with_lowered_limit_ooms(120);
  Result<Split> split = make_split(jobs, SplitConfig{});
  ASSERT_TRUE(split.ok());
  const EvalData data = build_eval_data(*split, 1.0);
  const history::ExpertPriors train_priors = reference_priors(data, Resource::kMem, false, true);
  std::vector<std::array<double, history::kNumEstimates>> errs;
  size_t censored = 0;
  double two_sided_extra = 0.0;
  for (const JobContext& c : data.jobs) {
    if (c.block != Block::kValidation || !c.job->is_valid(Resource::kMem)) continue;
    const bool exact = label_exact(*c.job, Resource::kMem, data.util_cap);
    censored += exact ? 0 : 1;
    std::array<double, history::kNumEstimates> row{};
    for (history::Expert e : history::kEstimates) {
      const double pred =
          std::clamp(c.view[0].estimate(e, data.fallback[0], train_priors), 0.0, data.util_cap);
      const double y = c.job->label(Resource::kMem);
      row[static_cast<size_t>(e)] = exact ? std::fabs(pred - y) : std::max(0.0, y - pred);
      two_sided_extra += std::fabs(pred - y) - row[static_cast<size_t>(e)];
    }
    errs.push_back(row);
  }
  ASSERT_GT(censored, 0u);
  ASSERT_GT(two_sided_extra, 1.0) << "fixture: two-sided scoring should differ";
  const history::Expert want = history::choose_estimate(errs);
  double sum = 0.0;
  for (const auto& row : errs) sum += row[static_cast<size_t>(want)];

  auto policy = builtins().create("history_policy", {});
  ASSERT_TRUE(policy.ok());
  ASSERT_TRUE((*policy)->fit(data, {}).is_ok());
  std::map<std::string, std::string> choices;
  for (const auto& [k, v] : (*policy)->choices()) choices[k] = v;
  EXPECT_EQ(choices["mem.expert"], history::expert_name(want));
  EXPECT_EQ(choices["mem.validation_n"], std::to_string(errs.size()));
  EXPECT_EQ(choices["mem.validation_mae"], fmt::format("{:.6f}", sum / static_cast<double>(errs.size())));
}

}  // namespace
}  // namespace peakcast::eval
