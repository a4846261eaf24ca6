// peakcast's sizing policy: what the daemon would recommend for a task type, replayed.
//
// Point predictions, each from the type's completed tasks only: the history experts (the median
// of all peaks; the median of the last 5, which follows drift in event time), four on the input
// size (least squares of the peak on it, of log peak on log input; the median peak of the 5
// tasks with the nearest log input, and the median, upper quartile and largest peak of the
// sqrt(n) nearest: a narrow and a wide k-nearest-inputs model, as Sizey grid-searches k, and the
// wide one's local spread), and the task's own request (the bound then learns the
// peak-to-request ratio: Nextflow raises a request on retry, Java tools size their heap from it).
//
// Candidates (allocations) built on them:
//  - each point x an OnlineBound (adaptive conformal, ratio scale) at coverages 0.7 ... 0.999,
//    never above the largest peak the type has shown;
//  - each point x the largest ratio peak/point seen (a conformal bound at coverage n/(n+1): on
//    exchangeable tasks it fails about as rarely as max_so_far, but around a point that follows
//    the input), once capped at the largest peak and once not (a point that grows with the input
//    may then lead the largest peak before a new record arrives);
//  - each point on the input (the regressions and the nearest-input ones) x a jackknife bound at
//    the same coverages: the conformal quantile of the completed tasks' ratios peak / that point
//    made without the task (for least squares exact without a refit: residual / (1 - leverage);
//    for the nearest inputs, the task left out of its own neighbourhood), recomputed at each
//    answer and not capped (Witt-LR's regression-and-offset, made conformal). The OnlineBound's
//    window instead keeps each task's ratio to the point made when it was submitted; the first
//    of those, fitted on one or two peaks, can be far off, and they stay in the window, so around
//    such a point its high-coverage bounds are inflated for the whole of a type of tens of tasks;
//  - each of those points x the normal-theory prediction bound of the same jackknife ratios at
//    the same coverages (mean + Student's t x s.d. x sqrt(1 + 1/n)): on a type of tens of tasks
//    a conformal quantile at 0.95 or more is one or two extreme ratios, where the mean and s.d. of
//    all of them estimate the tail with less noise when the ratios are near normal (a peak that
//    follows its input with a spread: Witt-LR's regression and s.d. offset, at a stated coverage);
//  - cautious ones: the largest peak seen, 1, 3 and 10 % above it, twice it, and the request.
//    A type whose peak does not follow its input often sits within a percent or two of one
//    value (a tool that loads a fixed reference: eager's bwa); each new record of the largest
//    peak then fails a whole attempt, and a little above it holds nearly every task for a sliver
//    of memory.
// Every candidate is scored prequentially: its allocation for each completed task, made before
// that outcome was known, charged as the simulator charges it (over-allocation, or each failed
// attempt plus the retry's excess), and its failed attempts counted. The candidate with the
// least waste + price x failures so far answers, through the recommendation rule
// (recommend_request: capped at the request, rounded up). A bound is also charged for the misses
// its coverage promises beyond those its history showed (candidate_score): on a short history
// the least-failing of many bounds is often a lucky one, and it fails online. The price of a
// failed attempt is the site's (PolicyOptions::failure_price): what an average task costs in
// memory x time, so a type whose tasks are cheap does not fail to save nothing, and a type whose
// tasks are dear fails only where that saves more than the failure costs.
//
// Retry after a failure at f: below the largest peak seen, the allocation among the peaks seen
// above f that would have cost least on the past tasks that needed more than f (Tovar's first
// allocation, conditioned on the failure: over-allocation when it holds, else a second failure,
// priced, and the largest peak); at or above the largest peak, 1.2 f (VPA's bump), and 2 f from a
// task's third attempt on; with nothing completed yet, 2 f. Through the rule's OOM step (never at
// or below the failed allocation). A type with fewer than 10 completed tasks gets its request.
#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/core/stats.h"
#include "peakcast/sizing/online_bound.h"
#include "peakcast/sizing/policy.h"

