// Event-time history and the four experts (METHOD.md §2–3).
//
// One store serves batch replay (evaluation) and live use (the service): completions are added
// as they end; a query at time t sees only completions with end_time < t (strict), whatever order
// they were added in. Per key it keeps only what the experts need (a bounded window of the most
// recent labels plus an O(1) decay accumulator), so memory and query cost stay flat.
//
// Thread safety: const methods may run concurrently; add_completion needs exclusive access
// (the service wraps the store in a shared_mutex).
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
inline constexpr int kWindow = 16;       // labels kept per key for medians and MAD

// What one key's eligible history says about one resource at query time.
struct KeyStats {
  int count = 0;                           // eligible labelled jobs (all time, not just window)
  std::array<double, kNumExperts> expert{};  // valid when count > 0
  double mad = 0.0;                        // median absolute deviation over the window
  double spread = 0.0;                     // max - min over the four experts
  double age_last_s = 0.0;                 // query time - end_time of the most recent one
  double last_end_time = 0.0;
  int censored_recent = 0;                 // OOM-censored labels in the window
};

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
  bool add_completion(const Job& job);

  // The view for `job` (its user and script_key) at time t = job.submit_time.
  HistoryView query(const Job& job, Resource r) const;
  // Same, at an explicit time and keys.
  HistoryView query(const std::string& script_key, const std::string& user, int64_t t,
                    Resource r) const;

  size_t size() const;            // completions held
  size_t key_count() const;       // distinct keys (script + user)
  size_t memory_bytes() const;    // approximate heap use

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Batch replay in event time: visits jobs in submit order; before each visit, every job with
// end_time < submit_time has been added to the store. The visitor sees the store as it was at
// that job's submission. Jobs must have labels filled. Ties in submit time keep input order.
template <typename Visitor>
void replay(const std::vector<const Job*>& jobs_in_submit_order, HistoryStore& store,
            Visitor&& visit);

}  // namespace peakcast::history

#include "peakcast/history/replay_inl.h"
