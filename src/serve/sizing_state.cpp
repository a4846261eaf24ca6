// The daemon's online upper bound and recommended request (peakcast/serve/sizing_state.h).
#include "peakcast/serve/sizing_state.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "peakcast/sizing/bound_walk.h"
#include "peakcast/sizing/sim_task.h"

namespace peakcast::serve {
namespace {

// The workloads' policies answer through the site's recommendation settings.
sizing::WorkloadSizerOptions workload_options(const SizingOptions& o) {
  sizing::WorkloadSizerOptions w = o.workloads;
  w.policy.recommend = o.recommend;
  return w;
}

}  // namespace

// Members built in place: delegating with a SizingOptions{} temporary brings GCC 12's false
// maybe-uninitialized warning here.
SizingState::SizingState()
    : bounds_{sizing::OnlineBound(options_.bound), sizing::OnlineBound(options_.bound)},
      workloads_(workload_options(options_)) {}

SizingState::SizingState(SizingOptions options)
    : options_(std::move(options)),
      bounds_{sizing::OnlineBound(options_.bound), sizing::OnlineBound(options_.bound)},
      workloads_(workload_options(options_)) {}

namespace {

std::string issued_key(const std::string& user, const std::string& script_key) {
  return user + '\x1f' + script_key;
}
std::string issued_key(const Job& job) { return issued_key(job.user, job.script_key); }

int64_t gap_ms(int64_t a, int64_t b) { return a > b ? a - b : b - a; }

// How a completion finds its answer. Where both carry an answer id, the answer with the job's id
// and no other (the hook wrote the answer into the job's comment; slurm-sync read it back).
// Otherwise, among the answers offered, the one nearest its submit time within
// SizingState::kIssuedMatchMs; among equals, the first with the lowest score. An answer for a
// job of another name is not its answer (both names known: the hook sends the name Slurm
// records; sacct's Submit has whole seconds, and one script's jobs submitted within a second are
// told apart so where the comment had no id). `tag` says where the chosen one came from.
template <typename Answer, typename Tag, typename Score>
struct NearestAnswer {
  int64_t submit_ms;
  const std::string& job_name;   // redacted, as answers keep it; "" = unknown
  const std::string& answer_id;  // "" = unknown
  Score score;
  const Answer* best = nullptr;
  Tag tag{};
  bool by_id = false;  // best is the answer with the job's id
  void offer(const Answer& x, Tag where) {
    if (by_id) return;
    if (!answer_id.empty() && !x.answer_id.empty()) {
      if (x.answer_id != answer_id) return;  // another job's answer
      best = &x;
      tag = where;
      by_id = true;
      return;
    }
    if (!job_name.empty() && !x.job_name.empty() && x.job_name != job_name) return;
    const int64_t dt = gap_ms(x.submit_ms, submit_ms);
    if (dt > SizingState::kIssuedMatchMs) return;
    if (best) {
      const int64_t best_dt = gap_ms(best->submit_ms, submit_ms);
      if (dt > best_dt || (dt == best_dt && !(score(x) < score(*best)))) return;
    }
    best = &x;
    tag = where;
  }
};

// splitmix64's finalizer: a bijection of 64-bit words, so distinct counts give distinct ids.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t random_salt() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}
}  // namespace

std::string SizingState::next_answer_id() {
  // Distinct within a run (a bijection of salt + count); across runs, two ids are equal with
  // probability 2^-64 per pair (a new salt at each start).
  if (!answer_salt_) answer_salt_ = random_salt() | 1;
  return fmt::format("{:016x}", mix64(answer_salt_ + ++answers_given_));
}

void SizingState::remember(std::string key, Issued issued) {
  issued.seq = ++issued_seq_;
  issued_order_.emplace_back(key, issued.seq);
  std::vector<Issued>& mine = issued_[std::move(key)];
  if (mine.size() >= kMaxIssuedPerScript) {  // its oldest answer goes (its order entry is skipped)
    mine.erase(mine.begin());
    --learned_.answers_pending;
  }
  mine.push_back(issued);
  ++learned_.answers_pending;
  // Forget the oldest answers; entries of answers already matched or dropped are skipped, and
  // their count is bounded too.
  while ((learned_.answers_pending > kMaxIssued || issued_order_.size() > 2 * kMaxIssued) && !issued_order_.empty()) {
    const std::string old_key = std::move(issued_order_.front().first);
    const uint64_t old_seq = issued_order_.front().second;
    issued_order_.pop_front();
    auto it = issued_.find(old_key);
    if (it == issued_.end()) continue;
    std::vector<Issued>& v = it->second;
    const auto at = std::find_if(v.begin(), v.end(), [&](const Issued& x) { return x.seq == old_seq; });
    if (at == v.end()) continue;  // matched by a completion already
    v.erase(at);
    --learned_.answers_pending;
    if (v.empty()) issued_.erase(it);
  }
}

std::optional<SizingState::Issued> SizingState::take_issued(const Job& job, const cascade::JobPrediction& p) {
  auto it = issued_.find(issued_key(job));
  if (it == issued_.end()) return std::nullopt;
  std::vector<Issued>& v = it->second;
  // The answer nearest in submit time, within kIssuedMatchMs; among equals, one whose points
  // are this prediction's (a burst of one script may carry different requests).
  auto mismatch = [&](const Issued& x) {
    int n = 0;
    for (Resource r : kResources) {
      const cascade::ResourcePrediction* rp = p.of(r);
      const auto& pb = x.point_bound[idx(r)];
      if (rp && pb && pb->first != rp->util) ++n;
    }
    return n;
  };
  NearestAnswer<Issued, size_t, decltype(mismatch)> n{job.submit_ms, job.job_name, job.answer_id, mismatch};
  for (size_t i = 0; i < v.size(); ++i) n.offer(v[i], i);
  if (!n.best) return std::nullopt;
  Issued out = *n.best;
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(n.tag));
  --learned_.answers_pending;
  if (v.empty()) issued_.erase(it);
  keep_taken(issued_key(job), out);
  return out;
}

