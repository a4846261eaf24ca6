// The tasks a sizing simulation replays, and the two protocols' orders (docs/sizing.md).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/status.h"

namespace peakcast::sizing {

// What a policy may see when it sizes a task: nothing measured by the run itself except
// `input_bytes`, which Sizey's protocol takes from Nextflow's `rchar` (bytes read; see the doc).
struct TaskInfo {
  std::string workload;        // the task type: Nextflow process, else workload / job name
  double input_bytes = 0.0;    // Sizey's input_size; 0 when unknown
  double request_bytes = 0.0;  // the user's / workflow's preset request; 0 when unknown
  int64_t submit_ms = 0;
  std::string partition;       // the recommendation rule's per-partition settings ("" = default)
  // The largest request among the workload's runs that had most recently ended OUT_OF_MEMORY
  // before this submission (sizing::trailing_oom_request): the daemon's resubmission after an
  // OOM. A replay never sets it (a task's own failed attempts go through retry()).
  std::optional<uint64_t> failed_request_bytes;
  bool failed_at_lowered_limit = false;  // RecommendInput's: the daemon's, after the hook lowered --mem
};

// The identity a sizing policy sizes in `peakcast simulate` (its task type): the trace's
// workload (a Nextflow process, an SWF executable, a sacct job without a stored script: its
// name), else the job name, else the script's key.
std::string workload_of(const Job& job);
// peakcastd's: the script's key (the SHA-256 of its redacted text, or of the workload where the
// job has no script), else workload_of. The same groups as workload_of wherever a job has a
// workload; a job with a script is sized with the runs of that script only, never with another
// user's job of the same name.
std::string script_workload_of(const Job& job);

// A task as replayed: what a policy sees, and the outcome it learns after completion.
struct SimTask {
  TaskInfo info;
  double peak_bytes = 0.0;   // y: the memory an attempt must hold (Nextflow rss in Sizey's protocol)
  double runtime_ms = 0.0;   // one attempt's run time (Nextflow realtime)
  int64_t end_ms = 0;        // when the outcome became known (chrono protocol)
  // Killed for memory (outside Sizey's protocol): peak_bytes is only a lower bound of what the
  // task needed, so no replay can say whether an allocation above it would have held.
  bool censored = false;
  size_t row = 0;            // index in the trace's job list
};

// A completed job as peakcastd's workloads' policies learn it (serve::SizingState, and `peakcast
// report`'s replay of the daemon): a run of its script's workload (script_workload_of), or
// nullopt where it teaches them nothing: no memory label or peak, or killed for memory (it used
// more than it held; how much more is not known).
std::optional<SimTask> learned_run(const Job& job);

// What a policy sees of `job` at its submission (workload_of, its request and partition; the
// input size: Sizey's rchar when `sizey`, else only a submission-time input_bytes).
TaskInfo task_info(const Job& job, bool sizey);
// `job` as a completed task (row 0), or nullopt when it has no peak (below).
std::optional<SimTask> sim_task(const Job& job, bool sizey);
// A finished job's run time outside Sizey's protocol: realtime, else end - start, else end -
// submit (ms).
int64_t run_time_ms(const Job& job);

// The trace's jobs as tasks. Sizey's protocol (`sizey = true`): y = rss, runtime = realtime;
// jobs without them, or with rss <= 0, are left out (Sizey drops rss <= 0 / NaN). Otherwise y
// is the recorded peak memory (peak_rss for Nextflow), runtime = realtime, else end - start,
// else end - submit, and the input size only a submission-time `input_bytes` (never rchar, which
// the run measures). Jobs without a peak are left out.
std::vector<SimTask> tasks_from_jobs(const std::vector<Job>& jobs, bool sizey);

// What the scheduler gives a job submitted without a memory request, as slurm.conf's
// DefMemPerNode or DefMemPerCPU (times the job's CPUs; 1 when the trace does not say) would.
// Both 0: nothing (the policies see no request). Both set is the caller's error, as in Slurm.
struct DefaultMemory {
  double per_node_bytes = 0.0;
  double per_cpu_bytes = 0.0;
  bool any() const { return per_node_bytes > 0.0 || per_cpu_bytes > 0.0; }
};

// Gives each task without a request (request_bytes <= 0) the default, reading its CPUs from
// `jobs[task.row]`; returns how many tasks it gave it to. A task with a request keeps it.
size_t give_default_request(std::vector<SimTask>& tasks, const std::vector<Job>& jobs,
                            const DefaultMemory& d);

// One task type's tasks in trace order.
struct TaskType {
  std::string workload;
  std::vector<SimTask> tasks;
};

// Groups by workload in order of first appearance, keeping Sizey's eligibility: at least
// `min_tasks` (34) tasks and no task with a zero runtime. `skipped` gets the names left out
// with the reason.
std::vector<TaskType> sizey_task_types(const std::vector<SimTask>& tasks, size_t min_tasks,
                                       std::vector<std::string>* skipped);

// numpy's legacy RandomState(seed).permutation(n): Mersenne Twister seeded by init_genrand,
// Fisher-Yates from the end, each index drawn by masked rejection on 32-bit outputs.
std::vector<size_t> numpy_permutation(uint32_t seed, size_t n);

// Sizey's split of one task type (scikit-learn train_test_split, test_size = 0.7): the online
// (test) positions perm[0 .. ceil(0.7 n)) in that order, and the warm-start history, the rest.
struct SizeySplit {
  std::vector<size_t> online;
  std::vector<size_t> warm;
};
SizeySplit sizey_split(uint32_t seed, size_t n, double test_size = 0.7);

}  // namespace peakcast::sizing
