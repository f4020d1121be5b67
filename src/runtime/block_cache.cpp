#include "runtime/block_cache.h"

#include <cstdlib>

namespace trn::runtime {

BlockCache::~BlockCache() {
  absl::MutexLock lock(&mu_);
  for (auto& [size, bases] : free_) {
    for (void* base : bases) {
      std::free(base);
    }
  }
}

void* BlockCache::Allocate(size_t n) {
  const bool large = n >= kMinBlock;
  const size_t data = large ? (n + kMinBlock - 1) / kMinBlock * kMinBlock : (n + kAlignment - 1) / kAlignment * kAlignment;
  void* base = nullptr;
  if (large) {
    absl::MutexLock lock(&mu_);
    auto it = free_.find(data);
    if (it != free_.end() && !it->second.empty()) {
      base = it->second.back();
      it->second.pop_back();
      cached_ -= data;
      ++reuses_;
    }
  }
  if (base == nullptr) {
    base = std::aligned_alloc(kAlignment, data + kAlignment);
    if (base == nullptr) {
      return nullptr;
    }
  }
  static_cast<Header*>(base)->size = large ? data : 0;
  return static_cast<char*>(base) + kAlignment;
}

void BlockCache::Free(void* p) {
  if (p == nullptr) {
    return;
  }
  void* base = static_cast<char*>(p) - kAlignment;
  const size_t size = static_cast<Header*>(base)->size;
  if (size != 0) {
    absl::MutexLock lock(&mu_);
    if (cached_ + size <= capacity_) {
      free_[size].push_back(base);
      cached_ += size;
      return;
    }
  }
  std::free(base);
}

int64_t BlockCache::cached_bytes() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(cached_);
}

int64_t BlockCache::reuses() const {
  absl::MutexLock lock(&mu_);
  return reuses_;
}

}  // namespace trn::runtime
