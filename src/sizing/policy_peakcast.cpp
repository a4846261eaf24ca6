// peakcast's sizing policy: what the daemon would recommend for a task type, replayed.
//
// Point predictions (candidates), each from the type's completed tasks only: the history
// experts at the process level (the median of all peaks; the median of the last 5, which follows
// drift in event time), three on the input size (least squares of the peak on it, of log peak on
// log input, and the median peak of the 5 tasks with the nearest log input), and the task's own
// request (the bound then learns the peak-to-request ratio: Nextflow raises a request on retry,
// and tools such as Java's size their heap from it). Each point feeds an OnlineBound (adaptive
// conformal, ratio scale) at each coverage of a grid from 0.7 to 0.999; a bound is never above
// the largest peak the type has shown. Every candidate (point x coverage) is scored
// prequentially: its allocation for each completed task, made before that task's outcome was
// known, is charged as the simulator charges it (over-allocation, or the failed attempt plus the
// retry's excess; a failed attempt weighted 1 + kFailureWeight). The candidate with the least
// charge so far answers: the coverage (and the point) chosen online by waste, as Sizey chooses
// its offset, on completed tasks only. The answer goes through the recommendation rule
// (recommend_request: capped at the request, rounded up). Retry: the largest peak seen when that
// is above the failed allocation, else 1.2x; through the rule's OOM step (never at or below the
// failed allocation). A type with no completed task gets its request.
// The constants (grid, window, neighbours, failure weight) were set once across chipseq, eager
// and mag under Sizey's protocol (docs/sizing.md lists what was compared).
#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <vector>
#include <cstdlib>
#include <cstdio>
#include <string>

#include "peakcast/sizing/online_bound.h"
#include "peakcast/sizing/policy.h"

namespace peakcast::sizing {
namespace {

constexpr std::array<double, 9> kCoverages = {0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999};
enum Point : int { kMedianAll = 0, kMedian5 = 1, kLinear = 2, kLogLinear = 3, kNeighbours = 4, kRequest = 5, kNumPoints = 6 };
// A failed attempt counts (1 + kFailureWeight) times its GB x h when candidates are compared:
// it also costs the user a rerun's delay. Compared 0, 0.5, 1, 3, 10 across the three traces.
constexpr double kFailureWeight = 1.0;
constexpr size_t kNeighbourCount = 5;
constexpr size_t kBoundWindow = 500;
// Fewer completed tasks than this: the request. In event time the first tasks of a type to
// complete are the quick ones, which tend to be the small ones: a bound from them fails.
constexpr size_t kMinHistory = 10;

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

enum Kind : int { kBound = 0, kMaxScore = 1, kMaxSeen = 2, kRequestKind = 3 };
struct Candidate {
  Point point;
  OnlineBound bound;
  double waste = 0.0;  // prequential simulated waste, byte-ms
  Kind kind = kBound;
  bool capped = true;
  double failures = 0.0;
  double mult = 1.0;
};
double knob(const char* n, double d) { const char* v = std::getenv(n); return v ? std::atof(v) : d; }

class PeakcastPolicy final : public SizingPolicy {
 public:
  PeakcastPolicy(const PolicyOptions& o, bool choose) : rule_(o.recommend) {
    for (int p = 0; p < kNumPoints; ++p) {
      for (double c : kCoverages) {
        if (!choose && (p != kMedianAll || c != 0.9)) continue;
        OnlineBoundOptions bo;
        bo.coverage = c;
        bo.scale = Scale::kRatio;
        bo.window = kBoundWindow;
        candidates_.push_back({static_cast<Point>(p), OnlineBound(bo), 0.0, kBound, knob("PK_CAPB", 1) > 0, 0.0});
      }
      if (choose && knob("PK_MAXSCORE", 0) > 0) {
        OnlineBoundOptions bo;
        candidates_.push_back({static_cast<Point>(p), OnlineBound(bo), 0.0, kMaxScore, true, 0.0});
        candidates_.push_back({static_cast<Point>(p), OnlineBound(bo), 0.0, kMaxScore, false, 0.0});
      }
    }
    if (choose && knob("PK_CAUTIOUS", 0) > 0) {
      OnlineBoundOptions bo;
      candidates_.push_back({kMedianAll, OnlineBound(bo), 0.0, kMaxSeen, false, 0.0});
      cautious_ = candidates_.size() - 1;
      if (knob("PK_MAX2", 0) > 0) candidates_.push_back({kMedianAll, OnlineBound(bo), 0.0, kMaxSeen, false, 0.0, knob("PK_MAX2", 0)});
      if (knob("PK_REQCAND", 0) > 0) candidates_.push_back({kRequest, OnlineBound(bo), 0.0, kRequestKind, false, 0.0});
    }
    max_score_.fill(0.0);
    mode_ = static_cast<int>(knob("PK_CHOICE", 0));
    fw_ = knob("PK_FW", kFailureWeight);
    allow_ = knob("PK_ALLOW", 0);
    price_c_ = knob("PK_C", 0);
    retry_mode_ = static_cast<int>(knob("PK_RETRY", 0));
    retry_f_ = knob("PK_RF", 2.0);
    xcap_ = knob("PK_XCAP", 0);
  }

