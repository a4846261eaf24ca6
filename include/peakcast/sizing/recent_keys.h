// A map from key (a script) to value that keeps only the `capacity` most recently touched keys:
// what the online bound keeps per script (sizing/online_bound.h), in bounded memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace peakcast::sizing {

template <class V>
class RecentKeys {
 public:
  explicit RecentKeys(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

  // The value of `key`, now the most recent. A new key gets V{} (`*inserted` says so) and, past
  // the capacity, the least recently touched key is dropped.
  V& touch(std::string key, bool* inserted = nullptr) {
    auto it = at_.find(key);
    const bool is_new = it == at_.end();
    if (inserted) *inserted = is_new;
    if (!is_new) {
      items_.splice(items_.end(), items_, it->second);  // most recent at the back
      return it->second->second;
    }
    items_.emplace_back(key, V{});
    at_.emplace(std::move(key), std::prev(items_.end()));
    while (items_.size() > capacity_) {
      at_.erase(items_.front().first);
      items_.pop_front();
    }
    return items_.back().second;
  }

  const V* find(std::string_view key) const {
    const auto it = at_.find(std::string(key));
    return it == at_.end() ? nullptr : &it->second->second;
  }

  size_t size() const { return items_.size(); }
  // Least recent first.
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  using Items = std::list<std::pair<std::string, V>>;
  size_t capacity_;
  Items items_;
  std::unordered_map<std::string, typename Items::iterator> at_;
};

}  // namespace peakcast::sizing
