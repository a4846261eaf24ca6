// Property tests of the history store on random traces, against a naive reference that rescans
// every job for every query (docs/method.md §2-3 written out literally).
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "history/series.h"
#include "peakcast/history/history.h"

namespace peakcast::history {
namespace {

constexpr int64_t kGrid = 600;  // coarse times: many equal ends and submit == end coincidences

// A random trace: few users and scripts so keys grow past the window and get folded; some jobs
// with no script key or user; both resources with independent validity; some censored.
std::vector<Job> random_trace(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  std::vector<Job> jobs;
  for (int i = 0; i < n; ++i) {
    Job j;
    j.job_id = "job" + std::to_string(i);
    j.user = chance(0.05) ? "" : "u" + std::to_string(pick(0, 3));
    j.script_key = chance(0.1) ? "" : "s" + std::to_string(pick(0, 5));
    j.submit_ms = kGrid * pick(0, 2000);
    j.end_ms = j.submit_ms + kGrid * (chance(0.1) ? 0 : pick(0, 400));
    j.censored = chance(0.1);
    // Runs that end without completing (and so without ending a chain of OOMs) among the rest.
    static constexpr const char* kOther[] = {"CANCELLED", "TIMEOUT", "FAILED", "NODE_FAIL"};
    j.state = j.censored ? "OUT_OF_MEMORY" : chance(0.25) ? kOther[pick(0, 3)] : "COMPLETED";
    for (Resource r : kResources) {
      j.valid[idx(r)] = chance(r == Resource::kMem ? 0.9 : 0.4);
      // A few repeated values so medians meet ties.
      j.util[idx(r)] = chance(0.3) ? pick(0, 4) / 4.0
                                   : std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    }
    if (j.censored && j.valid[0]) j.util[0] = 1.0;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

std::vector<const Job*> submit_order(const std::vector<Job>& jobs) {
  std::vector<const Job*> order;
  for (const Job& j : jobs) order.push_back(&j);
  std::stable_sort(order.begin(), order.end(),
                   [](const Job* a, const Job* b) { return a->submit_ms < b->submit_ms; });
  return order;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The definition, rescanning everything: the labels of `known` jobs with the key whose resource
// is valid and end < t, ordered by (end, submit, tag), first copy of a job_id only.
KeyStats naive_stats(const std::vector<const Job*>& known, bool by_script,
                     const std::string& key, int64_t t, Resource r) {
  KeyStats s;
  if (key.empty()) return s;
  std::vector<const Job*> seen;
  // (end, submit, tag, label, completed with a known peak: ends a chain of OOMs)
  std::vector<std::tuple<int64_t, int64_t, uint64_t, double, bool>> h;
  for (const Job* j : known) {
    if (std::any_of(seen.begin(), seen.end(),
                    [&](const Job* o) { return o->job_id == j->job_id; })) {
      continue;
    }
    if (!j->valid[0] && !j->valid[1]) continue;
    seen.push_back(j);
    if ((by_script ? j->script_key : j->user) != key || !j->is_valid(r)) continue;
    if (j->end_ms >= t) continue;
    uint64_t tag = detail::order_tag(*j);
    if (!censored_for(*j, r)) tag &= ~uint64_t{1};
    h.emplace_back(j->end_ms, j->submit_ms, tag, j->label(r),
                   !censored_for(*j, r) && j->state == "COMPLETED");
  }
  std::sort(h.begin(), h.end());
  const int n = static_cast<int>(h.size());
  s.count = n;
  if (n == 0) return s;
  auto last_k = [&](int k) {
    std::vector<double> v;
    for (int i = std::max(0, n - k); i < n; ++i) v.push_back(std::get<3>(h[i]));
    return v;
  };
  s.expert[0] = std::get<3>(h.back());
  s.expert[1] = median(last_k(3));
  s.expert[2] = median(last_k(5));
  double num = 0, den = 0;
  for (const auto& [end, submit, tag, x, completed] : h) {
    const double w = std::exp2(-static_cast<double>(t - end) / kDecayHalfLifeMs);
    num += w * x;
    den += w;
  }
  s.expert[3] = num / den;
  const std::vector<double> win = last_k(kWindow);
  const double m = median(win);
  std::vector<double> dev;
  for (double x : win) dev.push_back(std::fabs(x - m));
  s.mad = median(dev);
  for (int i = std::max(0, n - kWindow); i < n; ++i) s.censored_recent += std::get<2>(h[i]) & 1;
  // Exact-script level: the censored labels since the newest run that completed with a known
  // peak (within the window) floor every expert; runs that did not complete are passed over.
  for (int i = n - 1; by_script && i >= std::max(0, n - kWindow) && !std::get<4>(h[i]); --i) {
    if (!(std::get<2>(h[i]) & 1)) continue;
    for (double& x : s.expert) x = std::max(x, std::get<3>(h[i]));
  }
  s.spread = *std::max_element(s.expert.begin(), s.expert.end()) -
             *std::min_element(s.expert.begin(), s.expert.end());
  s.last_end_time = static_cast<double>(std::get<0>(h.back())) / 1000.0;  // epoch s
  s.age_last_s = static_cast<double>(t - std::get<0>(h.back())) / 1000.0;
  return s;
}

HistoryView naive_view(const std::vector<const Job*>& known, const std::string& script,
                       const std::string& user, int64_t t, Resource r) {
  HistoryView v;
  v.exact = naive_stats(known, true, script, t, r);
  v.user = naive_stats(known, false, user, t, r);
  v.level = v.exact.count > 0 ? Level::kExactScript
            : v.user.count > 0 ? Level::kUser
                               : Level::kNone;
  return v;
}

bool close(double a, double b, double rel) {
  return std::fabs(a - b) <= rel * std::max({1.0, std::fabs(a), std::fabs(b)});
}

// Exact equality except the decay mean (and the spread, which may involve it): relative `rel`.
void assert_same(const KeyStats& a, const KeyStats& b, double rel) {
  RC_ASSERT(a.count == b.count);
  if (a.count == 0) return;
  RC_ASSERT(a.expert[0] == b.expert[0]);
  RC_ASSERT(a.expert[1] == b.expert[1]);
  RC_ASSERT(a.expert[2] == b.expert[2]);
  RC_ASSERT(close(a.expert[3], b.expert[3], rel));
  RC_ASSERT(a.mad == b.mad);
  RC_ASSERT(close(a.spread, b.spread, rel));
  RC_ASSERT(a.age_last_s == b.age_last_s);
  RC_ASSERT(a.last_end_time == b.last_end_time);
  RC_ASSERT(a.censored_recent == b.censored_recent);
}

void assert_same(const HistoryView& a, const HistoryView& b, double rel) {
  RC_ASSERT(a.level == b.level);
  assert_same(a.exact, b.exact, rel);
  assert_same(a.user, b.user, rel);
}

// The walk-forward error features too (stored as floats; the decay mean's part may differ in the
// last bits with the order its accumulator was summed in).
void assert_same_errors(const HistoryView& a, const HistoryView& b) {
  for (auto [x, y] : {std::pair{&a.exact, &b.exact}, std::pair{&a.user, &b.user}}) {
    RC_ASSERT(x->err_n == y->err_n);
    for (int k = 0; k < kNumExperts; ++k) RC_ASSERT(close(x->recent_err[k], y->recent_err[k], 1e-5));
  }
}

using Views = std::vector<std::array<HistoryView, kNumResources>>;

// Replay in event time; views in submit order.
Views replay_views(const std::vector<const Job*>& order) {
  HistoryStore store;
  Views out;
  replay(order, store, [&](const Job& job, const HistoryStore& s) {
    out.push_back({s.query(job, Resource::kMem), s.query(job, Resource::kVram)});
  });
  return out;
}

// (1)+(3): during replay, every view equals the naive rescan over the whole trace at the job's
// submit time -- so no job that ended at or after the submission is ever seen.
RC_GTEST_PROP(HistoryProperty, ReplayMatchesNaiveAndNeverSeesTheFuture, ()) {
  const int n = *rc::gen::inRange(1, 300);
  const auto jobs = random_trace(n, *rc::gen::arbitrary<uint64_t>());
  const auto order = submit_order(jobs);
  std::vector<const Job*> all(order);
  HistoryStore store;
  replay(order, store, [&](const Job& job, const HistoryStore& s) {
    for (Resource r : kResources) {
      const HistoryView v = s.query(job, r);
      for (const KeyStats* k : {&v.exact, &v.user}) {
        if (k->count > 0) RC_ASSERT(k->last_end_time * 1000.0 < static_cast<double>(job.submit_ms));
      }
      assert_same(v, naive_view(all, job.script_key, job.user, job.submit_ms, r), 1e-9);
    }
  });
}

// (2): adding every completion first, in random order, then querying each job at its submit
// time gives the replay's answers (the store holds many not-yet-visible labels then).
RC_GTEST_PROP(HistoryProperty, IncrementalEqualsReplay, ()) {
  const int n = *rc::gen::inRange(1, 300);
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const auto jobs = random_trace(n, seed);
  const auto order = submit_order(jobs);
  const Views expected = replay_views(order);

  std::vector<const Job*> shuffled(order);
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(seed ^ 0x9e3779b97f4a7c15ULL));
  HistoryStore store;
  for (const Job* j : shuffled) store.add_completion(*j);
  for (size_t i = 0; i < order.size(); ++i) {
    for (Resource r : kResources) {
      assert_same(store.query(*order[i], r), expected[i][idx(r)], 1e-12);
      // The replay folds old labels under its watermark, this store folds none: the walk-forward
      // errors must not depend on it (a long run's error needs the labels its submission saw,
      // which may be older than the kWindow newest when it ends).
      assert_same_errors(store.query(*order[i], r), expected[i][idx(r)]);
    }
  }
}

// (3) at arbitrary query times and keys, including times before most completions.
RC_GTEST_PROP(HistoryProperty, ArbitraryTimesMatchNaive, ()) {
  const int n = *rc::gen::inRange(1, 200);
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const auto jobs = random_trace(n, seed);
  std::vector<const Job*> all;
  HistoryStore store;
  for (const Job& j : jobs) {
    store.add_completion(j);
    all.push_back(&j);
  }
  std::mt19937_64 rng(seed + 1);
  for (int q = 0; q < 50; ++q) {
    // On the grid (t == some end or submit time) or just beside it.
    const int64_t t = kGrid * std::uniform_int_distribution<int64_t>(-1, 2500)(rng) +
                      static_cast<int64_t>(rng() % 3) - 1;
    const std::string script = "s" + std::to_string(rng() % 7);  // s6 never exists
    const std::string user = "u" + std::to_string(rng() % 5);
    for (Resource r : kResources) {
      assert_same(store.query(script, user, t, r), naive_view(all, script, user, t, r), 1e-9);
    }
  }
}

// The service: completions arrive late (up to `lag` after their end, a few much later than
// that) and out of order; the watermark trails "now" by the lag; queries at now match the
// naive view of what has arrived.
RC_GTEST_PROP(HistoryProperty, LateCompletionsWithWatermarkMatchNaive, ()) {
  const int n = *rc::gen::inRange(1, 300);
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const auto jobs = random_trace(n, seed);
  const int64_t lag = kGrid * *rc::gen::inRange(0, 200);
  std::mt19937_64 rng(seed + 2);
  struct Event {
    int64_t time;
    int kind;  // 0 = arrival of a completion, 1 = query at submission
    const Job* job;
  };
  std::vector<Event> events;
  for (const Job& j : jobs) {
    const int64_t max_delay = rng() % 10 == 0 ? kGrid * 1000 : lag;
    const int64_t delay = std::uniform_int_distribution<int64_t>(0, max_delay)(rng);
    events.push_back({j.end_ms + delay, 0, &j});
    events.push_back({j.submit_ms + lag, 1, &j});  // queried once the lag has passed
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.time < b.time; });
  HistoryStore store;
  std::vector<const Job*> arrived;
  for (const Event& e : events) {
    if (e.kind == 0) {
      store.add_completion(*e.job);
      arrived.push_back(e.job);
      continue;
    }
    // At now = submit + lag, every completion that ended before submit has arrived.
    store.advance_watermark(e.job->submit_ms);
    for (Resource r : kResources) {
      assert_same(store.query(*e.job, r),
                  naive_view(arrived, e.job->script_key, e.job->user, e.job->submit_ms, r),
                  1e-9);
    }
  }
  RC_ASSERT(store.size() <= jobs.size());
}

// peakcastd --history-days while it runs: completions arrive late as above; one that ended
// before the horizon (now - `keep`) is not added, and every so often forget_before(horizon)
// drops what ended before it. The store must answer as the naive view of the arrivals kept
// (not skipped, ended at or after the last sweep's horizon). Where the horizon is at or after
// the watermark nothing folded can straddle it and the answers are exact; otherwise a batch of
// folded labels that straddles it stays counted (and in the decay mean), and the windowed
// experts are still exact.
RC_GTEST_PROP(HistoryProperty, ForgettingBeforeAHorizonAnswersAsTheRecentRunsAlone, ()) {
  const int n = *rc::gen::inRange(1, 600);
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const auto jobs = random_trace(n, seed);
  // exact: the horizon, now - keep, is at or after the watermark, now - lag.
  const bool exact = *rc::gen::arbitrary<bool>();
  const int lag_steps = *rc::gen::inRange(1, 1500);  // long enough for keys to fold
  const int64_t lag = kGrid * lag_steps;
  const int64_t keep = exact ? kGrid * *rc::gen::inRange(1, lag_steps + 1) : lag + kGrid * *rc::gen::inRange(1, 600);
  std::mt19937_64 rng(seed + 4);
  struct Event {
    int64_t time;
    int kind;  // 0 = arrival, 1 = query at submission, 2 = sweep
    const Job* job;
  };
  std::vector<Event> events;
  for (const Job& j : jobs) {
    const int64_t delay = std::uniform_int_distribution<int64_t>(0, lag)(rng);
    events.push_back({j.end_ms + delay, 0, &j});
    events.push_back({j.submit_ms + lag, 1, &j});
    if (rng() % 32 == 0) events.push_back({j.submit_ms + lag, 2, nullptr});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.time < b.time; });
  HistoryStore store(/*track_ids=*/false);
  std::vector<const Job*> kept;
  int64_t swept_at = std::numeric_limits<int64_t>::min();  // the last sweep's horizon
  size_t forgotten = 0;
  for (const Event& e : events) {
    const int64_t horizon = e.time - keep;
    if (e.kind == 0) {
      if (e.job->end_ms < horizon) continue;  // stored, not learned
      store.add_completion(*e.job);
      kept.push_back(e.job);
      continue;
    }
    if (e.kind == 2) {
      const HistoryStore::Forgotten f = store.forget_before(horizon);
      swept_at = horizon;
      const auto old = std::stable_partition(kept.begin(), kept.end(),
                                             [&](const Job* j) { return j->end_ms >= horizon; });
      for (auto it = old; it != kept.end(); ++it) {
        for (Resource r : kResources) {
          if (!(*it)->is_valid(r)) continue;
          forgotten += (*it)->script_key.empty() ? 0 : 1;
          forgotten += (*it)->user.empty() ? 0 : 1;
        }
      }
      kept.erase(old, kept.end());
      if (exact) RC_ASSERT(f.labels == forgotten);
      RC_ASSERT(f.labels <= forgotten);
      forgotten -= f.labels;  // what a straddling batch still holds, forgotten later
      continue;
    }
    store.advance_watermark(e.job->submit_ms);
    for (Resource r : kResources) {
      const HistoryView got = store.query(*e.job, r);
      const HistoryView want = naive_view(kept, e.job->script_key, e.job->user, e.job->submit_ms, r);
      if (exact) {
        assert_same(got, want, 1e-9);
        continue;
      }
      RC_ASSERT(got.level == want.level);
      for (auto [g, w] : {std::pair{&got.exact, &want.exact}, std::pair{&got.user, &want.user}}) {
        RC_ASSERT(g->count >= w->count);
        if (w->count == 0) continue;
        for (int k = 0; k < 3; ++k) RC_ASSERT(g->expert[k] == w->expert[k]);
        RC_ASSERT(g->mad == w->mad);
        RC_ASSERT(g->censored_recent == w->censored_recent);
        RC_ASSERT(g->last_end_time == w->last_end_time);
      }
    }
  }
  RC_ASSERT(swept_at == std::numeric_limits<int64_t>::min() || forgotten == 0 || !exact);
}

// (4): each completion added one to three times, in any order: the same answers as once, and
// only the first add of a run (job_id and submit time) reports true.
RC_GTEST_PROP(HistoryProperty, AddingTwiceIsIdempotent, ()) {
  const int n = *rc::gen::inRange(1, 200);
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const auto jobs = random_trace(n, seed);
  const auto order = submit_order(jobs);
  std::mt19937_64 rng(seed + 3);
  HistoryStore once;
  HistoryStore many;
  std::vector<const Job*> adds;
  size_t labelled = 0;
  for (const Job* j : order) {
    labelled += once.add_completion(*j) ? 1 : 0;
    for (int k = 0, c = 1 + static_cast<int>(rng() % 3); k < c; ++k) adds.push_back(j);
  }
  std::shuffle(adds.begin(), adds.end(), rng);
  size_t accepted = 0;
  for (const Job* j : adds) accepted += many.add_completion(*j) ? 1 : 0;
  RC_ASSERT(accepted == labelled);
  RC_ASSERT(many.size() == once.size());
  RC_ASSERT(many.retained_entries() == once.retained_entries());
  for (const Job* j : order) {
    for (Resource r : kResources) assert_same(many.query(*j, r), once.query(*j, r), 1e-12);
  }
}

}  // namespace
}  // namespace peakcast::history
