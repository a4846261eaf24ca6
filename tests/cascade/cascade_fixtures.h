// Shared fixtures for the cascade tests: a small synthetic trace (no ../shared needed), roles by
// submit order, and a tiny configuration that trains in seconds on two cores.
#pragma once

#include <vector>

#include <gtest/gtest.h>

#include "peakcast/cascade/cascade_model.h"
#include "peakcast/ingest/reader.h"
#include "peakcast/synth/synth.h"

namespace peakcast::cascade::testing {

inline std::vector<Job> synth_jobs(size_t n, uint64_t seed, bool scripts = true) {
  synth::SynthOptions o;
  o.jobs = n;
  o.seed = seed;
  o.users = 16;
  o.days = 20.0;
  o.include_scripts = scripts;
  auto jobs = synth::generate_trace(o);
  if (!jobs) throw std::runtime_error(jobs.status().message());
  for (Job& j : *jobs) ingest::finalize_job(j, 1.0);  // as a trace reader gives them: redacted
  return std::move(jobs).value();
}

// Roles by position: [0, train) train, [train, train + val) validation, rest test.
inline std::vector<Role> roles_by_share(size_t n, double train, double val) {
  std::vector<Role> roles(n, Role::kTest);
  const auto nt = static_cast<size_t>(train * static_cast<double>(n));
  const auto nv = static_cast<size_t>(val * static_cast<double>(n));
  for (size_t i = 0; i < n; ++i) roles[i] = i < nt ? Role::kTrain : i < nt + nv ? Role::kValidation : Role::kTest;
  return roles;
}

inline TrainingInput make_input(const std::vector<Job>& jobs, const std::vector<Role>& roles) {
  std::vector<const Job*> ptrs;
  for (const Job& j : jobs) ptrs.push_back(&j);
  TrainingInput in;
  in.jobs = with_history_views(ptrs, roles);
  in.fallback = {0.4, 0.4};
  in.util_cap = 1.0;
  in.trained_on = "synthetic";
  return in;
}

inline CascadeConfig tiny_config() {
  CascadeConfig c;
  c.code.token_dim = 8;
  c.code.hash_buckets = 1 << 12;
  c.code.user_dim = 8;
  c.code.fused_dim = 32;
  c.code.max_epochs = 3;
  c.code.patience = 2;
  c.code.batch_size = 64;
  c.code.threads = 2;
  c.gate.n_rounds = 15;
  c.fusion.n_rounds = 15;
  c.tree.n_rounds = 30;
  c.tau_grid = {0.6, 0.9, 1.01};
  c.trust_coef_grid = {2.0, 1e9};
  c.trust_floor_grid = {0.05};
  c.cache_capacity = 1024;
  c.min_conformal = 10;
  return c;
}

}  // namespace peakcast::cascade::testing
