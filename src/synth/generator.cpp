// The event loop of the synthetic trace (docs/synth.md): users arrive, pick or write a script,
// sometimes edit it or fix it after an OOM, submit alone or in bursts; each run's outcome follows
// the family formula times per-script and per-run noise, bounded by what was requested.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "peakcast/ingest/redact.h"
#include "peakcast/synth/synth.h"
#include "synth/families_tables.h"
#include "synth/model.h"

namespace peakcast::synth {
namespace {

constexpr double kDay = 86400.0;

struct Script {
  Args args;
  Request req;
  int user = 0;        // who submits it
  int style_user = 0;  // whose habits the text follows (differs for a copied lab script)
  int variant = 0;     // cosmetic choices (learning rate, epochs) fixed per script
  double quirk_mem = 1.0;   // what the formula misses for this script (same on every run)
  double quirk_vram = 1.0;
  int pending_oom = 0;      // 1: host memory, 2: GPU memory; the next pick fixes it
  std::string text;
  std::string identity;     // workload identity when scripts are left out
};

// Relative submission rate by hour of day and weekday (UTC): a daytime peak around 14:00 and
// quieter weekends.
double submit_rate(double t) {
  const double hour = std::fmod(t / 3600.0, 24.0);
  const auto days = static_cast<int64_t>(std::floor(t / kDay));
  const int64_t dow = ((days + 3) % 7 + 7) % 7;  // 1970-01-01 was a Thursday; Monday = 0
  const double weekday = dow >= 5 ? 0.45 : 1.0;
  return weekday * (0.35 + 1.3 * std::exp(-std::pow((hour - 14.0) / 4.5, 2.0)));
}

double mean_submit_rate() {
  double sum = 0;
  const int n = 7 * 24 * 4;
  for (int i = 0; i < n; ++i) sum += submit_rate(i * 900.0);
  return sum / n;
}

const std::array<std::string_view, 24> kFirst = {"a", "b", "c", "d", "e", "f", "g", "h",
                                                 "i", "j", "k", "l", "m", "n", "o", "p",
                                                 "r", "s", "t", "v", "w", "x", "y", "z"};
const std::array<std::string_view, 24> kLast = {
    "smith", "lee",   "garcia", "kumar",   "chen",  "novak", "okafor", "silva",
    "muller", "rossi", "tanaka", "nguyen", "kowal", "haddad", "berg",  "ivanova",
    "moreau", "khan",  "larsen", "costa",  "yilmaz", "park", "dubois", "sato"};
const std::array<std::string_view, 5> kGroups = {"vision", "nlp", "genomics", "biophys", "dataeng"};
const std::array<std::string_view, 6> kEnvs = {"torch", "ml", "py311", "research", "env", "work"};

class Generator {
 public:
  Generator(const SynthOptions& o, const ProgressFn& progress) : o_(o), progress_(progress), rng_(o.seed) {}

  std::vector<Job> run() {
    make_users();
    // Events are spaced so that the jobs fill about `days`: the gap uses the running number of
    // jobs per event (bursts and arrays), started from a prior of 2.
    const double rate_norm = mean_submit_rate();
    double t = static_cast<double>(o_.start_time);
    double events = 0;
    while (jobs_.size() < o_.jobs) {
      const double per_event = (static_cast<double>(jobs_.size()) + 20.0) / (events + 10.0);
      const double mean_gap = o_.days * kDay * per_event / static_cast<double>(o_.jobs);
      t += rng_.exponential(mean_gap) / (submit_rate(t) / rate_norm);
      submit_event(t);
      events += 1;
      if (progress_) progress_("generate jobs", std::min(jobs_.size(), o_.jobs), o_.jobs);
    }
    std::stable_sort(jobs_.begin(), jobs_.end(),
                     [](const Job& a, const Job& b) { return a.submit_ms < b.submit_ms; });
    for (size_t i = 0; i < jobs_.size(); ++i) jobs_[i].job_id = std::to_string(1000000 + i);
    return std::move(jobs_);
  }

 private:
  // ---------------------------------------------------------------- users

