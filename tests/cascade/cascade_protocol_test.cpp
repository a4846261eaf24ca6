// The training protocol: no gate or fusion example uses a code-model output from a model that saw
// that job's label, over random splits; the guard refuses such outputs outright.
#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <unordered_map>

#include <gtest/gtest.h>

#include "cascade/cascade_internal.h"
#include "peakcast/core/log.h"
#include "cascade/cascade_fixtures.h"

namespace peakcast::cascade {
namespace {

using testing::make_input;
using testing::roles_by_share;
using testing::synth_jobs;
using testing::tiny_config;

TEST(CascadeProtocol, GateAndFusionNeverSeeCodeModelTrainingJobsOverRandomSplits) {
  const std::vector<Job> jobs = synth_jobs(1200, 7);
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> train_share(0.35, 0.65), val_share(0.15, 0.35),
      holdout(0.05, 0.4), fit_share(0.2, 0.8);
  size_t code_fit_purged = 0;
  for (int trial = 0; trial < 4; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::vector<Role> roles = roles_by_share(jobs.size(), train_share(rng), val_share(rng));
    // Some purged jobs in the mix: they must reach no component.
    for (size_t i = 0; i < roles.size(); i += 37) roles[i] = Role::kIgnore;
    const TrainingInput in = make_input(jobs, roles);
    CascadeConfig cfg = tiny_config();
    cfg.code.max_epochs = 2;
    cfg.code_holdout_share = holdout(rng);
    cfg.fit_share_of_validation = fit_share(rng);
    auto model = CascadeModel::train(in, cfg);
    ASSERT_TRUE(model.ok()) << model.status().message();
    const TrainingSets& s = model->report().sets;

    std::unordered_map<std::string, size_t> pos;
    for (size_t i = 0; i < in.jobs.size(); ++i) pos[in.jobs[i].job->job_id] = i;
    std::set<std::string> code(s.code_fit.begin(), s.code_fit.end());
    code.insert(s.code_early_stopping.begin(), s.code_early_stopping.end());
    ASSERT_FALSE(s.code_fit.empty());
    ASSERT_FALSE(s.code_early_stopping.empty());
    // Everything the code model saw is from the train block; the early-stopping set comes last.
    for (const auto& id : code) EXPECT_EQ(in.jobs[pos.at(id)].role, Role::kTrain) << id;
    EXPECT_LT(pos.at(s.code_fit.back()), pos.at(s.code_early_stopping.front()));
    // The fit set's labels were known when early stopping starts (completion-boundary purge);
    // the purged fit jobs are counted, and with the two sets they make up the train block.
    const int64_t es_start = in.jobs[pos.at(s.code_early_stopping.front())].job->submit_ms;
    for (const auto& id : s.code_fit) EXPECT_LT(in.jobs[pos.at(id)].job->end_ms, es_start) << id;
    const auto train_n = static_cast<size_t>(std::count_if(
        in.jobs.begin(), in.jobs.end(), [](const TrainingJob& t) { return t.role == Role::kTrain; }));
    EXPECT_EQ(s.code_fit.size() + s.code_fit_purged + s.code_early_stopping.size(), train_n);
    code_fit_purged += s.code_fit_purged;
    // The choice of epoch did without the purged jobs; the code model then learned from them too
    // (their labels were known by validation): it is trained on the whole fit set before the
    // early-stopping set, and the report's early-stopping run on the purged one.
    const std::set<std::string> es(s.code_early_stopping.begin(), s.code_early_stopping.end());
    const std::set<std::string> fit(s.code_fit.begin(), s.code_fit.end());
    size_t fit_whole = 0, fit_after_purge = 0;
    for (const TrainingJob& t : in.jobs) {
      if (t.role != Role::kTrain || es.count(t.job->job_id) || !t.job->any_valid()) continue;
      ++fit_whole;
      fit_after_purge += fit.count(t.job->job_id) ? 1 : 0;
    }
    EXPECT_EQ(model->code_model().report().train_jobs, fit_whole);
    EXPECT_EQ(model->report().code.train_jobs, fit_after_purge);

    ASSERT_FALSE(s.policy.empty());
    const int64_t policy_start = in.jobs[pos.at(s.policy.front())].job->submit_ms;
    size_t examples = 0;
    for (Resource r : kResources) {
      for (history::Expert e : history::kExperts) {
        const auto ri = idx(r);
        const auto ei = static_cast<size_t>(static_cast<int>(e));
        for (const auto* list : {&s.gate[ri][ei], &s.fusion[ri][ei]}) {
          for (const std::string& id : *list) {
            ++examples;
            EXPECT_EQ(code.count(id), 0u) << "code model saw " << id;
            const TrainingJob& t = in.jobs[pos.at(id)];
            EXPECT_EQ(t.role, Role::kValidation) << id;
            // Label known before the policy set starts; not itself a policy job.
            EXPECT_LT(t.job->end_ms, policy_start) << id;
            EXPECT_EQ(std::count(s.policy.begin(), s.policy.end(), id), 0) << id;
          }
        }
      }
    }
    EXPECT_GT(examples, 0u) << "the property must be exercised on real examples";
    for (const std::string& id : s.policy) EXPECT_EQ(code.count(id), 0u) << id;
  }
  EXPECT_GT(code_fit_purged, 0u) << "the fit set's purge must be exercised";
}

// When every fit job was still running as early stopping starts, the purge leaves the code model
// nothing to fit: an input error that says so, not a model fit on labels from the future.
TEST(CascadeProtocol, AFitSetThePurgeEmptiesIsAnInputError) {
  std::vector<Job> jobs = synth_jobs(300, 5);
  const std::vector<Role> roles = roles_by_share(jobs.size(), 0.6, 0.2);
  const int64_t last_train_submit = jobs[179].submit_ms;
  for (size_t i = 0; i < 180; ++i) jobs[i].end_ms = std::max(jobs[i].end_ms, last_train_submit + 1);
  auto model = CascadeModel::train(make_input(jobs, roles), tiny_config());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(model.status().message().find("early-stopping"), std::string::npos) << model.status().message();
}

// A job Slurm requeued keeps its id and gets a new submit time: its runs are jobs of their own
// (as peakcastd's store and the history replay key them). The leakage check by id stood down with
// a warning ("job ids are not unique") whenever a trace read from a --db held two runs of one id;
// it tells runs apart by id and submit time now, and still stands down for the same run twice.
TEST(CascadeProtocol, TheLeakageCheckTellsARequeuedJobsRunsApart) {
  std::vector<Job> jobs = synth_jobs(600, 11);
  jobs[450].job_id = jobs[10].job_id;  // a later run of job 10's id
  std::vector<std::string> warnings;
  set_log_sink([&](LogLevel level, std::string_view m) {
    if (level == LogLevel::kWarn) warnings.emplace_back(m);
  });
  auto model = CascadeModel::train(make_input(jobs, roles_by_share(jobs.size(), 0.6, 0.2)), tiny_config());
  set_log_sink({});
  ASSERT_TRUE(model.ok()) << model.status().message();
  const auto stood_down = [&] {
    return std::any_of(warnings.begin(), warnings.end(),
                       [](const std::string& w) { return w.find("not unique") != std::string::npos; });
  };
  EXPECT_FALSE(stood_down());
  jobs[450].submit_ms = jobs[10].submit_ms;  // the same run twice: positions only, and it says so
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.submit_ms < b.submit_ms; });
  warnings.clear();
  set_log_sink([&](LogLevel level, std::string_view m) {
    if (level == LogLevel::kWarn) warnings.emplace_back(m);
  });
  model = CascadeModel::train(make_input(jobs, roles_by_share(jobs.size(), 0.6, 0.2)), tiny_config());
  set_log_sink({});
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_TRUE(stood_down());
}

