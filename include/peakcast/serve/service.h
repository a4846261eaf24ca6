// The service behind peakcastd's endpoints, independent of the transport (tests call it
// directly; http_server.h puts it on a socket).
//
// Concurrency: the predictor is immutable and shared; the in-memory history sits behind a
// shared_mutex (predictions and history reads take it shared, completions exclusive).
// Completions are written to the store first (committed, synchronous=FULL) and added to the
// history only after the commit succeeded: an acknowledged completion is durable, a refused one
// changed nothing. When the store fails, completions get 503 with the reason and predictions keep
// working from memory. Re-sending a stored completion is idempotent (200, duplicate: true) only
// when its content is the same; other content under a known job_id gets 409.
//
// Memory: the history's watermark follows the clock minus `late_tolerance_s`, so old labels are
// folded (history.h); a prediction asked about a time before the watermark is answered as of
// the watermark.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "peakcast/cascade/predictor.h"
#include "peakcast/history/history.h"
#include "peakcast/serve/errors.h"
#include "peakcast/serve/metrics.h"
#include "peakcast/serve/model_slot.h"
#include "peakcast/serve/request.h"
#include "peakcast/serve/sizing_state.h"
#include "peakcast/serve/store.h"
#include "peakcast/serve/sync_metrics.h"

namespace peakcast::serve {

struct ServiceOptions {
  RequestLimits limits;
  int64_t late_tolerance_s = 7 * 24 * 3600;  // completions may arrive this late and still count
  size_t history_rows = 50;                  // jobs listed by GET /v1/history
  // At start, the history holds the completions that ended in the last history_days days (0:
  // every stored one; the store keeps them all either way). Bounds start time and memory on a
  // large site: 1,000,000 completions took 6 s and 520 MiB to load (peakcastd --history-days).
  // While the daemon runs, every history_sweep_s a completion brings, the runs that ended more
  // than that many days ago are forgotten (HistoryStore::forget_before), and a completion that
  // ended before then is stored but not learned: the history answers as a restarted daemon's
  // would, and memory stays bounded by the recent workload.
  int64_t history_days = 0;
  int64_t history_sweep_s = 3600;
  std::function<int64_t()> clock;            // epoch seconds; default: the system clock
  SizingOptions sizing;                      // online upper bound + recommended request
};

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

class Service {
 public:
  Service(std::shared_ptr<const cascade::Predictor> predictor, std::unique_ptr<CompletionStore> store,
          ServiceOptions options);
  // With a swappable model (hot reload: model_slot.h).
  Service(std::shared_ptr<ModelSlot> model, std::unique_ptr<CompletionStore> store,
          ServiceOptions options);

  // Reads every stored completion into the in-memory history, replays the most recent ones
  // into the online upper bound and gives it the answers on record (sizing_state.h) (call
  // once, before serving).
  Status rebuild();

  Reply predict(std::string_view body);
  Reply complete(std::string_view body);
  // Query parameters of GET /v1/history (name -> value).
  Reply history(const std::multimap<std::string, std::string>& params);
  Reply healthz();
  Reply metrics_text();
  Reply error(const ApiError& e) const;

  // A finished job already parsed and finalized (labels, script_key): the completion path
  // without the HTTP body (slurm-sync inside the daemon). true: stored now; false: known.
  // A job whose memory request is below the one answered at its submission is stored and
  // learned at the answered request (SizingState::restore_request).
  Result<bool> add_completion(const Job& job);

  Metrics& metrics() { return metrics_; }
  CompletionStore& store() { return *store_; }
  size_t history_size() const;
  // The model now (a swap may replace it: hold the pointer while using it).
  std::shared_ptr<const cascade::Predictor> predictor() const { return model_->get(); }
  ModelSlot& model() { return *model_; }
  SyncMetrics& sync_metrics() { return sync_metrics_; }
  const SizingState& sizing() const { return *sizing_; }

 private:
  int64_t now() const;
  void note_storage(const Status& s);
  void note_answer_storage(const Status& s);  // an answer's record_answer()
  // A completion whose job_id is stored already: 409 when the stored content differs.
  std::optional<ApiError> conflict(const Job& job);
  std::optional<ApiError> implausible_times(const Job& job) const;
  // The served model's prediction for `job` at its submission, into the online bound. Needs the
  // history lock (shared) held; for a job submitted before the watermark only its script's sizing
  // policy learns (SizingState::observe_unjudged).
  void observe_bound(const cascade::Predictor& model, const Job& job);
  // history_days > 0: at most every history_sweep_s, forgets the runs that ended that long
  // before now_s (history_mu_ held exclusively).
  void forget_old_history(int64_t now_s);
  // The end time before which a run is not in the history: now_s - history_days, or INT64_MIN.
  int64_t history_horizon_ms(int64_t now_s) const;
  // The largest limit among the script's most recent runs while they ended OUT_OF_MEMORY, and
  // whether one of them ran at a limit the hook had lowered (sizing::trailing_oom_lowered).
  struct TrailingOom {
    std::optional<uint64_t> limit;
    bool lowered = false;
  };
  TrailingOom trailing_oom(const Job& job);

  std::shared_ptr<ModelSlot> model_;
  SyncMetrics sync_metrics_;
  std::unique_ptr<CompletionStore> store_;
  ServiceOptions options_;
  Metrics metrics_;
  std::unique_ptr<SizingState> sizing_;

  mutable std::shared_mutex history_mu_;
  // Each completion comes once (the store keys one per run: job id and submit time): no id set,
  // which grew with every one.
  history::HistoryStore history_{/*track_ids=*/false};
  int64_t last_sweep_s_ = 0;  // forget_old_history(); history_mu_

  std::mutex complete_mu_;        // one completion at a time: store then history, in order
  mutable std::mutex storage_mu_;
  std::string storage_error_;     // last storage failure, empty when the last write succeeded
  std::string answer_error_;      // the same for answers kept on record (record_answer)
};

}  // namespace peakcast::serve
