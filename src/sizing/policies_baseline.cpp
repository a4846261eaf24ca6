// The baselines of docs/sizing.md, written from the descriptions in Sizey's paper and its
// evaluation code (dos-group/sizey @ ae61efb; docs/sizing.md gives the protocol), plus
// max-so-far and Kubernetes VPA's rule.
// A policy with nothing observed yet (a task type's first task in the event-time protocol)
// answers the task's request.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "peakcast/sizing/policy.h"

namespace peakcast::sizing {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double max_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

// What a policy keeps about a task between its answers and its completion. In Sizey's protocol a
// task completes before the next is sized; in event time others are sized while it runs, so the
// state is the task's own: its completion finds what was answered for it (not for the task sized
// last), and nothing it taught is seen by a task submitted before it ended. A task is known by
// what the policy sees of it; two tasks alike in all of it were sized alike.
using TaskKey = std::tuple<int64_t, double, double, std::string>;
TaskKey key_of(const TaskInfo& t) { return {t.submit_ms, t.input_bytes, t.request_bytes, t.partition}; }

template <typename V>
class PerTask {
 public:
  V& at(const TaskInfo& t) { return pending_[key_of(t)]; }
  // The task's state, removed; nullopt when nothing was kept for it.
  std::optional<V> take(const TaskInfo& t) {
    auto it = pending_.find(key_of(t));
    if (it == pending_.end()) return std::nullopt;
    V v = std::move(it->second);
    pending_.erase(it);
    return v;
  }

 private:
  std::map<TaskKey, V> pending_;
};

// The workflow's own request; doubles after a failure (none is expected: the presets hold the peak).
class Presets final : public SizingPolicy {
 public:
  double first(const TaskInfo& t) override { return t.request_bytes > 0 ? t.request_bytes : max_seen_; }
  double retry(const TaskInfo&, double failed, int) override { return 2.0 * failed; }
  void observe(const SimTask& t) override { max_seen_ = std::max(max_seen_, t.peak_bytes); }

 private:
  double max_seen_ = 0.0;
};

// Witt et al.: the q-th percentile (numpy 'linear') of every peak seen; retry doubles.
class WittPercentile final : public SizingPolicy {
 public:
  explicit WittPercentile(double q) : q_(q) {}
  double first(const TaskInfo& t) override {
    return ys_.empty() ? t.request_bytes : numpy_percentile(ys_, q_ * 100.0);
  }
  double retry(const TaskInfo&, double failed, int) override { return 2.0 * failed; }
  void observe(const SimTask& t) override { ys_.push_back(t.peak_bytes); }

 private:
  double q_;
  std::vector<double> ys_;
};

// Witt et al.'s linear regression: ordinary least squares of the peak on the input size over
// every task seen; request = prediction * (1 + s), s = population s.d. of the relative errors
// (y - prediction) / y of the earlier online predictions (STD), or of the positive ones only,
// i.e. under-predictions (STDUNDER). Retry: double, or the largest peak seen when the request
// was negative. The errors start from `carried`: empty for a policy of its own, the list
// Sizey's code shares across task types and both variants under its protocol (simulate.cpp).
class WittLr final : public SizingPolicy {
 public:
  WittLr(bool under_only, std::vector<double> carried)
      : under_only_(under_only), errors_(std::move(carried)) {}
  const std::vector<double>& errors() const { return errors_; }
  double first(const TaskInfo& t) override {
    if (n_ == 0) return t.request_bytes;
    const double pred = predict(t.input_bytes);
    pending_.at(t) = pred;
    return pred + offset() * pred;
  }
  double retry(const TaskInfo&, double failed, int) override {
    return failed < 0 ? max_of(ys_) : 2.0 * failed;
  }
  void observe(const SimTask& t) override {
    if (auto pred = pending_.take(t.info)) errors_.push_back((t.peak_bytes - *pred) / t.peak_bytes);
    // Welford's updates: bytes reach 1e10, where sums of squares lose the variance.
    const double x = t.info.input_bytes, y = t.peak_bytes;
    n_ += 1;
    const double dx = x - mx_;
    mx_ += dx / n_;
    my_ += (y - my_) / n_;
    cxx_ += dx * (x - mx_);
    cxy_ += dx * (y - my_);
    ys_.push_back(t.peak_bytes);
  }

 private:
  double predict(double x) const {
    if (n_ == 0) return 0.0;
    if (!(cxx_ > 1e-12 * (mx_ * mx_ + 1.0) * n_)) return my_;  // a constant input: the mean (as lstsq)
    return my_ + cxy_ / cxx_ * (x - mx_);
  }
  double offset() const {
    std::vector<double> e;
    for (double v : errors_) {
      if (!under_only_ || v > 0) e.push_back(v);
    }
    if (e.empty()) return 0.0;
    double m = 0;
    for (double v : e) m += v;
    m /= static_cast<double>(e.size());
    double ss = 0;
    for (double v : e) ss += (v - m) * (v - m);
    return std::sqrt(ss / static_cast<double>(e.size()));
  }

