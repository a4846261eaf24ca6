// The synthetic trace: determinism, timelines, labels, and the statistical shape the generative
// model promises (docs/synth.md): exact repeats common, OOMs present, arguments drive memory,
// exact-script history better than user history.
#include "peakcast/synth/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "peakcast/ingest/jsonl.h"
#include "peakcast/ingest/redact.h"

namespace peakcast::synth {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<Job> make(size_t jobs, uint64_t seed, bool scripts = true) {
  SynthOptions o;
  o.jobs = jobs;
  o.seed = seed;
  o.include_scripts = scripts;
  auto r = generate_trace(o);
  if (!r.ok()) throw std::runtime_error(r.status().message());
  return std::move(r).value();
}

// One trace shared by the statistical tests (generation is the slow part).
const std::vector<Job>& trace() {
  static const std::vector<Job> t = make(12000, 7);
  return t;
}

double spearman(std::vector<double> x, std::vector<double> y) {
  auto ranks = [](const std::vector<double>& v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size();) {
      size_t j = i;
      while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[idx[k]] = (i + j) / 2.0;  // average rank of ties
      i = j + 1;
    }
    return r;
  };
  auto rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(rx.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n;
  const double my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

TEST(Synth, SameSeedSameTrace) {
  auto a = make(2000, 42), b = make(2000, 42);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(ingest::job_to_jsonl_line(a[i]), ingest::job_to_jsonl_line(b[i])) << "job " << i;
  }
}

TEST(Synth, DifferentSeedsDiffer) {
  auto a = make(500, 1), b = make(500, 2);
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i].script == b[i].script && a[i].submit_ms == b[i].submit_ms;
  EXPECT_LT(same, a.size() / 10);
}

TEST(Synth, ExactCountSortedUniqueIds) {
  const auto& t = trace();
  ASSERT_EQ(t.size(), 12000u);
  std::set<std::string> ids;
  for (size_t i = 0; i < t.size(); ++i) {
    ids.insert(t[i].job_id);
    if (i > 0) {
      EXPECT_LE(t[i - 1].submit_ms, t[i].submit_ms);
    }
  }
  EXPECT_EQ(ids.size(), t.size());
  EXPECT_EQ(make(0, 3).size(), 0u);
  EXPECT_EQ(make(1, 3).size(), 1u);
}

TEST(Synth, TimelinesAreOrdered) {
  SynthOptions o;
  const int64_t span = static_cast<int64_t>(o.days * 86400) * 1000;  // ms
  for (const Job& j : trace()) {
    ASSERT_TRUE(j.start_ms.has_value());
    EXPECT_GE(*j.start_ms, j.submit_ms) << j.job_id;
    EXPECT_GT(j.end_ms, *j.start_ms) << j.job_id;
    EXPECT_GE(j.submit_ms, o.start_time * 1000);
    EXPECT_LT(j.submit_ms, o.start_time * 1000 + 2 * span) << "submissions far beyond the asked span";
  }
  EXPECT_GT(trace().back().submit_ms - trace().front().submit_ms, span / 2);
}