  double first(const TaskInfo& t) override {
    if (ys_.size() < kMinHistory && t.request_bytes > 0) return t.request_bytes;
    if (ys_.empty()) return t.request_bytes;
    issue(t);
    const size_t best = choose();
    RecommendInput in;
    in.upper_bytes = issued_[best];
    if (t.request_bytes > 0) in.request_bytes = static_cast<uint64_t>(t.request_bytes);
    if (std::getenv("PK_DEBUG") && t.workload.find(std::getenv("PK_DEBUG")) != std::string::npos)
      std::fprintf(stderr, "DBG n=%zu x=%.3g kind=%d pt=%d cov=%.3f cap=%d alloc=%.4g max=%.4g w=%.3g f=%.0f\n", ys_.size(), t.input_bytes,
                   candidates_[best].kind, candidates_[best].point, candidates_[best].bound.options().coverage, candidates_[best].capped,
                   issued_[best] / 1e9, max_y_ / 1e9, candidates_[best].waste / 3.6e15, candidates_[best].failures);
    return static_cast<double>(rule_(in).bytes);
  }

  double retry(const TaskInfo& t, double failed, int) override {
    RecommendInput in;
    in.upper_bytes = retry_upper(failed, t.request_bytes);
    if (t.request_bytes > 0) in.request_bytes = static_cast<uint64_t>(t.request_bytes);
    in.failed_request_bytes = static_cast<uint64_t>(std::max(failed, 0.0));
    return static_cast<double>(rule_(in).bytes);
  }

  void observe(const SimTask& t) override {
    const double y = t.peak_bytes;
    if (std::getenv("PK_DEBUG") && pending_ && t.info.workload.find(std::getenv("PK_DEBUG")) != std::string::npos)
      std::fprintf(stderr, "DBG   y=%.4g t=%.3gh\n", y / 1e9, t.runtime_ms / 3.6e6);
    if (!ys_.empty()) {
      if (!pending_) issue(t.info);
      for (size_t k = 0; k < candidates_.size(); ++k) {
        int fails = 0;
        candidates_[k].waste += cost(issued_[k], y, t.runtime_ms, t.info.request_bytes, &fails);
        candidates_[k].failures += fails;
        if (candidates_[k].kind == kBound)
          candidates_[k].bound.observe_issued(history::Level::kExactScript, points_[k], y, false, issued_[k]);
      }
      for (int p = 0; p < kNumPoints; ++p) if (raw_[p] > 0) max_score_[p] = std::max(max_score_[p], y / raw_[p]);
      usage_ += y * t.runtime_ms;
      ++scored_;
    }
    pending_ = false;
    ys_.push_back(y);
    {
      const auto at = std::upper_bound(sorted_y_.begin(), sorted_y_.end(), y) - sorted_y_.begin();
      sorted_y_.insert(sorted_y_.begin() + at, y);
      sorted_t_.insert(sorted_t_.begin() + at, t.runtime_ms);
    }
    max_y_ = std::max(max_y_, y);
    recent_.push_back(y);
    if (recent_.size() > 5) recent_.pop_front();
    const double x = std::max(t.info.input_bytes, 0.0);
    linear_.add(x, y);
    logx_.push_back(std::log1p(x));
    loglinear_.add(std::log1p(x), std::log(std::max(y, 1.0)));
  }