TEST(CascadeProtocol, GuardRefusesOutputsForJobsTheCodeModelSaw) {
  const std::vector<Job> jobs = synth_jobs(400, 3);
  const TrainingInput in = make_input(jobs, roles_by_share(jobs.size(), 0.6, 0.2));
  std::vector<const Job*> fit;
  for (size_t i = 0; i < 100; ++i) fit.push_back(in.jobs[i].job);
  auto code = models::code::CodeModel::train(fit, {}, tiny_config().code);
  ASSERT_TRUE(code.ok()) << code.status().message();
  CodeModelSight sight(in.jobs.size());
  for (size_t i = 0; i < 100; ++i) sight.mark(i);
  EXPECT_NO_THROW(out_of_sample_q(*code, sight, in, {200, 201, 300}));
  EXPECT_THROW(out_of_sample_q(*code, sight, in, {200, 50}), std::logic_error);
  EXPECT_EQ(out_of_sample_q(*code, sight, in, {250}).size(), 1u);
}

TEST(CascadeProtocol, TooSmallBlocksAreInputErrors) {
  const std::vector<Job> jobs = synth_jobs(50, 5);
  std::vector<Role> roles(jobs.size(), Role::kTrain);
  roles.back() = Role::kValidation;  // a single validation job: no policy set
  auto model = CascadeModel::train(make_input(jobs, roles), tiny_config());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(model.status().message().find("validation"), std::string::npos);
}