  void make_users() {
    const int n = o_.users;
    const int late_from = std::max(1, static_cast<int>(std::lround(n * (1.0 - o_.late_user_share))));
    std::map<std::string, int> seen;
    for (int i = 0; i < n; ++i) {
      User u;
      std::string base = std::string(rng_.pick(std::vector<std::string_view>(kFirst.begin(), kFirst.end()))) +
                         std::string(rng_.pick(std::vector<std::string_view>(kLast.begin(), kLast.end())));
      int dup = seen[base]++;
      u.name = dup == 0 ? base : fmt::format("{}{}", base, dup + 1);
      u.email = u.name + "@cs.example.edu";
      u.join_day = i < late_from ? 0.0 : rng_.uniform(0.05, 0.85) * o_.days;
      u.activity = rng_.lognormal(1.0, 1.0);
      if (rng_.bernoulli(o_.gpu_user_share)) {
        u.families = {static_cast<int>(Family::kImageTraining), static_cast<int>(Family::kLlmFinetune),
                      static_cast<int>(Family::kFeatureEtl)};
        const double img = rng_.uniform(0.1, 0.9);
        u.family_weights = {img, 1.0 - img, rng_.bernoulli(0.2) ? 0.15 : 0.0};
      } else {
        u.families = {static_cast<int>(Family::kAlignment), static_cast<int>(Family::kMolecularDynamics),
                      static_cast<int>(Family::kFeatureEtl)};
        u.family_weights = {0, 0, 0};
        u.family_weights[rng_.weighted({0.25, 0.4, 0.35})] = 1.0;  // alignment runs as arrays
        if (rng_.bernoulli(0.3)) u.family_weights[static_cast<size_t>(rng_.uniform_int(0, 2))] += 0.4;
      }
      const size_t primary = static_cast<size_t>(
          std::max_element(u.family_weights.begin(), u.family_weights.end()) - u.family_weights.begin());
      const auto fam = static_cast<Family>(u.families[primary]);
      const std::string_view group = fam == Family::kImageTraining       ? kGroups[0]
                                     : fam == Family::kLlmFinetune       ? kGroups[1]
                                     : fam == Family::kAlignment         ? kGroups[2]
                                     : fam == Family::kMolecularDynamics ? kGroups[3]
                                                                         : kGroups[4];
      u.account = fmt::format("grp-{}-{}", group, rng_.bernoulli(0.5) ? "a" : "b");
      u.env = std::string(rng_.pick(std::vector<std::string_view>(kEnvs.begin(), kEnvs.end())));
      u.mail = rng_.bernoulli(0.4);
      u.mem_style = rng_.bernoulli(0.2) ? 1 : 0;
      if (rng_.bernoulli(0.3)) {
        static constexpr std::string_view kAlnum =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        u.hf_token = "hf_";
        for (int k = 0; k < 34; ++k) u.hf_token += kAlnum[static_cast<size_t>(rng_.uniform_int(0, 61))];
      }
      u.inflation = rng_.bernoulli(0.1) ? rng_.lognormal(4.0, 0.3)
                                        : std::clamp(rng_.lognormal(1.7, 0.4), 1.0, 8.0);
      u.guess_sigma = rng_.uniform(0.15, 0.45);
      u.time_inflation = rng_.uniform(1.5, 5.0);
      u.fixed_request = rng_.bernoulli(0.25);
      u.prefers_big_gpu = rng_.bernoulli(0.35);
      u.env_overhead_gib = rng_.exponential(0.5);
      u.new_script_prob = std::min(0.5, o_.new_script_prob * rng_.lognormal(1.0, 0.5));
      u.edit_prob = std::min(0.8, o_.edit_prob * rng_.lognormal(1.0, 0.4));
      u.update_request_prob = rng_.uniform(0.2, 0.8);
      mem_per_cpu_.push_back(rng_.bernoulli(0.5));
      users_.push_back(std::move(u));
    }
    user_scripts_.assign(static_cast<size_t>(n), {});
    current_.assign(static_cast<size_t>(n), -1);
    fixed_mem_.assign(static_cast<size_t>(n), {});
  }

  // ---------------------------------------------------------------- requests

  double typical_input(const Args& a, double day) {
    switch (a.family) {
      case Family::kAlignment: return kAlignDatasets[static_cast<size_t>(a.dataset)].median_sample_gib;
      case Family::kFeatureEtl:
        return kEtlDatasets[static_cast<size_t>(a.dataset)].gib_first_year * std::pow(1.35, a.year) *
               (1.0 + 0.004 * day);
      default: return 0.0;
    }
  }

