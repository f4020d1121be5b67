// KernelPool: every chunk of a kernel runs exactly once, on the caller or a helper, kernels run
// back to back, a chunk's exception reaches the caller after every chunk finished, and a
// straggling helper makes the pool run kernels on the caller alone for a while; without a spare
// core, helpers take part only while the recording thread waits for the executor.
#include "runtime/kernel_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "base/stats.h"

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

TEST_CASE("a helper that stalls a kernel makes the next kernels run on the caller alone", "[kernel_pool]") {
  trn::base::Stats stats;
  KernelPool pool(/*helpers=*/1, &stats);
  const std::thread::id caller = std::this_thread::get_id();
  // Kernel 1: a chunk a helper runs takes 30 ms (as if the helper lost its core mid-chunk); the
  // caller's own chunks take no time, so it waits for the helper far longer than it worked.
  // Each chunk waits until a helper has claimed one, so the helper is sure to take part.
  std::atomic<bool> helper_ran{false};
  pool.ParallelFor(64, [&](int) {
    if (std::this_thread::get_id() != caller) {
      helper_ran = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    } else {
      while (!helper_ran.load()) std::this_thread::yield();
    }
  });
  REQUIRE(helper_ran.load());
  CHECK(stats.Snapshot().kernel_stragglers == 1);
  // Within the back-off (>= 1 ms after the stall ended), every chunk runs on the caller.
  std::atomic<int> on_helpers{0};
  pool.ParallelFor(16, [&](int) {
    if (std::this_thread::get_id() != caller) on_helpers.fetch_add(1);
  });
  CHECK(on_helpers.load() == 0);
  CHECK(stats.Snapshot().kernels_run_alone == 1);
  // After the back-off the pool splits again, and every chunk still runs exactly once.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::vector<std::atomic<int>> runs(16);
  pool.ParallelFor(16, [&](int i) { runs[i].fetch_add(1); });
  for (auto& r : runs) CHECK(r.load() == 1);
  CHECK(stats.Snapshot().kernels_run_alone == 1);
}

// Runs a kernel whose caller chunks wait (10 s at most) until a helper has run a chunk: whether
// a helper took part.
bool HelperTakesPart(KernelPool& pool) {
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> helper_ran{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  pool.ParallelFor(64, [&](int) {
    if (std::this_thread::get_id() != caller) {
      helper_ran = true;
    } else {
      while (!helper_ran.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    }
  });
  return helper_ran.load();
}

TEST_CASE("without a spare core, a kernel splits only while the recording thread waits", "[kernel_pool]") {
  trn::base::Stats stats;
  std::atomic<int> waiting{0};
  KernelPool pool(/*helpers=*/1, &stats, &waiting, /*spare_cores=*/0);
  const std::thread::id caller = std::this_thread::get_id();
  // Nobody waits: the helper's core is the recording thread's, so every chunk runs on the caller.
  std::atomic<int> on_helpers{0};
  pool.ParallelFor(16, [&](int) {
    if (std::this_thread::get_id() != caller) on_helpers.fetch_add(1);
  });
  CHECK(on_helpers.load() == 0);
  CHECK(stats.Snapshot().kernels_run_alone == 1);
  // The recording thread waits: the helper takes part.
  waiting = 1;
  CHECK(HelperTakesPart(pool));
  CHECK(stats.Snapshot().kernels_run_alone == 1);
  // A spare core splits whether or not anybody waits.
  waiting = 0;
  KernelPool spare(/*helpers=*/1, &stats, &waiting, /*spare_cores=*/1);
  CHECK(HelperTakesPart(spare));
  CHECK(stats.Snapshot().kernels_run_alone == 1);
}

TEST_CASE("a short kernel runs on the caller alone while every helper sleeps", "[kernel_pool]") {
  trn::base::Stats stats;
  KernelPool pool(/*helpers=*/1, &stats);
  const std::thread::id caller = std::this_thread::get_id();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the helper's spin is long over
  std::atomic<int> on_helpers{0};
  std::vector<std::atomic<int>> runs(8);
  pool.ParallelFor(8, [&](int i) {
    runs[i].fetch_add(1);
    if (std::this_thread::get_id() != caller) on_helpers.fetch_add(1);
  }, /*expected_ns=*/KernelPool::kWakeWorthNs / 10);
  for (auto& r : runs) CHECK(r.load() == 1);
  CHECK(on_helpers.load() == 0);
  CHECK(stats.Snapshot().kernels_run_alone == 1);
  // A long one (or one of unknown length) is split as before: every chunk still runs once.
  std::vector<std::atomic<int>> runs2(8);
  pool.ParallelFor(8, [&](int i) { runs2[i].fetch_add(1); }, /*expected_ns=*/KernelPool::kWakeWorthNs * 10);
  for (auto& r : runs2) CHECK(r.load() == 1);
  CHECK(stats.Snapshot().kernels_run_alone == 1);
}

TEST_CASE("run alone, a kernel still runs every chunk before rethrowing the first exception", "[kernel_pool]") {
  KernelPool pool(/*helpers=*/1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the helper sleeps
  std::atomic<int> finished{0};
  CHECK_THROWS_AS(pool.ParallelFor(8, [&](int i) {
    if (i == 3) throw std::runtime_error("chunk 3");
    finished.fetch_add(1);
  }, /*expected_ns=*/1), std::runtime_error);
  CHECK(finished.load() == 7);
}

namespace {
// A compiled loop nest's outlined body: fills bytes [lo, hi) of the buffer in slots[0].
void FillBytes(int64_t lo, int64_t hi, int64_t* slots) {
  auto* data = reinterpret_cast<uint8_t*>(slots[0]);
  for (int64_t i = lo; i < hi; ++i) data[i] = static_cast<uint8_t>(i);
}
}  // namespace

TEST_CASE("a long loop nest of sub-nanosecond iterations is split again once its helpers sleep", "[kernel_pool]") {
  // Its learned time per iteration rounded to 0 ns once, and every later run was judged shorter
  // than a helper's wake-up and ran on the caller alone (a flat 16M-element chain: 2x slower).
  trn::base::Stats stats;
  KernelPool pool(/*helpers=*/1, &stats);
  KernelPool::SetForThisThread(&pool);
  std::vector<uint8_t> data(64 << 20);
  int64_t slots[1] = {reinterpret_cast<int64_t>(data.data())};
  for (int run = 0; run < 2; ++run) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the helper sleeps
    trn::runtime::RunSplitLoop(reinterpret_cast<void*>(&FillBytes), slots, 0, static_cast<int64_t>(data.size()));
  }
  KernelPool::SetForThisThread(nullptr);
  CHECK(data[12345] == static_cast<uint8_t>(12345));
  CHECK(data.back() == static_cast<uint8_t>(data.size() - 1));
  CHECK(stats.Snapshot().loops_split == 2);
  CHECK(stats.Snapshot().kernels_run_alone == 0);
}
