// Event-time history and the four experts (docs/method.md §2–3).
//
// One store serves batch replay (evaluation) and live use (the service): completions are added
// as they end; a query at time t sees only completions with end_time < t (strict), whatever order
// they were added in. Adding the same run (job_id and submit_time) twice is a no-op.
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
// keeps at most ~2*kWindow entries per series, and more where a job is still running: the labels
// its walk-forward error will read stay (advance_pending_submit). The service advances it to "now
// minus a tolerance for late completions" and promises nothing about running jobs: a run shorter
// than the tolerance still gets its exact error, a longer one its error from the labels kept.
// Without a watermark nothing is folded and every query is exact at any t, at O(labels) memory.
// A query before the watermark is a caller bug and throws
// std::logic_error. Completions that end after a query time stay invisible to it in all cases;
// a late completion older than the kept entries is folded into them directly.
//
// Idempotence is by run: a 64-bit hash of job_id and submit_time, as peakcastd's store keys a
// completion (Slurm keeps the id of a job it requeues and resets its submit time, so a later run
// is learned beside the first; until 2026-12-06 the key was job_id alone and the later run was
// dropped). A false match needs two distinct runs to collide: about 3e-8 for a million jobs.
//
// Thread safety: const methods may run concurrently; add_completion and advance_watermark need
// exclusive access (the service wraps the store in a shared_mutex).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "peakcast/core/job.h"