TEST(Synth, LabelsAndRequestsAreConsistent) {
  size_t gpu = 0, vram_valid = 0, mem_valid = 0;
  std::set<uint64_t> capacities;
  for (const Job& j : trace()) {
    ASSERT_TRUE(j.req_mem_bytes && j.req_gpus && j.req_cpus && j.req_time_s);
    EXPECT_FALSE(j.clipped[0] || j.clipped[1]) << j.job_id << ": a peak above the request";
    if (*j.req_gpus == 0) {
      EXPECT_FALSE(j.peak_vram_bytes.has_value()) << j.job_id;
      EXPECT_FALSE(j.gpu_mem_bytes.has_value()) << j.job_id;
      EXPECT_FALSE(j.is_valid(Resource::kVram)) << j.job_id;
    } else {
      ++gpu;
      ASSERT_TRUE(j.gpu_mem_bytes.has_value());
      capacities.insert(*j.gpu_mem_bytes);
      vram_valid += j.is_valid(Resource::kVram);
      // The script says what was requested.
      EXPECT_NE(j.script->find("--gres=gpu:a100:" + std::to_string(*j.req_gpus)), std::string::npos);
    }
    mem_valid += j.is_valid(Resource::kMem);
    if (j.peak_mem_bytes) {
      EXPECT_LE(*j.peak_mem_bytes, *j.req_mem_bytes) << j.job_id;
    }
    if (j.state == "OUT_OF_MEMORY") {
      EXPECT_TRUE(j.censored);
      if (j.peak_mem_bytes) {
        EXPECT_EQ(*j.peak_mem_bytes, *j.req_mem_bytes);
      }
    }
    EXPECT_EQ(j.script_key, ingest::script_sha256(*j.script));
  }
  EXPECT_EQ(capacities, (std::set<uint64_t>{40ULL << 30, 80ULL << 30}));
  EXPECT_GT(gpu, trace().size() / 10);
  EXPECT_GT(vram_valid, gpu * 95 / 100);
  EXPECT_GT(mem_valid, trace().size() * 98 / 100);
}

// A job whose host memory went over its request is killed there (OUT_OF_MEMORY, peak recorded at
// the request, label censored) before any later limit: the walltime check used to overwrite the
// state of an OOM-killed job whose kill time fell past its walltime with TIMEOUT, leaving a
// peak exactly at the request as an exact, uncensored label while the script was still flagged
// for an OOM fix (4 jobs of the demo's 20,000, seed 1).
TEST(Synth, JobsKilledAtTheirRequestAreOomAndCensored) {
  auto check = [](const std::vector<Job>& t) {
    size_t killed = 0;
    for (const Job& j : t) {
      ASSERT_TRUE(j.req_time_s.has_value());
      EXPECT_LE(j.end_ms - *j.start_ms, *j.req_time_s * kMsPerSecond) << j.job_id << " ran past its walltime";
      if (!j.peak_mem_bytes || *j.peak_mem_bytes != *j.req_mem_bytes) continue;
      ++killed;
      EXPECT_EQ(j.state, "OUT_OF_MEMORY") << j.job_id << ": host peak at the request";
      EXPECT_TRUE(censored_for(j, Resource::kMem)) << j.job_id;
    }
    EXPECT_GT(killed, 0u);
  };
  check(trace());
  check(make(20000, 1));  // the demo's trace
}

TEST(Synth, OomShareIsSane) {
  size_t host = 0, states = 0;
  std::map<std::string, size_t> by_state;
  for (const Job& j : trace()) ++by_state[j.state];
  host = by_state["OUT_OF_MEMORY"];
  states = by_state.size();
  const double share = static_cast<double>(host) / trace().size();
  EXPECT_GT(share, 0.005);
  EXPECT_LT(share, 0.15);
  EXPECT_GE(states, 4u) << "COMPLETED, OUT_OF_MEMORY, FAILED, TIMEOUT/CANCELLED expected";
  EXPECT_GT(by_state["COMPLETED"], trace().size() * 7 / 10);
}

TEST(Synth, ExactRepeatsCommonButNotUniversal) {
  const auto& t = trace();
  std::set<std::string> seen;
  size_t repeats = 0;
  for (const Job& j : t) {
    repeats += seen.count(j.script_key);
    seen.insert(j.script_key);
  }
  const double share = static_cast<double>(repeats) / t.size();
  EXPECT_GT(share, 0.45);
  EXPECT_LT(share, 0.95);
  // Some scripts are shared between users after redaction (lab-mates' copies).
  std::map<std::string, std::set<std::string>> users_of;
  for (const Job& j : t) users_of[j.script_key].insert(j.user);
  size_t shared = 0;
  for (auto& [k, us] : users_of) shared += us.size() > 1;
  EXPECT_GT(shared, 0u);
}