  Request make_request(const Args& a, int ui, double day) {
    const User& u = users_[static_cast<size_t>(ui)];
    const Expected e = expected_usage(a, typical_input(a, day));
    Request r;
    r.gpus = is_gpu(a.family) ? a.gpus : 0;
    switch (a.family) {
      case Family::kLlmFinetune: r.cpus = 8 * a.gpus; break;
      default: r.cpus = a.threads; break;
    }
    const double guess = (e.mem_gib + u.env_overhead_gib) * rng_.lognormal(1.0, u.guess_sigma);
    r.mem_gib = nice_mem_gib(guess * u.inflation);
    auto& fixed = fixed_mem_[static_cast<size_t>(ui)];
    const int fam = static_cast<int>(a.family);
    if (u.fixed_request) {
      if (auto it = fixed.find(fam); it != fixed.end()) {
        r.mem_gib = it->second;
      } else {
        fixed[fam] = r.mem_gib;
      }
    }
    if (a.family == Family::kMolecularDynamics && mem_per_cpu_[static_cast<size_t>(ui)]) {
      r.mem_per_cpu = true;
      r.mem_gib = std::ceil(r.mem_gib / r.cpus) * r.cpus;  // whole GiB per CPU
    }
    if (is_gpu(a.family)) {
      const double vram_guess = e.vram_gib_per_gpu * rng_.lognormal(1.0, 0.25);
      const bool big = u.prefers_big_gpu || vram_guess > 38.0;
      r.partition = big ? "gpu-a100-80" : "gpu-a100-40";
      r.gpu_mem_gib = big ? 80.0 : 40.0;
      r.mem_gib = std::min(r.mem_gib, 480.0);
    } else {
      r.partition = r.mem_gib > 250.0 ? "bigmem" : "cpu";
      r.mem_gib = std::min(r.mem_gib, 1500.0);
    }
    r.time_s = nice_time_s(e.minutes * 60.0 * u.time_inflation * rng_.lognormal(1.0, 0.3));
    return r;
  }

  // ---------------------------------------------------------------- scripts

  int add_script(Script s) {
    const User& style = users_[static_cast<size_t>(s.style_user)];
    User as = style;  // the style owner's habits, the submitting user's identity
    const User& me = users_[static_cast<size_t>(s.user)];
    as.name = me.name;
    as.email = me.email;
    as.hf_token = style.hf_token.empty() ? std::string() : me.hf_token.empty() ? style.hf_token : me.hf_token;
    s.text = render_script(s.args, s.req, as, s.variant);
    const std::string key = ingest::script_sha256(s.text);
    s.identity = job_name_for(s.args) + "@" + key.substr(0, 12);
    scripts_.push_back(std::move(s));
    const int id = static_cast<int>(scripts_.size()) - 1;
    user_scripts_[static_cast<size_t>(scripts_.back().user)].push_back(id);
    current_[static_cast<size_t>(scripts_.back().user)] = id;
    return id;
  }

  int new_script(int ui, double day) {
    const User& u = users_[static_cast<size_t>(ui)];
    // A lab-mate's script, adapted to this user's paths and address (same hash once redacted).
    if (rng_.bernoulli(0.15)) {
      std::vector<int> candidates;
      for (size_t j = 0; j < users_.size(); ++j) {
        if (static_cast<int>(j) == ui || users_[j].account != u.account) continue;
        for (int sid : user_scripts_[j]) candidates.push_back(sid);
      }
      if (!candidates.empty()) {
        Script s = scripts_[static_cast<size_t>(rng_.pick(candidates))];
        s.user = ui;
        s.pending_oom = 0;
        return add_script(std::move(s));
      }
    }
    Script s;
    s.user = s.style_user = ui;
    s.args = sample_args(static_cast<Family>(u.families[rng_.weighted(u.family_weights)]), rng_);
    s.req = make_request(s.args, ui, day);
    s.variant = static_cast<int>(rng_.uniform_int(0, 5));
    s.quirk_mem = rng_.lognormal(1.0, 0.08);
    s.quirk_vram = rng_.lognormal(1.0, 0.03);
    return add_script(std::move(s));
  }