namespace peakcast::history {

// The four experts of the study, and kCombined: the four weighted by their walk-forward quality
// (combined_estimate below). KeyStats holds the four; kCombined is computed from them.
enum class Expert : int { kLast1 = 0, kMedian3 = 1, kMedian5 = 2, kEwma = 3, kCombined = 4 };
inline constexpr int kNumExperts = 4;
inline constexpr std::array<Expert, kNumExperts> kExperts = {Expert::kLast1, Expert::kMedian3,
                                                             Expert::kMedian5, Expert::kEwma};
inline constexpr int kNumEstimates = 5;  // the four experts and kCombined
inline constexpr std::array<Expert, kNumEstimates> kEstimates = {
    Expert::kLast1, Expert::kMedian3, Expert::kMedian5, Expert::kEwma, Expert::kCombined};
std::string_view expert_name(Expert e);  // "last1", "median3", "median5", "ewma", "combined"
// The inverse of expert_name; also accepts "decay" for kEwma (the name older models used).
std::optional<Expert> parse_expert(std::string_view name);

// Which level of the hierarchy answered.
enum class Level : int { kExactScript = 0, kUser = 1, kNone = 2 };
std::string_view level_name(Level l);    // "exact_script", "user", "none"
Level level_from_name(std::string_view name);  // the inverse; anything else is kNone

inline constexpr double kDecayHalfLifeS = 168.0 * 3600.0;
inline constexpr double kDecayHalfLifeMs = kDecayHalfLifeS * 1000.0;
inline constexpr int kWindow = 16;       // most recent labels behind MAD and censored_recent
inline constexpr int kErrorWindow = 10;  // most recent labels behind recent_err

// What one key's eligible history says about one resource at query time.
struct KeyStats {
  int count = 0;                           // eligible labelled jobs (all time, not just window)
  std::array<double, kNumExperts> expert{};  // valid when count > 0
  double mad = 0.0;                        // median absolute deviation over the window
  double spread = 0.0;                     // max - min over the four experts
  double age_last_s = 0.0;                 // query time - end_time of the most recent one
  double last_end_time = 0.0;              // epoch seconds
  int censored_recent = 0;                 // OOM-censored labels in the window (memory only)
  // Walk-forward quality of each expert on this key: the mean of |expert - x_i| over the last
  // kErrorWindow labels x_i that had history at their own submission, each expert computed from
  // the labels that had ended before job i was submitted (what a prediction for it saw; within
  // the entries kept, see the watermark note above). Free evidence, known at query time: it uses
  // only eligible labels. 0 when err_n = 0.
  std::array<double, kNumExperts> recent_err{};
  int err_n = 0;
};
// Expert definitions on the eligible labels x_1..x_n ordered by end time (n = count > 0):
//   last1 = x_n; median3 / median5 = median of the last min(3|5, n) (mean of the two middle
//   ones when even); ewma = sum w_i x_i / sum w_i with w_i = 2^(-(t - end_i) / 168 h), over all n;
//   mad = median |x_i - median(window)| over the window = last min(kWindow, n) labels (unscaled).
// A job counts for a resource's history only where that resource is valid for it.
// Censored labels. An OUT_OF_MEMORY job's label for the resource that killed it (censored_for():
// memory, or VRAM for a trace with only a GPU peak) is a lower bound, recorded at the cap. It
// counts as a label and in censored_recent, and is read one-sided: (1) at the exact-script
// level, every expert is at least the largest censored label since the script's newest run that
// COMPLETED with a measured label (within the last kWindow labels), so an OOM never lets the next
// estimate fall below the request that failed until a run completes -- a cancelled, timed-out or
// failed run in between is passed over, as in sizing::trailing_oom_request; (2) its walk-forward
// error is max(0, x - expert), zero for an expert at or above it. The other resource's label of
// such a job is a measurement.

// What the experts are worth at each level of the hierarchy before a key has a record of its
// own: the mean walk-forward error of each expert over many jobs answered at that level
// (ExpertPriorAccumulator learns it from replayed jobs). Uniform priors weight the experts alike.
struct ExpertPriors {
  std::array<std::array<double, kNumExperts>, 2> err{{{0.1, 0.1, 0.1, 0.1}, {0.1, 0.1, 0.1, 0.1}}};
  std::array<size_t, 2> n{0, 0};  // jobs behind each level's errors
};

// The combined estimate of one key: a weighted mean of the four experts with weights
// (score_e + kCombineEps)^-kCombinePower, where score_e = (err_n * recent_err_e + kPriorJobs *
// prior_e) / (err_n + kPriorJobs): a key's own recent record, shrunk towards the level's prior.
// Combining rather than choosing one expert holds up when the workload drifts (a chosen expert
// can be the wrong one for the next block; a weighted mean rarely is far from the best). The
// constants were set once across all five dev traces (docs/evaluation.md, "History evidence",
// has the comparison).
inline constexpr double kPriorJobs = 20.0;
inline constexpr double kCombinePower = 4.0;
inline constexpr double kCombineEps = 1e-3;
double combined_estimate(const KeyStats& s, const std::array<double, kNumExperts>& prior_err);

// The hierarchical view for one job and resource: exact-script stats, same-user stats, and which
// level answers (exact if it has any, else user, else none -> caller's fallback).
struct HistoryView {
  KeyStats exact;
  KeyStats user;
  Level level = Level::kNone;
  const KeyStats& answering() const { return level == Level::kExactScript ? exact : user; }
  // The expert's value at the answering level, or `fallback` at Level::kNone. kCombined uses
  // the answering level's priors.
  double estimate(Expert e, double fallback, const ExpertPriors& priors = ExpertPriors{}) const;
};

// One job's views, one per resource (indexed by idx(Resource)).
using HistoryViews = std::array<HistoryView, kNumResources>;

// Learns ExpertPriors from jobs replayed in event time: add(view, label) for each job whose label
// is known to the learner (e.g. train and validation jobs), then priors().
// Mean and standard error (sample s.d. / sqrt(n)) of paired per-job differences; {0, 0} for
// fewer than two. The one test behind every "clearly better" choice on a block of jobs.
struct MeanSe {
  double mean = 0.0;
  double se = 0.0;
  // Degrees of freedom behind se: n - 1, or clusters - 1 for clustered_mean_and_se.
  double df = std::numeric_limits<double>::infinity();
};
MeanSe mean_and_se(std::span<const double> differences);
// The same mean with a cluster-robust standard error (CR1: the squared sums of each cluster's
// deviations, scaled by G/(G-1)), for differences that are not independent: jobs of one script
// share its errors, so 100 jobs of 3 scripts are closer to 3 pieces of evidence than to 100.
// `cluster[i]` names difference i's cluster. Equals mean_and_se when every difference is its
// own cluster; se is +inf with fewer than two clusters (no evidence), {0, 0} for fewer than two
// differences.
MeanSe clustered_mean_and_se(std::span<const double> differences, std::span<const uint64_t> cluster);
// How much wider a margin of z standard errors must be with only `df` degrees of freedom: the
// ratio of Student's t to the normal 0.975 quantile (12.7/1.96 at df = 1, 1.04 at 30, -> 1).
// A clustered standard error from a handful of clusters is itself noisy.
double small_sample_factor(double df);

// Chooses among kEstimates from their absolute errors on a block of jobs (one row per job, one
// column per estimate, in kEstimates order): kCombined unless another estimate's mean error is
// lower by more than z standard errors of the paired difference. A small block rarely clears
// that bar, so the choice falls back to the estimate that holds up under drift.
Expert choose_estimate(const std::vector<std::array<double, kNumEstimates>>& abs_err, double z = 2.0);

class ExpertPriorAccumulator {
 public:
  void add(const HistoryView& view, double label);
  // Adds `job`'s label for `r` (clamped to [0, util_cap]) when it is valid and exact
  // (label_exact): a censored label is only a lower bound, no measure of an expert's error.
  // Where the cascade and the harness learn priors. Returns whether the label was added.
  bool add_exact(const HistoryView& view, const Job& job, Resource r, double util_cap);
  ExpertPriors priors() const;

