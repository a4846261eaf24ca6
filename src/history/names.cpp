// Names of experts and levels as they appear in every output, and HistoryView::estimate.
#include "peakcast/history/history.h"

namespace peakcast::history {

std::string_view expert_name(Expert e) {
  switch (e) {
    case Expert::kLast1: return "last1";
    case Expert::kMedian3: return "median3";
    case Expert::kMedian5: return "median5";
    case Expert::kEwma: return "ewma";
    case Expert::kCombined: return "combined";
  }
  return "?";
}

std::optional<Expert> parse_expert(std::string_view name) {
  for (Expert e : kEstimates) {
    if (expert_name(e) == name) return e;
  }
  if (name == "decay") return Expert::kEwma;  // the name older models and configs used
  return std::nullopt;
}

std::string_view level_name(Level l) {
  switch (l) {
    case Level::kExactScript: return "exact_script";
    case Level::kUser: return "user";
    case Level::kNone: return "none";
  }
  return "?";
}

Level level_from_name(std::string_view name) {
  if (name == "exact_script") return Level::kExactScript;
  if (name == "user") return Level::kUser;
  return Level::kNone;
}

double HistoryView::estimate(Expert e, double fallback, const ExpertPriors& priors) const {
  if (level == Level::kNone) return fallback;
  if (e == Expert::kCombined) {
    return combined_estimate(answering(), priors.err[static_cast<size_t>(level)]);
  }
  return answering().expert[static_cast<int>(e)];
}

}  // namespace peakcast::history
