// BlockCache: large freed blocks are reused by size, up to the capacity; alignment holds;
// allocated / peak / cached bytes are counted; cached blocks are released on demand and on OOM.
#include "runtime/block_cache.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

using trn::runtime::BlockCache;

TEST_CASE("large blocks are reused, small ones are not cached", "[block_cache]") {
  BlockCache cache(size_t{64} << 20);
  void* a = cache.Allocate(3 << 20);
  REQUIRE(a != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(a) % BlockCache::kAlignment == 0);
  std::memset(a, 1, 3 << 20);  // the whole requested size is usable
  cache.Free(a);
  CHECK(cache.cached_bytes() == (3 << 20));
  void* b = cache.Allocate((3 << 20) - 100);  // same rounded size: the same block
  CHECK(b == a);
  CHECK(cache.reuses() == 1);
  CHECK(cache.cached_bytes() == 0);
  void* small = cache.Allocate(100);
  REQUIRE(small != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(small) % BlockCache::kAlignment == 0);
  cache.Free(small);
  CHECK(cache.cached_bytes() == 0);
  cache.Free(b);
}

TEST_CASE("small blocks of every size are aligned and usable to their last byte", "[block_cache]") {
  BlockCache cache(size_t{64} << 20);
  std::vector<void*> blocks;
  for (size_t n = 1; n <= 5000; n += 37) {
    void* p = cache.Allocate(n);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % BlockCache::kAlignment == 0);
    std::memset(p, static_cast<int>(n & 0xff), n);
    blocks.push_back(p);
  }
  size_t n = 1;
  for (void* p : blocks) {  // no block overlaps another: each still holds its own pattern
    CHECK(static_cast<unsigned char*>(p)[n - 1] == (n & 0xff));
    n += 37;
  }
  for (void* p : blocks) cache.Free(p);
  CHECK(cache.cached_bytes() == 0);
  CHECK(cache.stats().allocated == 0);
}

TEST_CASE("the cache never holds more than its capacity", "[block_cache]") {
  BlockCache cache(size_t{4} << 20);
  void* a = cache.Allocate(3 << 20);
  void* b = cache.Allocate(3 << 20);
  cache.Free(a);
  cache.Free(b);  // would exceed 4 MiB: released to the system
  CHECK(cache.cached_bytes() == (3 << 20));
}

TEST_CASE("allocated bytes count live blocks at their rounded size; the peak resets", "[block_cache]") {
  BlockCache cache(size_t{64} << 20);
  void* small = cache.Allocate(100);  // rounded to 128
  void* large = cache.Allocate((2 << 20) + 1);  // rounded to 3 MiB
  BlockCache::Stats s = cache.stats();
  CHECK(s.allocated == 128 + (3 << 20));
  CHECK(s.peak_allocated == s.allocated);
  CHECK(s.allocations == 2);
  cache.Free(large);
  s = cache.stats();
  CHECK(s.allocated == 128);
  CHECK(s.peak_allocated == 128 + (3 << 20));
  CHECK(s.cached == (3 << 20));
  cache.ResetPeak();
  CHECK(cache.stats().peak_allocated == 128);
  void* again = cache.Allocate(3 << 20);  // from the cache: counted as allocated again
  s = cache.stats();
  CHECK(again == large);
  CHECK(s.allocated == 128 + (3 << 20));
  CHECK(s.peak_allocated == s.allocated);
  CHECK(s.cached == 0);
  cache.Free(again);
  cache.Free(small);
  CHECK(cache.stats().allocated == 0);
}

TEST_CASE("Release returns the cached blocks; a failed allocation releases them first", "[block_cache]") {
  BlockCache cache(size_t{64} << 20);
  void* a = cache.Allocate(4 << 20);
  void* b = cache.Allocate(2 << 20);
  cache.Free(a);
  cache.Free(b);
  CHECK(cache.Release() == (6 << 20));
  CHECK(cache.stats().cached == 0);
  CHECK(cache.stats().released == (6 << 20));
  CHECK(cache.Release() == 0);

  void* c = cache.Allocate(5 << 20);
  cache.Free(c);
  REQUIRE(cache.stats().cached == (5 << 20));
  // No system serves this: the cache gives up its blocks before it reports no memory.
  CHECK(cache.Allocate(size_t{1} << 62) == nullptr);
  CHECK(cache.stats().cached == 0);
  CHECK(cache.stats().released == (11 << 20));
  CHECK(cache.stats().allocated == 0);
}

TEST_CASE("a zero capacity keeps no block", "[block_cache]") {
  BlockCache cache(0);
  void* a = cache.Allocate(3 << 20);
  cache.Free(a);
  CHECK(cache.stats().cached == 0);
  CHECK(cache.stats().allocated == 0);
}
