// peakcast's sizing policy: what the daemon would recommend for a task type, replayed.
//
// Point predictions (candidates): the history experts over the type's completed tasks (the
// median of all of them; the median of the last 5, which follows drift in event time) and two
// regressions on the input size (least squares of the peak on it, and of log peak on log input).
// Each point feeds OnlineBounds (ratio scale: bytes of types of any size) at a grid of coverage
// levels. Every candidate (point x coverage) is scored prequentially on the tasks the type has
// completed -- its allocation made before the task's outcome was known, charged as the
// simulator charges it (over-allocation, or the failed attempt plus the retry's excess) -- and
// the candidate with the least simulated waste so far answers. That is choosing the coverage
// (and the point) online by waste, as Sizey chooses its offset, on completed tasks only.
// The answer goes through the recommendation rule (recommend_request). Retry: the largest peak
// seen when that is more than 5% above the failed allocation, else double; through the rule's
// OOM step (never at or below the failed allocation).
// The constants (grid, window, the 5%) were set once across chipseq, eager and mag.
#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <vector>

#include "peakcast/sizing/online_bound.h"
#include "peakcast/sizing/policy.h"

namespace peakcast::sizing {
namespace {

constexpr std::array<double, 8> kCoverages = {0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99};
enum Point : int { kMedianAll = 0, kMedian5 = 1, kLinear = 2, kLogLinear = 3, kNumPoints = 4 };

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  const double hi = v[m];
  if (v.size() % 2) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m)));
}

// Least squares by Welford's updates.
struct Regression {
  double n = 0, mx = 0, my = 0, cxx = 0, cxy = 0;
  void add(double x, double y) {
    n += 1;
    const double dx = x - mx;
    mx += dx / n;
    my += (y - my) / n;
    cxx += dx * (x - mx);
    cxy += dx * (y - my);
  }
  double at(double x) const {
    if (!(cxx > 1e-12 * (mx * mx + 1.0) * n)) return my;
    return my + cxy / cxx * (x - mx);
  }
};

struct Candidate {
  Point point;
  OnlineBound bound;
  double waste = 0.0;  // prequential simulated waste, byte-ms
};

class PeakcastPolicy final : public SizingPolicy {
 public:
  PeakcastPolicy(const PolicyOptions& o, bool choose) : rule_(o.recommend), choose_(choose) {
    for (int p = 0; p < kNumPoints; ++p) {
      for (double c : kCoverages) {
        if (!choose && (p != kMedianAll || c != 0.9)) continue;
        OnlineBoundOptions bo;
        bo.coverage = c;
        bo.scale = Scale::kRatio;
        bo.window = 500;
        candidates_.push_back({static_cast<Point>(p), OnlineBound(bo), 0.0});
      }
    }
  }

  double first(const TaskInfo& t) override {
    if (ys_.empty()) return t.request_bytes;
    issue(t);
    size_t best = 0;
    for (size_t k = 1; k < candidates_.size(); ++k) {
      if (candidates_[k].waste < candidates_[best].waste) best = k;
    }
    RecommendInput in;
    in.upper_bytes = issued_[best];
    if (t.request_bytes > 0) in.request_bytes = static_cast<uint64_t>(t.request_bytes);
    return static_cast<double>(rule_(in).bytes);
  }

  double retry(const TaskInfo& t, double failed, int) override {
    RecommendInput in;
    in.upper_bytes = retry_upper(failed);
    if (t.request_bytes > 0) in.request_bytes = static_cast<uint64_t>(t.request_bytes);
    in.failed_request_bytes = static_cast<uint64_t>(std::max(failed, 0.0));
    return static_cast<double>(rule_(in).bytes);
  }

  void observe(const SimTask& t) override {
    const double y = t.peak_bytes;
    if (!ys_.empty()) {
      if (!pending_) issue(t.info);
      for (size_t k = 0; k < candidates_.size(); ++k) {
        candidates_[k].waste += cost(issued_[k], y, t.runtime_ms);
        candidates_[k].bound.observe_issued(history::Level::kExactScript, points_[k], y, false, issued_[k]);
      }
    }
    pending_ = false;
    ys_.push_back(y);
    max_y_ = std::max(max_y_, y);
    recent_.push_back(y);
    if (recent_.size() > 5) recent_.pop_front();
    const double x = std::max(t.info.input_bytes, 0.0);
    linear_.add(x, y);
    loglinear_.add(std::log1p(x), std::log(std::max(y, 1.0)));
  }

 private:
  double retry_upper(double failed) const {
    return max_y_ > 1.05 * failed ? max_y_ : 2.0 * std::max(failed, 0.0);
  }
  // The simulator's charge for allocation a when the task needs y for runtime t.
  double cost(double a, double y, double t) const {
    if (a >= y) return (a - y) * t;
    double c = std::max(a, 0.0) * t;
    double r = std::max(retry_upper(a), 1.2 * a);
    while (r < y) {
      c += r * t;
      r *= 2.0;
    }
    return c + (r - y) * t;
  }
  double point(Point p, double x) const {
    const double floor = 0.05 * max_y_ + 1.0;  // a regression may extrapolate below zero
    switch (p) {
      case kMedianAll: return median_of(ys_);
      case kMedian5: return median_of(std::vector<double>(recent_.begin(), recent_.end()));
      case kLinear: return std::max(linear_.at(std::max(x, 0.0)), floor);
      case kLogLinear: return std::max(std::exp(loglinear_.at(std::log1p(std::max(x, 0.0)))), floor);
      default: return max_y_;
    }
  }
  // Each candidate's point and bound for this task, before its outcome.
  void issue(const TaskInfo& t) {
    std::array<double, kNumPoints> p{};
    for (int k = 0; k < kNumPoints; ++k) p[k] = point(static_cast<Point>(k), t.input_bytes);
    points_.resize(candidates_.size());
    issued_.resize(candidates_.size());
    for (size_t k = 0; k < candidates_.size(); ++k) {
      points_[k] = p[candidates_[k].point];
      issued_[k] = candidates_[k].bound.upper(history::Level::kExactScript, points_[k]);
    }
    pending_ = true;
  }

  RecommendRule rule_;
  bool choose_;
  std::vector<Candidate> candidates_;
  std::vector<double> points_, issued_;
  bool pending_ = false;
  std::vector<double> ys_;
  std::deque<double> recent_;
  double max_y_ = 0.0;
  Regression linear_, loglinear_;
};

}  // namespace

std::unique_ptr<SizingPolicy> make_peakcast(const PolicyOptions& options, bool choose) {
  return std::make_unique<PeakcastPolicy>(options, choose);
}

}  // namespace peakcast::sizing
