// The loaded model as the CLI's `predict` and the service see it: immutable after load, safe to
// share across threads (each call keeps its scratch on the stack or in a per-call object).
#pragma once

#include <memory>
#include <string>

#include "peakcast/cascade/prediction.h"
#include "peakcast/core/job.h"
#include "peakcast/core/status.h"
#include "peakcast/history/history.h"

namespace peakcast::cascade {

class Predictor {
 public:
  virtual ~Predictor() = default;
  // `job` carries the request (no outcome); `history` is read at job.submit_ms.
  // Thread-safe for concurrent callers as long as `history` is not being modified.
  virtual JobPrediction predict(const Job& job, const history::HistoryStore& history) const = 0;
  virtual std::string describe() const = 0;   // one line: kind, format version, trained on
  virtual double util_cap() const = 0;
};

// Opens MODEL_DIR (manifest.json with "format_version" and "kind"), checks the version (newer
// ones are refused with a clear message) and returns the predictor it describes.
Result<std::unique_ptr<Predictor>> load_predictor(const std::string& model_dir);

}  // namespace peakcast::cascade