TEST(Synth, CopiesDifferInTextButNotInKey) {
  // A copied script carries the copier's paths and address: the raw texts differ, the keys agree.
  std::map<std::string, std::pair<std::string, std::string>> first;  // key -> (user, text)
  size_t differing = 0;
  for (const Job& j : trace()) {
    auto [it, fresh] = first.emplace(j.script_key, std::make_pair(j.user, *j.script));
    if (!fresh && it->second.first != j.user && it->second.second != *j.script) ++differing;
  }
  EXPECT_GT(differing, 0u);
}

TEST(Synth, NewUsersAppearOverTime) {
  const auto& t = trace();
  std::set<std::string> early, all;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i < t.size() / 10) early.insert(t[i].user);
    all.insert(t[i].user);
  }
  EXPECT_LT(early.size(), all.size());
  EXPECT_GT(all.size(), 20u);
}

TEST(Synth, BurstsOfSimultaneousSubmissions) {
  const auto& t = trace();
  size_t in_bursts = 0;
  for (size_t i = 2; i < t.size(); ++i) {
    in_bursts += t[i].user == t[i - 2].user && t[i - 1].user == t[i].user &&
                 t[i].submit_ms - t[i - 2].submit_ms <= 6000;
  }
  EXPECT_GT(in_bursts, t.size() / 20);
}

TEST(Synth, BatchSizeDrivesVram) {
  // Image training: batch size vs peak VRAM per GPU within the most common model, completed jobs.
  const std::regex model_re(R"(--model (\S+))"), batch_re(R"(--batch-size (\d+))");
  std::map<std::string, std::vector<std::pair<double, double>>> by_model;
  for (const Job& j : trace()) {
    if (j.state != "COMPLETED" || !j.peak_vram_bytes || j.script->find("train.py") == std::string::npos) continue;
    std::smatch m, b;
    if (!std::regex_search(*j.script, m, model_re) || !std::regex_search(*j.script, b, batch_re)) continue;
    by_model[m[1]].push_back({std::stod(b[1]), static_cast<double>(*j.peak_vram_bytes) / *j.req_gpus});
  }
  ASSERT_FALSE(by_model.empty());
  auto best = std::max_element(by_model.begin(), by_model.end(),
                               [](auto& a, auto& b) { return a.second.size() < b.second.size(); });
  ASSERT_GT(best->second.size(), 30u);
  std::vector<double> x, y;
  for (auto [bs, v] : best->second) x.push_back(bs), y.push_back(v);
  const double rho = spearman(x, y);
  EXPECT_GT(rho, 0.5) << best->first << " over " << x.size() << " jobs";
}

TEST(Synth, ThreadsAndSortMemoryDriveAlignmentMemory) {
  const std::regex t_re(R"(bwa mem -t (\d+))"), m_re(R"(-m (\d+)M)");
  std::vector<double> x, y;
  for (const Job& j : trace()) {
    std::smatch t, m;
    if (j.state != "COMPLETED" || !j.peak_mem_bytes || !std::regex_search(*j.script, t, t_re) ||
        !std::regex_search(*j.script, m, m_re)) {
      continue;
    }
    x.push_back(std::stod(t[1]) * (0.3 + std::stod(m[1]) / 1024.0));
    y.push_back(static_cast<double>(*j.peak_mem_bytes));
  }
  ASSERT_GT(x.size(), 50u);
  EXPECT_GT(spearman(x, y), 0.5);
}

