// Tasks from a Nextflow trace: the reader keeps rss, rchar and realtime; Sizey's protocol uses
// them, the event-time protocol uses peak_rss and no run-measured input; Sizey's task types.
// GCC 12 warns, falsely, that assigning a std::optional<std::string> member of a default-made
// Job may read the string uninitialized (-Wmaybe-uninitialized, inlined at -O2). Set before the
// includes: the warning is located in libstdc++'s headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <gtest/gtest.h>

#include <vector>

#include "peakcast/ingest/reader.h"
#include "peakcast/sizing/sim_task.h"

namespace peakcast::sizing {
namespace {

const char* kTrace =
    "task_id,process,status,memory,submit,complete,realtime,rss,peak_rss,rchar\n"
    "1,WF:A,COMPLETED,1073741824,1674490103000,1674490163000,55000,500000000,600000000,7000\n"
    "2,WF:A,COMPLETED,1073741824,1674490104000,1674490164000,0,0,600000000,7000\n"
    "3,WF:B,COMPLETED,1073741824,1674490105000,1674490165000,1m 3s,400000000,450000000,-\n";

ingest::Trace parse(const std::string& text) {
  ingest::Trace t;
  ingest::ReadOptions o;
  EXPECT_TRUE(ingest::parse_nextflow(text, "trace_toy.csv", o, t).is_ok());
  return t;
}

TEST(NextflowMeasurements, ReaderKeepsRssRcharAndRealtime) {
  const ingest::Trace t = parse(kTrace);
  ASSERT_EQ(t.jobs.size(), 3u);
  EXPECT_EQ(t.jobs[0].rss_bytes, 500000000u);
  EXPECT_EQ(t.jobs[0].read_bytes, 7000u);
  EXPECT_EQ(t.jobs[0].realtime_ms, 55000);
  EXPECT_EQ(t.jobs[2].realtime_ms, 63000);  // Nextflow's human form
  EXPECT_FALSE(t.jobs[2].read_bytes.has_value());
}

TEST(NextflowMeasurements, BadRealtimeIsSkippedNamingTheField) {
  ingest::Trace t;
  ingest::ReadOptions o;
  ASSERT_TRUE(ingest::parse_nextflow(
                  "task_id,process,submit,complete,realtime\n1,A,1674490103000,1674490163000,soon\n",
                  "trace_toy.csv", o, t)
                  .is_ok());
  EXPECT_TRUE(t.jobs.empty());
  ASSERT_EQ(t.stats.reasons.size(), 1u);
  EXPECT_NE(t.stats.reasons[0].find("trace_toy.csv:2: realtime: not a duration: 'soon'"), std::string::npos);
}

TEST(TasksFromJobs, SizeyUsesRssAndRcharAndDropsZeroRss) {
  const auto tasks = tasks_from_jobs(parse(kTrace).jobs, true);
  ASSERT_EQ(tasks.size(), 2u);  // the rss 0 row is dropped
  EXPECT_EQ(tasks[0].peak_bytes, 5e8);
  EXPECT_EQ(tasks[0].runtime_ms, 55000);
  EXPECT_EQ(tasks[0].info.input_bytes, 7000);
  EXPECT_EQ(tasks[0].info.request_bytes, 1073741824.0);
  EXPECT_EQ(tasks[0].info.workload, "WF:A");
  EXPECT_EQ(tasks[1].row, 2u);
}

TEST(TasksFromJobs, EventTimeUsesPeakRssAndNoRunMeasuredInput) {
  const auto tasks = tasks_from_jobs(parse(kTrace).jobs, false);
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(tasks[0].peak_bytes, 6e8);
  EXPECT_EQ(tasks[0].info.input_bytes, 0.0);  // rchar is measured by the run: not used
  EXPECT_EQ(tasks[1].runtime_ms, 0.0);
}

// simulate sizes a trace's workload (a Nextflow process, an SWF executable, a sacct job without a
// stored script: its name), else its job name; peakcastd sizes a job with a script by that
// script, never with another user's job of the same name.
// One rule for a peak_rss of 0 (Nextflow's "sampler caught nothing", a very short task): evaluate
// scored it as a 0% label and the event-time replay dropped it (sim_task). The reader now leaves
// it unset, so the jobs with a memory label are the tasks the replay takes, and Sizey's replay
// still drops an rss of 0 as Sizey does.
TEST(TasksFromJobs, TheReplayTakesTheJobsEvaluateScores) {
  ingest::Trace t = parse(
      "task_id,process,status,memory,submit,complete,realtime,rss,peak_rss,rchar\n"
      "1,WF:A,COMPLETED,1073741824,1674490103000,1674490163000,55000,500000000,600000000,7000\n"
      "2,WF:A,COMPLETED,1073741824,1674490104000,1674490164000,40,0,0,7000\n"
      "3,WF:A,COMPLETED,1073741824,1674490105000,1674490165000,55000,400000000,450000000,7000\n");
  ingest::finalize_trace(t, 1.0);
  std::vector<size_t> labelled;
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    if (t.jobs[i].is_valid(Resource::kMem)) labelled.push_back(i);
  }
  std::vector<size_t> replayed;
  for (const SimTask& task : tasks_from_jobs(t.jobs, false)) replayed.push_back(task.row);
  EXPECT_EQ(labelled, replayed);
  EXPECT_EQ(labelled, (std::vector<size_t>{0, 2}));
  std::vector<size_t> sizey;
  for (const SimTask& task : tasks_from_jobs(t.jobs, true)) sizey.push_back(task.row);
  EXPECT_EQ(sizey, (std::vector<size_t>{0, 2}));
}

TEST(WorkloadIdentity, SimulateByWorkloadThenNameAndTheDaemonByScript) {
  Job nf;
  nf.workload = "WF:ALIGN";
  nf.job_name = "nf-ALIGN_(1)";
  nf.script_key = "key-of-workload";
  EXPECT_EQ(workload_of(nf), "WF:ALIGN");
  EXPECT_EQ(script_workload_of(nf), "key-of-workload");  // the same groups: one key per workload
  Job batch;
  batch.job_name = "run.sh";
  batch.script_key = "key-of-script";
  EXPECT_EQ(workload_of(batch), "run.sh");
  EXPECT_EQ(script_workload_of(batch), "key-of-script");
  Job bare;
  bare.job_name = "run.sh";
  EXPECT_EQ(workload_of(bare), "run.sh");
  EXPECT_EQ(script_workload_of(bare), "run.sh");
}

TEST(TasksFromJobs, OneJobAsATaskAndWhatItsSubmissionShows) {
  Job j;
  j.workload = "W";
  j.partition = "gpu";
  j.submit_ms = 1000;
  j.start_ms = 4000;
  j.end_ms = 64000;
  j.req_mem_bytes = 8ull << 30;
  j.input_bytes = 5000;
  j.read_bytes = 7000;  // measured by the run: Sizey's input only
  j.peak_mem_bytes = 3ull << 30;
  const TaskInfo at_submit = task_info(j, false);
  EXPECT_EQ(at_submit.workload, "W");
  EXPECT_EQ(at_submit.partition, "gpu");
  EXPECT_EQ(at_submit.input_bytes, 5000.0);
  EXPECT_EQ(at_submit.request_bytes, static_cast<double>(8ull << 30));
  EXPECT_FALSE(at_submit.failed_request_bytes);
  EXPECT_EQ(task_info(j, true).input_bytes, 7000.0);
  const std::optional<SimTask> t = sim_task(j, false);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->peak_bytes, static_cast<double>(3ull << 30));
  EXPECT_EQ(t->runtime_ms, 60000.0);  // end - start
  const std::vector<SimTask> all = tasks_from_jobs({j}, false);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].info.partition, "gpu");
  EXPECT_EQ(all[0].peak_bytes, t->peak_bytes);
  j.peak_mem_bytes.reset();
  EXPECT_FALSE(sim_task(j, false));  // no peak: nothing to learn
}