namespace peakcast::sizing {
namespace {

constexpr std::array<double, 9> kCoverages = {0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999};
enum Point : int {
  kMedianAll = 0, kMedian5, kLinear, kLogLinear, kNeighbours, kNeighboursWide, kRequest, kNeighboursUpper, kNeighboursLargest, kNumPoints
};
enum class Kind { kBound, kMaxRatio, kMaxRatioCapped, kJackknife, kJackknifeNormal, kLargest, kLargestMargin, kTwiceLargest, kAsRequested };
// kLargestMargin's margins above the largest peak: a log-spaced grid, the choice picks.
constexpr std::array<double, 3> kLargestMargins = {0.01, 0.03, 0.1};
constexpr size_t kNeighbourCount = 5;
constexpr size_t kBoundWindow = 500;
constexpr double kRecordBump = 1.2;  // retry at or above the largest peak seen: VPA's x1.2
// From this attempt of one task on, a retry at or above the largest peak doubles: a peak far
// above every one seen (a type without a request) takes about log2 of the jump in attempts, not
// the 3.8 times as many that x1.2 takes.
constexpr int kDoublingFrom = 3;
// Retry of a type that has completed nothing: no peak says how far off the failed allocation was,
// so double it, as Nextflow's `memory * task.attempt` and presets, witt_* and max_so_far do.
constexpr double kBlindRetry = 2.0;
// Fewer completed tasks than this: the request (policy.h).
constexpr size_t kMinHistory = kPeakcastMinHistory;

// Student's t quantile at kCoverages[level] with df degrees of freedom, from a table built once
// (df up to the jackknife's window); computed directly beyond it.
double t_quantile(size_t level, size_t df) {
  static const auto table = [] {
    std::array<std::vector<double>, kCoverages.size()> t;
    for (size_t i = 0; i < kCoverages.size(); ++i) {
      t[i].resize(kBoundWindow);
      for (size_t d = 1; d < kBoundWindow; ++d) t[i][d] = student_t_quantile(kCoverages[i], static_cast<double>(d));
    }
    return t;
  }();
  if (df >= 1 && df < kBoundWindow) return table[level][df];
  return student_t_quantile(kCoverages[level], static_cast<double>(df));
}

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
  // No spread in x (to rounding): the fit is the mean.
  bool flat() const { return !(cxx > 1e-12 * (mx * mx + 1.0) * n); }
  double at(double x) const {
    if (flat()) return my;
    return my + cxy / cxx * (x - mx);
  }
};

struct Candidate {
  Kind kind;
  Point point;
  CandidateRecord record{}; // prequential simulated waste (byte x ms) and failed attempts
  double margin = 0.0;      // kLargestMargin only
  size_t level = 0;         // kBound, kJackknifeNormal: its coverage is kCoverages[level]
};

// The ratio-scale online bounds around one point, at every coverage (the kBound candidates):
// OnlineBound's adaptive conformal rule (Scale::kRatio, one level, a window of kBoundWindow
// scores), with the window of ratios peak / point kept once, since each coverage learns the
// same scores; only alpha_t differs. What nine OnlineBounds gave, to the bit, in a ninth of
// their memory (docs/sizing.md).
struct RatioBounds {
  std::deque<double> window;   // in the order learned (the oldest leaves first)
  std::vector<double> sorted;  // the same, ascending: what the quantiles read
  std::array<double, kCoverages.size()> alpha_t{};

  void learn(double ratio) {
    window.push_back(ratio);
    sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), ratio), ratio);
    if (window.size() <= kBoundWindow) return;
    sorted.erase(std::lower_bound(sorted.begin(), sorted.end(), window.front()));
    window.pop_front();
  }
};

// The points read from a task's nearest log inputs, in Neighbourhood's order.
constexpr std::array<Point, 4> kNeighbourPoints = {kNeighbours, kNeighboursWide, kNeighboursUpper, kNeighboursLargest};

// A completed task's jackknife ratios to the nearest-input points (peak / point made without
// it), kept while no later completion reaches its neighbourhood: `reach` is the log-input
// distance of its farthest neighbour.
struct Neighbourhood {
  std::array<double, kNeighbourPoints.size()> ratio{};
  std::array<bool, kNeighbourPoints.size()> has{};  // the point was positive
  double reach = 0.0;
  bool known = false;
};

// What a container holds on the heap (allocator headers aside): a vector its capacity; a deque
// (libstdc++) its 512-byte nodes and their map, one node even when empty.
template <typename T>
size_t vector_bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}
template <typename T>
size_t deque_bytes(const std::deque<T>& d) {
  constexpr size_t kNode = 512, per_node = std::max<size_t>(kNode / sizeof(T), 1);
  const size_t nodes = d.size() / per_node + 1;
  return nodes * kNode + std::max<size_t>(8, nodes + 2) * sizeof(void*);
}