TEST(CascadeProtocol, OutOfOrderJobsAreRejected) {
  std::vector<Job> jobs = synth_jobs(60, 5);
  TrainingInput in = make_input(jobs, roles_by_share(jobs.size(), 0.5, 0.5));
  std::swap(in.jobs[3], in.jobs[40]);
  auto model = CascadeModel::train(in, tiny_config());
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("submit order"), std::string::npos);
}

// Jobs killed for memory after their request was lowered (ran_mem_bytes): the label is only a
// lower bound (label_exact false). They end after every submission, so they are nobody's history;
// whatever their bound, no regression target, prior, Q-source error, policy error or conformal
// residual may read it as a measurement.
std::vector<Job> with_lower_bounds(std::vector<Job> jobs, double train_label, double policy_label) {
  const int64_t after_all = jobs.back().submit_ms + 86'400'000;
  const size_t n = jobs.size();
  for (size_t i = 3; i < n; i += 10) {
    const bool train = i < n * 6 / 10;
    const bool policy = i >= n * 7 / 10 + 10 && i < n * 8 / 10;  // the validation block's policy half
    if (!train && !policy) continue;
    Job& j = jobs[i];
    j.censored = true;
    j.state = "OUT_OF_MEMORY";
    j.ran_mem_bytes = j.req_mem_bytes ? *j.req_mem_bytes / 2 : uint64_t{1} << 30;
    j.valid[idx(Resource::kMem)] = true;
    j.util[idx(Resource::kMem)] = train ? train_label : policy_label;
    j.end_ms = after_all;
  }
  return jobs;
}

