// The exact cache of docs/method.md §7: an identical (script text, user, request) reuses the code
// model's earlier output instead of running the encoder again.
//
// The key is a SHA-256 over exactly what the code model reads -- the encoder text (the script, or
// the identity text when there is none), whether it is a script, the user name and the raw
// request features -- so a hit returns what a fresh batch-1 forward would (the model is
// deterministic in eval mode). Bounded (least recently used entries go first) and thread-safe:
// the service calls predict() concurrently on a const model, so the cache is a mutable member
// behind one mutex (a lookup is a hash-map probe; the forward it saves costs milliseconds).
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "peakcast/core/job.h"
#include "peakcast/models/code/code_model.h"

namespace peakcast::cascade {

// The key for `job` (64 hex chars).
std::string exact_cache_key(const Job& job);

class ExactCache {
 public:
  explicit ExactCache(size_t capacity) : capacity_(capacity) {}
  ExactCache(const ExactCache&) = delete;
  ExactCache& operator=(const ExactCache&) = delete;

  // The cached output (and marks it most recently used), or nullopt.
  std::optional<models::code::CodePrediction> get(const std::string& key);
  // Inserts or refreshes; evicts the least recently used entry beyond capacity. No-op at capacity 0.
  void put(const std::string& key, const models::code::CodePrediction& value);

  size_t size() const;
  size_t capacity() const { return capacity_; }
  void clear();

 private:
  using Entry = std::pair<std::string, models::code::CodePrediction>;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // front = most recent
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace peakcast::cascade
