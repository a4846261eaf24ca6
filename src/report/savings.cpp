// What peakcastd's recommended requests would have saved and cost on the report's test block,
// accounted as `peakcast simulate` accounts a policy (sizing::run_at): over-allocation x run
// time of the attempt that held, the whole allocation x run time of each that ran out of memory;
// after one, the user's own request.
#include <algorithm>
#include <cstddef>
#include <map>

#include <fmt/format.h>

#include "peakcast/sizing/simulate.h"
#include "report_internal.h"

namespace peakcast::report {

std::optional<RecommendationOutcome> recommendation_outcome(const std::vector<Job>& test,
                                                           const std::vector<DaemonAnswer>& answers,
                                                           std::vector<std::string>* why_none) {
  sizing::Tally asked, answered;
  std::map<std::string, RecommendationOutcome::Partition> by_partition;
  size_t recommended = 0, lower = 0, killed = 0;
  for (size_t i = 0; i < test.size() && i < answers.size(); ++i) {
    const std::optional<sizing::SimTask> task = sizing::sim_task(test[i], false);
    if (!task || task->info.request_bytes <= 0.0 || task->runtime_ms <= 0.0) continue;
    // Killed for memory at its request: what it needed is not known, so neither request's
    // outcome can be told (as `peakcast simulate --protocol chrono` leaves such a task out).
    if (task->censored) {
      ++killed;
      continue;
    }
    RecommendationOutcome::Partition& p = by_partition[task->info.partition];
    sizing::run_at(task->info.request_bytes, *task, p.asked);  // `presets`
    const std::optional<uint64_t>& r = answers[i].recommended_bytes;
    recommended += r ? 1 : 0;
    lower += r && static_cast<double>(*r) < task->info.request_bytes ? 1 : 0;
    sizing::run_at(r ? static_cast<double>(*r) : task->info.request_bytes, *task, p.answered);
  }
  RecommendationOutcome out;
  for (auto& [name, p] : by_partition) {
    p.name = name;
    asked.add(p.asked);
    answered.add(p.answered);
    out.partitions.push_back(std::move(p));
  }
  std::stable_sort(out.partitions.begin(), out.partitions.end(), [](const auto& a, const auto& b) {
    return a.asked.waste_gbh > b.asked.waste_gbh;
  });
  if (out.partitions.size() > kPartitionRows) {
    RecommendationOutcome::Partition other;
    // Called what no partition is, as the usage section's rest (a partition called "other (6
    // partitions)" read as the rest's row until 2026-12-06).
    other.name = fmt::format("other ({} partitions)", grouped(out.partitions.size() - (kPartitionRows - 1)));
    while (by_partition.contains(other.name)) other.name += "*";
    for (size_t i = kPartitionRows - 1; i < out.partitions.size(); ++i) {
      other.asked.add(out.partitions[i].asked);
      other.answered.add(out.partitions[i].answered);
    }
    out.partitions.resize(kPartitionRows - 1);
    out.partitions.push_back(std::move(other));
  }
  if (asked.jobs == 0) {
    if (why_none) {
      why_none->push_back(fmt::format(
          "no savings section: none of the {} test jobs has a memory request, a recorded peak and a "
          "run time{}",
          grouped(test.size()),
          killed > 0 ? fmt::format(" but for {} killed for memory, whose peak is not known (only that "
                                   "it was above the memory they held)", grouped(killed))
                     : std::string()));
    }
    return std::nullopt;
  }
  out.totals.source = "the test block";
  out.totals.results = sizing::summarize_seeds({{"users' requests", asked}, {"peakcastd's", answered}});
  out.totals.notes.push_back(fmt::format(
      "peakcastd's requests would have wasted {} GB·h ({} reserved unused, {} in {} "
      "out-of-memory attempts of {} job{}) against {} GB·h and {} failed attempts at the users' "
      "own requests",
      grouped(answered.waste_gbh, 1), grouped(answered.over_gbh, 1), grouped(answered.failed_gbh, 1),
      grouped(answered.failures), grouped(answered.failed_jobs), answered.failed_jobs == 1 ? "" : "s",
      grouped(asked.waste_gbh, 1), grouped(asked.failures)));
  out.totals.notes.push_back(fmt::format(
      "{} test jobs with a memory request, a peak and a run time; {} of them had a recommendation "
      "({} below the request), the others run at their request",
      grouped(asked.jobs), grouped(recommended), grouped(lower)));
  if (killed > 0) {
    out.totals.notes.push_back(fmt::format(
        "{} test jobs killed for memory are left out: their peak is not known, only that it was "
        "above the memory they held, so no request's outcome can be told",
        grouped(killed)));
  }
  return out;
}

std::string partition_table(const std::vector<RecommendationOutcome::Partition>& partitions) {
  if (partitions.size() < 2) return {};
  std::string t =
      "<p class=\"explain\">By partition (the recommendation rule's settings are per partition: "
      "peakcastd --sizing-config, docs/sizing.md), largest waste at the users' requests first.</p>\n"
      "<table class=\"sortable\"><thead><tr><th>partition</th><th>jobs</th>"
      "<th>waste at users' requests (GB·h)</th><th>waste at peakcastd's (GB·h)</th><th>saved (GB·h)</th>"
      "<th>failed attempts at users' / peakcastd's</th><th>jobs that failed at users' / peakcastd's</th>"
      "</tr></thead><tbody>\n";
  // The jobs without a partition, called what no partition of the table is (as the usage section
  // calls them: a partition called "(none)" read as theirs until 2026-12-06).
  std::string none = "(no partition)";
  while (std::any_of(partitions.begin(), partitions.end(), [&](const auto& p) { return p.name == none; })) none += "*";
  for (const RecommendationOutcome::Partition& p : partitions) {
    const auto gbh = [](double v) { return number_cell(grouped(v, 1), v); };
    // A pair "users' / peakcastd's" sorts by its first.
    const auto pair = [](size_t a, size_t b) {
      return number_cell(grouped(a) + " / " + grouped(b), static_cast<double>(a));
    };
    t += "<tr><td>" + html_escape(p.name.empty() ? none : p.name) + "</td>" + number_cell(p.asked.jobs) +
         gbh(p.asked.waste_gbh) + gbh(p.answered.waste_gbh) + gbh(p.asked.waste_gbh - p.answered.waste_gbh) +
         pair(p.asked.failures, p.answered.failures) + pair(p.asked.failed_jobs, p.answered.failed_jobs) +
         "</tr>\n";
  }
  return t + "</tbody></table>\n";
}

}  // namespace peakcast::report
