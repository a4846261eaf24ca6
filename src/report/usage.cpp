// Requested vs used memory over time per user, account and partition: daily sums of the jobs
// that ended that day, the 8 largest groups by requested memory by name and the rest as one
// "other (N users)" group (with a "*" added while a user, account or partition is called so).
// A kind of group no job records (a Nextflow trace's accounts and partitions) is not drawn: its one
// line would repeat the totals.
#include <algorithm>
#include <ctime>
#include <map>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "report_internal.h"

namespace peakcast::report {
namespace {

using nlohmann::json;

constexpr size_t kTopGroups = 8;    // named in a plot
constexpr size_t kTableGroups = 20;  // named in the table
constexpr int64_t kDay = 86400;
constexpr const char* kDims[] = {"user", "account", "partition"};
constexpr const char* kArticles[] = {"a", "an", "a"};

// The start of the UTC day a job ended on: the plots' x, and the unit the cap keeps whole.
int64_t day_of(const UsagePoint& p) {
  const int64_t d = p.end_time_s / kDay - (p.end_time_s % kDay < 0 ? 1 : 0);
  return d * kDay;
}

std::string date_of(int64_t day_start_s) {
  return fmt::format("{:%Y-%m-%d}", fmt::gmtime(static_cast<std::time_t>(day_start_s)));
}

const std::string& group_of(const UsagePoint& p, int dim) {
  return dim == 0 ? p.user : (dim == 1 ? p.account : p.partition);
}

// Whether some job records a group of this kind (a user, an account, a partition).
bool recorded(const std::vector<UsagePoint>& usage, int dim) {
  return std::any_of(usage.begin(), usage.end(), [dim](const UsagePoint& p) { return !group_of(p, dim).empty(); });
}

// The kinds of group the plots and the table show: those some job records. Where none does, the
// users' alone, every job as "(no user)", so that the totals are still drawn.
std::vector<int> shown_dims(const std::vector<UsagePoint>& usage) {
  std::vector<int> dims;
  for (int dim = 0; dim < 3; ++dim) {
    if (recorded(usage, dim)) dims.push_back(dim);
  }
  if (dims.empty()) dims.push_back(0);
  return dims;
}

// The sentence saying which kinds no job records, and so are not shown; empty when all are.
std::string unrecorded_dims(const std::vector<UsagePoint>& usage) {
  std::vector<int> missing;
  for (int dim = 0; dim < 3; ++dim) {
    if (!recorded(usage, dim)) missing.push_back(dim);
  }
  if (missing.empty()) return {};
  std::string what, per;
  for (size_t i = 0; i < missing.size(); ++i) {
    const char* sep = i == 0 ? "" : (i + 1 == missing.size() ? " or " : ", ");
    what += fmt::format("{}{} {}", sep, kArticles[missing[i]], kDims[missing[i]]);
    per += fmt::format("{}{}", sep, kDims[missing[i]]);
  }
  if (missing.size() == 3) {
    return "No job here records " + what + ": the plot and the table show every job as (no user).";
  }
  return "No job here records " + what + ": there is no plot or table row per " + per + ".";
}

// The groups of one dimension by name ("" for the jobs without one), largest requested total first.
std::vector<std::string> ranked_groups(const std::vector<UsagePoint>& usage, int dim) {
  std::map<std::string, double> req;
  for (const UsagePoint& p : usage) req[group_of(p, dim)] += p.requested_gb;
  std::vector<std::pair<double, std::string>> order;
  for (auto& [g, v] : req) order.emplace_back(-v, g);
  std::sort(order.begin(), order.end());
  std::vector<std::string> out;
  for (auto& [v, g] : order) out.push_back(g);
  return out;
}

// What the page calls a group of `ranked`: its name, and the jobs without one "(no user)" (account,
// partition), with a star added while a group of that dimension is called so: the plots draw
// one line per label, so the jobs without a name must never share one with a named group (until
// 2026-12-06 they were "(none)", and a user called "(none)" took their sums).
class GroupLabels {
 public:
  GroupLabels(const std::vector<std::string>& ranked, int dim)
      : ranked_(ranked), dim_(dim), none_(unused(fmt::format("(no {})", kDims[dim]))) {}
  const std::string& operator()(const std::string& name) const { return name.empty() ? none_ : name; }
  // The group of the `others` smallest, "other (N users)", starred the same way: a user may be
  // called that too (until 2026-12-06 one was, in a plot, summed with the rest).
  std::string rest(size_t others) const {
    return unused(fmt::format("other ({} {}s)", grouped(others), kDims[dim_]));
  }

 private:
  std::string unused(std::string label) const {
    while (std::find(ranked_.begin(), ranked_.end(), label) != ranked_.end()) label += "*";
    return label;
  }

