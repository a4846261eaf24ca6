#include "peakcast/serve/service.h"

#include <algorithm>
#include <optional>
#include <vector>
#include <chrono>
#include <deque>
#include <limits>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "peakcast/core/log.h"
#include "peakcast/ingest/redact.h"
#include "peakcast/sizing/recommend.h"
#include "peakcast/sizing/sim_task.h"
#include "peakcast/sizing/warm_runs.h"

namespace peakcast::serve {
namespace {

using nlohmann::json;

Reply json_reply(int status, const json& j) {
  // Strings we echo (job ids, users) passed UTF-8 validation; replace keeps dump() total anyway.
  return Reply{status, j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json"};
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

json opt_json(const auto& v) { return v ? json(*v) : json(nullptr); }

json stats_json(const history::KeyStats& s) {
  json j = {{"count", s.count}};
  if (s.count > 0) {
    for (history::Expert e : history::kExperts) {
      j[std::string(history::expert_name(e))] = s.expert[static_cast<int>(e)];
    }
    j["mad"] = s.mad;
    j["age_last_s"] = s.age_last_s;
    j["censored_recent"] = s.censored_recent;
  }
  return j;
}

json row_json(const Job& j) {
  return {{"job_id", j.job_id},
          {"user", j.user},
          {"script_sha256", j.script_key},
          {"submit_time", seconds_from_ms(j.submit_ms)},
          {"end_time", seconds_from_ms(j.end_ms)},
          {"state", j.state},
          {"req_mem_bytes", opt_json(j.req_mem_bytes)},
          {"ran_mem_bytes", opt_json(j.ran_mem_bytes)},
          {"req_gpus", opt_json(j.req_gpus)},
          {"peak_mem_bytes", opt_json(j.peak_mem_bytes)},
          {"peak_vram_bytes", opt_json(j.peak_vram_bytes)},
          {"mem_util", j.valid[0] ? json(j.util[0]) : json(nullptr)},
          {"vram_util", j.valid[1] ? json(j.util[1]) : json(nullptr)},
          {"censored", j.censored},
          // the answer it was matched to by id (the hook's comment), where it carried one
          {"answer_id", j.answer_id.empty() ? json(nullptr) : json(j.answer_id)}};
}

// The fields of a stored completion that differ from a new one with the same job_id (the script
// is compared through its key; x_ keys are not stored; answer_id is how it was matched, not what
// the job was, and is not compared).
std::vector<std::string> differing_fields(const Job& a, const Job& b) {
  std::vector<std::string> out;
  auto cmp = [&out](const char* name, const auto& x, const auto& y) {
    if (!(x == y)) out.emplace_back(name);
  };
  cmp("user", a.user, b.user);
  cmp("script", a.script_key, b.script_key);
  // Times at whole seconds, as the store tells runs apart (store.h): sacct's and a client's
  // milliseconds of the same run are the same times (epoch times here are >= 0: readers refuse others).
  const auto second = [](int64_t ms) { return ms / kMsPerSecond; };
  const auto opt_second = [&](const std::optional<int64_t>& ms) {
    return ms ? std::optional<int64_t>(second(*ms)) : std::nullopt;
  };
  cmp("submit_time", second(a.submit_ms), second(b.submit_ms));
  cmp("start_time", opt_second(a.start_ms), opt_second(b.start_ms));
  cmp("end_time", second(a.end_ms), second(b.end_ms));
  cmp("state", a.state, b.state);
  cmp("req_cpus", a.req_cpus, b.req_cpus);
  // The memory limit as the completion reported it: where the daemon learned a lowered job at its
  // user's request (Job::ran_mem_bytes), the limit it ran under.
  const auto reported_mem = [](const Job& j) { return j.ran_mem_bytes ? j.ran_mem_bytes : j.req_mem_bytes; };
  cmp("req_mem_bytes", reported_mem(a), reported_mem(b));
  cmp("req_gpus", a.req_gpus, b.req_gpus);
  cmp("req_time_s", a.req_time_s, b.req_time_s);
  cmp("gpu_mem_bytes", a.gpu_mem_bytes, b.gpu_mem_bytes);
  cmp("peak_mem_bytes", a.peak_mem_bytes, b.peak_mem_bytes);
  cmp("peak_vram_bytes", a.peak_vram_bytes, b.peak_vram_bytes);
  // The store keeps the name and workload redacted: compare them so (redaction is idempotent).
  auto redacted = [](const std::optional<std::string>& w) {
    return w ? std::optional<std::string>(ingest::redact_script(*w)) : std::nullopt;
  };
  cmp("job_name", ingest::redact_script(a.job_name), ingest::redact_script(b.job_name));
  cmp("partition", a.partition, b.partition);
  cmp("account", a.account, b.account);
  cmp("workload", redacted(a.workload), redacted(b.workload));
  return out;
}

}  // namespace

Service::Service(std::shared_ptr<const cascade::Predictor> predictor,
                 std::unique_ptr<CompletionStore> store, ServiceOptions options)
    : Service(predictor ? std::make_shared<ModelSlot>(std::move(predictor)) : nullptr,
              std::move(store), std::move(options)) {}

Service::Service(std::shared_ptr<ModelSlot> model, std::unique_ptr<CompletionStore> store,
                 ServiceOptions options)
    : model_(std::move(model)), store_(std::move(store)), options_(std::move(options)) {
  if (!model_ || !store_) throw std::invalid_argument("Service: predictor and store required");
  // A reload keeps util_cap (ModelSlot refuses a model with another), so the limits hold.
  options_.limits.util_cap = model_->get()->util_cap();
  options_.sizing.util_cap = options_.limits.util_cap;
  // Under --history-days a script's policy learns no older run either (--sizing-days may say less).
  int64_t& max_age = options_.sizing.workloads.max_age_ms;
  if (options_.history_days > 0) {
    const int64_t history_ms = options_.history_days * kMsPerDay;
    max_age = max_age > 0 ? std::min(max_age, history_ms) : history_ms;
  }
  sizing_ = std::make_unique<SizingState>(options_.sizing);
}

int64_t Service::now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {
// What a storage error says is wrong, without the job that met it ("storing job 17: disk is
// full" -> "storing job: disk is full"): the log gets a line per change of cause, not one per
// refused completion while the disk stays full.
std::string storage_cause(const std::string& message) {
  static constexpr std::string_view kJob = "storing job ";
  const size_t at = message.find(kJob);
  if (at == std::string::npos) return message;
  const size_t colon = message.find(": ", at + kJob.size());
  if (colon == std::string::npos) return message;
  return message.substr(0, at + kJob.size() - 1) + message.substr(colon);
}

// Keeps in `last` the failure a kind of write reported (empty once one succeeds): logs `failing`
// with the message when the cause changes, and `recovered` when writes succeed again.
void note_write(const Status& s, std::string& last, LogLevel level, const std::string& failing,
                const std::string& recovered) {
  if (s.is_ok()) {
    if (!last.empty()) log(LogLevel::kInfo, recovered);
    last.clear();
    return;
  }
  if (storage_cause(last) != storage_cause(s.message())) log(level, failing + s.message());
  last = s.message();
}
}  // namespace

void Service::note_storage(const Status& s) {
  std::lock_guard lock(storage_mu_);
  if (!s.is_ok()) metrics_.count_storage_error();
  note_write(s, storage_error_, LogLevel::kError, "storage: completions refused: ", "storage: writes succeed again");
}

namespace {
// The earliest submit time of a completion that can match one of `answers` (none: the latest).
int64_t earliest_match_ms(const std::vector<AnswerRecord>& answers) {
  constexpr int64_t kEarliest = std::numeric_limits<int64_t>::min();
  int64_t out = std::numeric_limits<int64_t>::max();
  for (const AnswerRecord& r : answers) {
    const int64_t t = r.answer.submit_ms;
    out = std::min(out, t > kEarliest + SizingState::kIssuedMatchMs ? t - SizingState::kIssuedMatchMs : kEarliest);
  }
  return out;
}
}  // namespace

void Service::note_answer_storage(const Status& s) {
  std::lock_guard lock(storage_mu_);
  note_write(s, answer_error_, LogLevel::kWarn,
             "storage: answers not kept (still answered; a job the hook lowers is learned at its lowered request "
             "if the daemon restarts before it completes): ",
             "storage: answers are kept again");
}

Status Service::rebuild() {
  std::unique_lock lock(history_mu_);
  history_ = history::HistoryStore(/*track_ids=*/false);  // each stored completion once, even on a second call
  // The answers on record first: the completions submitted since the oldest of them say which
  // were matched before the restart.
  std::vector<AnswerRecord> answers;
  if (Status a = store_->for_each_answer([&answers](AnswerRecord&& r) { answers.push_back(std::move(r)); }); !a) {
    return a;
  }
  const int64_t answered_since = earliest_match_ms(answers);
  std::vector<Job> matched;  // user, script_key, job_name, answer_id and submit time of those completions
  // for_each visits in end-time order: the last rebuild_jobs visited are the most recent.
  std::deque<Job> recent;
  // The scripts' sizing policies: each script's most recent runs, the most recently active first.
  sizing::WarmRuns warm(options_.sizing.workloads, now() * kMsPerSecond);
  const bool warm_policies = options_.sizing.workloads.max_workloads > 0;
  const auto visit = [this, &recent, &matched, &warm, warm_policies, answered_since](Job&& j) {
    if (j.submit_ms >= answered_since) {
      Job& m = matched.emplace_back();
      m.user = j.user;
      m.script_key = j.script_key;
      m.submit_ms = j.submit_ms;
      m.job_name = j.job_name;  // as stored: redacted
      m.answer_id = j.answer_id;
    }
    history_.add_completion(j);
    if (warm_policies) {
      if (std::optional<sizing::SimTask> t = sizing::learned_run(j)) warm.add(*t);
    }
    if (options_.sizing.rebuild_jobs == 0) return;
    recent.push_back(std::move(j));
    if (recent.size() > options_.sizing.rebuild_jobs) recent.pop_front();
  };
  Status s = options_.history_days > 0
                 ? store_->for_each_ended_since(history_horizon_ms(now()), visit)
                 : store_->for_each(visit);
  if (!s) return s;
  // Before the watermark moves, every past submission can still be queried exactly. The bound
  // is rebuilt as `evaluate` walks: each job judged by the bound it would have been issued.
  const std::shared_ptr<const cascade::Predictor> model = model_->get();
  std::vector<SizingState::Completed> walked;
  walked.reserve(recent.size());
  for (const Job& j : recent) {
    if (!j.any_valid()) continue;
    walked.push_back({&j, model->predict(j, history_)});
  }
  sizing_->rebuild(std::move(walked));
  if (warm_policies) {
    const auto t0 = std::chrono::steady_clock::now();
    const size_t kept = sizing_->warm(warm);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    log(LogLevel::kInfo,
        fmt::format("sizing: {} script(s) with a policy of their own, learned from {} of {} stored run(s) "
                    "(--sizing-history {} a script, --sizing-rebuild-runs {} in all{}) in {} ms",
                    kept, warm.runs(), warm.seen(), options_.sizing.workloads.max_history,
                    options_.sizing.workloads.rebuild_runs,
                    options_.sizing.workloads.max_age_ms > 0
                        ? fmt::format(", those of the last {:.4g} day(s)", options_.sizing.workloads.max_age_days())
                        : std::string(),
                    ms.count()));
  }
  if (!answers.empty()) {
    const size_t on_record = answers.size();
    const size_t waiting = sizing_->load_answers(std::move(answers), matched);
    log(LogLevel::kInfo, "answers on record: " + std::to_string(on_record) + " read, " + std::to_string(waiting) +
                             " still waiting for their job's completion");
  }
  history_.advance_watermark((now() - options_.late_tolerance_s) * kMsPerSecond);
  last_sweep_s_ = now();  // it learned only the recent days already
  return Status::ok();
}

int64_t Service::history_horizon_ms(int64_t now_s) const {
  if (options_.history_days <= 0) return std::numeric_limits<int64_t>::min();
  return (now_s - options_.history_days * 86400) * kMsPerSecond;
}

void Service::forget_old_history(int64_t now_s) {
  const int64_t max_age = options_.sizing.workloads.max_age_ms;
  if (options_.history_days <= 0 && max_age <= 0) return;
  if (now_s - last_sweep_s_ < options_.history_sweep_s) return;
  last_sweep_s_ = now_s;
  if (max_age > 0) {
    const sizing::WorkloadSizer::Aged a = sizing_->age_workloads(now_s * kMsPerSecond);
    if (a.forgotten > 0 || a.handed_over > 0) {
      log(LogLevel::kInfo, fmt::format("sizing: forgot the policies of {} script(s) whose last run ended more than "
                                       "{:.4g} day(s) ago, and {} policy(ies) now answer from the runs since "
                                       "(--sizing-days, --history-days)",
                                       a.forgotten, options_.sizing.workloads.max_age_days(), a.handed_over));
    }
  }
  if (options_.history_days <= 0) return;
  const size_t keys = history_.key_count();
  const int64_t horizon = history_horizon_ms(now_s);
  const history::HistoryStore::Forgotten f = history_.forget_before(horizon);
  if (f.labels > 0) {
    log(LogLevel::kInfo, "history: forgot " + std::to_string(f.labels) + " label(s) of runs that ended more than " +
                             std::to_string(options_.history_days) + " day(s) ago (--history-days), and " +
                             std::to_string(f.keys) + " of " + std::to_string(keys) +
                             " script and user key(s) left with none");
  }
}

void Service::observe_bound(const cascade::Predictor& model, const Job& job) {
  if (!job.any_valid()) return;
  if (job.submit_ms < history_.watermark()) {
    // Its own history is folded: no exact prediction at its submission for the bound to judge.
    // Its script's sizing policy needs none, and learns the run, as a restart would.
    sizing_->observe_unjudged(job);
    return;
  }
  sizing_->observe(job, model.predict(job, history_));
}

Service::TrailingOom Service::trailing_oom(const Job& job) {
  if (job.script_key.empty()) return {};
  auto rows = store_->recent(HistoryFilter{"", job.script_key}, history::kWindow);
  if (!rows) return {};  // a prediction does not fail for it; the bound still holds
  std::vector<const Job*> known;  // newest first
  for (const Job& j : *rows) {
    if (j.end_ms < job.submit_ms) known.push_back(&j);  // else not known at this submission
  }
  return {sizing::trailing_oom_request(known), sizing::trailing_oom_lowered(known)};
}

size_t Service::history_size() const {
  std::shared_lock lock(history_mu_);
  return history_.size();
}

Reply Service::error(const ApiError& e) const { return json_reply(http_status(e.kind), error_body(e)); }

Reply Service::predict(std::string_view body) {
  try {
    ParsedJob parsed = parse_job_body(body, BodyKind::kPredict, options_.limits);
    if (auto* e = std::get_if<ApiError>(&parsed)) return error(*e);
    Job& job = std::get<Job>(parsed);
    cascade::JobPrediction p;
    const std::shared_ptr<const cascade::Predictor> model = model_->get();  // kept across a swap
    bool oom_recent = false;
    {
      std::shared_lock lock(history_mu_);
      job.submit_ms = std::max(job.submit_ms, history_.watermark());
      p = model->predict(job, history_);
      oom_recent = history_.query(job, Resource::kMem).exact.censored_recent > 0;
    }
    metrics_.count_answer(Resource::kMem, p.mem);
    if (p.vram) metrics_.count_answer(Resource::kVram, *p.vram);
    const TrailingOom failed = oom_recent ? trailing_oom(job) : TrailingOom{};
    const SizingState::Applied applied = sizing_->apply(job, failed.limit, p, failed.lowered);
    // On record for a completion that arrives after a restart; answered even when not kept.
    note_answer_storage(store_->record_answer({job.user, job.script_key, applied.answered}));
    json answer = cascade::to_json(p);
    SizingState::annotate(applied, answer);
    return json_reply(200, answer);
  } catch (const std::exception& ex) {
    log(LogLevel::kError, std::string("predict: internal error: ") + ex.what());
    return error({ApiErrorKind::kInternal, "", std::string("internal error: ") + ex.what()});
  }
}

Result<bool> Service::add_completion(const Job& reported) {
  std::lock_guard order(complete_mu_);
  Job job = reported;
  sizing_->restore_request(job);  // a job the hook lowered is learned at its user's request
  Result<bool> stored = store_->insert(job);
  note_storage(stored.status());
  if (!stored) return stored;
  if (*stored) {
    {
      std::shared_lock lock(history_mu_);
      observe_bound(*model_->get(), job);  // before the history holds it (it is not visible anyway)
    }
    std::unique_lock lock(history_mu_);
    const int64_t t = now();
    // A run that ended before the --history-days horizon is stored but not learned, as a
    // restart would not load it.
    if (job.end_ms >= history_horizon_ms(t)) history_.add_completion(job);
    history_.advance_watermark((t - options_.late_tolerance_s) * kMsPerSecond);
    forget_old_history(t);
  }
  return stored;
}

// A finished job cannot have ended in the future (a day of clock skew allowed), nor started
// before it was submitted: stored, such a record would sit at the top of /v1/history and out of
// the history until its end time came (an end in the year 3000 never does).
std::optional<ApiError> Service::implausible_times(const Job& job) const {
  constexpr int64_t kSkewS = 86400;
  if (job.end_ms > (now() + kSkewS) * kMsPerSecond) {
    return ApiError{ApiErrorKind::kInvalidField, "end_time",
                    "end_time: " + std::to_string(job.end_ms / kMsPerSecond) +
                        " is more than a day after this daemon's clock (" + std::to_string(now()) +
                        "): a finished job's end is in the past"};
  }
  if (job.start_ms && *job.start_ms < job.submit_ms) {
    return ApiError{ApiErrorKind::kInvalidField, "start_time",
                    "start_time: before submit_time (" + std::to_string(*job.start_ms / kMsPerSecond) +
                        " < " + std::to_string(job.submit_ms / kMsPerSecond) + ")"};
  }
  return std::nullopt;
}

Reply Service::complete(std::string_view body) {
  try {
    ParsedJob parsed = parse_job_body(body, BodyKind::kComplete, options_.limits);
    if (auto* e = std::get_if<ApiError>(&parsed)) return error(*e);
    const Job& job = std::get<Job>(parsed);
    if (std::optional<ApiError> e = implausible_times(job)) return error(*e);
    Result<bool> stored = add_completion(job);
    if (!stored) {
      ApiError e = from_status(stored.status());
      if (e.kind != ApiErrorKind::kStorageUnavailable) e.kind = ApiErrorKind::kInternal;
      e.message = "completion not stored: " + e.message;
      return error(e);
    }
    if (!*stored) {
      // Idempotent only for the same content: a different job under a known id is refused.
      if (std::optional<ApiError> e = conflict(job)) return error(*e);
    }
    return json_reply(200, {{"job_id", job.job_id},
                            {"stored", *stored},
                            {"duplicate", !*stored},
                            {"labelled", {{"mem", job.valid[0]}, {"vram", job.valid[1]}}}});
  } catch (const std::exception& ex) {
    log(LogLevel::kError, std::string("complete: internal error: ") + ex.what());
    return error({ApiErrorKind::kInternal, "", std::string("internal error: ") + ex.what()});
  }
}

std::optional<ApiError> Service::conflict(const Job& job) {
  Result<std::optional<Job>> known = store_->find_run(job);  // the run it is (a requeue's next run is not)
  if (!known) {
    ApiError e = from_status(known.status());
    e.message = "completion " + job.job_id + ": already stored, but cannot be compared: " + e.message;
    return e;
  }
  if (!*known) return std::nullopt;
  const std::vector<std::string> fields = differing_fields(**known, job);
  if (fields.empty()) return std::nullopt;
  metrics_.count_conflict();
  std::string list;
  for (const std::string& f : fields) list += (list.empty() ? "" : ", ") + f;
  return ApiError{ApiErrorKind::kConflict, "job_id",
                  "job_id " + job.job_id + ": already stored with different content (" + list +
                      " differ); the stored completion is kept"};
}

Reply Service::history(const std::multimap<std::string, std::string>& params) {
  try {
    std::string user, script;
    for (const auto& [k, v] : params) {
      if (k == "user") user = v;
      else if (k == "script_sha256") script = v;
      else return error({ApiErrorKind::kInvalidField, k, k + ": unknown parameter (valid: user, script_sha256)"});
      if (params.count(k) > 1) return error({ApiErrorKind::kInvalidField, k, k + ": given more than once"});
    }
    if (user.empty() == script.empty()) {
      return error({ApiErrorKind::kInvalidField, "user",
                    "user, script_sha256: give exactly one of ?user=NAME or ?script_sha256=HEX"});
    }
    if (!script.empty() && !is_sha256_hex(script)) {
      return error({ApiErrorKind::kInvalidField, "script_sha256",
                    "script_sha256: expected 64 lower-case hex digits"});
    }
    if (!is_clean_utf8(user)) {
      return error({ApiErrorKind::kInvalidField, "user", "user: binary content is not accepted"});
    }
    json experts = json::object();
    {
      std::shared_lock lock(history_mu_);
      const int64_t t = std::max((now() + 1) * kMsPerSecond, history_.watermark());
      for (Resource r : kResources) {
        const history::HistoryView v = history_.query(script, user, t, r);
        experts[std::string(resource_name(r))] = stats_json(script.empty() ? v.user : v.exact);
      }
    }
    auto rows = store_->recent(HistoryFilter{user, script}, options_.history_rows);
    json jobs = json::array();
    std::string storage_note;
    if (rows) {
      for (const Job& j : *rows) jobs.push_back(row_json(j));
    } else {
      storage_note = rows.status().message();
    }
    json out = {{"filter", script.empty() ? json{{"user", user}} : json{{"script_sha256", script}}},
                {"history", experts},
                {"jobs", jobs}};
    if (!storage_note.empty()) out["storage_error"] = storage_note;
    return json_reply(200, out);
  } catch (const std::exception& ex) {
    return error({ApiErrorKind::kInternal, "", std::string("internal error: ") + ex.what()});
  }
}

Reply Service::healthz() {
  const json m = model_->to_json();
  json out = {{"status", "ok"}, {"model", m["description"]}, {"model_version", m["version"]},
              {"model_trained_at", m["trained_at"]}, {"model_info", m}};
  {
    std::shared_lock lock(history_mu_);
    out["history_jobs"] = history_.size();
    out["history_keys"] = history_.key_count();  // scripts and users with a history
  }
  const StoreHealth h = store_->health();
  std::lock_guard lock(storage_mu_);
  json storage = {{"ok", storage_error_.empty() && h.checkpoint_error.empty()},
                  {"wal_bytes", h.wal_bytes}};
  if (!storage_error_.empty()) storage["error"] = storage_error_;
  if (!answer_error_.empty()) storage["answers_error"] = answer_error_;  // still answered
  if (!h.checkpoint_error.empty()) storage["checkpoint_error"] = h.checkpoint_error;
  if (!h.synchronous.empty()) storage["synchronous"] = h.synchronous;
  out["storage"] = storage;
  out["sizing"] = sizing_->to_json();
  return json_reply(200, out);
}

Reply Service::metrics_text() {
  Gauges g;
  {
    std::shared_lock lock(history_mu_);
    g.history_jobs = history_.size();
    g.history_keys = history_.key_count();
    g.history_memory_bytes = history_.memory_bytes();
    g.history_retained_entries = history_.retained_entries();
  }
  const StoreHealth h = store_->health();
  g.wal_bytes = h.wal_bytes;
  g.checkpoint_failures = h.checkpoint_failures;
  g.answers_not_kept = h.answers_not_kept;
  const SizingState::Learned learned = sizing_->learned();
  g.bound_judged_by_answer = learned.by_answer;
  g.bound_judged_as_it_stands = learned.as_it_stands;
  g.bound_not_judged = learned.unjudged;
  g.bound_answers_pending = learned.answers_pending;
  g.recommended_by_workload = learned.recommended_by_workload;
  g.recommended_by_bound = learned.recommended_by_bound;
  g.sizing_workloads = learned.workloads;
  g.sizing_memory_bytes = learned.workloads_bytes;
  g.sizing_aged_out = learned.workloads_aged_out;
  g.sizing_handed_over = learned.workloads_handed_over;
  g.advice_at_request = learned.advice_at_request;
  g.advice_at_recommendation = learned.advice_at_recommendation;
  g.advice_oom_jobs = learned.advice_oom_jobs;
  g.lowered_jobs = learned.lowered_jobs;
  g.advice_lowered_oom_jobs = learned.advice_lowered_oom_jobs;
  g.advice_lowered_oom_gbh = learned.advice_lowered_oom_gbh;
  {
    std::lock_guard lock(storage_mu_);
    g.storage_ok = storage_error_.empty() && h.checkpoint_error.empty();
  }
  return Reply{200, metrics_.render(g) + model_->render_metrics() + sync_metrics_.render(),
               "text/plain; version=0.0.4"};
}

}  // namespace peakcast::serve