void SizingState::keep_taken(const std::string& key, const Issued& issued) {
  taken_[key].push_back(issued);
  taken_order_.push_back(key);
  while (taken_order_.size() > kMaxTaken) {
    auto it = taken_.find(taken_order_.front());
    taken_order_.pop_front();
    if (it == taken_.end()) continue;
    it->second.pop_front();  // a key's oldest is its first pushed
    if (it->second.empty()) taken_.erase(it);
  }
}

bool SizingState::restore_request(Job& job) {
  if (!job.req_mem_bytes || job.ran_mem_bytes) return false;
  std::lock_guard lock(mu_);
  const std::string key = issued_key(job);
  // The answer observe() would match by time (its point is not known yet), or one already
  // matched (a job array's tasks share one answer); among equals, the one whose recommendation
  // is nearest the limit the job ran under.
  const auto off = [&](const Issued& x) {
    const double r = x.recommended_bytes ? static_cast<double>(*x.recommended_bytes) : 0.0;
    return std::abs(r - static_cast<double>(*job.req_mem_bytes));
  };
  NearestAnswer<Issued, bool, decltype(off)> n{job.submit_ms, job.job_name, job.answer_id, off};  // tag: already taken
  if (auto it = issued_.find(key); it != issued_.end()) {
    for (const Issued& x : it->second) n.offer(x, false);
  }
  if (auto it = taken_.find(key); it != taken_.end()) {
    for (const Issued& x : it->second) n.offer(x, true);
  }
  if (!n.best || !n.best->request_bytes || *n.best->request_bytes <= *job.req_mem_bytes) return false;
  const Issued best = *n.best;  // a copy: keep_taken may drop the taken one it points at
  if (n.tag) keep_taken(key, best);  // kept while the array's tasks complete
  job.ran_mem_bytes = job.req_mem_bytes;
  job.req_mem_bytes = best.request_bytes;
  compute_labels(job, options_.util_cap);
  return true;
}

void SizingState::learn_run(const Job& job) {
  // A run killed for memory used more than it held, how much more is not known: it teaches the
  // workload's policy nothing (its resubmission is answered above the failed request instead).
  if (options_.workloads.max_workloads == 0) return;
  if (std::optional<sizing::SimTask> t = sizing::learned_run(job)) workloads_.observe(*t);
}