  // An edited copy: new arguments; the request follows the new arguments or stays as it was.
  int edited(int sid, const Args& args, int ui, double day, bool allow_request_update) {
    Script s = scripts_[static_cast<size_t>(sid)];
    s.args = args;
    s.user = ui;
    s.pending_oom = 0;
    s.quirk_mem *= rng_.lognormal(1.0, 0.03);
    s.quirk_vram *= rng_.lognormal(1.0, 0.01);
    const User& u = users_[static_cast<size_t>(ui)];
    if (allow_request_update && !u.fixed_request && rng_.bernoulli(u.update_request_prob)) {
      s.req = make_request(args, ui, day);
    }
    return add_script(std::move(s));
  }

  // After an OOM the user raises the request (host memory) or moves to 80 GB cards / shrinks the
  // batch (GPU memory).
  int fixed_after_oom(int sid, int ui) {
    Script s = scripts_[static_cast<size_t>(sid)];
    const int kind = s.pending_oom;
    scripts_[static_cast<size_t>(sid)].pending_oom = 0;
    s.pending_oom = 0;
    if (kind == 1) {
      const double cap = is_gpu(s.args.family) ? 480.0 : 1500.0;
      s.req.mem_gib = std::min(cap, nice_mem_gib(s.req.mem_gib * 2.0));
      if (!is_gpu(s.args.family) && s.req.mem_gib > 250.0) s.req.partition = "bigmem";
      if (s.req.mem_per_cpu) s.req.mem_gib = std::ceil(s.req.mem_gib / s.req.cpus) * s.req.cpus;
      if (users_[static_cast<size_t>(ui)].fixed_request) {
        fixed_mem_[static_cast<size_t>(ui)][static_cast<int>(s.args.family)] = s.req.mem_gib;
      }
    } else if (s.req.gpu_mem_gib < 80.0) {
      s.req.partition = "gpu-a100-80";
      s.req.gpu_mem_gib = 80.0;
    } else if (s.args.family == Family::kImageTraining && s.args.batch > 16) {
      s.args.batch /= 2;
    } else if (s.args.family == Family::kLlmFinetune && !s.args.checkpointing) {
      s.args.checkpointing = true;
    } else if (s.args.family == Family::kLlmFinetune && s.args.batch > 1) {
      s.args.batch /= 2;
    } else {
      s.args = edit_args(s.args, rng_);
    }
    s.user = ui;
    return add_script(std::move(s));
  }

  int choose_script(int ui, double day) {
    const User& u = users_[static_cast<size_t>(ui)];
    const auto& mine = user_scripts_[static_cast<size_t>(ui)];
    if (mine.empty() || rng_.bernoulli(u.new_script_prob)) return new_script(ui, day);
    int sid = current_[static_cast<size_t>(ui)];
    if (sid < 0 || rng_.bernoulli(0.25)) {
      const size_t recent = std::min<size_t>(6, mine.size());
      sid = mine[mine.size() - 1 - static_cast<size_t>(rng_.uniform_int(0, recent - 1))];
    }
    if (scripts_[static_cast<size_t>(sid)].pending_oom != 0) return fixed_after_oom(sid, ui);
    if (rng_.bernoulli(u.edit_prob)) {
      return edited(sid, edit_args(scripts_[static_cast<size_t>(sid)].args, rng_), ui, day, true);
    }
    current_[static_cast<size_t>(ui)] = sid;
    return sid;
  }

  // ---------------------------------------------------------------- events and runs

  void submit_event(double t) {
    const double day = (t - static_cast<double>(o_.start_time)) / kDay;
    std::vector<double> w(users_.size());
    bool any = false;
    for (size_t i = 0; i < users_.size(); ++i) {
      w[i] = users_[i].join_day <= day ? users_[i].activity : 0.0;
      any = any || w[i] > 0;
    }
    if (!any) w[0] = 1.0;
    const int ui = static_cast<int>(rng_.weighted(w));
    int sid = choose_script(ui, day);
    const Family fam = scripts_[static_cast<size_t>(sid)].args.family;

    // Alignment scripts are job arrays; otherwise a burst is either an array of identical runs
    // or a sweep over the family's main size argument (edited copies, same request).
    int k = 1;
    bool sweep = false;
    if (fam == Family::kAlignment) {
      // Reruns or an array of 2-8 tasks: within its %8 throttle, so the tasks start together.
      k = rng_.bernoulli(0.5) ? 1 : static_cast<int>(rng_.uniform_int(2, 8));
    } else if (rng_.bernoulli(o_.burst_prob)) {
      k = 1 + rng_.geometric(7.0);
      sweep = rng_.bernoulli(0.4);
      if (sweep) k = std::min(k, 5);
    }
    k = static_cast<int>(std::min<size_t>(static_cast<size_t>(k), o_.jobs - jobs_.size()));
    double submit = t;
    for (int i = 0; i < k; ++i) {
      if (i > 0) {
        if (fam != Family::kAlignment) submit += rng_.uniform(0.0, 3.0);  // sbatch in a loop
        if (sweep) {
          const Args next = sweep_next(scripts_[static_cast<size_t>(sid)].args);
          const Args& cur = scripts_[static_cast<size_t>(sid)].args;
          const bool moved = next.batch != cur.batch || next.seq_len != cur.seq_len ||
                             next.threads != cur.threads || next.year != cur.year;
          if (moved) sid = edited(sid, next, ui, day, false);
        }
      }
      run_job(sid, submit, day);
    }
  }

