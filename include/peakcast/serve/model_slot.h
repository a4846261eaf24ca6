// The model peakcastd serves, swappable while it serves (hot reload on SIGHUP or the admin
// socket's `reload`).
//
// A request takes a reference (shared_ptr copy) to the current model when it starts and keeps it
// until it ends, so a swap never changes or frees a model under a request in flight: requests that
// began before the swap finish on the old model, later ones use the new one, none waits for the
// load. A reload loads and checks the new directory completely before swapping; when anything
// fails (missing manifest, newer format, a different util_cap, which would change what the
// stored labels mean) the old model stays and the reason is returned and counted.
//
// Version: "<kind>-v<format_version>-<first 12 hex of SHA-256(manifest.json)>", so two models
// with the same format are told apart. Training date: the manifest's "trained_at" (epoch seconds
// or ISO 8601) when present, else manifest.json's modification time (when `train` wrote it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "peakcast/cascade/predictor.h"
#include "peakcast/core/status.h"

namespace peakcast::serve {

struct ModelInfo {
  std::string dir;
  std::string kind;           // manifest "kind"
  std::string version;        // see above
  std::string description;    // Predictor::describe()
  int64_t trained_at_s = 0;   // epoch seconds; 0 when unknown
  int64_t loaded_at_s = 0;    // when this process loaded it
};

// Reads MODEL_DIR/manifest.json for the version and training date (not the model itself).
Result<ModelInfo> read_model_info(const std::string& dir);

class ModelSlot {
 public:
  // A model given in code (tests): version "in-memory".
  explicit ModelSlot(std::shared_ptr<const cascade::Predictor> model);
  ModelSlot(std::shared_ptr<const cascade::Predictor> model, ModelInfo info);
  // Loads MODEL_DIR as the first model.
  static Result<std::shared_ptr<ModelSlot>> open(const std::string& dir);

  // The current model; hold the pointer for the whole request.
  std::shared_ptr<const cascade::Predictor> get() const;
  ModelInfo info() const;

  // Loads `dir` (empty: the directory the current model came from) and swaps it in. On error the
  // current model is kept and the error says why. One reload at a time; requests never wait.
  Result<ModelInfo> reload(const std::string& dir = "");

  // {"version", "kind", "trained_at", "loaded_at", "dir", "description", "reloads": {"ok",
  //  "failed"}, "last_reload_error"}
  nlohmann::json to_json() const;
  // peakcast_model_info{version,kind} 1, peakcast_model_trained_timestamp_seconds,
  // peakcast_model_loaded_timestamp_seconds, peakcast_model_reloads_total{result}.
  std::string render_metrics() const;

 private:
  mutable std::mutex mu_;  // guards model_, info_, last_error_ (held for a pointer copy only)
  std::shared_ptr<const cascade::Predictor> model_;
  ModelInfo info_;
  std::string last_error_;
  std::mutex reload_mu_;   // one reload at a time
  std::atomic<uint64_t> reloads_ok_{0}, reloads_failed_{0};
};

}  // namespace peakcast::serve
