// BlockCache: large freed blocks are reused by size, up to the capacity; alignment holds.
#include "runtime/block_cache.h"

#include <cstdint>
#include <cstring>

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

TEST_CASE("the cache never holds more than its capacity", "[block_cache]") {
  BlockCache cache(size_t{4} << 20);
  void* a = cache.Allocate(3 << 20);
  void* b = cache.Allocate(3 << 20);
  cache.Free(a);
  cache.Free(b);  // would exceed 4 MiB: released to the system
  CHECK(cache.cached_bytes() == (3 << 20));
}
