// The issued bound and the event-time walk (peakcast/sizing/bound_walk.h).
#include "peakcast/sizing/bound_walk.h"

#include <algorithm>
#include <numeric>

namespace peakcast::sizing {

IssuedBound issue_bound(const OnlineBound& b, history::Level level, double point,
                        std::string_view script, double util_cap) {
  const double top = std::max(util_cap, point);
  IssuedBound out;
  out.evidence = b.has_scores(level, script);
  out.alpha_t = b.alpha_t(level);
  out.bound = out.evidence ? std::clamp(b.upper(level, point, script), point, top) : top;
  return out;
}

BoundStep bound_step(const Job& job, Resource r, history::Level level, double point) {
  return {job.submit_ms, job.end_ms, level, point, job.label(r), censored_for(job, r), job.script_key};
}

std::vector<IssuedBound> walk_bounds(OnlineBound& bound, std::span<const BoundStep> steps,
                                     double util_cap, bool observe_all) {
  // Completion order: end time, ties by submit order (stable).
  std::vector<size_t> by_end(steps.size());
  std::iota(by_end.begin(), by_end.end(), size_t{0});
  std::stable_sort(by_end.begin(), by_end.end(),
                   [&](size_t a, size_t b) { return steps[a].end_ms < steps[b].end_ms; });
  std::vector<IssuedBound> issued(steps.size());
  size_t next_done = 0;
  auto observe = [&](size_t k) {
    const BoundStep& s = steps[k];
    bound.observe_issued(s.level, s.point, s.label, s.censored, issued[k].bound, s.script);
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    // Every step that ended before this submission was submitted before it (end >= submit).
    while (next_done < by_end.size() && steps[by_end[next_done]].end_ms < steps[i].submit_ms) {
      observe(by_end[next_done++]);
    }
    issued[i] = issue_bound(bound, steps[i].level, steps[i].point, steps[i].script, util_cap);
  }
  if (observe_all) {
    while (next_done < by_end.size()) observe(by_end[next_done++]);
  }
  return issued;
}

}  // namespace peakcast::sizing
