// A set of 64-bit run hashes (job id and submit time; open addressing, linear probing): the
// store's idempotence check at ~16 bytes per completion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace peakcast::history::detail {

class IdSet {
 public:
  // Inserts h; false when it was already there.
  bool insert(uint64_t h);
  size_t size() const { return size_; }
  size_t heap_bytes() const { return slots_.capacity() * sizeof(uint64_t); }

 private:
  void grow();

  std::vector<uint64_t> slots_;  // 0 = empty; a hash of 0 is stored as 1
  size_t size_ = 0;
};

}  // namespace peakcast::history::detail