TEST(Synth, ExactScriptHistoryBeatsUserHistory) {
  // Event-time Last-1 on memory utilization: the last *finished* run of the same script vs of the
  // same user, on jobs that have both.
  const auto& t = trace();
  std::vector<size_t> by_end(t.size());
  std::iota(by_end.begin(), by_end.end(), 0);
  std::stable_sort(by_end.begin(), by_end.end(), [&](size_t a, size_t b) { return t[a].end_ms < t[b].end_ms; });
  std::map<std::string, std::pair<int64_t, double>> last_script, last_user;
  size_t e = 0, n = 0;
  double err_script = 0, err_user = 0;
  for (const Job& j : t) {
    while (e < by_end.size() && t[by_end[e]].end_ms < j.submit_ms) {
      const Job& d = t[by_end[e++]];
      if (!d.is_valid(Resource::kMem)) continue;
      last_script[d.script_key] = {d.end_ms, d.label(Resource::kMem)};
      last_user[d.user] = {d.end_ms, d.label(Resource::kMem)};
    }
    if (!j.is_valid(Resource::kMem)) continue;
    auto s = last_script.find(j.script_key);
    auto u = last_user.find(j.user);
    if (s == last_script.end() || u == last_user.end()) continue;
    ++n;
    err_script += std::abs(s->second.second - j.label(Resource::kMem));
    err_user += std::abs(u->second.second - j.label(Resource::kMem));
  }
  ASSERT_GT(n, t.size() / 4);
  EXPECT_LT(err_script / n, 0.8 * err_user / n) << "exact " << err_script / n << " user " << err_user / n;
  std::printf("[ synth ] Last-1 memory MAE on %zu jobs: exact-script %.3f, same-user %.3f\n", n,
              err_script / n, err_user / n);
}

TEST(Synth, WorkloadModeHasNoScripts) {
  auto a = make(300, 5, /*scripts=*/false);
  auto b = make(300, 5, /*scripts=*/true);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(a[i].script.has_value());
    ASSERT_TRUE(a[i].workload.has_value());
    EXPECT_EQ(a[i].script_key, ingest::workload_key(*a[i].workload));
    EXPECT_EQ(a[i].peak_mem_bytes, b[i].peak_mem_bytes) << "the same trace apart from the text";
  }
}

TEST(Synth, ScriptsCarryNoSurvivingSecretsAfterRedaction) {
  size_t with_token = 0, with_mail = 0;
  for (size_t i = 0; i < 3000; ++i) {
    const std::string& s = *trace()[i].script;
    with_token += s.find("HF_TOKEN=hf_") != std::string::npos;
    with_mail += s.find("--mail-user=") != std::string::npos;
    const std::string r = ingest::redact_script(s);
    EXPECT_EQ(r.find("hf_"), std::string::npos);
    EXPECT_EQ(r.find("@cs.example.edu"), std::string::npos);
    EXPECT_EQ(r.find("/home/" + trace()[i].user), std::string::npos);
  }
  EXPECT_GT(with_mail, 0u);  // the generator exercises redaction
}

TEST(Synth, RejectsBadOptions) {
  SynthOptions o;
  o.users = 0;
  EXPECT_FALSE(generate_trace(o).ok());
  o = {};
  o.days = 0;
  EXPECT_FALSE(generate_trace(o).ok());
  o = {};
  o.burst_prob = 1.5;
  EXPECT_FALSE(generate_trace(o).ok());
  o = {};
  o.users = 1;
  o.jobs = 50;
  o.late_user_share = 1.0;
  auto r = generate_trace(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 50u);
}

// Every trace validate() lets through is one the readers take back: the JSONL reader refuses epoch
// seconds above ingest's bound (1e11), and `--days 1e7` (a finite positive number, so the CLI
// passed it) used to write 50 jobs of which `peakcast inspect` could read none; `--days 1e300`
// overflowed the int64 timestamps and wrote submit_time 0.
TEST(Synth, SpansTheReadersCannotTakeAreRefused) {
  SynthOptions o;
  o.jobs = 50;
  for (double days : {1e7, 1e300, std::numeric_limits<double>::infinity()}) {
    o.days = days;
    const Status s = validate(o);
    EXPECT_FALSE(s.is_ok()) << "days " << days;
    EXPECT_NE(s.message().find("days"), std::string::npos) << s.message();
    EXPECT_FALSE(generate_trace(o).ok()) << "days " << days;
  }
  o = {};
  o.jobs = 50;
  o.start_time = -1;
  EXPECT_FALSE(validate(o).is_ok()) << "a submission before the epoch";
  o.start_time = static_cast<int64_t>(1e12);
  EXPECT_FALSE(validate(o).is_ok()) << "a start beyond what the readers take";
  // The widest span accepted still round-trips through the reader, in submit order.
  o = {};
  o.jobs = 300;
  o.days = 36525;
  auto jobs = generate_trace(o);
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  int64_t last_submit = 0;
  for (const Job& j : *jobs) {
    auto parsed = ingest::job_from_json(nlohmann::json::parse(ingest::job_to_jsonl_line(j)));
    ASSERT_TRUE(parsed.ok()) << j.job_id << ": " << parsed.status().message();
    EXPECT_GE(j.submit_ms, last_submit);
    EXPECT_GE(j.submit_ms, o.start_time * 1000);
    last_submit = j.submit_ms;
  }
}

