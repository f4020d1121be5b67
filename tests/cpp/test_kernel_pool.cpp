// KernelPool: every chunk of a kernel runs exactly once, on the caller or a helper, kernels run
// back to back, a chunk's exception reaches the caller after every chunk finished.
#include "runtime/kernel_pool.h"

#include <atomic>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

using trn::runtime::KernelPool;

TEST_CASE("every chunk runs exactly once, kernel after kernel", "[kernel_pool]") {
  KernelPool pool(/*helpers=*/2);
  REQUIRE(pool.helpers() == 2);
  for (int kernel = 0; kernel < 2000; ++kernel) {
    const int n = 1 + kernel % 7;
    std::vector<std::atomic<int>> runs(n);
    pool.ParallelFor(n, [&](int i) { runs[i].fetch_add(1); });
    for (int i = 0; i < n; ++i) REQUIRE(runs[i].load() == 1);
  }
}

TEST_CASE("a chunk's exception is rethrown once every chunk finished", "[kernel_pool]") {
  KernelPool pool(/*helpers=*/1);
  std::atomic<int> finished{0};
  CHECK_THROWS_AS(pool.ParallelFor(8, [&](int i) {
    if (i == 3) throw std::runtime_error("chunk 3");
    finished.fetch_add(1);
  }), std::runtime_error);
  CHECK(finished.load() == 7);
  // The pool still works afterwards.
  std::atomic<int> sum{0};
  pool.ParallelFor(4, [&](int i) { sum.fetch_add(i); });
  CHECK(sum.load() == 6);
}

TEST_CASE("a pool without helpers runs every chunk on the caller", "[kernel_pool]") {
  KernelPool pool(/*helpers=*/0);
  std::vector<int> order;
  pool.ParallelFor(3, [&](int i) { order.push_back(i); });
  CHECK(order == std::vector<int>{0, 1, 2});
}
