// Tasks from a trace, Sizey's task types and its numpy-compatible split.
#include "peakcast/sizing/sim_task.h"

#include <cmath>
#include <map>
#include <optional>

namespace peakcast::sizing {

std::string workload_of(const Job& job) {
  if (job.workload) return *job.workload;
  return !job.job_name.empty() ? job.job_name : job.script_key;
}

std::string script_workload_of(const Job& job) {
  return !job.script_key.empty() ? job.script_key : workload_of(job);
}

TaskInfo task_info(const Job& j, bool sizey) {
  TaskInfo info;
  info.workload = workload_of(j);
  info.partition = j.partition;
  // Sizey's protocol takes rchar (bytes read, measured by the run) as the input size; the
  // event-time protocol only what was known at submission.
  if (sizey && j.read_bytes) info.input_bytes = static_cast<double>(*j.read_bytes);
  else if (j.input_bytes) info.input_bytes = static_cast<double>(*j.input_bytes);
  if (j.req_mem_bytes) info.request_bytes = static_cast<double>(*j.req_mem_bytes);
  info.submit_ms = j.submit_ms;
  return info;
}

std::optional<SimTask> sim_task(const Job& j, bool sizey) {
  SimTask t;
  t.info = task_info(j, sizey);
  t.end_ms = j.end_ms;
  // A peak of 0 is no label here, as a Nextflow trace's 0 (its sampler caught nothing) is none
  // anywhere: the reader leaves that unset (no label for evaluate either, and a note counts
  // them). The checks for 0 stay for the other readers' zeros: Sizey drops an rss <= 0, and
  // Witt-LR's relative error divides by the peak.
  if (sizey) {
    if (!j.rss_bytes || *j.rss_bytes == 0 || !j.realtime_ms) return std::nullopt;
    t.peak_bytes = static_cast<double>(*j.rss_bytes);
    t.runtime_ms = static_cast<double>(*j.realtime_ms);
  } else {
    if (!j.peak_mem_bytes || *j.peak_mem_bytes == 0) return std::nullopt;
    t.peak_bytes = static_cast<double>(*j.peak_mem_bytes);
    t.runtime_ms = static_cast<double>(run_time_ms(j));
    t.censored = censored_for(j, Resource::kMem);
  }
  return t;
}

int64_t run_time_ms(const Job& j) {
  return j.realtime_ms ? *j.realtime_ms : j.end_ms - j.start_ms.value_or(j.submit_ms);
}

std::optional<SimTask> learned_run(const Job& job) {
  if (!job.is_valid(Resource::kMem) || censored_for(job, Resource::kMem)) return std::nullopt;
  std::optional<SimTask> t = sim_task(job, /*sizey=*/false);
  if (t) t->info.workload = script_workload_of(job);
  return t;
}

std::vector<SimTask> tasks_from_jobs(const std::vector<Job>& jobs, bool sizey) {
  std::vector<SimTask> out;
  out.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::optional<SimTask> t = sim_task(jobs[i], sizey);
    if (!t) continue;
    t->row = i;
    out.push_back(std::move(*t));
  }
  return out;
}

size_t give_default_request(std::vector<SimTask>& tasks, const std::vector<Job>& jobs,
                            const DefaultMemory& d) {
  if (!d.any()) return 0;
  size_t given = 0;
  for (SimTask& t : tasks) {
    if (t.info.request_bytes > 0.0) continue;
    double bytes = d.per_node_bytes;
    if (d.per_cpu_bytes > 0.0) {
      const std::optional<double> cpus = t.row < jobs.size() ? jobs[t.row].req_cpus : std::nullopt;
      bytes = d.per_cpu_bytes * (cpus && *cpus >= 1.0 ? std::ceil(*cpus) : 1.0);
    }
    // At most the readers' largest request (1.8e19 bytes): the policies convert it to uint64.
    bytes = std::min(bytes, 1.8e19);
    t.info.request_bytes = bytes;
    ++given;
  }
  return given;
}

std::vector<TaskType> sizey_task_types(const std::vector<SimTask>& tasks, size_t min_tasks,
                                       std::vector<std::string>* skipped) {
  std::vector<TaskType> types;
  std::map<std::string, size_t> at;
  for (const SimTask& t : tasks) {
    auto [it, fresh] = at.emplace(t.info.workload, types.size());
    if (fresh) types.push_back({t.info.workload, {}});
    types[it->second].tasks.push_back(t);
  }
  std::vector<TaskType> kept;
  for (TaskType& tt : types) {
    bool zero_runtime = false;
    for (const SimTask& t : tt.tasks) zero_runtime |= t.runtime_ms <= 0.0;
    if (tt.tasks.size() < min_tasks) {
      if (skipped) {
        skipped->push_back(tt.workload + " (" + std::to_string(tt.tasks.size()) +
                           (tt.tasks.size() == 1 ? " task < " : " tasks < ") + std::to_string(min_tasks) + ")");
      }
    } else if (zero_runtime) {
      if (skipped) skipped->push_back(tt.workload + " (a task with realtime 0)");
    } else {
      kept.push_back(std::move(tt));
    }
  }
  return kept;
}

std::vector<size_t> numpy_permutation(uint32_t seed, size_t n) {
  std::vector<size_t> a(n);
  for (size_t i = 0; i < n; ++i) a[i] = i;
  if (n < 2) return a;
  std::mt19937 g(seed);  // init_genrand(seed), as RandomState(int) does
  for (size_t i = n - 1; i >= 1; --i) {
    // rk_interval(i): the smallest all-ones mask covering i, rejection until <= i.
    uint64_t mask = i;
    for (int s = 1; s <= 32; s <<= 1) mask |= mask >> s;
    uint64_t v;
    do {
      v = static_cast<uint64_t>(g()) & mask;
    } while (v > i);
    std::swap(a[i], a[static_cast<size_t>(v)]);
  }
  return a;
}

SizeySplit sizey_split(uint32_t seed, size_t n, double test_size) {
  const std::vector<size_t> perm = numpy_permutation(seed, n);
  const auto n_test = static_cast<size_t>(std::ceil(test_size * static_cast<double>(n)));
  SizeySplit s;
  s.online.assign(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(n_test));
  s.warm.assign(perm.begin() + static_cast<std::ptrdiff_t>(n_test), perm.end());
  return s;
}

}  // namespace peakcast::sizing
