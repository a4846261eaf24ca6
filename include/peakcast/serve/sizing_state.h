// The daemon's calibrated upper bound and recommended request (docs/bounds.md).
//
// Upper bound. One sizing::OnlineBound per resource (adaptive online conformal, per history
// level), in utilization units. It learns from every completion the daemon learns (POST
// /v1/complete or slurm-sync): the point prediction the served model gives for the completed job
// at its own submission (the history then held only jobs that had ended before it), its label,
// whether it was censored (OOM), and the bound the daemon issued for the job when it answered
// its submission (sizing/bound_walk.h: ACI judges a job by the bound it got). Each answer has an
// id ("answer_id" in the reply); a completion that carries it (Job::answer_id: the Slurm hook
// writes the answer into the job's comment, slurm-sync reads it back) takes that answer and no
// other. Otherwise a completion is
// matched to its answer by user, script key, job name and submit time (the answer nearest in
// time within kIssuedMatchMs, preferring one with the same point; an answer for a job of another
// name is never taken where both names are known); the most recent kMaxIssued answers are
// kept, at most kMaxIssuedPerScript of one user's script. The Service keeps each answer in its
// store too (CompletionStore::record_answer), and at start gives them back (load_answers), so a
// completion arriving after a restart is matched as it would have been without one. A completion
// with no answer on record (never asked about, or the answer not kept) is judged by the bound as
// it stands.
// Durability: the bound is not stored; at start the daemon rebuilds it from the completion store
// by walking the `rebuild_jobs` most recent completions through the same model as `peakcast
// evaluate` walks its jobs (sizing::walk_bounds). So it is as durable as the store.
// Before a level (or the pooled window) has any score the model's own upper bound, if it has
// one, is kept and the answer says so (upper_source "model"; else "online").
//
// Recommended request (memory only). Once a workload (sizing::script_workload_of: the script) has
// kPeakcastMinHistory completed runs that did not run out of memory, its own sizing policy
// answers: sizing::WorkloadSizer, the `peakcast` policy that `peakcast simulate` replays, fed
// every completion the daemon learns, and at start the stored ones (warm: each script's most recent
// runs, the most recently active scripts first, up to WorkloadSizerOptions::rebuild_runs in all).
// Before that,
// sizing::recommend_request from the upper bound in bytes
// (upper_util x the request), the user's request, the job's partition and -- while the script's
// most recent runs ended OUT_OF_MEMORY -- the largest limit they were killed at (the request
// itself when one of those limits had been lowered by the hook); per-partition settings
// from `peakcastd --sizing-config FILE` (sizing/recommend.h). The answer carries the rule that
// set the value. By default the recommendation never exceeds the user's request.
//
// Thread safety: every method may be called concurrently (one internal mutex).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/cascade/prediction.h"
#include "peakcast/core/job.h"
#include "peakcast/history/history.h"
#include "peakcast/serve/store.h"
#include "peakcast/sizing/online_bound.h"
#include "peakcast/sizing/recommend.h"
#include "peakcast/sizing/simulate.h"
#include "peakcast/sizing/warm_runs.h"
#include "peakcast/sizing/workload_sizer.h"

namespace peakcast::serve {

// The bound's defaults: coverage 0.9 with the settings `peakcast evaluate` measures
// (sizing::served_bound_options; docs/bounds.md).
inline sizing::OnlineBoundOptions default_bound_options() { return sizing::served_bound_options(0.9); }

struct SizingOptions {
  sizing::OnlineBoundOptions bound = default_bound_options();
  sizing::RecommendConfig recommend;  // defaults unless --sizing-config
  std::string config_source = "built-in defaults";  // the file, for /healthz and logs
  size_t rebuild_jobs = 5000;         // completions replayed into the bound at start
  // The workloads' own policies (max_workloads, max_bytes, max_history; policy.recommend is set from
  // `recommend`). max_workloads 0: none, every recommendation from the bound.
  sizing::WorkloadSizerOptions workloads;
  double util_cap = 1.0;              // labels' cap: bounds are clipped to it (the Service sets it)
};

class SizingState {
 public:
  static constexpr int64_t kIssuedMatchMs = 60'000;  // answer vs completion submit time
  static constexpr size_t kMaxIssued = 100'000;      // answers kept for matching (56 MiB, sizing_bench)
  static constexpr size_t kMaxIssuedPerScript = 4096;  // of one user and script (a burst)
  // Answers already matched, kept for restore_request: the tasks of a job array share the one
  // answer the hook got for the array (and its submit time); the first to complete takes it.
  static constexpr size_t kMaxTaken = 4096;

