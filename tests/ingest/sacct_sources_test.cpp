// The sacct reader's script sources (a `--batch-script` dump, a folder of job scripts) and the
// real Yale array dumps in ../shared/data (skipped without them).
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "golden_util.h"
#include "peakcast/core/io.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/ingest/sacct.h"
#include "sacct_test_util.h"

namespace peakcast::ingest {
namespace {

using namespace sacct_testing;
using test_util::golden;
using test_util::shared_data;
using test_util::temp_path;
using test_util::write_text;

// ---------------------------------------------------------------- scripts

TEST(SacctScripts, BatchScriptDump) {
  auto text = read_file(golden("sacct_scripts.dump"));
  ASSERT_TRUE(text.ok());
  auto scripts = sacct::parse_batch_script_dump(*text);
  ASSERT_EQ(scripts.size(), 2u);  // 101 is NONE
  EXPECT_EQ(scripts.count("101"), 0u);
  EXPECT_EQ(scripts["100"], "#!/bin/bash\n#SBATCH -N 2\nsrun ./mpi_run --size 64\n");
  // A "Batch Script for" line without the dash rule stays inside the script.
  EXPECT_NE(scripts["35256075"].find("echo \"Batch Script for nothing\""), std::string::npos);
}

TEST(SacctScripts, DumpAttachesScriptsAndJobNameIsTheFallbackIdentity) {
  ReadOptions o = sacct_options();
  o.scripts_dump = golden("sacct_scripts.dump");
  auto trace = read_trace(golden("sacct_2011.txt"), o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  const Job* with = find_job(*trace, "100");
  const Job* without = find_job(*trace, "101");
  ASSERT_TRUE(with && without);
  ASSERT_TRUE(with->script);
  EXPECT_NE(with->script->find("mpi_run"), std::string::npos);
  EXPECT_FALSE(with->workload);
  EXPECT_FALSE(without->script);
  EXPECT_EQ(without->workload, "a|b");
  EXPECT_TRUE(trace->has_scripts);
  EXPECT_NE(with->script_key, without->script_key);
}

TEST(SacctScripts, FolderOfJobScriptsWithArrayParentFallback) {
  const std::string dir = temp_path("sacct_scripts_dir");
  std::filesystem::create_directories(dir);
  write_text(dir + "/35256075.sh", "#!/bin/bash\necho array\n");
  write_text(dir + "/35256075_2.sh", "#!/bin/bash\necho task two\n");
  write_text(dir + "/notes.txt", "not a script\n");
  ReadOptions o = sacct_options();
  o.columns = {"JobID", "JobName", "MaxRSS", "Elapsed", "ReqMem", "ReqCPUS", "Timelimit", "State",
               "User"};
  o.scripts_dir = dir;
  auto trace = read_trace(golden("sacct_noheader.txt"), o);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  ASSERT_EQ(trace->jobs.size(), 2u);
  // As read: redacted (finalize_job), which drops the final newline.
  EXPECT_EQ(trace->jobs[0].script, "#!/bin/bash\necho array");
  EXPECT_EQ(trace->jobs[1].script, "#!/bin/bash\necho task two");

  o.scripts_dir = dir + "/missing";
  auto missing = read_trace(golden("sacct_noheader.txt"), o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("scripts folder"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------- real data (Yale arrays)

// An independent count from the raw text: job keys, job keys with any OUT_OF_MEMORY row, and the
// max MaxRSS (K or M suffix) per job.
struct NaiveScan {
  std::set<std::string> jobs, oom, preempted;
  std::map<std::string, uint64_t> max_rss;
};

NaiveScan naive_scan(const std::string& text) {
  NaiveScan s;
  auto lines = split_lines(text);
  auto header = split(lines[0], '|');
  auto col = [&](std::string_view name) {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  const int id = col("JobID"), state = col("State"), rss = col("MaxRSS");
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    auto f = split(lines[i], '|');
    std::string key(f[id].substr(0, f[id].find('.')));
    if (f[id].find('.') == std::string_view::npos) s.jobs.insert(key);
    if (state >= 0 && f[state] == "OUT_OF_MEMORY") s.oom.insert(key);
    if (state >= 0 && f[state] == "PREEMPTED") s.preempted.insert(key);
    if (rss >= 0 && (f[rss].ends_with("K") || f[rss].ends_with("M"))) {
      const double unit = f[rss].back() == 'K' ? 1024.0 : 1024.0 * 1024.0;
      const double v = std::stod(std::string(f[rss].substr(0, f[rss].size() - 1))) * unit;
      s.max_rss[key] = std::max(s.max_rss[key], static_cast<uint64_t>(v + 0.5));
    }
  }
  return s;
}

void check_yale(const std::string& file, size_t expected_tasks, bool has_states) {
  const std::string path = shared_data("sacct/" + file);
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent (needs ../shared/data)";
  auto text = read_file(path);
  ASSERT_TRUE(text.ok());
  const NaiveScan naive = naive_scan(*text);
  auto trace = read_trace(path, ReadOptions{});  // format detected from the content
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->format, Format::kSacct);
  EXPECT_EQ(trace->jobs.size(), expected_tasks);
  EXPECT_EQ(trace->jobs.size(), naive.jobs.size());
  EXPECT_EQ(trace->stats.skipped, 0u);
  EXPECT_FALSE(trace->has_submit_times);
  EXPECT_TRUE(has_note(*trace, "cannot order"));
  std::map<std::string, size_t> states;
  size_t peaks_checked = 0;
  for (const Job& j : trace->jobs) {
    ++states[j.state];
    auto it = naive.max_rss.find(j.job_id);
    if (it != naive.max_rss.end()) {
      EXPECT_EQ(j.peak_mem_bytes, it->second) << j.job_id;
      ++peaks_checked;
    }
    EXPECT_EQ(j.state == "OUT_OF_MEMORY", naive.oom.count(j.job_id) == 1) << j.job_id;
    EXPECT_EQ(j.workload, j.job_name);
  }
  EXPECT_EQ(peaks_checked, naive.max_rss.size());
  EXPECT_GT(trace->stats.labelled[idx(Resource::kMem)], expected_tasks * 9 / 10);
  EXPECT_EQ(trace->stats.labelled[idx(Resource::kVram)], 0u);
  if (has_states) {
    EXPECT_GT(states["OUT_OF_MEMORY"], 0u);
    EXPECT_EQ(states["OUT_OF_MEMORY"], naive.oom.size());
    EXPECT_EQ(states["PREEMPTED"], naive.preempted.size());
    EXPECT_GT(states["PREEMPTED"], 0u);
    EXPECT_EQ(trace->stats.censored, naive.oom.size());
  }
}

TEST(SacctRealData, YaleClustered) { check_yale("yale-grace-array-clustered.txt", 10000, true); }
TEST(SacctRealData, YaleTest) { check_yale("yale-grace-array-test.txt", 7001, false); }

TEST(SacctRealData, YaleClusteredPerCpuRequest) {
  const std::string path = shared_data("sacct/yale-grace-array-clustered.txt");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent (needs ../shared/data)";
  auto trace = read_trace(path, sacct_options());
  ASSERT_TRUE(trace.ok());
  // ReqMem 10Gc with ReqCPUS 1: 10 GiB; the first task's batch step peaked at 2039920K.
  const Job& first = trace->jobs.front();
  EXPECT_EQ(first.job_id, "56210313_0");
  EXPECT_EQ(first.req_mem_bytes, 10 * kG);
  EXPECT_DOUBLE_EQ(first.label(Resource::kMem), 2039920.0 * kK / (10.0 * kG));
}

}  // namespace
}  // namespace peakcast::ingest