  const std::vector<std::string>& ranked_;
  int dim_;
  std::string none_;
};

struct DaySums {
  double requested = 0, used = 0, recommended = 0;
  double recommended_requested = 0;  // what the jobs with a recommendation requested
  size_t jobs = 0, recommended_jobs = 0;
  void add(const UsagePoint& p) {
    requested += p.requested_gb;
    used += p.used_gb;
    ++jobs;
    if (p.recommended_gb) {
      recommended += *p.recommended_gb;
      recommended_requested += p.requested_gb;
      ++recommended_jobs;
    }
  }
};

}  // namespace

std::vector<Plot> usage_plots(const std::vector<UsagePoint>& usage) {
  std::vector<Plot> out;
  if (usage.empty()) return out;
  // x is the UTC day: a local-time axis put each day's sum on the evening before west of
  // Greenwich, with hour ticks between the days. A tick a day where the days are few, at most ten
  // (Vega picks the time interval nearest the count).
  int64_t first_day = day_of(usage.front()), last_day = first_day;
  for (const UsagePoint& p : usage) {
    first_day = std::min(first_day, day_of(p));
    last_day = std::max(last_day, day_of(p));
  }
  const int64_t day_ticks = std::clamp<int64_t>((last_day - first_day) / kDay, 1, 10);
  for (const int dim : shown_dims(usage)) {
    const std::vector<std::string> ranked = ranked_groups(usage, dim);
    const GroupLabels label(ranked, dim);
    // The rest is one line only when it holds two or more groups: one alone is named (until
    // 2026-12-07 LANL's ninth partition was drawn as "other (1 partitions)").
    const size_t named = ranked.size() > kTopGroups + 1 ? kTopGroups : ranked.size();
    std::map<std::string, bool> top;
    for (size_t i = 0; i < named; ++i) top[ranked[i]] = true;
    // Not "other", nor "other (N users)" where a user is called so: a user, account or partition
    // may be, and its line would take the rest's sums.
    const std::string rest = named < ranked.size() ? label.rest(ranked.size() - named) : std::string();
    std::map<std::pair<std::string, int64_t>, DaySums> sums;
    for (const UsagePoint& p : usage) {
      const std::string& g = group_of(p, dim);
      sums[{top.count(g) ? label(g) : rest, day_of(p)}].add(p);
    }
    json rows = json::array();
    for (auto& [key, s] : sums) {
      const double t_ms = static_cast<double>(key.second) * 1000.0;
      // Captured by name: clang before 16 cannot capture a structured binding (the sanitizer and
      // fuzz builds use clang 14).
      auto add = [&key = key, &s = s, &rows, t_ms](const char* kind, double gb) {
        rows.push_back({{"group", key.first}, {"t", t_ms}, {"kind", kind}, {"gb", gb}, {"jobs", s.jobs}});
      };
      add("requested", s.requested);
      add("used (peak)", s.used);
      // The same jobs as the requested line: one without a recommendation at its own request
      // (as the savings section runs it), so the gap between the lines is what the
      // recommendations change, not how many jobs had one.
      if (s.recommended_jobs) add("recommended", s.recommended + (s.requested - s.recommended_requested));
    }
    const std::string dim_name = kDims[dim];
    // Anchored at the plot's left edge: centred, a long title over a plot narrowed by a wide legend
    // (LANL's partition names) ran off the plot's left side.
    json spec = {{"title", {{"text", "Requested vs used memory per " + dim_name + " (GB, jobs ending each day)"},
                            {"anchor", "start"}}},
                 {"width", "container"},
                 {"height", 260},
                 {"data", {{"values", rows}}},
                 {"params", json::array({{{"name", "pick_" + dim_name},
                                          {"select", {{"type", "point"}, {"fields", {"group"}}}},
                                          {"bind", "legend"}}})},
                 {"mark", {{"type", "line"}, {"point", true}}},
                 {"encoding",
                  {{"x", {{"field", "t"}, {"type", "temporal"}, {"timeUnit", "utcyearmonthdate"},
                          {"title", "day (UTC)"}, {"axis", {{"tickCount", day_ticks}}}}},
                   {"y", {{"field", "gb"}, {"type", "quantitative"}, {"title", "GB"}}},
                   {"color", {{"field", "group"}, {"type", "nominal"}, {"title", dim_name}}},
                   // The legend draws each line's dashes (circles with dashed rims hardly tell
                   // "used (peak)" from "recommended").
                   {"strokeDash", {{"field", "kind"}, {"type", "nominal"}, {"title", "memory"},
                                   {"sort", {"requested", "used (peak)", "recommended"}},
                                   {"legend", {{"symbolType", "stroke"}, {"symbolStrokeWidth", 2}, {"symbolSize", 300}}}}},
                   {"opacity", {{"condition", {{"param", "pick_" + dim_name}, {"value", 1}}},
                                {"value", 0.15}}},
                   {"tooltip", json::array({{{"field", "group"}, {"type", "nominal"}, {"title", dim_name}},
                                            {{"field", "t"}, {"type", "temporal"}, {"timeUnit", "utcyearmonthdate"}, {"title", "day (UTC)"}},
                                            {{"field", "kind"}, {"type", "nominal"}, {"title", "memory"}},
                                            {{"field", "gb"}, {"type", "quantitative"}, {"title", "GB"}, {"format", ",.1f"}},
                                            {{"field", "jobs"}, {"type", "quantitative"}, {"title", "jobs"}, {"format", ",d"}}})}}},
                 {"config", {{"view", {{"stroke", nullptr}}}, {"font", "system-ui, sans-serif"}}}};
    out.push_back({"usage-" + dim_name, "usage", "Memory per " + dim_name, spec});
  }
  return out;
}

std::string usage_table(const std::vector<UsagePoint>& usage) {
  std::string t;
  if (const std::string unrecorded = unrecorded_dims(usage); !unrecorded.empty()) {
    t += "<p class=\"explain\">" + html_escape(unrecorded) + "</p>\n";
  }
  t +=
      "<table class=\"sortable\"><thead><tr><th>by</th><th>group</th><th>jobs</th>"
      "<th>requested GB (mean)</th><th>used GB (mean)</th><th>used / requested</th>"
      "<th>test jobs with a recommendation</th><th>their request GB (mean)</th>"
      "<th>recommended GB (mean)</th></tr></thead><tbody>\n";
  for (const int dim : shown_dims(usage)) {
    // Largest requested total first, as the plot ranks them; past kTableGroups one "other" row,
    // so that a site with thousands of users still reads at a glance.
    const std::vector<std::string> ranked = ranked_groups(usage, dim);
    const GroupLabels label(ranked, dim);
    std::map<std::string, size_t> rank;
    for (size_t i = 0; i < ranked.size(); ++i) rank[ranked[i]] = i;
    const size_t named = ranked.size() > kTableGroups + 1 ? kTableGroups : ranked.size();
    std::vector<DaySums> g(named + 1);
    for (const UsagePoint& p : usage) {
      g[std::min(rank.at(group_of(p, dim)), named)].add(p);
    }
    for (size_t i = 0; i < g.size(); ++i) {
      const DaySums& s = g[i];
      if (s.jobs == 0) continue;
      const std::string name =
          i < named ? label(ranked[i]) : label.rest(ranked.size() - named);
      const double n = static_cast<double>(s.jobs);
      const double k = static_cast<double>(s.recommended_jobs);
      const auto gb = [](double v) { return number_cell(grouped(v, 2), v); };
      const std::string their_request = s.recommended_jobs ? gb(s.recommended_requested / k) : "<td></td>";
      const std::string rec = s.recommended_jobs ? gb(s.recommended / k) : "<td></td>";
      t += fmt::format(
          "<tr><td>{}</td><td>{}</td>{}{}{}"
          "<td data-sort=\"{:.6f}\">{:.1f}%</td>{}{}{}</tr>\n",
          kDims[dim], html_escape(name), number_cell(s.jobs), gb(s.requested / n), gb(s.used / n),
          s.requested > 0 ? s.used / s.requested : 0.0,
          s.requested > 0 ? 100.0 * s.used / s.requested : 0.0, number_cell(s.recommended_jobs),
          their_request, rec);
    }
  }
  return t + "</tbody></table>\n";
}

std::optional<std::string> keep_whole_usage_days(std::vector<UsagePoint>& usage, size_t max_points) {
  if (usage.size() <= max_points) return std::nullopt;
  const size_t total = usage.size();
  std::map<int64_t, size_t> per_day;
  for (const UsagePoint& p : usage) ++per_day[day_of(p)];
  size_t kept = 0, days = 0;
  int64_t first_day = 0;
  for (auto it = per_day.rbegin(); it != per_day.rend() && kept + it->second <= max_points; ++it) {
    kept += it->second;
    first_day = it->first;
    ++days;
  }
  if (days > 0) {
    std::erase_if(usage, [&](const UsagePoint& p) { return day_of(p) < first_day; });
    const int64_t last_day = per_day.rbegin()->first;
    return fmt::format(
        "the usage plots and table show the {} jobs that ended on the last {} day{} ({}{} UTC) of the {} "
        "jobs with a memory request and a peak: the most recent whole days that fit in {} jobs",
        grouped(kept), grouped(days), days == 1 ? "" : "s", date_of(first_day),
        days == 1 ? std::string() : " to " + date_of(last_day), grouped(total), grouped(max_points));
  }
  // The last day alone holds more than max_points: every how-manyth of its jobs, in their order.
  const int64_t last_day = per_day.rbegin()->first;
  const size_t on_last_day = per_day.rbegin()->second;
  std::vector<UsagePoint> day;
  for (UsagePoint& p : usage) {
    if (day_of(p) == last_day) day.push_back(std::move(p));
  }
  std::vector<UsagePoint> sample;
  for (size_t i = 0; i < max_points; ++i) sample.push_back(std::move(day[i * on_last_day / max_points]));
  usage = std::move(sample);
  return fmt::format(
      "the usage plots and table show the last day ({} UTC) alone, and of its {} jobs (more than the {} "
      "a page keeps) an even sample of {}, so that day's sums are of the sample only ({} jobs with a "
      "memory request and a peak in all)",
      date_of(last_day), grouped(on_last_day), grouped(max_points), grouped(usage.size()), grouped(total));
}

}  // namespace peakcast::report
