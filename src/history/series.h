// One key's labels for one resource, in event-time order, with per-entry decay accumulators
// (see the top of peakcast/history/history.h for the layout and the watermark trade-off).
#pragma once

#include <cstddef>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "peakcast/history/history.h"

namespace peakcast::history::detail {

// The order of labels with equal end_time: submit_time, then this tag (hash of job_id with the
// censored flag in bit 0). Depends only on the job, never on insertion order.
uint64_t order_tag(const Job& job);

struct Entry {
  int64_t end = 0;
  int64_t submit = 0;
  uint64_t tag = 0;   // order_tag(); bit 0 = censored
  double x = 0.0;     // the label
  // Decay accumulator of every label up to and including this one (folded ones too), with
  // weights 2^((end_i - end) / half-life) <= 1: xs = sum w_i x_i, ws = sum w_i (>= 1).
  double xs = 0.0;
  double ws = 0.0;
  // Walk-forward error of each expert on this label: |expert from the entries that had ended
  // before its submission - x|, NaN when none had. Only labels that ended before a query are read.
  std::array<float, kNumExperts> err{};
  // The run COMPLETED and this label is its measured peak: it shows the script can finish within
  // its limit, and only such a run ends a chain of OOMs for the floor (stats()). A cancelled,
  // timed-out, failed or node-failed run says nothing about what the script needs.
  bool completed = false;

  bool censored() const { return (tag & 1u) != 0; }
};

bool entry_before(const Entry& a, const Entry& b);

class Series {
 public:
  // Inserts in order; folds old entries that no query at t >= watermark can need one by one.
  // submitted_from: every entry added later was submitted at or after it (INT64_MAX: no such
  // promise); the kExpertDepth newest entries that had ended by then are kept too, since the
  // walk-forward errors of those later entries read them.
  void add(const Entry& e, int64_t watermark,
           int64_t submitted_from = std::numeric_limits<int64_t>::max());
  // Stats of the labels with end < t. Requires t >= every watermark passed to add() so far.
  // floor_censored: every expert is at least the largest censored label (OOM run) since the
  // newest entry that `completed`, within the last kWindow visible ones: the next run needs at
  // least what killed them (history.h, "Censored labels").
  KeyStats stats(int64_t t, bool floor_censored = false) const;

  // Forgets the labels that ended before t, as a series filled only with the labels that
  // ended at or after t would not have them. Folded labels are forgotten by the batch they were
  // folded in, once the newest of the batch ended before t. When no folded label is left, the
  // kept entries' errors and accumulators are recomputed from them alone, and the series is
  // that one's; while a batch straddles t, count() exceeds it by fewer than that batch, and the
  // accumulators keep the forgotten batches' weight (each at most 2^-(age / half-life)).
  // Returns the labels forgotten.
  int64_t forget_before(int64_t t);

  size_t retained() const { return log_.size(); }
  int64_t count() const { return static_cast<int64_t>(log_.size()) + folded(); }
  size_t heap_bytes() const {
    return log_.capacity() * sizeof(Entry) +
           (folded_ ? sizeof(Folded) + folded_->batches.capacity() * sizeof(FoldedBatch) : 0);
  }

 private:
  // The accumulators of the entries from pos on, and the errors of those that saw a label that
  // ended at changed_end (submitted after it) and of the one at pos (just inserted); the others'
  // errors read only entries before pos, unchanged.
  void recompute_from(size_t pos, int64_t changed_end);
  void fold_before_front(const Entry& e);
  void maybe_fold(int64_t watermark, int64_t submitted_from);

  // Labels folded together, oldest batch first: how many, and the end of the newest of them.
  // Folds whose newest labels ended within one kBatchSpanMs bucket share a batch, so a series
  // holds at most one batch per hour of the history it has folded.
  struct FoldedBatch {
    int64_t newest_end = 0;
    int64_t n = 0;
  };
  struct Folded {
    int64_t total = 0;  // the sum of the batches' n
    std::vector<FoldedBatch> batches;
  };
  static constexpr int64_t kBatchSpanMs = 3'600'000;

  int64_t folded() const { return folded_ ? folded_->total : 0; }
  void add_folded(int64_t newest_end, int64_t n);

  std::vector<Entry> log_;          // sorted by entry_before
  std::unique_ptr<Folded> folded_;  // labels before log_.front(), only in its accumulator; null: none
};

}  // namespace peakcast::history::detail