  // The request in bytes exactly as the script text says it ("32G" is 32 GiB, "32000M" is
  // 32000 MiB; --mem-per-cpu times the CPUs).
  static uint64_t request_bytes(const Request& r, const User& u) {
    const uint64_t unit = u.mem_style == 1 ? 1000ULL * 1024ULL * 1024ULL : 1024ULL * 1024ULL * 1024ULL;
    if (r.mem_per_cpu) {
      const auto per_cpu = static_cast<uint64_t>(std::llround(r.mem_gib / r.cpus));
      return per_cpu * unit * static_cast<uint64_t>(r.cpus);
    }
    return static_cast<uint64_t>(std::llround(r.mem_gib)) * unit;
  }

  void run_job(int sid, double submit, double day) {
    Script& sc = scripts_[static_cast<size_t>(sid)];
    const User& u = users_[static_cast<size_t>(sc.user)];
    const Args& a = sc.args;
    const Request& r = sc.req;
    const double input = draw_input_gib(a, day, rng_);
    const Expected e = expected_usage(a, input);
    static constexpr std::array<double, kNumFamilies> kRunSigma = {0.04, 0.03, 0.06, 0.03, 0.05};
    double mem = (e.mem_gib + u.env_overhead_gib) * sc.quirk_mem *
                 rng_.lognormal(1.0, kRunSigma[static_cast<size_t>(a.family)]);
    double vram = e.vram_gib_per_gpu * sc.quirk_vram * rng_.lognormal(1.0, 0.015);
    double runtime = std::max(20.0, e.minutes * 60.0 * rng_.lognormal(1.0, 0.25));

    Job j;
    j.user = u.name;
    j.state = "COMPLETED";
    j.req_mem_bytes = request_bytes(r, u);
    const double limit_gib = static_cast<double>(*j.req_mem_bytes) / kGiB;
    const bool gpu = r.gpus > 0;
    if (mem > limit_gib) {  // the cgroup limit kills the job at its request
      j.state = "OUT_OF_MEMORY";
      mem = limit_gib;
      if (gpu) vram = std::min(vram, r.gpu_mem_gib) * rng_.uniform(0.5, 1.0);
      runtime *= rng_.uniform(0.05, 0.6);
      sc.pending_oom = 1;
    } else if (gpu && vram > r.gpu_mem_gib) {  // CUDA out of memory: the program fails
      j.state = "FAILED";
      vram = r.gpu_mem_gib;
      mem *= rng_.uniform(0.5, 0.9);
      runtime = rng_.uniform(30.0, 300.0);
      sc.pending_oom = 2;
    } else if (rng_.bernoulli(0.025)) {  // a bug or a missing file
      j.state = "FAILED";
      runtime = std::max(5.0, runtime * rng_.uniform(0.005, 0.2));
      const double f = rng_.uniform(0.05, 0.7);
      mem *= f;
      vram *= f;
    } else if (rng_.bernoulli(0.015)) {
      j.state = "CANCELLED";
      runtime = std::max(5.0, runtime * rng_.uniform(0.02, 1.0));
      const double f = rng_.uniform(0.3, 1.0);
      mem *= f;
      vram *= f;
    }
    if (j.state == "OUT_OF_MEMORY") {
      // Killed where its memory crossed the request: within the walltime (the limit that fired
      // is the memory one, so the state, the censored label and the user's fix stay together).
      runtime = std::min(runtime, static_cast<double>(r.time_s));
    } else if (runtime > static_cast<double>(r.time_s)) {
      j.state = "TIMEOUT";
      runtime = static_cast<double>(r.time_s);
    }
    const double wait_median = 45.0 * (1.0 + 3.0 * r.gpus) * std::pow(std::max(1, r.cpus) / 8.0, 0.3);
    double wait = std::min(3.0 * kDay, rng_.lognormal(wait_median, 1.2));

    // Whole seconds, as a scheduler's accounting records them.
    j.submit_ms = static_cast<int64_t>(std::floor(submit)) * kMsPerSecond;
    j.start_ms = j.submit_ms + static_cast<int64_t>(std::llround(wait)) * kMsPerSecond;
    j.end_ms = *j.start_ms + std::max<int64_t>(1, std::llround(runtime)) * kMsPerSecond;
    j.req_cpus = r.cpus;
    j.req_gpus = r.gpus;
    j.req_time_s = r.time_s;
    if (gpu) j.gpu_mem_bytes = static_cast<uint64_t>(std::llround(r.gpu_mem_gib * kGiB));
    if (o_.include_scripts) {
      j.script = sc.text;
    } else {
      j.workload = sc.identity;
    }
    j.job_name = job_name_for(a);
    j.partition = r.partition;
    j.account = u.account;
    if (input > 0) j.input_bytes = static_cast<uint64_t>(std::llround(input * kGiB));
    if (!rng_.bernoulli(0.005)) {  // accounting gaps: no measurement
      j.peak_mem_bytes = static_cast<uint64_t>(std::llround(mem * kGiB));
      if (gpu) j.peak_vram_bytes = static_cast<uint64_t>(std::llround(vram * r.gpus * kGiB));
    }
    j.script_key = o_.include_scripts ? ingest::script_sha256(*j.script) : ingest::workload_key(*j.workload);
    compute_labels(j, 1.0);
    jobs_.push_back(std::move(j));
  }

