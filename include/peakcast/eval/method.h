// What the harness evaluates: a Method fits on the train and validation blocks (with the
// event-time history each job saw at its submission), is frozen, then predicts every test job
// from what was known at its submission. The history baselines live in history_methods.cpp; the
// learned methods of the cascade (xgboost, textcnn, bilstm, code_only, cascade) implement the same
// interface in their own files and are added to the registry beside them: the harness, metrics
// and printers do not change.
//
// Thread safety: fit() needs exclusive access; predict() and predict_batch() are const and may
// run concurrently once fitted.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "peakcast/core/job.h"
#include "peakcast/core/log.h"
#include "peakcast/core/status.h"
#include "peakcast/eval/split.h"
#include "peakcast/history/history.h"

namespace peakcast::eval {

// The hierarchical history of one job per resource, as the store saw it at the job's submission.
using history::HistoryViews;

// One job as the harness hands it to a method.
struct JobContext {
  const Job* job = nullptr;
  Block block = Block::kTrain;
  HistoryViews view;
};

// Everything a method may learn from. Test jobs are present (their history views are needed by
// nobody at fit time, but their positions keep `jobs` parallel to split.order); a method must only
// fit on Block::kTrain and choose on Block::kValidation.
struct EvalData {
  const Split* split = nullptr;
  std::vector<JobContext> jobs;                // submit order, parallel to split->order
  std::array<double, kNumResources> fallback{};  // median label of the purged train block
  double util_cap = 1.0;
};

struct Prediction {
  std::array<double, kNumResources> util{0.0, 0.0};  // harness clips to [0, cap]
  // How the prediction was reached, per resource, for routing statistics: e.g. "exact_script",
  // "user", "fallback" for the history methods; "bypass", "encoder", "cache", "no_history",
  // "tree" for the cascade (routing.h).
  std::array<std::string, kNumResources> route;
};

class Method {
 public:
  virtual ~Method() = default;
  virtual std::string_view name() const = 0;
  // Learns and makes every choice (experts, thresholds) on train/validation, then freezes.
  virtual Status fit(const EvalData& data, const ProgressFn& progress) = 0;
  // Predicts one job from its request/script and the history views at its submission. Only the
  // resources the job is valid for are scored; the others may hold anything.
  virtual Prediction predict(const Job& job, const HistoryViews& view) const = 0;
  // Batched form (neural encoders override it); the default calls predict() per job.
  virtual void predict_batch(std::span<const JobContext* const> jobs,
                             std::span<Prediction> out) const;
  // Frozen choices worth reporting, e.g. {"mem.expert", "median3"}; empty by default.
  virtual std::vector<std::pair<std::string, std::string>> choices() const { return {}; }
  // True when fit() depends on MethodOptions::seed (learned methods): the harness then trains
  // EvalConfig::seeds instances with seeds seed, seed + 1, ... and reports mean +- s.d.
  virtual bool seeded() const { return false; }
  // Forgets state kept between predictions (the cascade's exact cache), so a scoring or timing
  // pass starts as the first pass did. Default: nothing to forget.
  virtual void clear_caches() const {}
};

struct MethodOptions {
  uint64_t seed = 42;
  int threads = 0;        // threads for learned methods (XGBoost, LibTorch); 0 = all cores
  // Code-model options as "name", "value" (models::code::set_code_option), applied over the
  // defaults of the code_only / textcnn / bilstm / cascade methods, e.g. {"max_epochs", "3"}.
  std::vector<std::pair<std::string, std::string>> code_options;
  // Script encoder of code_only and cascade (`--encoder`); empty: their default, bag.
  std::string encoder;
  // Cascade settings as "key", "value" (cascade::set_cascade_option), applied over the cascade's
  // defaults, e.g. {"tree_bag", "1"}.
  std::vector<std::pair<std::string, std::string>> cascade_options;
};

using MethodFactory = std::function<std::unique_ptr<Method>(const MethodOptions&)>;

// Which MethodOptions a method reads, so that a command can say when an option it was given
// changes nothing (no method of the run reads it).
struct MethodReads {
  bool code_options = false;  // MethodOptions::code_options
  bool encoder = false;       // MethodOptions::encoder
  bool cascade_options = false;  // MethodOptions::cascade_options
};

// Explicit registry (no self-registering statics): register_builtins() fills it.
class MethodRegistry {
 public:
  // Throws std::logic_error on a duplicate name (a programming error).
  void add(std::string name, std::string description, MethodFactory factory, MethodReads reads = {});
  bool contains(std::string_view name) const;
  // Unknown name -> kInvalidInput listing the valid names.
  Result<std::unique_ptr<Method>> create(std::string_view name, const MethodOptions& o) const;
  // "all" -> every name; else a comma-separated list, each known, no duplicates kept.
  Result<std::vector<std::string>> resolve(std::string_view list) const;
  std::vector<std::string> names() const;  // registration order
  std::string_view description(std::string_view name) const;  // "" when unknown
  MethodReads reads(std::string_view name) const;              // nothing when unknown
  // The methods that read code options / the encoder, in registration order.
  std::vector<std::string> reading(bool MethodReads::*option) const;

 private:
  struct Entry {
    std::string name;
    std::string description;
    MethodFactory factory;
    MethodReads reads;
  };
  const Entry* find(std::string_view name) const;  // nullptr when unknown
  std::vector<Entry> entries_;
};

// hier_last1, hier_median3, hier_median5, hier_ewma, global_median, history_policy.
void register_builtins(MethodRegistry& registry);

// MethodOptions::threads with 0 resolved to the machine's cores (at least 1).
int resolve_threads(int threads);

// The baseline every method is compared against (docs/method.md §3).
inline constexpr std::string_view kBaselineMethod = "hier_last1";

}  // namespace peakcast::eval