 private:
  // After a failure at `failed`: the largest peak seen when it is above; else 1.2x (VPA's bump),
  // at most the request when the request is above the failure.
  double retry_upper(double failed, double request) const {
    if (retry_mode_ == 2 && max_y_ > failed) return conditional_retry(failed);
    if (retry_mode_ == 1) {
      const double r = std::max(max_y_, retry_f_ * std::max(failed, 0.0));
      return request > failed ? std::min(request, r) : r;
    }
    if (max_y_ > failed) return max_y_;
    const double bump = 1.2 * std::max(failed, 0.0);
    return request > failed ? std::min(request, bump) : bump;
  }
  // After a failure at `failed` below the largest peak seen: the retry r among the peaks seen
  // above `failed` that would have cost least on the past tasks that needed more than `failed`
  // (over-allocation if it held them, else r plus the largest peak's over-allocation and the
  // failure price).
  double conditional_retry(double failed) const {
    const size_t lo = static_cast<size_t>(std::upper_bound(sorted_y_.begin(), sorted_y_.end(), failed) - sorted_y_.begin());
    double st = 0, syt = 0;
    for (size_t i = lo; i < sorted_y_.size(); ++i) { st += sorted_t_[i]; syt += sorted_y_[i] * sorted_t_[i]; }
    const double lam = lambda();
    double best = max_y_, best_cost = 1e300, pt = 0, pyt = 0;
    for (size_t j = lo; j < sorted_y_.size(); ++j) {
      pt += sorted_t_[j];
      pyt += sorted_y_[j] * sorted_t_[j];
      if (j + 1 < sorted_y_.size() && sorted_y_[j + 1] == sorted_y_[j]) continue;
      const double r = sorted_y_[j];
      const double n_above = static_cast<double>(sorted_y_.size() - 1 - j);
      const double c = (r * pt - pyt) + (r + max_y_) * (st - pt) - (syt - pyt) + lam * n_above;
      if (c < best_cost) { best_cost = c; best = r; }
    }
    return best;
  }
  double lambda() const {
    return mode_ == 3 ? price_c_ * 3.6e15 : scored_ ? price_c_ * usage_ / static_cast<double>(scored_) : 0.0;
  }
  // The candidate with the least simulated waste so far (the first of equals).
  size_t choose() const {
    const double lambda = mode_ == 3 ? price_c_ * 3.6e15 : scored_ ? price_c_ * usage_ / static_cast<double>(scored_) : 0.0;
    auto score = [&](const Candidate& c) { return c.waste + (mode_ >= 2 ? lambda * c.failures : 0.0); };
    const double limit = cautious_ < candidates_.size() ? candidates_[cautious_].failures + allow_ : 1e300;
    size_t best = candidates_.size();
    for (size_t k = 0; k < candidates_.size(); ++k) {
      if (mode_ == 1 && candidates_[k].failures > limit) continue;
      if (best == candidates_.size() || score(candidates_[k]) < score(candidates_[best])) best = k;
    }
    return best == candidates_.size() ? 0 : best;
  }
  // The simulator's charge for allocation a when the task needs y for runtime t.
  double cost(double a, double y, double t, double request, int* fails) const {
    if (a >= y) return (a - y) * t;
    double c = (1.0 + fw_) * std::max(a, 0.0) * t;
    ++*fails;
    double r = retry_upper(a, request);
    if (r <= a) r = std::max(2.0 * a, 1048576.0);
    while (r < y) {
      c += (1.0 + fw_) * r * t;
      ++*fails;
      const double n = retry_upper(r, request);
      r = n <= r ? std::max(2.0 * r, 1048576.0) : n;
    }
    return c + (r - y) * t;
  }
  double point(Point p, double x, double request) const {
    const double floor = 0.05 * max_y_ + 1.0;  // a regression may extrapolate below zero
    switch (p) {
      case kMedianAll: return median_of(ys_);
      case kMedian5: return median_of(std::vector<double>(recent_.begin(), recent_.end()));
      case kLinear: return std::max(linear_.at(std::max(x, 0.0)), floor);
      case kLogLinear: return std::max(std::exp(loglinear_.at(std::log1p(std::max(x, 0.0)))), floor);
      case kNeighbours: return neighbours(x);
      case kRequest: return request > 0 ? request : median_of(ys_);
      default: return max_y_;
    }
  }
  // The median peak of the kNeighbours tasks whose log input is nearest.
  double neighbours(double x) const {
    const size_t k = kNeighbourCount;
    const double lx = std::log1p(std::max(x, 0.0));
    std::vector<std::pair<double, double>> d;
    d.reserve(ys_.size());
    for (size_t i = 0; i < ys_.size(); ++i) d.emplace_back(std::abs(logx_[i] - lx), ys_[i]);
    const size_t m = std::min(k, d.size());
    std::partial_sort(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(m), d.end());
    std::vector<double> near;
    for (size_t i = 0; i < m; ++i) near.push_back(d[i].second);
    return median_of(near);
  }
  // Each candidate's point and bound for this task, before its outcome.
  void issue(const TaskInfo& t) {
    std::array<double, kNumPoints> p{};
    for (int k = 0; k < kNumPoints; ++k) p[k] = point(static_cast<Point>(k), t.input_bytes, t.request_bytes);
    raw_ = p;
    points_.resize(candidates_.size());
    issued_.resize(candidates_.size());
    for (size_t k = 0; k < candidates_.size(); ++k) {
      const Candidate& c = candidates_[k];
      points_[k] = p[c.point];
      switch (c.kind) {
        case kBound: issued_[k] = c.bound.upper(history::Level::kExactScript, points_[k]); break;
        case kMaxScore: issued_[k] = max_score_[c.point] > 0 ? points_[k] * max_score_[c.point] : max_y_; break;
        case kMaxSeen: issued_[k] = max_y_ * c.mult; break;
        case kRequestKind: issued_[k] = t.request_bytes > 0 ? t.request_bytes : max_y_; break;
      }
      if (c.capped) issued_[k] = std::min(issued_[k], max_y_);  // never above the largest peak the type has shown
      else if (xcap_ > 0) issued_[k] = std::min(issued_[k], std::max(max_y_, xcap_ * points_[k]));
    }
    pending_ = true;
  }

  RecommendRule rule_;
  std::vector<Candidate> candidates_;
  std::vector<double> points_, issued_;
  std::array<double, kNumPoints> raw_{}, max_score_{};
  size_t cautious_ = static_cast<size_t>(-1);
  int mode_ = 0, retry_mode_ = 0;
  double xcap_ = 0.0, fw_ = 1.0, allow_ = 0.0, price_c_ = 0.0, retry_f_ = 2.0, usage_ = 0.0;
  size_t scored_ = 0;
  bool pending_ = false;
  std::vector<double> ys_, sorted_y_, sorted_t_;
  std::deque<double> recent_;
  std::vector<double> logx_;
  double max_y_ = 0.0;
  Regression linear_, loglinear_;
};

}  // namespace

std::unique_ptr<SizingPolicy> make_peakcast(const PolicyOptions& options, bool choose) {
  return std::make_unique<PeakcastPolicy>(options, choose);
}

}  // namespace peakcast::sizing
