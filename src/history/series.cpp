#include "history/series.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>

#include "peakcast/core/hash.h"

namespace peakcast::history::detail {
namespace {

// Weight of a label that ended at `from`, seen from `to` (from <= to in use; <= 1).
double decay(int64_t from, int64_t to) {
  return std::exp2(static_cast<double>(from - to) / kDecayHalfLifeMs);
}

// Median of v[0..n) (n >= 1), the mean of the two middle values when n is even; reorders v.
double median_of(double* v, int n) {
  if (n == 1) return v[0];
  if (n == 2) return 0.5 * (v[0] + v[1]);
  if (n == 3) return std::max(std::min(v[0], v[1]), std::min(std::max(v[0], v[1]), v[2]));
  double* mid = v + n / 2;
  std::nth_element(v, mid, v + n);
  if (n % 2 == 1) return *mid;
  return 0.5 * (*std::max_element(v, mid) + *mid);
}

}  // namespace

uint64_t order_tag(const Job& job) {
  return (fnv1a64(job.job_id) & ~uint64_t{1}) | (job.censored ? 1u : 0u);
}

bool entry_before(const Entry& a, const Entry& b) {
  return std::tie(a.end, a.submit, a.tag) < std::tie(b.end, b.submit, b.tag);
}

// The most entries an expert other than the decay mean reads (median5): the depth a walk-forward
// error needs one by one.
constexpr size_t kExpertDepth = 5;

// What the four experts said from the first i entries (i > 0): for entry e, i is the number of
// entries that had ended before e was submitted -- what a prediction at its submission saw.
std::array<double, kNumExperts> experts_before(const std::vector<Entry>& log, size_t i) {
  double buf[5];
  auto median_last = [&](size_t k) {
    k = std::min(k, i);
    for (size_t j = 0; j < k; ++j) buf[j] = log[i - k + j].x;
    return median_of(buf, static_cast<int>(k));
  };
  const Entry& p = log[i - 1];
  return {p.x, median_last(3), median_last(5), p.xs / p.ws};
}

void Series::recompute_from(size_t pos, int64_t changed_end) {
  for (size_t i = pos; i < log_.size(); ++i) {
    Entry& e = log_[i];
    if (i != pos && e.submit <= changed_end) {
      // Its submission did not see the label that changed: its error stands (recomputing it
      // could only lose what has been folded since).
      const Entry& p = log_[i - 1];
      const double w = decay(p.end, e.end);
      e.xs = p.xs * w + e.x;
      e.ws = p.ws * w + 1.0;
      continue;
    }
    // The entries visible at e's submission (end < submit) are a prefix of those before it.
    const auto seen = static_cast<size_t>(
        std::lower_bound(log_.begin(), log_.begin() + static_cast<std::ptrdiff_t>(i), e.submit,
                         [](const Entry& x, int64_t t) { return x.end < t; }) - log_.begin());
    if (seen == 0) {
      e.err.fill(std::numeric_limits<float>::quiet_NaN());  // no history at its submission
    } else {
      const std::array<double, kNumExperts> ex = experts_before(log_, seen);
      for (int k = 0; k < kNumExperts; ++k) {
        // A censored label is a lower bound: an expert at or above it made no known error.
        const double d = e.censored() ? std::max(0.0, e.x - ex[k]) : std::fabs(ex[k] - e.x);
        e.err[k] = static_cast<float>(d);
      }
    }
    if (i == 0) {
      e.xs = e.x;
      e.ws = 1.0;
    } else {
      const Entry& p = log_[i - 1];
      const double w = decay(p.end, e.end);
      e.xs = p.xs * w + e.x;
      e.ws = p.ws * w + 1.0;
    }
  }
}

// A late label older than every kept one while some are already folded: it is visible to every
// query that may still come (see maybe_fold), and never among the last kWindow, so it joins
// the folded ones: its weight is added to every kept accumulator.
void Series::fold_before_front(const Entry& e) {
  for (Entry& k : log_) {
    const double w = decay(e.end, k.end);
    k.xs += w * e.x;
    k.ws += w;
  }
  // Counted in the oldest batch whose newest label is not older, so that a batch is forgotten
  // only when every label in it is older than the horizon.
  ++folded_->total;  // folded_ is set: a label was folded before this one
  std::vector<FoldedBatch>& batches = folded_->batches;
  const auto b = std::find_if(batches.begin(), batches.end(),
                              [&](const FoldedBatch& f) { return f.newest_end >= e.end; });
  if (b != batches.end()) {
    ++b->n;
  } else {
    ++batches.back().n;
    batches.back().newest_end = e.end;
  }
}

void Series::add_folded(int64_t newest_end, int64_t n) {
  if (!folded_) folded_ = std::make_unique<Folded>();
  folded_->total += n;
  std::vector<FoldedBatch>& batches = folded_->batches;
  if (!batches.empty() && batches.back().newest_end / kBatchSpanMs == newest_end / kBatchSpanMs) {
    batches.back().n += n;
    batches.back().newest_end = std::max(batches.back().newest_end, newest_end);
  } else {
    batches.push_back({newest_end, n});
  }
}

// Every query from now on is at t >= watermark, so it sees at least the entries with
// end < watermark; all but the last kWindow of those are never needed one by one again.
// Fold only when that frees at least half the log, so the front erase stays amortized O(1).
void Series::maybe_fold(int64_t watermark, int64_t submitted_from) {
  if (log_.size() <= 2 * static_cast<size_t>(kWindow)) return;
  auto ended_before = [&](int64_t t) {
    return static_cast<size_t>(
        std::lower_bound(log_.begin(), log_.end(), t,
                         [](const Entry& e, int64_t tt) { return e.end < tt; }) - log_.begin());
  };
  const size_t visible = ended_before(watermark);
  if (visible <= static_cast<size_t>(kWindow)) return;
  size_t foldable = visible - static_cast<size_t>(kWindow);
  // An entry added later (submitted at or after submitted_from) computes its walk-forward error
  // from the kExpertDepth newest entries its submission saw: keep those visible at submitted_from,
  // so that its error is the one a series that folds nothing gives it.
  if (submitted_from != std::numeric_limits<int64_t>::max()) {
    const size_t seen = ended_before(submitted_from);
    foldable = std::min(foldable, seen > kExpertDepth ? seen - kExpertDepth : size_t{0});
  }
  if (foldable == 0 || 2 * foldable < log_.size()) return;
  add_folded(log_[foldable - 1].end, static_cast<int64_t>(foldable));
  log_.erase(log_.begin(), log_.begin() + static_cast<std::ptrdiff_t>(foldable));
}

int64_t Series::forget_before(int64_t t) {
  int64_t forgotten = 0;
  if (folded_) {
    std::vector<FoldedBatch>& batches = folded_->batches;
    size_t gone = 0;
    while (gone < batches.size() && batches[gone].newest_end < t) forgotten += batches[gone++].n;
    batches.erase(batches.begin(), batches.begin() + static_cast<std::ptrdiff_t>(gone));
    folded_->total -= forgotten;
    if (folded_->total == 0) folded_.reset();
  }
  const auto first_kept = std::lower_bound(log_.begin(), log_.end(), t,
                                           [](const Entry& e, int64_t tt) { return e.end < tt; });
  const auto dropped = static_cast<size_t>(first_kept - log_.begin());
  // Every folded label ended before the first entry: dropping one entry leaves none folded.
  log_.erase(log_.begin(), first_kept);
  // With nothing folded left, the kept entries' errors and accumulators are recomputed from
  // them alone, as a series that never had the forgotten labels holds them; while a batch
  // straddles t they stay as they were (the batch is only in the accumulators).
  if ((dropped > 0 || forgotten > 0) && !folded_ && !log_.empty()) {
    recompute_from(0, std::numeric_limits<int64_t>::min());
  }
  return forgotten + static_cast<int64_t>(dropped);
}

void Series::add(const Entry& e, int64_t watermark, int64_t submitted_from) {
  const auto it = std::upper_bound(log_.begin(), log_.end(), e, entry_before);
  const auto pos = static_cast<size_t>(it - log_.begin());
  if (pos == 0 && folded_) {
    fold_before_front(e);
    return;
  }
  log_.insert(it, e);
  recompute_from(pos, e.end);
  maybe_fold(watermark, submitted_from);
}

KeyStats Series::stats(int64_t t, bool floor_censored) const {
  KeyStats s;
  size_t v = log_.size();
  if (v > 0 && log_[v - 1].end >= t) {  // some held labels are not visible yet at t
    v = static_cast<size_t>(
        std::lower_bound(log_.begin(), log_.end(), t,
                         [](const Entry& e, int64_t tt) { return e.end < tt; }) -
        log_.begin());
  }
  if (folded_ && v < static_cast<size_t>(kWindow)) {
    throw std::logic_error("history: series queried before a watermark it was folded at");
  }
  if (v == 0) return s;

  s.count = static_cast<int>(folded() + static_cast<int64_t>(v));
  const Entry& last = log_[v - 1];
  s.last_end_time = seconds_from_ms(last.end);
  s.age_last_s = static_cast<double>(t - last.end) / static_cast<double>(kMsPerSecond);

  const int m = static_cast<int>(std::min<size_t>(v, static_cast<size_t>(kWindow)));
  const Entry* win = log_.data() + (v - static_cast<size_t>(m));
  double buf[kWindow];
  auto median_last = [&](int k) {
    k = std::min(k, m);
    for (int i = 0; i < k; ++i) buf[i] = win[m - k + i].x;
    return median_of(buf, k);
  };
  s.expert[static_cast<int>(Expert::kLast1)] = last.x;
  s.expert[static_cast<int>(Expert::kMedian3)] = median_last(3);
  s.expert[static_cast<int>(Expert::kMedian5)] = median_last(5);
  s.expert[static_cast<int>(Expert::kEwma)] = last.xs / last.ws;

  const double med = median_last(m);
  for (int i = 0; i < m; ++i) buf[i] = std::fabs(win[i].x - med);
  s.mad = median_of(buf, m);
  for (int i = 0; i < m; ++i) s.censored_recent += win[i].censored() ? 1 : 0;
  if (floor_censored) {
    double floor = -1.0;
    // Back to the newest run that completed with a known peak; runs that ended otherwise
    // (cancelled, timed out, failed) are passed over: they do not lift an OOM's floor.
    for (int i = m - 1; i >= 0 && !win[i].completed; --i) {
      if (win[i].censored()) floor = std::max(floor, win[i].x);
    }
    for (double& x : s.expert) x = std::max(x, floor);
  }

  // Recent walk-forward errors: the last kErrorWindow visible labels that have one.
  const int first = std::max(0, m - kErrorWindow);
  std::array<double, kNumExperts> sum{};
  for (int i = first; i < m; ++i) {
    if (std::isnan(win[i].err[0])) continue;
    for (int k = 0; k < kNumExperts; ++k) sum[k] += win[i].err[k];
    ++s.err_n;
  }
  for (int k = 0; k < kNumExperts; ++k) s.recent_err[k] = s.err_n > 0 ? sum[k] / s.err_n : 0.0;

  const auto [lo, hi] = std::minmax_element(s.expert.begin(), s.expert.end());
  s.spread = *hi - *lo;
  return s;
}

}  // namespace peakcast::history::detail
