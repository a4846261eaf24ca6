#include "history/id_set.h"

namespace peakcast::history::detail {
namespace {

// Spreads FNV output over the low bits used for the slot index.
size_t slot_of(uint64_t h, size_t mask) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return static_cast<size_t>(h) & mask;
}

}  // namespace

bool IdSet::insert(uint64_t h) {
  if (h == 0) h = 1;
  if (2 * (size_ + 1) > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  for (size_t i = slot_of(h, mask);; i = (i + 1) & mask) {
    if (slots_[i] == h) return false;
    if (slots_[i] == 0) {
      slots_[i] = h;
      ++size_;
      return true;
    }
  }
}

void IdSet::grow() {
  std::vector<uint64_t> old;
  old.swap(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, 0);
  const size_t mask = slots_.size() - 1;
  for (uint64_t h : old) {
    if (h == 0) continue;
    size_t i = slot_of(h, mask);
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = h;
  }
}

}  // namespace peakcast::history::detail