// The index of coverage c in kCoverages.
size_t coverage_level(double c) {
  return static_cast<size_t>(std::find(kCoverages.begin(), kCoverages.end(), c) - kCoverages.begin());
}

// A candidate in words, for the answer's rationale.
std::string describe(const Candidate& c) {
  static constexpr std::array<const char*, kNumPoints> kPointNames = {
      "the median peak", "the median of the last 5 peaks", "the peak's linear fit on the input",
      "the peak's log-log fit on the input", "the median peak of the 5 nearest inputs",
      "the median peak of the sqrt(n) nearest inputs", "the request",
      "the upper quartile of the sqrt(n) nearest inputs' peaks", "the largest peak of the sqrt(n) nearest inputs"};
  const std::string point = kPointNames[c.point];
  const auto pct = [](double f) {
    std::string s = std::to_string(f * 100.0);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  };
  switch (c.kind) {
    case Kind::kBound: return point + " x its online " + pct(kCoverages[c.level]) + " % bound, at most the largest peak";
    case Kind::kMaxRatioCapped: return point + " x the largest ratio of a peak to it, at most the largest peak";
    case Kind::kMaxRatio: return point + " x the largest ratio of a peak to it";
    case Kind::kJackknife: return point + " x its jackknife " + pct(c.record.coverage) + " % bound";
    case Kind::kJackknifeNormal: return point + " x its normal-theory " + pct(c.record.coverage) + " % bound";
    case Kind::kLargest: return "the largest peak";
    case Kind::kLargestMargin: return "the largest peak + " + pct(c.margin) + " %";
    case Kind::kTwiceLargest: return "twice the largest peak";
    case Kind::kAsRequested: return "the request";
  }
  return "";
}

class PeakcastPolicy final : public SizingPolicy {
 public:
  PeakcastPolicy(const PolicyOptions& o, bool choose)
      : rule_(o.recommend), price_(o.failure_price), keep_neighbourhoods_(o.keep_neighbourhoods) {
    for (RatioBounds& b : ratio_bounds_) {
      for (size_t i = 0; i < kCoverages.size(); ++i) b.alpha_t[i] = 1.0 - kCoverages[i];
    }
    if (!choose) {  // peakcast_fixed90: the median expert's 0.90 bound
      candidates_.push_back({Kind::kBound, kMedianAll, {}, 0.0, coverage_level(0.9)});
      bounded_[kMedianAll] = true;
      return;
    }
    for (int p = 0; p < kNumPoints; ++p) {
      const auto pt = static_cast<Point>(p);
      for (size_t i = 0; i < kCoverages.size(); ++i) {
        candidates_.push_back({Kind::kBound, pt, {.coverage = kCoverages[i]}, 0.0, i});
      }
      bounded_[p] = true;
      candidates_.push_back({Kind::kMaxRatioCapped, pt});
      candidates_.push_back({Kind::kMaxRatio, pt});
    }
    for (Point pt : {kLinear, kLogLinear, kNeighbours, kNeighboursWide, kNeighboursUpper, kNeighboursLargest}) {
      for (Kind k : {Kind::kJackknife, Kind::kJackknifeNormal}) {
        for (size_t i = 0; i < kCoverages.size(); ++i) {
          candidates_.push_back({k, pt, {.coverage = kCoverages[i]}, 0.0, i});
        }
      }
    }
    candidates_.push_back({Kind::kLargest, kMedianAll});
    for (double m : kLargestMargins) {
      candidates_.push_back({Kind::kLargestMargin, kMedianAll, {}, m});
    }
    for (Kind k : {Kind::kTwiceLargest, Kind::kAsRequested}) {
      candidates_.push_back({k, kMedianAll});
    }
  }

