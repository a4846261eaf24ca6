// Adaptive conformal upper bound (see the header for the method and the OOM rule).
#include "peakcast/sizing/online_bound.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <stdexcept>
#include <vector>

namespace peakcast::sizing {

std::optional<double> conformal_quantile(const std::deque<double>& scores, double alpha) {
  return conformal_quantile(std::vector<double>(scores.begin(), scores.end()), alpha);
}

namespace {

// Where the conformal quantile of n scores sits among them sorted (0-based): the
// ceil((n+1)(1-alpha))-th smallest, the largest when that rank exceeds n. n > 0.
size_t conformal_index(size_t n, double alpha) {
  const double rank = std::ceil(static_cast<double>(n + 1) * (1.0 - alpha) - 1e-12);
  if (rank >= static_cast<double>(n)) return n - 1;
  return rank < 1.0 ? 0 : static_cast<size_t>(rank) - 1;
}

}  // namespace

std::optional<double> conformal_quantile(std::vector<double> s, double alpha) {
  if (s.empty()) return std::nullopt;
  const size_t k = conformal_index(s.size(), alpha);
  std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
  return s[k];
}

std::optional<double> sorted_conformal_quantile(const std::vector<double>& sorted, double alpha) {
  if (sorted.empty()) return std::nullopt;
  return sorted[conformal_index(sorted.size(), alpha)];
}

namespace {

// The fewest n with ceil((n + 1) c) <= n: below that the conformal c-quantile of n scores is
// infinite.
size_t fewest_for_finite_quantile(double coverage) {
  size_t n = 1;
  while (std::ceil((static_cast<double>(n) + 1.0) * coverage - 1e-12) > static_cast<double>(n)) ++n;
  return n;
}

}  // namespace

OnlineBound::OnlineBound(OnlineBoundOptions options)
    : options_(options), clusters_(options.window), scripts_(options.max_scripts) {
  if (!(options_.coverage > 0.0 && options_.coverage < 1.0)) {
    throw std::invalid_argument("OnlineBound: coverage must be in (0, 1)");
  }
  if (!(options_.gamma >= 0.0) || options_.window == 0) {
    throw std::invalid_argument("OnlineBound: gamma must be >= 0 and window > 0");
  }
  min_evidence_ = fewest_for_finite_quantile(options_.coverage);
  for (auto& l : levels_) l.alpha_t = 1.0 - options_.coverage;
  missed_exact_.alpha_t = 1.0 - options_.coverage;
}

bool OnlineBound::clustered(history::Level level) const {
  return options_.cluster_user_level && level == history::Level::kUser;
}

bool OnlineBound::enough_clusters() const { return clusters_.size() >= min_evidence_; }

const std::deque<double>& OnlineBound::window_or_pooled(const LevelState& st) const {
  return st.window.size() >= options_.min_level_scores ? st.window : pooled_;
}

const OnlineBound::LevelState& OnlineBound::state_for(history::Level level,
                                                      std::string_view cluster) const {
  if (options_.split_missed_scripts && level == history::Level::kExactScript && !cluster.empty() &&
      missed_.count(std::string(cluster)) > 0) {
    return missed_exact_;
  }
  return levels_[static_cast<int>(level)];
}

OnlineBound::LevelState& OnlineBound::state_for(history::Level level, std::string_view cluster) {
  return const_cast<LevelState&>(std::as_const(*this).state_for(level, cluster));
}

std::optional<double> OnlineBound::cluster_quantile(double alpha) const {
  if (!enough_clusters()) return std::nullopt;
  std::vector<double> s;
  s.reserve(clusters_.size());
  for (const auto& c : clusters_) s.push_back(c.second);
  return conformal_quantile(std::move(s), alpha);
}

void OnlineBound::push_cluster(std::string_view cluster, double s) {
  std::string key = cluster.empty() ? "\x01job" + std::to_string(anonymous_++) : std::string(cluster);
  bool inserted = false;
  double& largest = clusters_.touch(std::move(key), &inserted);
  largest = inserted ? s : std::max(largest, s);
}

size_t OnlineBound::min_script_scores() const { return min_evidence_; }

size_t OnlineBound::script_scores(std::string_view script) const {
  const std::deque<double>* own = scripts_.find(script);
  return own ? own->size() : 0;
}

size_t OnlineBound::own_windows() const {
  return static_cast<size_t>(std::count_if(scripts_.begin(), scripts_.end(), [&](const auto& s) {
    return s.second.size() >= min_evidence_;
  }));
}

const std::deque<double>* OnlineBound::own_window(history::Level level,
                                                  std::string_view script) const {
  if (!options_.script_windows || level != history::Level::kExactScript || script.empty()) {
    return nullptr;
  }
  const std::deque<double>* own = scripts_.find(script);
  return own && own->size() >= min_evidence_ ? own : nullptr;
}

void OnlineBound::push_script(std::string_view script, double s) {
  push(scripts_.touch(std::string(script)), s);
}

double OnlineBound::score(double point, double label) const {
  if (options_.scale == Scale::kAdditive) return label - point;
  return label / std::max(point, 1e-12);
}

double OnlineBound::apply(double point, double q) const {
  if (options_.scale == Scale::kAdditive) return point + q;
  return std::max(point, 0.0) * q;
}

double OnlineBound::upper(history::Level level, double point, std::string_view cluster) const {
  const auto& st = state_for(level, cluster);
  const double a = std::min(st.alpha_t, 1.0);
  const std::deque<double>* own = own_window(level, cluster);
  auto q = clustered(level) ? cluster_quantile(a)
           : own          ? conformal_quantile(*own, a)
                          : conformal_quantile(window_or_pooled(st), a);
  if (!q) return point;
  return apply(point, *q);
}

void OnlineBound::push(std::deque<double>& w, double s) const {
  w.push_back(s);
  while (w.size() > options_.window) w.pop_front();
}

void OnlineBound::observe(history::Level level, double point, double label, bool censored,
                          std::string_view cluster) {
  observe_issued(level, point, label, censored, upper(level, point, cluster), cluster);
}

void OnlineBound::observe_issued(history::Level level, double point, double label, bool censored,
                                 double issued_bound, std::string_view cluster) {
  if (!std::isfinite(point) || !std::isfinite(label)) return;
  if (options_.scale == Scale::kRatio && !(point > 0.0)) return;
  auto& st = state_for(level, cluster);
  // A censored label is the limit the job was killed at: its peak was above it, so a bound at
  // the label missed too (bounds clipped to the cap meet a censored label, set to the cap, there).
  const bool miss = !bound_covers(label, issued_bound, censored);
  if (censored && !miss) return;  // the true peak may still exceed the bound: learn nothing
  // The part is the one the job's bound came from; a miss moves the script for later jobs.
  const bool had_scores = has_scores(level, cluster);
  if (miss && options_.split_missed_scripts && !cluster.empty()) missed_.emplace(cluster);
  // Only levels that issued bounds from evidence adapt; a cold-start bound says nothing.
  if (had_scores) {
    st.alpha_t = aci_step(st.alpha_t, 1.0 - options_.coverage, miss, options_);
    ++st.updates;
  }
  const double s = score(point, label);
  if (clustered(level)) {
    push_cluster(cluster, s);
  } else {
    push(st.window, s);
  }
  if (options_.script_windows && level == history::Level::kExactScript && !cluster.empty()) {
    push_script(cluster, s);
  }
  push(pooled_, s);
}

bool OnlineBound::has_scores(history::Level level, std::string_view cluster) const {
  if (clustered(level)) return enough_clusters();
  return !window_or_pooled(state_for(level, cluster)).empty();
}
double OnlineBound::alpha_t(history::Level level) const {
  return levels_[static_cast<int>(level)].alpha_t;
}
size_t OnlineBound::scores(history::Level level) const {
  if (clustered(level)) return clusters_.size();
  return levels_[static_cast<int>(level)].window.size();
}
size_t OnlineBound::updates(history::Level level) const {
  return levels_[static_cast<int>(level)].updates;
}

}  // namespace peakcast::sizing
