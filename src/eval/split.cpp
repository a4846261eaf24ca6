#include "peakcast/eval/split.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "peakcast/core/io.h"
#include "peakcast/core/units.h"

namespace peakcast::eval {

std::string_view block_name(Block b) {
  switch (b) {
    case Block::kTrain: return "train";
    case Block::kValidation: return "validation";
    case Block::kTest: return "test";
    case Block::kPurgedTrain: return "purged_train";
    case Block::kPurgedValidation: return "purged_validation";
  }
  return "?";
}

Result<SplitConfig> parse_split(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return Status::invalid(fmt::format("--split '{}': {} (expected three positive shares like "
                                       "60/20/20 or 0.6/0.2/0.2)",
                                       text, why));
  };
  std::vector<std::string_view> parts = split(text, '/');
  if (parts.size() != 3) return bad("need three parts separated by '/'");
  std::array<double, 3> v{};
  for (size_t i = 0; i < 3; ++i) {
    std::optional<double> d = parse_double(trim(parts[i]));
    if (!d || !std::isfinite(*d) || *d <= 0) return bad(fmt::format("'{}' is not a positive number", parts[i]));
    v[i] = *d;
  }
  // Percentages or fractions: shares that add up to neither (50/50/50) were once rescaled
  // silently, so a typo ran a split nobody asked for. Rounding (33.3/33.3/33.3) is allowed.
  const double sum = v[0] + v[1] + v[2];
  if (std::abs(sum - 100.0) > 0.5 && std::abs(sum - 1.0) > 0.005) {
    return bad(fmt::format("the shares add up to {:g}, not 100 (or 1); {}/{}/{} would be {}", sum,
                           parts[0], parts[1], parts[2], format_split(SplitConfig{v[0], v[1], v[2]})));
  }
  return SplitConfig{v[0], v[1], v[2]};
}

std::string format_split(const SplitConfig& c) {
  const double sum = c.train + c.validation + c.test;
  return fmt::format("{:g}/{:g}/{:g}", 100 * c.train / sum, 100 * c.validation / sum,
                     100 * c.test / sum);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2.0;
}

Result<Split> make_split(const std::vector<Job>& jobs, const SplitConfig& config) {
  const double sum = config.train + config.validation + config.test;
  if (!(config.train > 0 && config.validation > 0 && config.test > 0) || !std::isfinite(sum)) {
    return Status::invalid("split shares must be positive");
  }
  Split s;
  const size_t n = jobs.size();
  s.order.reserve(n);
  for (const Job& j : jobs) s.order.push_back(&j);
  std::stable_sort(s.order.begin(), s.order.end(),
                   [](const Job* a, const Job* b) { return a->submit_ms < b->submit_ms; });
  // Block boundaries by position; floor, so the test block gets the remainder ("the last 20%").
  const size_t val_begin = share_position(n, config.train, sum);
  const size_t test_begin = share_position(n, config.train + config.validation, sum);
  if (val_begin == 0 || test_begin <= val_begin || test_begin >= n) {
    return Status::invalid(fmt::format(
        "{} jobs are too few for a {} split: every block needs at least one job", n,
        format_split(config)));
  }
  s.counts.total = n;
  s.counts.first_validation_submit = s.order[val_begin]->submit_ms;
  s.counts.first_test_submit = s.order[test_begin]->submit_ms;
  s.block.resize(n);
  std::array<std::vector<double>, kNumResources> train_labels;
  for (size_t i = 0; i < n; ++i) {
    const Job& j = *s.order[i];
    if (i < val_begin) {
      if (j.end_ms >= s.counts.first_validation_submit) {
        s.block[i] = Block::kPurgedTrain;
        ++s.counts.purged_train;
      } else {
        s.block[i] = Block::kTrain;
        ++s.counts.train;
        for (Resource r : kResources) {
          if (j.is_valid(r)) train_labels[idx(r)].push_back(j.label(r));
        }
      }
    } else if (i < test_begin) {
      if (j.end_ms >= s.counts.first_test_submit) {
        s.block[i] = Block::kPurgedValidation;
        ++s.counts.purged_validation;
      } else {
        s.block[i] = Block::kValidation;
        ++s.counts.validation;
      }
    } else {
      s.block[i] = Block::kTest;
      ++s.counts.test;
    }
  }
  if (s.counts.train == 0) {
    // Every train job was still running at the first validation submission (one burst, or
    // equal times): no label was known before the validation block, and no method, nor the
    // no-history answer, has anything to learn from.
    return Status::invalid(fmt::format(
        "the purge emptied the train block: all {} of its jobs ended at or after the first "
        "validation submission, so none of their labels was known before it (a trace of one "
        "burst, or of equal times; give a longer trace or another --split)",
        s.counts.purged_train));
  }
  for (Resource r : kResources) {
    s.fallback_n[idx(r)] = train_labels[idx(r)].size();
    s.fallback[idx(r)] = median(std::move(train_labels[idx(r)]));
  }
  return s;
}

}  // namespace peakcast::eval