  bool under_only_;
  PerTask<double> pending_;  // the regression's prediction for each task sized and not yet completed
  std::vector<double> errors_, ys_;
  double n_ = 0, mx_ = 0, my_ = 0, cxx_ = 0, cxy_ = 0;
};

// Tovar et al.'s first allocation, 'waste' mode: over a histogram of (peak, run time) of the
// tasks seen (1-byte and 1-unit resolution), the allocation a among the peaks seen that
// minimises a * E[t] + a_max * E[t; y > a] (a failed task reruns at the largest peak, a_max).
// Retry: the largest peak seen, then a whole 128 GB node.
class Tovar final : public SizingPolicy {
 public:
  double first(const TaskInfo& t) override {
    if (time_at_.empty()) return t.request_bytes;
    const double am = time_at_.rbegin()->first;
    const double tb = total_time_ / count_;
    double best = am, best_e = am * tb, above = 0.0;  // above: E[t; y > a], built from the top
    for (auto it = time_at_.rbegin(); it != time_at_.rend(); ++it) {
      const double e = it->first * tb + am * above;
      if (e < best_e) {
        best_e = e;
        best = it->first;
      }
      above += it->second / count_;
    }
    return best;
  }
  double retry(const TaskInfo&, double failed, int) override {
    const double am = time_at_.empty() ? 0.0 : time_at_.rbegin()->first;
    return failed < am ? am : 128e9;
  }
  void observe(const SimTask& t) override {
    time_at_[std::ceil(t.peak_bytes)] += std::ceil(t.runtime_ms);
    total_time_ += std::ceil(t.runtime_ms);
    count_ += 1;
  }

 private:
  std::map<double, double> time_at_;  // peak bucket -> summed run time
  double total_time_ = 0.0, count_ = 0.0;
};

// The largest peak seen so far; retry doubles.
class MaxSoFar final : public SizingPolicy {
 public:
  double first(const TaskInfo& t) override {
    return seen_ ? max_ : (t.request_bytes > 0 ? t.request_bytes : 0.0);
  }
  double retry(const TaskInfo&, double failed, int) override { return 2.0 * failed; }
  void observe(const SimTask& t) override {
    max_ = std::max(max_, t.peak_bytes);
    seen_ = true;
  }

 private:
  double max_ = 0.0;
  bool seen_ = false;
};

// Kubernetes VPA's memory recommender: a decaying histogram of peaks (exponential buckets from
// 10 MB growing 5%), the 90th percentile (the bucket's upper edge) plus a 15% safety margin. A
// sample's weight halves every kHalfLife later observations (VPA halves per 24 h of wall time;
// Sizey's protocol has no wall clock, so the replay counts completions). An out-of-memory
// attempt is retried at max(+100 MiB, x1.2) and that bumped value enters the histogram as a
// sample, as VPA records OOM events: when the task's outcome is known (its completion), before
// its peak, so a task sized while it still ran does not see them.
class Vpa final : public SizingPolicy {
 public:
  double first(const TaskInfo& t) override {
    if (total_ <= 0) return t.request_bytes;
    double acc = 0.0;
    for (size_t b = 0; b < weight_.size(); ++b) {
      acc += weight_[b];
      if (acc >= 0.9 * total_) return upper_edge(b) * 1.15;
    }
    return upper_edge(weight_.size() - 1) * 1.15;
  }
  double retry(const TaskInfo& t, double failed, int) override {
    const double bumped = std::max(failed + 100.0 * kMiB, failed * 1.2);
    oom_samples_.at(t).push_back(bumped);
    return bumped;
  }
  void observe(const SimTask& t) override {
    if (auto bumps = oom_samples_.take(t.info)) {
      for (double b : *bumps) add(b);
    }
    add(t.peak_bytes);
  }

 private:
  static constexpr double kFirst = 1e7, kRatio = 1.05, kHalfLife = 200.0;
  static double upper_edge(size_t b) {
    return kFirst * (std::pow(kRatio, static_cast<double>(b) + 1) - 1) / (kRatio - 1);
  }
  static size_t bucket(double v) {
    if (v < kFirst) return 0;
    return static_cast<size_t>(std::floor(std::log(v * (kRatio - 1) / kFirst + 1) / std::log(kRatio)));
  }
  void add(double v) {
    // Instead of decaying old weights, grow new ones (VPA's reference-time trick), rebased
    // before they overflow.
    const double w = std::exp2(n_ / kHalfLife);
    n_ += 1;
    const size_t b = bucket(v);
    if (b >= weight_.size()) weight_.resize(b + 1, 0.0);
    weight_[b] += w;
    total_ += w;
    if (total_ > 1e200) {
      for (double& x : weight_) x *= 1e-200;
      total_ *= 1e-200;
      n_ -= 200.0 * std::log2(10.0) * kHalfLife;
    }
  }
  std::vector<double> weight_;
  double total_ = 0.0, n_ = 0.0;
  PerTask<std::vector<double>> oom_samples_;  // each running task's bumped retries
};

}  // namespace

double numpy_percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::unique_ptr<SizingPolicy> make_presets() { return std::make_unique<Presets>(); }
std::unique_ptr<SizingPolicy> make_witt_percentile(double q) { return std::make_unique<WittPercentile>(q); }
std::unique_ptr<SizingPolicy> make_witt_lr(bool under_only, std::vector<double> carried_errors) {
  return std::make_unique<WittLr>(under_only, std::move(carried_errors));
}

std::vector<double> witt_lr_errors(const TaskType& type, const SizeySplit& split) {
  WittLr lr(false, {});
  for (size_t i : split.warm) lr.observe(type.tasks[i]);
  for (size_t i : split.online) {
    lr.first(type.tasks[i].info);
    lr.observe(type.tasks[i]);
  }
  return lr.errors();
}
std::unique_ptr<SizingPolicy> make_tovar() { return std::make_unique<Tovar>(); }
std::unique_ptr<SizingPolicy> make_max_so_far() { return std::make_unique<MaxSoFar>(); }
std::unique_ptr<SizingPolicy> make_vpa() { return std::make_unique<Vpa>(); }

}  // namespace peakcast::sizing
