#include "peakcast/tools/inspect.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "peakcast/eval/report.h"
#include "peakcast/history/history.h"

namespace peakcast::eval {

namespace {

UtilQuantiles quantiles(std::vector<double> v) {
  UtilQuantiles q;
  q.n = v.size();
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  q.mean = sum / static_cast<double>(v.size());
  q.min = v.front();
  q.max = v.back();
  q.p10 = quantile_sorted(v, 0.10);
  q.p25 = quantile_sorted(v, 0.25);
  q.p50 = quantile_sorted(v, 0.50);
  q.p75 = quantile_sorted(v, 0.75);
  q.p90 = quantile_sorted(v, 0.90);
  q.p99 = quantile_sorted(v, 0.99);
  return q;
}

std::string utc_time(int64_t t_ms) {
  std::time_t tt = static_cast<std::time_t>(t_ms / kMsPerSecond);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string pct(size_t a, size_t b) {
  return b == 0 ? "-" : fmt::format("{:.1f}%", 100.0 * static_cast<double>(a) / static_cast<double>(b));
}

std::string share(const std::optional<std::array<double, kNumResources>>& v,
                  const std::array<size_t, kNumResources>& labelled, int i) {
  if (!v) return "n/a";
  if (labelled[i] == 0) return "-";
  return fmt::format("{:.1f}%", 100 * (*v)[i]);
}

}  // namespace

TraceSummary summarize_trace(const ingest::Trace& trace, const ProgressFn& progress) {
  TraceSummary s;
  s.jobs = trace.jobs.size();
  s.has_submit_times = trace.has_submit_times;
  s.has_scripts = trace.has_scripts;
  std::set<std::string> users, keys;
  std::map<std::string, size_t> states;
  std::array<std::vector<double>, kNumResources> utils;
  for (const Job& j : trace.jobs) {
    if (!j.user.empty()) users.insert(j.user);  // a job with no user names no user
    if (!j.script_key.empty()) {
      keys.insert(j.script_key);
      ++s.jobs_with_identity;
    }
    ++states[j.state];
    if (j.state == "OUT_OF_MEMORY") ++s.oom;
    if (j.state == "PREEMPTED") ++s.preempted;
    for (Resource r : kResources) {
      if (!j.is_valid(r)) continue;
      ++s.labelled[idx(r)];
      if (j.clipped[idx(r)]) ++s.clipped[idx(r)];
      // Only the resource whose limit killed the job has a lower bound for a label; the other
      // keeps its measurement (a host OOM of a GPU job measured its VRAM).
      if (censored_for(j, r)) ++s.censored[idx(r)];
      utils[idx(r)].push_back(j.label(r));
    }
    if (trace.has_submit_times) {
      s.first_submit = std::min(s.first_submit.value_or(j.submit_ms), j.submit_ms);
      s.last_submit = std::max(s.last_submit.value_or(j.submit_ms), j.submit_ms);
      s.last_end = std::max(s.last_end.value_or(j.end_ms), j.end_ms);
    }
  }
  s.users = users.size();
  s.identities = keys.size();
  for (Resource r : kResources) s.util[idx(r)] = quantiles(std::move(utils[idx(r)]));
  s.states.assign(states.begin(), states.end());
  std::stable_sort(s.states.begin(), s.states.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });

  if (trace.has_submit_times && !trace.jobs.empty()) {
    std::vector<const Job*> order;
    order.reserve(trace.jobs.size());
    for (const Job& j : trace.jobs) order.push_back(&j);
    std::stable_sort(order.begin(), order.end(),
                     [](const Job* a, const Job* b) { return a->submit_ms < b->submit_ms; });
    std::array<size_t, kNumResources> exact{0, 0}, user{0, 0};
    history::HistoryStore store;
    size_t done = 0;
    const size_t step = std::max<size_t>(1, order.size() / 100);
    history::replay(order, store, [&](const Job& j, const history::HistoryStore& st) {
      for (Resource r : kResources) {
        if (!j.is_valid(r)) continue;
        const history::Level l = st.query(j, r).level;
        if (l == history::Level::kExactScript) ++exact[idx(r)];
        if (l != history::Level::kNone) ++user[idx(r)];
      }
      ++done;
      if (progress && (done % step == 0 || done == order.size())) {
        progress("replay", done, order.size());
      }
    });
    std::array<double, kNumResources> e{0, 0}, u{0, 0};
    for (Resource r : kResources) {
      const double n = static_cast<double>(s.labelled[idx(r)]);
      e[idx(r)] = n > 0 ? static_cast<double>(exact[idx(r)]) / n : 0.0;
      u[idx(r)] = n > 0 ? static_cast<double>(user[idx(r)]) / n : 0.0;
    }
    s.exact_history_share = e;
    s.user_history_share = u;
  }
  return s;
}

std::string render_summary(const TraceSummary& s, const ingest::Trace& t) {
  std::string out = fmt::format("trace      {} ({})\n", t.path, ingest::format_name(t.format));
  out += fmt::format("jobs       {}\nusers      {}{}\nidentities {} distinct script keys ({} of jobs "
                     "have one; {})\n",
                     s.jobs, s.users, s.users == 0 && s.jobs > 0 ? " (no job names its user)" : "",
                     s.identities, pct(s.jobs_with_identity, s.jobs),
                     s.has_scripts ? "from script text" : "from workload identity, no scripts");
  if (s.first_submit) {
    out += fmt::format("timeline   submits {} .. {} UTC, last end {} UTC\n",
                       utc_time(*s.first_submit), utc_time(*s.last_submit), utc_time(*s.last_end));
  } else if (s.jobs == 0) {
    out += "timeline   no jobs\n";
  } else {
    out += "timeline   no submit times: `evaluate` cannot order these jobs\n";
  }
  out += "\nlabels per resource:\n";
  out += fmt::format("  {:<5} {:>8} {:>8} {:>8} {:>9} {:>12} {:>12}\n", "res", "labelled",
                     "coverage", "clipped", "censored", "exact hist.", "user+ hist.");
  for (Resource r : kResources) {
    const int i = idx(r);
    out += fmt::format(
        "  {:<5} {:>8} {:>8} {:>8} {:>9} {:>12} {:>12}\n", resource_name(r), s.labelled[i],
        pct(s.labelled[i], s.jobs), s.clipped[i], s.censored[i],
        share(s.exact_history_share, s.labelled, i), share(s.user_history_share, s.labelled, i));
  }
  out += "  (history shares: labelled jobs whose exact script / user had eligible history at "
         "submission)\n";
  out += "\nutilization distribution:\n";
  out += fmt::format("  {:<5} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}\n",
                     "res", "n", "mean", "min", "p10", "p25", "p50", "p75", "p90", "p99", "max");
  for (Resource r : kResources) {
    const UtilQuantiles& q = s.util[idx(r)];
    if (q.n == 0) {
      out += fmt::format("  {:<5} {:>8}\n", resource_name(r), 0);
      continue;
    }
    out += fmt::format(
        "  {:<5} {:>8} {:>7.4f} {:>7.4f} {:>7.4f} {:>7.4f} {:>7.4f} {:>7.4f} {:>7.4f} {:>7.4f} "
        "{:>7.4f}\n",
        resource_name(r), q.n, q.mean, q.min, q.p10, q.p25, q.p50, q.p75, q.p90, q.p99, q.max);
  }
  out += fmt::format("\nstates (OUT_OF_MEMORY {}, PREEMPTED {}):\n", s.oom, s.preempted);
  for (const auto& [state, n] : s.states) {
    out += fmt::format("  {:<16} {:>8} {:>7}\n", state, n, pct(n, s.jobs));
  }
  return out;
}

nlohmann::json to_json(const TraceSummary& s) {
  nlohmann::json j;
  j["jobs"] = s.jobs;
  j["users"] = s.users;
  j["identities"] = s.identities;
  j["jobs_with_identity"] = s.jobs_with_identity;
  j["has_submit_times"] = s.has_submit_times;
  j["has_scripts"] = s.has_scripts;
  for (Resource r : kResources) {
    const int i = idx(r);
    const UtilQuantiles& q = s.util[i];
    nlohmann::json e = {{"labelled", s.labelled[i]},
                        {"clipped", s.clipped[i]},
                        {"censored", s.censored[i]},
                        {"util", {{"n", q.n}}}};
    // No labelled job: no quantiles (null), rather than zeros that read as data.
    for (const auto& [name, value] : {std::pair{"mean", q.mean}, {"min", q.min}, {"p10", q.p10}, {"p25", q.p25},
                                      {"p50", q.p50}, {"p75", q.p75}, {"p90", q.p90}, {"p99", q.p99}, {"max", q.max}}) {
      e["util"][name] = q.n > 0 ? nlohmann::json(value) : nlohmann::json(nullptr);
    }
    e["exact_history_share"] =
        s.exact_history_share ? nlohmann::json((*s.exact_history_share)[i]) : nlohmann::json();
    e["user_history_share"] =
        s.user_history_share ? nlohmann::json((*s.user_history_share)[i]) : nlohmann::json();
    j["resources"][std::string(resource_name(r))] = std::move(e);
  }
  j["states"] = nlohmann::json::object();
  for (const auto& [state, n] : s.states) j["states"][state] = n;
  j["oom"] = s.oom;
  j["preempted"] = s.preempted;
  return j;
}

}  // namespace peakcast::eval
