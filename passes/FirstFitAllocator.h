//===- FirstFitAllocator.h - first fit over a range of words ----*- C++ -*-===//
//
// The allocator behind both address spaces the compiler manages: L2 buffers
// (pccx-allocate-l2) and host-window regions (convert-gemma3n-to-pccx).
// Freed ranges merge with their free neighbours.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_PASSES_FIRSTFITALLOCATOR_H
#define PCCX_PASSES_FIRSTFITALLOCATOR_H

#include <algorithm>
#include <cstdint>
#include <map>

namespace pccx {

class FirstFitAllocator {
public:
  explicit FirstFitAllocator(int64_t words) : size_(words) {
    free_[0] = words;
  }
  /// The lowest offset with `words` free words; -1 when none.
  int64_t allocate(int64_t words) {
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= words) {
        int64_t at = it->first, rest = it->second - words;
        free_.erase(it);
        if (rest)
          free_[at + words] = rest;
        high_ = std::max(high_, at + words);
        return at;
      }
    return -1;
  }
  void release(int64_t at, int64_t words) {
    auto next = free_.lower_bound(at);
    if (next != free_.end() && next->first == at + words) {
      words += next->second;
      free_.erase(next);
    }
    auto prev = free_.lower_bound(at);
    if (prev != free_.begin()) {
      --prev;
      if (prev->first + prev->second == at) {
        prev->second += words;
        return;
      }
    }
    free_[at] = words;
  }
  /// One past the highest word ever allocated.
  int64_t highWater() const { return high_; }
  int64_t size() const { return size_; }

private:
  int64_t size_;
  int64_t high_ = 0;
  std::map<int64_t, int64_t> free_; // offset -> words
};

} // namespace pccx

#endif