size_t SizingState::warm(const sizing::WarmRuns& runs) {
  std::lock_guard lock(mu_);
  if (options_.workloads.max_workloads == 0) return 0;
  runs.replay(workloads_);
  warmed_runs_ = runs.runs();
  return workloads_.workloads();
}

sizing::WorkloadSizer::Aged SizingState::age_workloads(int64_t now_ms) {
  std::lock_guard lock(mu_);
  return workloads_.age(now_ms);
}

std::optional<SizingState::Issued> SizingState::learn_completion(const Job& job,
                                                                 const cascade::JobPrediction& p) {
  if (job.ran_mem_bytes) ++learned_.lowered_jobs;  // counted once it is stored (a retry restores again)
  learn_run(job);
  std::optional<Issued> issued = take_issued(job, p);
  if (issued) advise(job, *issued);
  return issued;
}

void SizingState::observe_unjudged(const Job& job) {
  std::lock_guard lock(mu_);
  const cascade::JobPrediction any;  // no point to prefer: the nearest answer in time is taken
  learn_completion(job, any);
  ++learned_.unjudged;
}

void SizingState::observe(const Job& job, const cascade::JobPrediction& p) {
  std::lock_guard lock(mu_);
  const std::optional<Issued> issued = learn_completion(job, p);
  ++(issued ? learned_.by_answer : learned_.as_it_stands);
  for (Resource r : kResources) {
    if (!job.is_valid(r)) continue;
    const cascade::ResourcePrediction* rp = p.of(r);
    if (!rp) continue;
    const history::Level level = history::level_from_name(rp->history_level);
    sizing::OnlineBound& b = bounds_[idx(r)];
    const auto& pb = issued ? issued->point_bound[idx(r)] : std::nullopt;
    const double bound =
        pb ? pb->second : sizing::issue_bound(b, level, rp->util, job.script_key, options_.util_cap).bound;
    b.observe_issued(level, rp->util, job.label(r), censored_for(job, r), bound, job.script_key);
  }
}

void SizingState::advise(const Job& job, const Issued& issued) {
  if (!issued.request_bytes || !issued.recommended_bytes || !job.is_valid(Resource::kMem)) return;
  if (censored_for(job, Resource::kMem)) {
    ++learned_.advice_oom_jobs;
    const std::optional<uint64_t> limit = job.ran_mem_bytes ? job.ran_mem_bytes : job.req_mem_bytes;
    if (limit && *limit < *issued.request_bytes) {
      ++learned_.advice_lowered_oom_jobs;
      const int64_t ran_ms = sizing::run_time_ms(job);
      learned_.advice_lowered_oom_gbh +=
          static_cast<double>(*limit) * 1e-9 * static_cast<double>(std::max<int64_t>(ran_ms, 0)) / 3.6e6;
    }
    return;
  }
  std::optional<sizing::SimTask> t = sizing::sim_task(job, /*sizey=*/false);
  if (!t || t->runtime_ms <= 0.0) return;
  // The request it was submitted with: where the hook lowered --mem, the job ran at the
  // recommendation and its record holds that, not what its user asked for.
  t->info.request_bytes = static_cast<double>(*issued.request_bytes);
  sizing::run_at(t->info.request_bytes, *t, learned_.advice_at_request);
  sizing::run_at(static_cast<double>(*issued.recommended_bytes), *t, learned_.advice_at_recommendation);
}

void SizingState::rebuild(std::vector<Completed> recent) {
  std::lock_guard lock(mu_);
  std::stable_sort(recent.begin(), recent.end(), [](const Completed& a, const Completed& b) {
    return a.job->submit_ms < b.job->submit_ms;
  });
  for (Resource r : kResources) {
    std::vector<sizing::BoundStep> steps;
    for (const Completed& c : recent) {
      const cascade::ResourcePrediction* rp = c.prediction.of(r);
      if (!rp || !c.job->is_valid(r)) continue;
      steps.push_back(sizing::bound_step(*c.job, r, history::level_from_name(rp->history_level), rp->util));
    }
    sizing::walk_bounds(bounds_[idx(r)], steps, options_.util_cap, /*observe_all=*/true);
  }
}

