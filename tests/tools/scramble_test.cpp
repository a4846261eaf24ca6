// Leakage guard for every method that learns: scrambling the labels of the test block must not
// change a single prediction. Each method is fitted twice -- on the trace as it is and on a copy
// whose test-block peaks are permuted and rescaled -- and both fits predict the test jobs from the
// same (unscrambled) history views. Any use of a test label at fit time (early stopping on the
// test block, a policy chosen on it, priors or columns learned from it) makes the two differ.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "peakcast/eval/evaluate.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/synth/synth.h"
#include "peakcast/tools/learned_methods.h"

namespace peakcast::eval {
namespace {

std::vector<Job> synth_jobs() {
  synth::SynthOptions o;
  o.jobs = 1200;
  o.seed = 11;
  o.users = 12;
  o.days = 30.0;
  auto j = synth::generate_trace(o);
  if (!j) throw std::runtime_error(j.status().message());
  return std::move(j).value();
}

// The same trace with every test-block job's peaks replaced by another test job's, scaled.
std::vector<Job> scrambled_test_labels(const std::vector<Job>& jobs, const Split& split) {
  std::vector<Job> out = jobs;
  std::vector<size_t> test;
  for (size_t i = 0; i < split.order.size(); ++i) {
    if (split.block[i] == Block::kTest) test.push_back(static_cast<size_t>(split.order[i] - jobs.data()));
  }
  std::vector<size_t> perm = test;
  std::mt19937_64 rng(3);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (size_t k = 0; k < test.size(); ++k) {
    Job& j = out[test[k]];
    const Job& donor = jobs[perm[k]];
    if (donor.peak_mem_bytes) j.peak_mem_bytes = *donor.peak_mem_bytes / 3 + 12345;
    if (donor.peak_vram_bytes) j.peak_vram_bytes = *donor.peak_vram_bytes / 2 + 777;
    compute_labels(j);
  }
  return out;
}

TEST(Scramble, TestLabelsDoNotChangeAnyLearnedPrediction) {
  const std::vector<Job> jobs = synth_jobs();
  auto split = make_split(jobs, SplitConfig{});
  ASSERT_TRUE(split) << split.status().message();
  const std::vector<Job> other = scrambled_test_labels(jobs, *split);
  auto split_other = make_split(other, SplitConfig{});
  ASSERT_TRUE(split_other);
  // Same order and blocks: only test labels differ.
  ASSERT_EQ(split->block, split_other->block);
  size_t changed = 0;
  for (size_t i = 0; i < jobs.size(); ++i) changed += jobs[i].util != other[i].util;
  ASSERT_GT(changed, jobs.size() / 10);

  const EvalData data = build_eval_data(*split, 1.0);
  const EvalData data_other = build_eval_data(*split_other, 1.0);
  std::vector<const JobContext*> test;
  for (const JobContext& c : data.jobs) {
    if (c.block == Block::kTest) test.push_back(&c);
  }
  ASSERT_GT(test.size(), 100u);

  MethodRegistry reg;
  register_builtins(reg);
  register_learned(reg);
  MethodOptions o;
  o.threads = 1;
  o.code_options = {{"token_dim", "8"}, {"hash_buckets", "4096"}, {"seq_buckets", "4096"},
                    {"seq_max_tokens", "64"}, {"user_dim", "8"}, {"fused_dim", "32"},
                    {"conv_filters", "8"}, {"lstm_hidden", "8"}, {"max_epochs", "3"},
                    {"patience", "2"}, {"batch_size", "64"}};
  for (const char* name : {"global_median", "history_policy", "hier_combined", "xgboost",
                           "code_only", "textcnn", "bilstm", "cascade"}) {
    auto a = reg.create(name, o);
    auto b = reg.create(name, o);
    ASSERT_TRUE(a && b) << name;
    ASSERT_TRUE((*a)->fit(data, {})) << name;
    ASSERT_TRUE((*b)->fit(data_other, {})) << name;
    (*a)->clear_caches();
    (*b)->clear_caches();
    std::vector<Prediction> pa(test.size()), pb(test.size());
    (*a)->predict_batch(test, pa);
    (*b)->predict_batch(test, pb);
    size_t differ = 0;
    for (size_t t = 0; t < test.size(); ++t) {
      for (Resource r : kResources) {
        if (test[t]->job->is_valid(r) && pa[t].util[idx(r)] != pb[t].util[idx(r)]) ++differ;
      }
    }
    EXPECT_EQ(differ, 0u) << name << ": predictions changed when only test labels changed";
  }
}

}  // namespace
}  // namespace peakcast::eval