  const SynthOptions& o_;
  const ProgressFn& progress_;
  Rng rng_;
  std::vector<User> users_;
  std::vector<bool> mem_per_cpu_;
  std::vector<Script> scripts_;
  std::vector<std::vector<int>> user_scripts_;
  std::vector<int> current_;
  std::vector<std::map<int, double>> fixed_mem_;
  std::vector<Job> jobs_;
};

}  // namespace

Status validate(const SynthOptions& o) {
  if (o.users < 1) return Status::invalid("users: must be at least 1");
  // The whole trace is built in memory (about 4 KB a job with its script, 0.7 KB a user).
  if (o.users > kMaxUsers) {
    return Status::invalid(fmt::format("users: must be at most {}, got {}", kMaxUsers, o.users));
  }
  if (o.jobs > kMaxJobs) {
    return Status::invalid(fmt::format("jobs: must be at most {} (the trace is built in memory, "
                                       "about 4 KB a job), got {}", kMaxJobs, o.jobs));
  }
  if (!(o.days > 0)) return Status::invalid("days: must be positive");
  // Every timestamp must stay one the readers take back (ingest/bounds.h: epoch seconds up to
  // 1e11) and fit int64 ms: submissions run to about twice `days` past the start, then waits of up
  // to 3 days and runs of up to a week. A century from a start before 2286 stays far inside.
  if (!(o.days <= kMaxDays)) {
    return Status::invalid(fmt::format("days: must be at most {} (a century), got {}", kMaxDays, o.days));
  }
  if (o.start_time < 0 || o.start_time > kMaxStartTime) {
    return Status::invalid(fmt::format("start_time: must be epoch seconds in [0, {}], got {}",
                                       kMaxStartTime, o.start_time));
  }
  const std::pair<const char*, double> probs[] = {
      {"gpu_user_share", o.gpu_user_share}, {"late_user_share", o.late_user_share},
      {"burst_prob", o.burst_prob},         {"new_script_prob", o.new_script_prob},
      {"edit_prob", o.edit_prob}};
  for (auto [name, p] : probs) {
    if (!(p >= 0.0 && p <= 1.0)) return Status::invalid(std::string(name) + ": must be in [0, 1]");
  }
  return {};
}

Result<std::vector<Job>> generate_trace(const SynthOptions& o, const ProgressFn& progress) {
  if (Status s = validate(o); !s) return s;
  return Generator(o, progress).run();
}

}  // namespace peakcast::synth