size_t SizingState::load_answers(std::vector<AnswerRecord> answers, const std::vector<Job>& completed) {
  std::lock_guard lock(mu_);
  for (AnswerRecord& a : answers) {
    Issued issued;
    static_cast<IssuedAnswer&>(issued) = a.answer;
    remember(issued_key(a.user, a.script_key), std::move(issued));
  }
  const cascade::JobPrediction any;  // no point to prefer: the nearest in time is taken
  for (const Job& j : completed) take_issued(j, any);
  return learned_.answers_pending;
}

void SizingState::apply_bound(Resource r, const std::string& script_key,
                              cascade::ResourcePrediction& rp, Applied& a, Issued& issued) const {
  const history::Level level = history::level_from_name(rp.history_level);
  const sizing::OnlineBound& b = bounds_[idx(r)];
  const sizing::IssuedBound ib = sizing::issue_bound(b, level, rp.util, script_key, options_.util_cap);
  issued.point_bound[idx(r)] = std::make_pair(rp.util, ib.bound);
  if (!ib.evidence) {
    a.upper_source[idx(r)] = rp.upper_util ? "model" : "";
    return;
  }
  // Labels never exceed the cap, so a bound above it covers nothing more.
  rp.upper_util = ib.bound;
  rp.upper_coverage = options_.bound.coverage;
  a.upper_source[idx(r)] = "online";
}

SizingState::Applied SizingState::apply(const Job& job, std::optional<uint64_t> failed_request,
                                        cascade::JobPrediction& p, bool failed_lowered) {
  Applied a;
  const std::optional<double> cap = capacity_bytes(job, Resource::kMem);
  std::optional<sizing::WorkloadSizer::Answer> own;
  Issued issued;
  issued.job_name = job.job_name;
  {
    std::lock_guard lock(mu_);
    issued.answer_id = next_answer_id();
    issued.submit_ms = job.submit_ms;
    issued.request_bytes = job.req_mem_bytes;
    for (Resource r : kResources) {
      if (cascade::ResourcePrediction* rp = p.of(r)) apply_bound(r, job.script_key, *rp, a, issued);
    }
    // A workload with enough completed runs: its own policy (what `peakcast simulate` replays).
    if (cap && options_.workloads.max_workloads > 0) {
      sizing::TaskInfo t = sizing::task_info(job, /*sizey=*/false);
      t.workload = sizing::script_workload_of(job);
      t.failed_request_bytes = failed_request;
      t.failed_at_lowered_limit = failed_lowered;
      own = workloads_.first(t);
      if (own) ++learned_.recommended_by_workload;
    }
  }
  if (own) {
    p.mem.recommended_bytes = own->bytes;
    a.rule = std::move(own->rule);
    a.source = "workload";
    a.basis = std::move(own->basis) + " (over its last " + std::to_string(own->runs) + " runs)";
    issued.recommended_bytes = own->bytes;
    std::lock_guard lock(mu_);
    a.answered = issued;
    remember(issued_key(job), std::move(issued));
    return a;
  }
  // Else the recommended request from the online bound. Without a known request there is no
  // capacity to scale the bound by, and nothing to cap the answer at: no recommendation.
  // Nor without online evidence (a new script before 9 scripts have completed at the user level):
  // the model's own bound, fitted once at training, is shown but not acted on -- it is not
  // calibrated under drift, and `evaluate` measures the online bound with the request itself
  // (no lowering) in its place.
  if (!cap || !p.mem.upper_util || a.upper_source[idx(Resource::kMem)] != "online") {
    p.mem.recommended_bytes.reset();
    std::lock_guard lock(mu_);
    a.answered = issued;
    remember(issued_key(job), std::move(issued));
    return a;
  }
  sizing::RecommendInput in;
  in.upper_bytes = *p.mem.upper_util * *cap;
  in.request_bytes = job.req_mem_bytes;
  in.partition = job.partition;
  in.failed_request_bytes = failed_request;
  in.failed_at_lowered_limit = failed_lowered;
  const sizing::Recommendation rec = sizing::recommend_request(in, options_.recommend);
  p.mem.recommended_bytes = rec.bytes;
  a.rule = rec.rule;
  a.source = "bound";
  issued.recommended_bytes = rec.bytes;
  std::lock_guard lock(mu_);
  ++learned_.recommended_by_bound;
  a.answered = issued;
  remember(issued_key(job), std::move(issued));
  return a;
}

