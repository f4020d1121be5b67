// BlockCache: the device's memory (host memory here): reuses freed large blocks and counts what
// is allocated.
//
// A fresh 64 MiB output costs ~15k page faults plus kernel zeroing each time glibc maps it anew
// (~40 ms here), more than the compiled loop that fills it. Blocks of at least kMinBlock bytes
// are rounded up to a multiple of kMinBlock and, when freed, kept (up to `capacity` bytes in
// total) for the next allocation of the same rounded size. Each large block is a mapping of its
// own (mmap), so a block the cache does not keep, and every block Release drops, goes back to
// the system at once. Smaller blocks go to malloc, which caches them itself. A reused block
// holds stale data, as any uninitialised allocation may.
//
// Accounting (torch_trn.memory_stats(), torch.neuron.memory_allocated()): `allocated` is the
// bytes of live blocks (rounded sizes, small ones too), `peak_allocated` its maximum since the
// last ResetPeak, `cached` the bytes of freed large blocks kept for reuse. When the system
// refuses a block, the cached blocks are released and the allocation is tried once more. (With
// Linux's default overcommit the system seldom refuses: the OOM killer acts later instead, which
// is why callers free the cache themselves with Release when they are done with large data.)
//
// Thread-safe: every method may be called from any thread. The free lists are under one mutex
// (held for a few list operations, never during a system allocation); the counters are atomics.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace trn::runtime {

class BlockCache {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kMinBlock = size_t{1} << 20;

  struct Stats {
    int64_t allocated = 0;       // bytes of live blocks
    int64_t peak_allocated = 0;  // most live bytes since construction or ResetPeak
    int64_t cached = 0;          // bytes of freed large blocks kept for reuse
    int64_t reuses = 0;          // allocations served from the cache
    int64_t allocations = 0;     // allocations (served from the cache or the system)
    int64_t released = 0;        // bytes of cached blocks released by Release (and retries)
  };

  explicit BlockCache(size_t capacity) : capacity_(capacity) {}
  ~BlockCache();  // returns cached blocks to the system
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // kAlignment-aligned memory for n bytes (n > 0), or nullptr when the system has none even
  // after the cached blocks were released.
  void* Allocate(size_t n);
  // Frees a pointer returned by Allocate (nullptr is ignored).
  void Free(void* p);
  // Returns every cached block to the system; the bytes released.
  int64_t Release();
  // Starts a new peak at the current allocated bytes.
  void ResetPeak();
  Stats stats() const;
  int64_t cached_bytes() const;
  int64_t reuses() const;

 private:
  struct Header {  // stored kAlignment bytes before each block's data
    size_t size;   // rounded data size
    bool large;    // cached on free (size >= kMinBlock)
    void* raw;     // small blocks: what malloc returned (the block is aligned within it)
  };
  static_assert(sizeof(Header) <= kAlignment);
  // A large block's mapping, or a small block aligned within a malloc allocation (`*raw`).
  void* SystemAllocate(size_t bytes, bool large, void** raw);
  void CountAllocation(size_t size);

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::map<size_t, std::vector<void*>> free_ ABSL_GUARDED_BY(mu_);  // rounded size -> bases
  size_t cached_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reuses_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t released_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> allocated_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> allocations_{0};
};

}  // namespace trn::runtime
