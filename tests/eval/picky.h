// A method that refuses its blocks as input, as the cascade refuses a young history: for the
// tests of a fold it cannot learn from (folds_test.cpp) and of a method left out
// (EvalConfig::leave_out_refusals, left_out_test.cpp).
#pragma once

#include <memory>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "peakcast/eval/method.h"
#include "peakcast/eval/split.h"

namespace peakcast::eval::testing {

// global_median that refuses a train block of fewer than `min_train` jobs (with an error of
// `kind`), as the cascade refuses a validation block a burst purged whole.
class Picky : public Method {
 public:
  Picky(size_t min_train, ErrorKind kind, std::unique_ptr<Method> inner)
      : min_train_(min_train), kind_(kind), inner_(std::move(inner)) {}
  std::string_view name() const override { return "picky"; }
  Status fit(const EvalData& data, const ProgressFn& progress) override {
    if (data.split->counts.train < min_train_) {
      return {kind_, fmt::format("picky: the train block needs at least {} jobs, has {}", min_train_,
                                 data.split->counts.train)};
    }
    return inner_->fit(data, progress);
  }
  Prediction predict(const Job& job, const HistoryViews& view) const override {
    return inner_->predict(job, view);
  }

 private:
  size_t min_train_;
  ErrorKind kind_;
  std::unique_ptr<Method> inner_;
};

// The built-in methods, "last1_twin" (hier_last1 under another name) and "picky".
inline MethodRegistry picky_registry(size_t min_train, ErrorKind kind = ErrorKind::kInvalidInput) {
  MethodRegistry r;
  register_builtins(r);
  r.add("last1_twin", "hier_last1 under another name (test)", [](const MethodOptions& o) {
    MethodRegistry builtins;
    register_builtins(builtins);
    return std::move(builtins.create("hier_last1", o)).value();
  });
  r.add("picky", "global_median refusing a small train block (test)", [=](const MethodOptions& o) {
    MethodRegistry builtins;
    register_builtins(builtins);
    return std::make_unique<Picky>(min_train, kind, std::move(builtins.create("global_median", o)).value());
  });
  return r;
}

}  // namespace peakcast::eval::testing