  double first(const TaskInfo& t) override {
    explained_ = {};
    if (ys_.size() < kMinHistory && t.request_bytes > 0) return t.request_bytes;
    if (ys_.empty()) return t.request_bytes;
    issue(t);
    const size_t chosen = choose();
    RecommendInput in;
    in.upper_bytes = issued_[chosen];
    if (t.request_bytes > 0) in.request_bytes = static_cast<uint64_t>(t.request_bytes);
    in.partition = t.partition;
    in.failed_request_bytes = t.failed_request_bytes;
    in.failed_at_lowered_limit = t.failed_at_lowered_limit;
    Recommendation rec = rule_(in);
    explained_ = {std::move(rec.rule), describe(candidates_[chosen])};
    return static_cast<double>(rec.bytes);
  }

  Explanation explain() const override { return explained_; }

  size_t memory_bytes() const override {
    size_t n = sizeof(*this) + vector_bytes(candidates_) + vector_bytes(points_) + vector_bytes(issued_) +
               vector_bytes(ys_) + vector_bytes(sorted_y_) + vector_bytes(sorted_t_) + deque_bytes(recent_) +
               vector_bytes(xs_) + vector_bytes(logx_) + vector_bytes(by_input_) +
               vector_bytes(neighbourhoods_) + vector_bytes(near_);
    for (const auto& j : jackknife_) n += vector_bytes(j);
    for (const RatioBounds& b : ratio_bounds_) n += deque_bytes(b.window) + vector_bytes(b.sorted);
    return n + explained_.rule.capacity() + explained_.basis.capacity();
  }
  void set_failure_price(double byte_ms) override { price_ = byte_ms; }
  double ceiling(const TaskInfo& t) const override {
    const std::optional<uint64_t> limit = rule_.config().for_partition(t.partition).settings.limit_bytes;
    return limit ? static_cast<double>(*limit) : std::numeric_limits<double>::infinity();
  }

  double retry(const TaskInfo& t, double failed, int attempt) override {
    RecommendInput in;
    in.upper_bytes = retry_upper(failed, t.request_bytes, attempt);
    if (t.request_bytes > 0) in.request_bytes = static_cast<uint64_t>(t.request_bytes);
    in.partition = t.partition;
    in.failed_request_bytes = static_cast<uint64_t>(std::max(failed, 0.0));
    return static_cast<double>(rule_(in).bytes);
  }

  void observe(const SimTask& t) override {
    const double y = t.peak_bytes;
    if (!ys_.empty()) score_candidates(t);
    pending_ = false;
    ys_.push_back(y);
    const auto at = std::upper_bound(sorted_y_.begin(), sorted_y_.end(), y) - sorted_y_.begin();
    sorted_y_.insert(sorted_y_.begin() + at, y);
    sorted_t_.insert(sorted_t_.begin() + at, t.runtime_ms);
    usage_ += y * t.runtime_ms;
    max_y_ = std::max(max_y_, y);
    recent_.push_back(y);
    if (recent_.size() > 5) recent_.pop_front();
    const double x = std::max(t.info.input_bytes, 0.0);
    linear_.add(x, y);
    xs_.push_back(x);
    logx_.push_back(std::log1p(x));
    const std::pair<double, double> at_input{std::log1p(x), y};
    by_input_.insert(std::upper_bound(by_input_.begin(), by_input_.end(), at_input), at_input);
    loglinear_.add(std::log1p(x), std::log(std::max(y, 1.0)));
    forget_neighbourhoods_reaching(at_input.first);
    neighbourhoods_.emplace_back();
  }