TEST(DefaultRequest, OnlyTasksWithoutARequestGetTheSlurmDefault) {
  // Rows 0 and 2 without a request; row 0 asked for 3 CPUs, row 2 says nothing of CPUs.
  std::vector<Job> jobs(3);
  jobs[0].req_cpus = 2.5;  // a fraction of a CPU is a whole one to Slurm
  std::vector<SimTask> tasks(3);
  for (size_t i = 0; i < 3; ++i) tasks[i].row = i;
  tasks[1].info.request_bytes = 5e9;

  auto none = tasks;
  EXPECT_EQ(give_default_request(none, jobs, DefaultMemory{}), 0u);
  EXPECT_EQ(none[0].info.request_bytes, 0.0);

  auto per_node = tasks;
  EXPECT_EQ(give_default_request(per_node, jobs, DefaultMemory{.per_node_bytes = 4e9}), 2u);
  EXPECT_EQ(per_node[0].info.request_bytes, 4e9);
  EXPECT_EQ(per_node[1].info.request_bytes, 5e9);  // its own request is kept
  EXPECT_EQ(per_node[2].info.request_bytes, 4e9);

  auto per_cpu = tasks;
  EXPECT_EQ(give_default_request(per_cpu, jobs, DefaultMemory{.per_cpu_bytes = 1e9}), 2u);
  EXPECT_EQ(per_cpu[0].info.request_bytes, 3e9);  // 3 CPUs
  EXPECT_EQ(per_cpu[1].info.request_bytes, 5e9);
  EXPECT_EQ(per_cpu[2].info.request_bytes, 1e9);  // CPUs unknown: one

  // 1e7 CPUs (the readers' largest count) of 10000P each is 1.1e26 bytes, past 2^64: the policies
  // convert requests to uint64 (out of range: undefined). It is the largest request a reader keeps.
  auto huge = tasks;
  std::vector<Job> many = jobs;
  many[0].req_cpus = 1e7;
  EXPECT_EQ(give_default_request(huge, many, DefaultMemory{.per_cpu_bytes = 10000.0 * 1125899906842624.0}), 2u);
  EXPECT_EQ(huge[0].info.request_bytes, 1.8e19);
  EXPECT_EQ(huge[2].info.request_bytes, 10000.0 * 1125899906842624.0);  // one CPU's: below it
}

TEST(SizeyTaskTypes, KeepsTypesWithEnoughTasksAndNoZeroRuntime) {
  std::vector<SimTask> tasks;
  for (int i = 0; i < 40; ++i) {
    SimTask t;
    t.info.workload = i % 2 ? "small" : "big";
    t.runtime_ms = 1000;
    tasks.push_back(t);
  }
  for (int i = 0; i < 34; ++i) {
    SimTask t;
    t.info.workload = "zero";
    t.runtime_ms = i == 7 ? 0 : 1000;
    tasks.push_back(t);
  }
  std::vector<std::string> skipped;
  auto types = sizey_task_types(tasks, 20, &skipped);
  ASSERT_EQ(types.size(), 2u);
  EXPECT_EQ(types[0].workload, "big");  // order of first appearance
  EXPECT_EQ(types[0].tasks.size(), 20u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("zero (a task with realtime 0)"), std::string::npos);
  types = sizey_task_types(tasks, 21, &skipped);
  EXPECT_EQ(types.size(), 0u);
}

}  // namespace
}  // namespace peakcast::sizing