  // peakcastd's defaults. Not a defaulted argument: GCC 12 warns, falsely, of a maybe-uninitialized
  // std::map wherever a SizingOptions{} temporary is built and destroyed.
  SizingState();
  explicit SizingState(SizingOptions options);

  // A completed job: `p` is the served model's prediction for it at its submission.
  void observe(const Job& job, const cascade::JobPrediction& p);

  // A completed job with no prediction at its submission to judge the bound by (submitted before
  // the history's watermark: a run, or a wait, longer than --late-tolerance): its workload's
  // policy learns it and its answer is matched for the advice tallies, as observe() does; the
  // bound learns nothing (counted in Learned::unjudged).
  void observe_unjudged(const Job& job);

  // A completion whose memory request is below the one the daemon answered at its submission
  // (the Slurm hook lowered --mem to the recommendation, or an administrator lowered it before
  // it started): its request becomes the answered one, the limit it ran under goes to
  // Job::ran_mem_bytes, and its labels are computed again (options().util_cap), so it teaches
  // the history, the bound and its script's policy what a run at its user's request would have.
  // A job killed for memory is censored at the limit's share of the request (compute_labels), and
  // its script's next answer is the request (sizing::trailing_oom_lowered). Matched to the answer
  // as observe() matches (left for observe() to take). Returns whether it changed `job`.
  bool restore_request(Job& job);

  // Start: `recent` completions (any order) with the served model's prediction for each at its
  // submission, walked into the bound as `peakcast evaluate` walks (sizing::walk_bounds); every
  // one is learned by the bound (the workloads' policies learn from warm()).
  struct Completed {
    const Job* job = nullptr;
    cascade::JobPrediction prediction;
  };
  void rebuild(std::vector<Completed> recent);

  // Start: the workloads' policies learn the stored runs `runs` kept (sizing::WarmRuns: fed every
  // stored completion's sizing::learned_run in end order, with options().workloads' max_history
  // and rebuild_runs). Returns the workloads kept with a policy.
  size_t warm(const sizing::WarmRuns& runs);

  // peakcastd's hourly sweep under --sizing-days or --history-days (options().workloads.max_age_ms):
  // at `now_ms`, the workloads' policies whose script's last run ended more than that before go,
  // as after a restart, and a second policy that has learned that long takes over
  // (sizing::WorkloadSizer::age). Does nothing without max_age_ms.
  sizing::WorkloadSizer::Aged age_workloads(int64_t now_ms);

  // Start: the answers on record (CompletionStore::for_each_answer, oldest first) and the stored
  // completions submitted since the oldest of them less kIssuedMatchMs (user, script_key, submit
  // time and job_name, redacted as the store keeps it, are read). Each completion takes the
  // answer observe() would have matched it to (it was learned before the restart); that answer
  // is kept for restore_request alone (a job array's later tasks), the others wait for their
  // completions as if just given. Returns the answers still waiting.
  size_t load_answers(std::vector<AnswerRecord> answers, const std::vector<Job>& completed);

  // Replaces the upper bound of `p` by the online one (where it has evidence) and sets the
  // memory recommendation. `failed_request` is the largest request among the script's trailing
  // OUT_OF_MEMORY runs (nullopt when the most recent run did not end so).
  struct Applied {
    std::array<std::string, kNumResources> upper_source;  // "online", "model" or "" (none)
    std::string rule;                                     // recommend_request's rule; "" = none
    // What the recommendation came from: "workload" (its own policy), "bound" (the online
    // bound x the request) or "" (none), and for "workload" the allocation the policy chose.
    std::string source;
    std::string basis;
    IssuedAnswer answered;  // what was kept to match the job's completion to (record it)
  };
  // The bounds it sets are kept (the most recent kMaxIssued) for observe() to judge the job by,
  // with the job's request and the recommendation for the advice tallies (Learned).
  // `failed_lowered`: one of those runs was killed at a limit the hook had lowered
  // (sizing::trailing_oom_lowered): the recommendation is then the request itself.
  Applied apply(const Job& job, std::optional<uint64_t> failed_request,
                cascade::JobPrediction& p, bool failed_lowered = false);