void SizingState::annotate(const Applied& a, nlohmann::json& answer) {
  answer["answer_id"] = a.answered.answer_id;
  nlohmann::json& preds = answer["predictions"];
  for (Resource r : kResources) {
    nlohmann::json& rp = preds[std::string(resource_name(r))];
    if (!rp.is_object()) continue;
    const std::string& src = a.upper_source[idx(r)];
    rp["upper_source"] = src.empty() ? nlohmann::json(nullptr) : nlohmann::json(src);
  }
  if (preds["mem"].is_object()) {
    const auto or_null = [](const std::string& v) { return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v); };
    preds["mem"]["recommendation_rule"] = or_null(a.rule);
    preds["mem"]["recommendation_source"] = or_null(a.source);
    preds["mem"]["recommendation_basis"] = or_null(a.basis);
  }
}

SizingState::Learned SizingState::learned() const {
  std::lock_guard lock(mu_);
  Learned out = learned_;
  out.workloads = workloads_.workloads();
  out.workloads_bytes = workloads_.memory_bytes();
  out.workloads_aged_out = workloads_.aged_total().forgotten;
  out.workloads_handed_over = workloads_.aged_total().handed_over;
  return out;
}

nlohmann::json SizingState::to_json() const {
  std::lock_guard lock(mu_);
  nlohmann::json out = {{"coverage", options_.bound.coverage},
                        {"config", options_.config_source},
                        // completions judged by the bound answered at their submission / by the
                        // bound as it stood (no answer on record), and answers still waiting
                        {"learned_from", {{"issued", learned_.by_answer}, {"current", learned_.as_it_stands},
                                          {"answers_pending", learned_.answers_pending},
                                          // submitted before the watermark: the policies only
                                          {"not_judged", learned_.unjudged}}},
                              // the workloads sized by their own policy
                              {"workloads", {{"kept", workloads_.workloads()},
                                             {"max", options_.workloads.max_workloads},
                                             {"memory_bytes", workloads_.memory_bytes()},
                                             {"max_memory_bytes", options_.workloads.max_bytes},
                                             {"max_history", options_.workloads.max_history},
                                             // --sizing-days (or --history-days): null without
                                             {"max_age_days", options_.workloads.max_age_ms > 0
                                                                  ? nlohmann::json(options_.workloads.max_age_days())
                                                                  : nlohmann::json(nullptr)},
                                             // at start: the budget, and the stored runs learned
                                             {"rebuild_runs", options_.workloads.rebuild_runs},
                                             {"rebuilt_from_runs", warmed_runs_},
                                             {"failure_price_gbh", workloads_.site_price() / 1e9 / 3.6e6}}}};
  // What lowering --mem to the recommendations saves (Learned's advice tallies).
  const auto tally = [](const sizing::Tally& t) {
    return nlohmann::json{{"waste_gbh", t.waste_gbh}, {"unused_gbh", t.over_gbh}, {"failed_gbh", t.failed_gbh},
                          {"failed_attempts", t.failures}, {"failed_jobs", t.failed_jobs}};
  };
  out["advice"] = {{"jobs", learned_.advice_at_request.jobs},
                   {"oom_jobs", learned_.advice_oom_jobs},
                   {"lowered_jobs", learned_.lowered_jobs},
                   {"lowered_oom_jobs", learned_.advice_lowered_oom_jobs},
                   {"lowered_oom_gbh", learned_.advice_lowered_oom_gbh},
                   {"at_request", tally(learned_.advice_at_request)},
                   {"at_recommendation", tally(learned_.advice_at_recommendation)}};
  for (Resource r : kResources) {
    nlohmann::json levels = nlohmann::json::object();
    for (history::Level l : {history::Level::kExactScript, history::Level::kUser, history::Level::kNone}) {
      const sizing::OnlineBound& b = bounds_[idx(r)];
      nlohmann::json& level = levels[std::string(history::level_name(l))];
      level = {{"scores", b.scores(l)}, {"updates", b.updates(l)}, {"alpha_t", b.alpha_t(l)}};
      if (l == history::Level::kExactScript && b.options().script_windows) {
        level["own_windows"] = b.own_windows();  // scripts bounded by their own scores
      }
    }
    out[std::string(resource_name(r))] = std::move(levels);
  }
  return out;
}

}  // namespace peakcast::serve