// The generator holds every job (about 4 KB with its script) and every user (about 0.7 KB) in
// memory: --users 2000000000 or --jobs 1000000000 used to pass validation and run until the
// kernel killed the process, with no message. Such counts are refused up front, naming the bound.
TEST(Synth, CountsBeyondWhatFitsInMemoryAreRefused) {
  SynthOptions o;
  o.jobs = kMaxJobs + 1;
  Status s = validate(o);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("jobs"), std::string::npos) << s.message();
  o = {};
  o.users = kMaxUsers + 1;
  s = validate(o);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("users"), std::string::npos) << s.message();
  o = {};
  o.jobs = kMaxJobs;
  o.users = kMaxUsers;
  ASSERT_EQ(kMaxJobs, 10'000'000u);
  ASSERT_EQ(kMaxUsers, 1'000'000);
  EXPECT_TRUE(validate(o).is_ok()) << "the bounds themselves are allowed";
}

TEST(Synth, JsonlRoundTrip) {
  auto jobs = make(200, 11);
  char tmpl[] = "/tmp/peakcast_synth_XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_TRUE(write_trace_jsonl(jobs, tmpl).is_ok());
  std::ifstream in(tmpl);
  std::string line;
  size_t i = 0;
  while (std::getline(in, line)) {
    auto parsed = ingest::job_from_json(nlohmann::json::parse(line));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    ASSERT_LT(i, jobs.size());
    EXPECT_EQ(ingest::job_to_jsonl_line(*parsed), ingest::job_to_jsonl_line(jobs[i]));
    ++i;
  }
  EXPECT_EQ(i, jobs.size());
  std::remove(tmpl);
}

// Millions of jobs take minutes: generating and writing report their progress, in order, to the
// end, and the trace is the one generated without it.
TEST(Synth, GeneratingAndWritingReportProgressToTheEnd) {
  SynthOptions o;
  o.jobs = 300;
  o.seed = 5;
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> calls;
  const ProgressFn progress = [&](std::string_view stage, size_t done, size_t total) {
    calls[std::string(stage)].emplace_back(done, total);
  };
  auto jobs = generate_trace(o, progress);
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  char tmpl[] = "/tmp/peakcast_synth_XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_TRUE(write_trace_jsonl(*jobs, tmpl, progress).is_ok());
  std::remove(tmpl);
  ASSERT_EQ(calls.size(), 2u);
  for (const char* stage : {"generate jobs", "write jobs"}) {
    const auto& c = calls[stage];
    ASSERT_GE(c.size(), 2u) << stage;
    for (size_t i = 0; i < c.size(); ++i) {
      EXPECT_EQ(c[i].second, 300u) << stage;
      EXPECT_LE(c[i].first, c[i].second) << stage;
      if (i > 0) {
        EXPECT_GE(c[i].first, c[i - 1].first) << stage;
      }
    }
    EXPECT_EQ(c.back().first, 300u) << stage;
  }
  std::vector<std::string> a, b;
  for (const Job& j : *jobs) a.push_back(ingest::job_to_jsonl_line(j));
  for (const Job& j : make(300, 5)) b.push_back(ingest::job_to_jsonl_line(j));
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace peakcast::synth
