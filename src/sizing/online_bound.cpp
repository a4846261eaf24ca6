// Adaptive conformal upper bound (see the header for the method and the OOM rule).
#include "peakcast/sizing/online_bound.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace peakcast::sizing {

std::optional<double> conformal_quantile(const std::deque<double>& scores, double alpha) {
  if (scores.empty()) return std::nullopt;
  const size_t n = scores.size();
  const double rank = std::ceil(static_cast<double>(n + 1) * (1.0 - alpha) - 1e-12);
  std::vector<double> s(scores.begin(), scores.end());
  if (rank >= static_cast<double>(n)) return *std::max_element(s.begin(), s.end());
  const size_t k = rank < 1.0 ? 0 : static_cast<size_t>(rank) - 1;
  std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
  return s[k];
}

OnlineBound::OnlineBound(OnlineBoundOptions options) : options_(options) {
  if (!(options_.coverage > 0.0 && options_.coverage < 1.0)) {
    throw std::invalid_argument("OnlineBound: coverage must be in (0, 1)");
  }
  if (!(options_.gamma >= 0.0) || options_.window == 0) {
    throw std::invalid_argument("OnlineBound: gamma must be >= 0 and window > 0");
  }
  for (auto& l : levels_) l.alpha_t = 1.0 - options_.coverage;
}

const std::deque<double>& OnlineBound::scores_for(history::Level level) const {
  const auto& own = levels_[static_cast<int>(level)].window;
  return own.size() >= options_.min_level_scores ? own : pooled_;
}

double OnlineBound::score(double point, double label) const {
  if (options_.scale == Scale::kAdditive) return label - point;
  return label / std::max(point, 1e-12);
}

double OnlineBound::apply(double point, double q) const {
  if (options_.scale == Scale::kAdditive) return point + q;
  return std::max(point, 0.0) * q;
}

double OnlineBound::upper(history::Level level, double point) const {
  const auto& st = levels_[static_cast<int>(level)];
  auto q = conformal_quantile(scores_for(level), std::min(st.alpha_t, 1.0));
  if (!q) return point;
  return apply(point, *q);
}

void OnlineBound::push(std::deque<double>& w, double s) const {
  w.push_back(s);
  while (w.size() > options_.window) w.pop_front();
}

void OnlineBound::observe(history::Level level, double point, double label, bool censored) {
  observe_issued(level, point, label, censored, upper(level, point));
}

void OnlineBound::observe_issued(history::Level level, double point, double label, bool censored,
                                 double issued_bound) {
  if (!std::isfinite(point) || !std::isfinite(label)) return;
  if (options_.scale == Scale::kRatio && !(point > 0.0)) return;
  auto& st = levels_[static_cast<int>(level)];
  const bool miss = label > issued_bound;
  if (censored && !miss) return;  // the true peak may still exceed the bound: learn nothing
  const double err = miss ? 1.0 : 0.0;
  const double alpha = 1.0 - options_.coverage;
  // Only levels that issued bounds from evidence adapt; a cold-start bound says nothing.
  if (!scores_for(level).empty()) {
    st.alpha_t = std::clamp(st.alpha_t + options_.gamma * (alpha - err), options_.alpha_floor, 1.0);
    ++st.updates;
  }
  const double s = score(point, label);
  push(st.window, s);
  push(pooled_, s);
}

bool OnlineBound::has_scores(history::Level level) const { return !scores_for(level).empty(); }
double OnlineBound::alpha_t(history::Level level) const {
  return levels_[static_cast<int>(level)].alpha_t;
}
size_t OnlineBound::scores(history::Level level) const {
  return levels_[static_cast<int>(level)].window.size();
}
size_t OnlineBound::updates(history::Level level) const {
  return levels_[static_cast<int>(level)].updates;
}

}  // namespace peakcast::sizing
