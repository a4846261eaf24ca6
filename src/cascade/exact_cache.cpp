// Exact cache: key over what the code model reads; LRU behind one mutex.
#include "peakcast/cascade/exact_cache.h"

#include <cstring>

#include "peakcast/core/hash.h"
#include "peakcast/features/request.h"
#include "peakcast/models/code/code_text.h"

namespace peakcast::cascade {

std::string exact_cache_key(const Job& job) {
  const models::code::CodeText text = models::code::code_text(job);
  const auto req = features::raw_request_features(job);
  std::string material;
  material.reserve(text.text.size() + job.user.size() + sizeof(req) + 16);
  // Length-prefixed fields, so no concatenation of two different jobs can collide by shifting.
  auto put_field = [&material](std::string_view s) {
    const uint64_t n = s.size();
    material.append(reinterpret_cast<const char*>(&n), sizeof n);
    material.append(s);
  };
  put_field(text.text);
  material.push_back(text.is_script ? 'S' : 'I');
  put_field(job.user);
  material.append(reinterpret_cast<const char*>(req.data()), sizeof(float) * req.size());
  return sha256_hex(material);
}

std::optional<models::code::CodePrediction> ExactCache::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ExactCache::put(const std::string& key, const models::code::CodePrediction& value) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    it->second->second = value;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, value);
  index_.emplace(key, lru_.begin());
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

size_t ExactCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

void ExactCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  lru_.clear();
  index_.clear();
}

}  // namespace peakcast::cascade
