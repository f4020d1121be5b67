// BlockCache: reuses freed large blocks of device (host) memory.
//
// A fresh 64 MiB output costs ~15k page faults plus kernel zeroing each time glibc maps it anew
// (~40 ms here), more than the compiled loop that fills it. Blocks of at least kMinBlock bytes
// are rounded up to a multiple of kMinBlock and, when freed, kept (up to `capacity` bytes in
// total) for the next allocation of the same rounded size. Smaller blocks go to malloc, which
// caches them itself. A reused block holds stale data, as any uninitialised allocation may.
//
// Thread-safe: Allocate and Free may be called from any thread (one mutex, held for a few
// list operations; never during a system allocation).
#pragma once

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

  explicit BlockCache(size_t capacity) : capacity_(capacity) {}
  ~BlockCache();  // returns cached blocks to the system
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // kAlignment-aligned memory for n bytes (n > 0), or nullptr when the system has none.
  void* Allocate(size_t n);
  // Frees a pointer returned by Allocate (nullptr is ignored).
  void Free(void* p);
  int64_t cached_bytes() const;
  int64_t reuses() const;

 private:
  struct Header {  // stored kAlignment bytes before each block's data
    size_t size;   // rounded data size; 0 for malloc-sized blocks
  };
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::map<size_t, std::vector<void*>> free_ ABSL_GUARDED_BY(mu_);  // rounded size -> bases
  size_t cached_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t reuses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace trn::runtime