 private:
  // Each candidate's charge for the allocation it issued before this outcome was known.
  void score_candidates(const SimTask& t) {
    const double y = t.peak_bytes;
    // Scored by what each candidate answered for this task. In a replay of Sizey's protocol the
    // answers issued since the last completion were for this task (first, then its outcome); in
    // event time a later submission of the type may have been answered since: issued again
    // unless they were made from the same input and request (all an allocation reads of a task).
    if (!pending_ || pending_input_ != t.info.input_bytes || pending_request_ != t.info.request_bytes) {
      issue(t.info);
    }
    for (size_t k = 0; k < candidates_.size(); ++k) {
      Candidate& c = candidates_[k];
      c.record.waste += cost(issued_[k], y, t.runtime_ms, t.info.request_bytes, c.record.failures);
      if (c.kind == Kind::kBound) adapt(c, points_[k], y, issued_[k]);
    }
    // Then each bounded point's window learns the ratio, once for its nine coverages.
    for (int p = 0; p < kNumPoints; ++p) {
      if (bounded_[p] && learns(raw_[p], y)) ratio_bounds_[p].learn(y / std::max(raw_[p], 1e-12));
    }
    for (int p = 0; p < kNumPoints; ++p) {
      if (raw_[p] > 0) max_ratio_[p] = std::max(max_ratio_[p], y / raw_[p]);
    }
  }
  // OnlineBound::observe_issued's rule for a ratio-scale bound, without a censored label (a
  // task's peak is known here): only a finite positive point and a finite peak teach anything.
  static bool learns(double pt, double y) { return std::isfinite(pt) && std::isfinite(y) && pt > 0.0; }
  // ACI's step for candidate c, judged by the allocation it issued (a level with no score yet
  // does not adapt; the window learns after, in score_candidates).
  void adapt(const Candidate& c, double pt, double y, double issued) {
    RatioBounds& b = ratio_bounds_[c.point];
    if (!learns(pt, y) || b.window.empty()) return;
    static const OnlineBoundOptions kAci;  // OnlineBound's step and floor
    double& a = b.alpha_t[c.level];
    a = aci_step(a, 1.0 - kCoverages[c.level], !bound_covers(y, issued, false), kAci);
  }
  // A mean completed task's memory x time: what one failed attempt costs, about.
  double mean_task() const { return ys_.empty() ? 0.0 : usage_ / static_cast<double>(ys_.size()); }
  // The price of one failed attempt, byte x ms: the site's, else this type's mean task.
  double price() const {
    return price_ > 0 ? price_ : mean_task();
  }
  double retry_upper(double failed, double request, int attempt) const {
    const double bump = attempt >= kDoublingFrom ? kBlindRetry : kRecordBump;
    const double r = ys_.empty()       ? kBlindRetry * std::max(failed, 0.0)
                     : max_y_ > failed ? conditional_retry(failed)
                                       : bump * std::max(failed, 0.0);
    return request > failed ? std::min(request, r) : r;
  }
  // Among the peaks seen above `failed`: the one that would have cost least on the past tasks
  // that needed more than `failed` (over-allocation if it held them, else a priced second
  // failure and the largest peak's over-allocation). O(n) with running sums.
  double conditional_retry(double failed) const {
    const auto lo = static_cast<size_t>(
        std::upper_bound(sorted_y_.begin(), sorted_y_.end(), failed) - sorted_y_.begin());
    double st = 0, syt = 0;
    for (size_t i = lo; i < sorted_y_.size(); ++i) {
      st += sorted_t_[i];
      syt += sorted_y_[i] * sorted_t_[i];
    }
    const double lam = price();
    double best = max_y_, best_cost = std::numeric_limits<double>::infinity(), pt = 0, pyt = 0;
    for (size_t j = lo; j < sorted_y_.size(); ++j) {
      pt += sorted_t_[j];
      pyt += sorted_y_[j] * sorted_t_[j];
      if (j + 1 < sorted_y_.size() && sorted_y_[j + 1] == sorted_y_[j]) continue;
      const double r = sorted_y_[j];
      const auto above = static_cast<double>(sorted_y_.size() - 1 - j);
      const double c = (r * pt - pyt) + (r + max_y_) * (st - pt) - (syt - pyt) + lam * above;
      if (c < best_cost) {
        best_cost = c;
        best = r;
      }
    }
    return best;
  }
  // The candidate of least score so far (candidate_score; the first of equals).
  size_t choose() const {
    const double lam = price(), failure_cost = mean_task();
    // Every completed task but the first has been scored (observe).
    const double scored = ys_.empty() ? 0.0 : static_cast<double>(ys_.size() - 1);
    size_t best = 0;
    double best_score = std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < candidates_.size(); ++k) {
      const double s = candidate_score(candidates_[k].record, scored, lam, failure_cost);
      if (s < best_score) {
        best_score = s;
        best = k;
      }
    }
    return best;
  }
  // The simulator's charge for allocation a when the task needs y for runtime t (retries by
  // this policy's rule); adds the failed attempts to `failures`.
  double cost(double a, double y, double t, double request, double& failures) const {
    if (a >= y) return (a - y) * t;
    double c = 0.0;
    for (int attempt = 1; a < y; ++attempt) {
      c += std::max(a, 0.0) * t;
      failures += 1;
      const double r = retry_upper(a, request, attempt);
      a = r > a ? r : std::max(2.0 * a, 1048576.0);  // as the simulator does when a retry does not grow
    }
    return c + (a - y) * t;
  }
  // `nearest`, `wide`: the peaks of the 5 and of the sqrt(n) tasks with the nearest log input
  // (nearest_peaks), found once per task for the four points read from them, each sorted.
  double point(Point p, double x, double request, const std::vector<double>& nearest,
               const std::vector<double>& wide) const {
    switch (p) {
      case kMedianAll: return quantile_of_sorted(sorted_y_, 0.5);
      case kMedian5: return median_of(std::vector<double>(recent_.begin(), recent_.end()));
      case kLinear: return std::max(linear_.at(std::max(x, 0.0)), regression_floor());
      case kLogLinear: return std::max(std::exp(loglinear_.at(std::log1p(std::max(x, 0.0)))), regression_floor());
      case kNeighbours: return quantile_of_sorted(nearest, 0.5);
      case kNeighboursWide: return quantile_of_sorted(wide, 0.5);
      case kRequest: return request > 0 ? request : quantile_of_sorted(sorted_y_, 0.5);
      case kNeighboursUpper: return quantile_of_sorted(wide, 0.75);
      case kNeighboursLargest: return quantile_of_sorted(wide, 1.0);
      default: return max_y_;
    }
  }
  // The least a regression point answers: a regression may extrapolate below zero.
  double regression_floor() const { return 0.05 * max_y_ + 1.0; }
  // The peaks of the k tasks whose log input is nearest x's, nearest first.
  std::vector<double> nearest_peaks(double x, size_t k) const {
    const double lx = std::log1p(std::max(x, 0.0));
    std::vector<std::pair<double, double>> d;
    d.reserve(ys_.size());
    for (size_t i = 0; i < ys_.size(); ++i) d.emplace_back(std::abs(logx_[i] - lx), ys_[i]);
    const size_t m = std::min(k, d.size());
    std::partial_sort(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(m), d.end());
    std::vector<double> near;
    for (size_t i = 0; i < m; ++i) near.push_back(d[i].second);
    return near;
  }
  // The median of sorted peaks (q = 0.5; of an even count, the mean of the middle two, as
  // median_of), else the ceil(q n)-th smallest. 0 for none.
  static double quantile_of_sorted(const std::vector<double>& s, double q) {
    if (s.empty()) return 0.0;
    if (q == 0.5) {
      const size_t m = s.size() / 2;
      return s.size() % 2 ? s[m] : 0.5 * (s[m] + s[m - 1]);
    }
    return s[static_cast<size_t>(std::ceil(q * static_cast<double>(s.size()))) - 1];
  }
  // The first k of v (all when fewer), sorted.
  static std::vector<double> leading_sorted(const std::vector<double>& v, size_t k) {
    std::vector<double> out(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(k, v.size())));
    std::sort(out.begin(), out.end());
    return out;
  }
  double allocation(const Candidate& c, double pt, double request) const {
    const double ratio = max_ratio_[c.point] > 0 ? pt * max_ratio_[c.point] : max_y_;
    switch (c.kind) {
      case Kind::kBound: {  // never above the largest peak the type has shown
        const RatioBounds& b = ratio_bounds_[c.point];
        const std::optional<double> q = sorted_conformal_quantile(b.sorted, std::min(b.alpha_t[c.level], 1.0));
        return std::min(q ? std::max(pt, 0.0) * *q : pt, max_y_);
      }
      case Kind::kMaxRatioCapped: return std::min(ratio, max_y_);
      case Kind::kMaxRatio: return ratio;
      case Kind::kJackknife: {
        const auto& ratios = jackknife_[c.point];
        if (ratios.size() < 3) return max_y_;
        return pt * sorted_conformal_quantile(ratios, 1.0 - c.record.coverage).value_or(1.0);
      }
      case Kind::kJackknifeNormal: {
        const MeanSd& m = jackknife_moments_[c.point];
        if (m.n < 3) return max_y_;
        return pt * prediction_bound(m, t_quantile(c.level, m.n - 1));
      }
      case Kind::kLargest: return max_y_;
      case Kind::kLargestMargin: return (1.0 + c.margin) * max_y_;
      case Kind::kTwiceLargest: return 2.0 * max_y_;
      case Kind::kAsRequested: return request > 0 ? request : max_y_;
    }
    return max_y_;
  }
  // Each candidate's point and allocation for this task, before its outcome.
  void issue(const TaskInfo& t) {
    const auto wide_k = static_cast<size_t>(std::lround(std::sqrt(static_cast<double>(ys_.size()))));
    std::vector<double> wide = nearest_peaks(t.input_bytes, std::max(wide_k, kNeighbourCount));
    std::vector<double> nearest = leading_sorted(wide, kNeighbourCount);  // the 5 nearest lead the sqrt(n)
    std::sort(wide.begin(), wide.end());
    for (int k = 0; k < kNumPoints; ++k) {
      raw_[k] = point(static_cast<Point>(k), t.input_bytes, t.request_bytes, nearest, wide);
    }
    jackknife_ratios();
    neighbour_jackknife_ratios();
    for (int p = 0; p < kNumPoints; ++p) {  // read by allocation()
      std::sort(jackknife_[p].begin(), jackknife_[p].end());
      jackknife_moments_[p] = mean_sd(jackknife_[p]);
    }
    points_.resize(candidates_.size());
    issued_.resize(candidates_.size());
    for (size_t k = 0; k < candidates_.size(); ++k) {
      points_[k] = raw_[candidates_[k].point];
      issued_[k] = allocation(candidates_[k], points_[k], t.request_bytes);
    }
    pending_ = true;
    pending_input_ = t.input_bytes;
    pending_request_ = t.request_bytes;
  }

  // Each regression's jackknife ratios: for each of the last kBoundWindow completed tasks, its
  // peak over the regression's prediction for it when fitted without it (for least squares,
  // y_i - e_i / (1 - h_ii), h_ii the leverage; the log-linear one in log space). None before
  // three tasks: a line through two fits both.
  void jackknife_ratios() {
    const size_t n = ys_.size(), from = n > kBoundWindow ? n - kBoundWindow : 0;
    const double floor = regression_floor();
    for (int log_scale = 0; log_scale < 2; ++log_scale) {
      std::vector<double>& out = jackknife_[log_scale ? kLogLinear : kLinear];
      out.clear();
      if (n < 3) continue;
      const Regression& r = log_scale ? loglinear_ : linear_;
      const bool flat = r.flat();
      for (size_t i = from; i < n; ++i) {
        const double x = log_scale ? logx_[i] : xs_[i];
        const double y = log_scale ? std::log(std::max(ys_[i], 1.0)) : ys_[i];
        const double h = 1.0 / r.n + (flat ? 0.0 : (x - r.mx) * (x - r.mx) / r.cxx);
        if (!(h < 0.999)) continue;  // the fit is that task's alone
        const double without = y - (y - r.at(x)) / (1.0 - h);
        out.push_back(ys_[i] / std::max(log_scale ? std::exp(without) : without, floor));
      }
    }
  }

  // The nearest-input points' jackknife ratios: for each of the last kBoundWindow completed
  // tasks, its peak over the point made from its nearest log inputs among the other tasks (the
  // 5, and the sqrt(n - 1) whose median, upper quartile and largest peak are the wide points),
  // found by one walk out from the task in the tasks sorted by log input (the 5 nearest are its
  // first steps). None before three tasks. A task's ratios are kept until a completion reaches
  // its neighbourhood or sqrt(n - 1) rounds to another count (Neighbourhood), so each answer walks
  // out only from the few tasks whose neighbours changed.
  void neighbour_jackknife_ratios() {
    for (Point p : kNeighbourPoints) jackknife_[p].clear();
    const size_t n = ys_.size(), from = n > kBoundWindow ? n - kBoundWindow : 0;
    if (n < 3) return;
    const auto wide = static_cast<size_t>(std::lround(std::sqrt(static_cast<double>(n - 1))));
    const size_t k = std::max(wide, kNeighbourCount);
    if (k != neighbourhood_k_ || !keep_neighbourhoods_) {
      for (Neighbourhood& h : neighbourhoods_) h.known = false;
      neighbourhood_k_ = k;
    }
    for (size_t i = from; i < n; ++i) {
      Neighbourhood& h = neighbourhoods_[i];
      if (!h.known) walk_neighbourhood(i, k, h);
      for (size_t j = 0; j < kNeighbourPoints.size(); ++j) {
        if (h.has[j]) jackknife_[kNeighbourPoints[j]].push_back(h.ratio[j]);
      }
    }
  }
  // Task i's ratios to the points of its k nearest log inputs among the other tasks.
  void walk_neighbourhood(size_t i, size_t k, Neighbourhood& h) {
    const double lx = logx_[i];
    const auto self = static_cast<size_t>(
        std::lower_bound(by_input_.begin(), by_input_.end(), std::make_pair(lx, ys_[i])) - by_input_.begin());
    near_.clear();
    double reach = 0.0;
    size_t l = self, r = self + 1;  // by_input_[self] is task i itself: left out
    while (near_.size() < k && (l > 0 || r < by_input_.size())) {
      const bool right = l == 0 || (r < by_input_.size() && by_input_[r].first - lx <= lx - by_input_[l - 1].first);
      reach = right ? by_input_[r].first - lx : lx - by_input_[l - 1].first;  // never less than the last step's
      near_.push_back(right ? by_input_[r++].second : by_input_[--l].second);
    }
    // A walk that ran out of tasks takes any that completes next.
    h.reach = near_.size() < k ? std::numeric_limits<double>::infinity() : reach;
    const auto ratio = [&](size_t j, const std::vector<double>& sorted, double q) {
      const double pt = quantile_of_sorted(sorted, q);
      h.has[j] = pt > 0;
      h.ratio[j] = h.has[j] ? ys_[i] / pt : 0.0;
    };
    ratio(0, leading_sorted(near_, kNeighbourCount), 0.5);
    std::sort(near_.begin(), near_.end());
    ratio(1, near_, 0.5);
    ratio(2, near_, 0.75);
    ratio(3, near_, 1.0);
    h.known = true;
  }
  // A task completing at log input lx joins the neighbourhood of each windowed task it is no
  // farther from than that task's farthest neighbour (a tie may go either way: walked again).
  void forget_neighbourhoods_reaching(double lx) {
    const size_t n = neighbourhoods_.size(), from = n > kBoundWindow ? n - kBoundWindow : 0;
    for (size_t i = from; i < n; ++i) {
      Neighbourhood& h = neighbourhoods_[i];
      if (h.known && !(std::abs(lx - logx_[i]) > h.reach)) h.known = false;
    }
  }

  RecommendRule rule_;
  Explanation explained_;
  double price_ = 0.0;
  bool keep_neighbourhoods_ = true;
  std::vector<Candidate> candidates_;
  std::array<RatioBounds, kNumPoints> ratio_bounds_;  // read by the kBound candidates
  std::array<bool, kNumPoints> bounded_{};           // the points some kBound candidate reads
  std::vector<double> points_, issued_;
  std::array<double, kNumPoints> raw_{}, max_ratio_{};
  bool pending_ = false;  // issued_ holds the answers for a task of pending_input_, pending_request_
  double pending_input_ = 0.0, pending_request_ = 0.0;
  std::vector<double> ys_, sorted_y_, sorted_t_;
  std::deque<double> recent_;
  std::vector<double> xs_, logx_;
  std::array<std::vector<double>, kNumPoints> jackknife_;  // per point on the input (*jackknife_ratios), sorted
  std::array<MeanSd, kNumPoints> jackknife_moments_;      // their mean and s.d.
  std::vector<std::pair<double, double>> by_input_;          // (log input, peak) of each completed task, sorted
  std::vector<Neighbourhood> neighbourhoods_;                // per completed task, as ys_
  size_t neighbourhood_k_ = 0;                               // the k they were walked with
  std::vector<double> near_;                                 // walk_neighbourhood's scratch
  double max_y_ = 0.0, usage_ = 0.0;
  Regression linear_, loglinear_;
};

}  // namespace

std::unique_ptr<SizingPolicy> make_peakcast(const PolicyOptions& options, bool choose) {
  return std::make_unique<PeakcastPolicy>(options, choose);
}

double candidate_score(const CandidateRecord& r, double scored, double price, double failure_cost) {
  const double promised = r.coverage > 0 ? (1.0 - r.coverage) * scored : 0.0;
  const double unseen = std::max(promised - r.failures, 0.0);
  return r.waste + price * r.failures + (failure_cost + price) * unseen;
}

}  // namespace peakcast::sizing
