// Event-time history and the four experts (METHOD.md §2–3).
//
// One store serves batch replay (evaluation) and live use (the service): completions are added
// as they end; a query at time t sees only completions with end_time < t (strict), whatever order
// they were added in. Adding the same job_id twice is a no-op.
//
// Layout. Per key (exact script key, user) and resource, a series of labels sorted by
// (end_time, submit_time, hash of job_id) -- the last two only break ties, so the order does not
// depend on insertion order. Each entry carries the decay accumulator of everything up to and
// including it (a weighted sum rebased at the entry's own end time, so weights are <= 1 and
// nothing overflows over years). A query at t finds the visible prefix (end_time < t) by walking
// back from the newest entry -- zero steps in replay, where nothing invisible is ever held -- or
// by binary search; then count, Last-1, the medians, MAD and the decay mean come from the last
// kWindow visible entries and the accumulator of the last visible one: O(kWindow) per query,
// independent of how long the key's history is.
//
// The trade-off: exact answers for a query at an arbitrary past time need every entry, so
// memory is bounded only through a watermark. advance_watermark(w) promises that no later
// query asks about a time before w. From then on, entries of a series that are visible at w and
// older than its kWindow most recent visible ones can never be needed individually again; they
// are folded into the accumulator of the entries kept (lazily, when the series grows past
// 2*kWindow) and only counted. replay() advances the watermark to each submit time, so a replay
// keeps at most ~2*kWindow entries per series. The service advances it to "now minus a
// tolerance for late completions"; without a watermark nothing is folded and every query is
// exact at any t, at O(labels) memory. A query before the watermark is a caller bug and throws
// std::logic_error. Completions that end after a query time stay invisible to it in all cases;
// a late completion older than the kept entries is folded into them directly.
//
// Idempotence is by a 64-bit hash of job_id (a false match needs two distinct ids to collide:
// about 3e-8 for a million jobs).
//
// Thread safety: const methods may run concurrently; add_completion and advance_watermark need
// exclusive access (the service wraps the store in a shared_mutex).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "peakcast/core/job.h"

namespace peakcast::history {

enum class Expert : int { kLast1 = 0, kMedian3 = 1, kMedian5 = 2, kDecay = 3 };
inline constexpr int kNumExperts = 4;
inline constexpr std::array<Expert, kNumExperts> kExperts = {Expert::kLast1, Expert::kMedian3,
                                                             Expert::kMedian5, Expert::kDecay};
std::string_view expert_name(Expert e);  // "last1", "median3", "median5", "ewma"
std::optional<Expert> parse_expert(std::string_view name);

// Which level of the hierarchy answered.
enum class Level : int { kExactScript = 0, kUser = 1, kNone = 2 };
std::string_view level_name(Level l);    // "exact_script", "user", "none"

inline constexpr double kDecayHalfLifeS = 168.0 * 3600.0;
inline constexpr int kWindow = 16;       // most recent labels behind MAD and censored_recent

// What one key's eligible history says about one resource at query time.
struct KeyStats {
  int count = 0;                           // eligible labelled jobs (all time, not just window)
  std::array<double, kNumExperts> expert{};  // valid when count > 0
  double mad = 0.0;                        // median absolute deviation over the window
  double spread = 0.0;                     // max - min over the four experts
  double age_last_s = 0.0;                 // query time - end_time of the most recent one
  double last_end_time = 0.0;
  int censored_recent = 0;                 // OOM-censored labels in the window (memory only)
};
// Expert definitions on the eligible labels x_1..x_n ordered by end time (n = count > 0):
//   last1 = x_n; median3 / median5 = median of the last min(3|5, n) (mean of the two middle
//   ones when even); ewma = sum w_i x_i / sum w_i with w_i = 2^(-(t - end_i) / 168 h), over all n;
//   mad = median |x_i - median(window)| over the window = last min(kWindow, n) labels (unscaled).
// A job counts for a resource's history only where that resource is valid for it. Censored
// (OUT_OF_MEMORY) labels count as labels (at the cap) and are also counted in censored_recent
// for memory; the VRAM label of an OOM-ended job is a measurement and is not counted as censored.

// The hierarchical view for one job and resource: exact-script stats, same-user stats, and which
// level answers (exact if it has any, else user, else none -> caller's fallback).
struct HistoryView {
  KeyStats exact;
  KeyStats user;
  Level level = Level::kNone;
  const KeyStats& answering() const { return level == Level::kExactScript ? exact : user; }
  // The expert's value at the answering level, or `fallback` at Level::kNone.
  double estimate(Expert e, double fallback) const;
};

class HistoryStore {
 public:
  HistoryStore();
  ~HistoryStore();
  HistoryStore(HistoryStore&&) noexcept;
  HistoryStore& operator=(HistoryStore&&) noexcept;
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // Adds a finished job (its labels, valid flags and script_key must be filled). Jobs with no
  // valid resource are ignored. Adding the same job_id twice is a no-op (returns false).
  // An empty script_key or user means "no such key": that level is not recorded.
  bool add_completion(const Job& job);

  // Promise: no later query asks about a time before t. Monotone (a smaller t is ignored).
  // Lets the store fold old entries (see the top of this file); replay() calls it.
  void advance_watermark(int64_t t);
  int64_t watermark() const;      // INT64_MIN until advanced

  // The view for `job` (its user and script_key) at time t = job.submit_time.
  HistoryView query(const Job& job, Resource r) const;
  // Same, at an explicit time and keys. Throws std::logic_error when t < watermark().
  HistoryView query(const std::string& script_key, const std::string& user, int64_t t,
                    Resource r) const;

  size_t size() const;            // completions held
  size_t key_count() const;       // distinct keys (script + user)
  size_t memory_bytes() const;    // approximate heap use (walks the keys: O(key_count))
  size_t retained_entries() const;  // labels held individually, all series (O(key_count))

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Batch replay in event time: visits jobs in submit order; before each visit, every job with
// end_time < submit_time has been added to the store. The visitor sees the store as it was at
// that job's submission. Jobs must have labels filled. Ties in submit time keep input order.
// The watermark is advanced to each submit time, so the visitor may query at t >= the current
// job's submit time only, and the store stays small. Throws std::invalid_argument when the
// jobs are not in submit order.
template <typename Visitor>
void replay(const std::vector<const Job*>& jobs_in_submit_order, HistoryStore& store,
            Visitor&& visit);

}  // namespace peakcast::history

#include "peakcast/history/replay_inl.h"