  // Adds "upper_source" to each resource's prediction and "recommendation_rule",
  // "recommendation_source" and "recommendation_basis" to memory's.
  static void annotate(const Applied& a, nlohmann::json& answer);

  // Completions judged by the answer given at their submission / by the bound as it stood, and
  // the answers still waiting for their completion (/healthz sizing.learned_from, /metrics).
  struct Learned {
    uint64_t by_answer = 0, as_it_stands = 0, answers_pending = 0;
    uint64_t unjudged = 0;  // completions the bound did not learn (observe_unjudged)
    // Memory recommendations answered by a script's own policy / by the bound, and the scripts
    // kept with a policy of their own now.
    uint64_t recommended_by_workload = 0, recommended_by_bound = 0, workloads = 0, workloads_bytes = 0;
    // Under --sizing-days / --history-days: scripts' policies dropped for a last run older than
    // the limit, and policies that took over by age (sizing::WorkloadSizer::aged_total).
    uint64_t workloads_aged_out = 0, workloads_handed_over = 0;
    // Advice: completed jobs that had a memory recommendation in the answer given at their
    // submission, each run through sizing::run_at at the request it was submitted with and at
    // the recommendation -- what lowering --mem to the recommendations (the hook's
    // LOWER_MEM_TO_RECOMMENDATION) saves or would have saved. A job that ran out of memory has no
    // peak: counted in advice_oom_jobs, not in the tallies.
    sizing::Tally advice_at_request, advice_at_recommendation;
    uint64_t advice_oom_jobs = 0;
    // Of those, jobs killed for memory at a limit below the request they were submitted with
    // (the hook lowered it), and their limit x run time: what lowering cost in failed runs.
    uint64_t advice_lowered_oom_jobs = 0;
    double advice_lowered_oom_gbh = 0.0;
    // Completions that ran below the request they were submitted with, learned at that request
    // (restore_request).
    uint64_t lowered_jobs = 0;
  };
  Learned learned() const;

  const SizingOptions& options() const { return options_; }
  nlohmann::json to_json() const;  // for /healthz: coverage, updates per level, config source

 private:
  // What the daemon answered for one submission (the issued bound is the cap where the level had
  // no evidence), numbered in the order given.
  struct Issued : IssuedAnswer {
    uint64_t seq = 0;
  };
  void advise(const Job& job, const Issued& issued);  // mu_ held
  void apply_bound(Resource r, const std::string& script_key, cascade::ResourcePrediction& rp,
                   Applied& a, Issued& issued) const;
  void remember(std::string key, Issued issued);  // mu_ held; key: issued_key
  // mu_ held. Names are compared as they are: redacted, a job's where it entered
  // (ingest::finalize_job: a request, slurm-sync, a trace), an answer's as the store keeps it.
  std::optional<Issued> take_issued(const Job& job, const cascade::JobPrediction& p);
  void keep_taken(const std::string& key, const Issued& issued);  // mu_ held
  void learn_run(const Job& job);  // mu_ held: a completed run for its workload's policy
  // mu_ held: what every completion teaches besides the bound (observe, observe_unjudged): its
  // workload's policy learns the run, and the answer given at its submission is matched (`p`
  // prefers an answer of its points) and its advice counted.
  std::optional<Issued> learn_completion(const Job& job, const cascade::JobPrediction& p);
  std::string next_answer_id();    // mu_ held: 16 hex digits, new for each answer

  SizingOptions options_;
  mutable std::mutex mu_;
  std::array<sizing::OnlineBound, kNumResources> bounds_;
  sizing::WorkloadSizer workloads_;
  std::unordered_map<std::string, std::vector<Issued>> issued_;  // by user + script key, oldest first
  std::deque<std::pair<std::string, uint64_t>> issued_order_;     // (key, seq), oldest first
  std::unordered_map<std::string, std::deque<Issued>> taken_;     // matched answers, by key, oldest first
  std::deque<std::string> taken_order_;                           // their keys, oldest first (kMaxTaken)
  uint64_t issued_seq_ = 0;
  uint64_t answer_salt_ = 0, answers_given_ = 0;  // answer ids (next_answer_id)
  Learned learned_;  // completions judged by each bound; answers_pending: those in issued_
  size_t warmed_runs_ = 0;  // stored runs the workloads' policies learned at start (warm)
};

}  // namespace peakcast::serve