 private:
  std::array<std::array<double, kNumExperts>, 2> sum_{};
  std::array<size_t, 2> n_{0, 0};
};

class HistoryStore {
 public:
  HistoryStore();
  // track_ids false: add_completion does not check runs (the caller guarantees each run comes
  // once, as peakcastd's database does), and the ~16 bytes a completion costs in the id set, the
  // one part of the store that grows with every completion whatever the watermark, are not spent.
  explicit HistoryStore(bool track_ids);
  ~HistoryStore();
  HistoryStore(HistoryStore&&) noexcept;
  HistoryStore& operator=(HistoryStore&&) noexcept;
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // Adds a finished job (its labels, valid flags and script_key must be filled). Jobs with no
  // valid resource are ignored. Adding the same run (job_id and submit_ms) twice is a no-op
  // (returns false), unless the store was made with track_ids false; another run of the same
  // job_id (a requeued job's) is added.
  // An empty script_key or user means "no such key": that level is not recorded.
  bool add_completion(const Job& job);

  // Promise: no later query asks about a time before t. Monotone (a smaller t is ignored).
  // Lets the store fold old entries (see the top of this file); replay() calls it.
  // Times here are epoch milliseconds, as in Job.
  void advance_watermark(int64_t t);
  int64_t watermark() const;      // INT64_MIN until advanced
  // Promise: no completion added from now on was submitted before t. Monotone. While folding, the
  // store then keeps the labels the walk-forward errors (KeyStats::recent_err) of those
  // completions read -- the newest few each series had at t -- so that the errors equal those of
  // a store that folds nothing (predict --history, a freshly rebuilt peakcastd). replay() promises
  // the submission of the oldest job still running. Without the promise a completion whose
  // submission saw only labels folded since gets its error from the labels kept (none: no error).
  void advance_pending_submit(int64_t t);

  // The view for `job` (its user and script_key) at time t = job.submit_ms.
  HistoryView query(const Job& job, Resource r) const;
  // The views for every resource of `job` (those with which[idx(r)] false stay empty).
  HistoryViews query_views(const Job& job, std::array<bool, kNumResources> which = {true, true}) const;
  // Same, at an explicit time and keys. Throws std::logic_error when t < watermark().
  HistoryView query(const std::string& script_key, const std::string& user, int64_t t,
                    Resource r) const;

  // Forgets the completions that ended before t, as a store filled only with the completions
  // that ended at or after t would not have them (peakcastd --history-days while it runs): every
  // series drops its labels that ended before t, and a key left with none goes. What the kept
  // labels answer is then that store's, but for labels folded under a watermark (see the top of
  // this file), forgotten by the batch they were folded in once all of the batch is older than t:
  // a key's count may exceed that store's by the labels of one batch (those folded with newest
  // ends in one hour), and its decay mean keeps those older labels' weight, at most
  // 2^-(age / half-life) each. O(key_count) plus the labels forgotten.
  struct Forgotten {
    size_t keys = 0;    // scripts and users with nothing left
    size_t labels = 0;  // labels over every key and resource (a job counts under each key)
  };
  Forgotten forget_before(int64_t t);

  size_t size() const;            // completions added (not lowered by forget_before)
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
