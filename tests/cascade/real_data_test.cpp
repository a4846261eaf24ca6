// Figures on ../shared/data (disabled by default: minutes per trace). Run with
//   PEAKCAST_CASCADE_TRACES=path1,path2 build/bin/cascade_tests
//     --gtest_also_run_disabled_tests --gtest_filter='*RealTraces*'
// (default: every dev trace). Trains the cascade on the 60/20/20 split with the purge of
// eval::make_split, replays the test block once, and compares test MAE with hier_last1 and the
// best single hierarchical expert. Prints the figures; asserts only that the cascade predicted.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "peakcast/cascade/cascade_model.h"
#include "peakcast/core/io.h"
#include "peakcast/eval/split.h"
#include "peakcast/ingest/reader.h"

namespace peakcast::cascade {
namespace {

std::vector<std::string> traces() {
  if (const char* env = std::getenv("PEAKCAST_CASCADE_TRACES")) {
    std::vector<std::string> out;
    for (auto p : split(env, ',')) out.emplace_back(p);
    return out;
  }
  const std::string d = PEAKCAST_SOURCE_DIR "/../shared/data/";
  return {d + "swf/LANL-CM5-1994-4.1-cln.first60pct.swf.gz", d + "nextflow/trace_chipseq.csv",
          d + "nextflow/trace_eager.csv", d + "nextflow/trace_mag.csv",
          d + "gpu/gpumemnet-timm-a100.dev.jsonl", d + "sacct/yale-grace-array-clustered.txt"};
}

Role role_of(eval::Block b) {
  switch (b) {
    case eval::Block::kTrain: return Role::kTrain;
    case eval::Block::kValidation: return Role::kValidation;
    case eval::Block::kTest: return Role::kTest;
    default: return Role::kIgnore;
  }
}

TEST(RealTraces, DISABLED_CascadeVsHierLast1) {
  for (const std::string& path : traces()) {
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent (needs ../shared/data)";
    auto trace = ingest::read_trace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    auto split = eval::make_split(trace->jobs, eval::SplitConfig{});
    ASSERT_TRUE(split.ok()) << split.status().message();
    std::vector<Role> roles;
    for (eval::Block b : split->block) roles.push_back(role_of(b));
    TrainingInput in;
    in.jobs = with_history_views(split->order, roles);
    in.fallback = split->fallback;
    in.trained_on = std::filesystem::path(path).filename().string();
    const auto t0 = std::chrono::steady_clock::now();
    auto model = CascadeModel::train(in, CascadeConfig{});
    ASSERT_TRUE(model.ok()) << model.status().message();
    const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::vector<const Job*> jobs;
    std::vector<HistoryViews> views;
    for (const TrainingJob& t : in.jobs) {
      if (t.role != Role::kTest) continue;
      jobs.push_back(t.job);
      views.push_back(t.views);
    }
    const auto preds = model->predict_views_batch(jobs, views);
    const auto code = model->code_model().predict_batch(jobs);
    std::printf("\n%s: %zu jobs, train %.1f s (code %.1f s, %lld epochs, %.0f jobs/s), test %zu\n",
                in.trained_on.c_str(), trace->jobs.size(), train_s, model->report().seconds_code,
                static_cast<long long>(model->report().code.epochs_run),
                model->report().code.jobs_per_s, jobs.size());
    for (Resource r : kResources) {
      const auto ri = static_cast<size_t>(idx(r));
      double n = 0, cas = 0, q = 0, acc = 0, covered = 0, upper_n = 0;
      std::array<double, history::kNumExperts> hist{};
      std::array<double, 4> routes{};
      for (size_t i = 0; i < jobs.size(); ++i) {
        if (!jobs[i]->is_valid(r)) continue;
        const ResourcePrediction* p = r == Resource::kMem ? &preds[i].mem
                                      : (preds[i].vram ? &*preds[i].vram : nullptr);
        if (p == nullptr) continue;
        const double y = std::clamp(jobs[i]->label(r), 0.0, 1.0);
        n += 1;
        cas += std::abs(p->util - y);
        acc += std::abs(p->util - y) <= 0.1 ? 1 : 0;
        q += std::abs(std::clamp(static_cast<double>(code[i].util[ri]), 0.0, 1.0) - y);
        for (history::Expert e : history::kExperts)
          hist[static_cast<size_t>(static_cast<int>(e))] +=
              std::abs(std::clamp(views[i][ri].estimate(e, in.fallback[ri]), 0.0, 1.0) - y);
        routes[static_cast<size_t>(static_cast<int>(p->route))] += 1;
        if (p->upper_util) {
          upper_n += 1;
          covered += y <= *p->upper_util + 1e-12 ? 1 : 0;
        }
      }
      if (n == 0) continue;
      const auto& pol = model->policy()[ri];
      std::printf("  %-4s n=%6.0f  cascade MAE %.4f (Acc@10 %.1f%%)  code_only %.4f  hier_last1 %.4f"
                  "  median3 %.4f  median5 %.4f  ewma %.4f | policy %s tau %.2f trust %.1f/%.2f |"
                  " routes bypass %.1f%% encoder %.1f%% cache %.1f%% no_history %.1f%% |"
                  " upper coverage %.3f\n",
                  std::string(resource_name(r)).c_str(), n, cas / n, 100 * acc / n, q / n,
                  hist[0] / n, hist[1] / n, hist[2] / n, hist[3] / n,
                  std::string(history::expert_name(pol.expert)).c_str(), pol.tau, pol.trust_coef,
                  pol.trust_floor, 100 * routes[0] / n, 100 * routes[1] / n, 100 * routes[2] / n,
                  100 * routes[3] / n, upper_n > 0 ? covered / upper_n : 0.0);
      EXPECT_TRUE(std::isfinite(cas / n));
    }
  }
}

}  // namespace
}  // namespace peakcast::cascade