TEST(CascadeProtocol, ALowerBoundIsNeverScoredAsAMeasurement) {
  const std::vector<Job> base = synth_jobs(1200, 5);
  // Train-block bounds 0.1 vs 0.6 (left out of every target), policy-block bounds 0 vs 1e-4
  // (below every prediction: scored one-sided, no error either way).
  const std::vector<Job> a = with_lower_bounds(base, 0.1, 0.0);
  const std::vector<Job> b = with_lower_bounds(base, 0.6, 1e-4);
  ASSERT_FALSE(label_exact(a[3], Resource::kMem, 1.0));
  const auto roles = roles_by_share(base.size(), 0.6, 0.2);
  const TrainingInput in_a = make_input(a, roles), in_b = make_input(b, roles);
  CascadeConfig cfg = tiny_config();
  cfg.q_source = "tree_route";  // the code model reads the bounds (hinge loss); Q here does not
  auto ma = CascadeModel::train(in_a, cfg);
  auto mb = CascadeModel::train(in_b, cfg);
  ASSERT_TRUE(ma.ok()) << ma.status().message();
  ASSERT_TRUE(mb.ok()) << mb.status().message();
  const auto m = idx(Resource::kMem);
  EXPECT_EQ(ma->priors()[m].err, mb->priors()[m].err);
  EXPECT_EQ(ma->priors()[m].n, mb->priors()[m].n);
  EXPECT_EQ(ma->report().q_mae[m][1], mb->report().q_mae[m][1]);
  EXPECT_EQ(ma->policy()[m].policy_mae, mb->policy()[m].policy_mae);
  EXPECT_EQ(ma->policy()[m].policy_history_mae, mb->policy()[m].policy_history_mae);
  for (size_t c = 0; c < ma->upper_bound()[m].q.size(); ++c) {
    const double qa = ma->upper_bound()[m].q[c], qb = mb->upper_bound()[m].q[c];
    EXPECT_TRUE(qa == qb || (std::isnan(qa) && std::isnan(qb))) << c << ": " << qa << " vs " << qb;
  }
  EXPECT_EQ(ma->upper_bound()[m].pooled, mb->upper_bound()[m].pooled);
  size_t n = 0;
  for (size_t i = 0; i < in_a.jobs.size(); ++i) {
    if (in_a.jobs[i].role != Role::kTest) continue;
    const JobPrediction pa = ma->predict_views(*in_a.jobs[i].job, in_a.jobs[i].views);
    const JobPrediction pb = mb->predict_views(*in_b.jobs[i].job, in_b.jobs[i].views);
    ASSERT_EQ(pa.mem.util, pb.mem.util) << in_a.jobs[i].job->job_id;
    ASSERT_EQ(pa.mem.upper_util, pb.mem.upper_util) << in_a.jobs[i].job->job_id;
    ++n;
  }
  EXPECT_GT(n, 100u);
}

// The tree route trains with its own parameters (CascadeConfig::tree, as the manifest records
// them), not the gate's seed and threads.
TEST(CascadeProtocol, TheTreeRouteTrainsWithItsOwnSeed) {
  const std::vector<Job> jobs = synth_jobs(800, 9);
  const TrainingInput in = make_input(jobs, roles_by_share(jobs.size(), 0.6, 0.2));
  CascadeConfig cfg = tiny_config();
  cfg.q_source = "tree_route";
  cfg.allow_history_only = false;
  cfg.tree.seed = 1;
  auto m1 = CascadeModel::train(in, cfg);
  cfg.tree.seed = 2;
  auto m2 = CascadeModel::train(in, cfg);
  ASSERT_TRUE(m1.ok() && m2.ok());
  EXPECT_EQ(m2->config().tree.seed, 2u);
  size_t differ = 0;
  for (const TrainingJob& t : in.jobs) {
    if (t.role != Role::kTest) continue;
    differ += m1->predict_views(*t.job, t.views).mem.util != m2->predict_views(*t.job, t.views).mem.util;
  }
  EXPECT_GT(differ, 0u);  // subsample and colsample 0.8 draw with the tree's seed
}

TEST(CascadeProtocol, ConformalQuantileIsTheFiniteSampleRank) {
  std::vector<double> r;
  for (int i = 1; i <= 19; ++i) r.push_back(i * 0.01);
  // ceil(20 * 0.9) = 18th smallest.
  EXPECT_DOUBLE_EQ(conformal_quantile(r, 0.9, 5), 0.18);
  EXPECT_TRUE(std::isnan(conformal_quantile(r, 0.9, 50)));
  EXPECT_TRUE(std::isinf(conformal_quantile({0.1, 0.2}, 0.9, 1)));
}

TEST(CascadeProtocol, TrustClipStaysWithinTheRegion) {
  EXPECT_DOUBLE_EQ(trust_clip(0.9, 0.5, 0.01, 2.0, 0.05), 0.55);
  EXPECT_DOUBLE_EQ(trust_clip(0.1, 0.5, 0.1, 2.0, 0.05), 0.3);
  EXPECT_DOUBLE_EQ(trust_clip(0.52, 0.5, 0.0, 2.0, 0.05), 0.52);
}

}  // namespace
}  // namespace peakcast::cascade
