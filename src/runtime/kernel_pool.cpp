#include "runtime/kernel_pool.h"

#include <algorithm>
#include <chrono>

#include "runtime/profiler.h"
#include "runtime/threads.h"

namespace trn::runtime {
namespace {

thread_local KernelPool* this_thread_pool = nullptr;

constexpr uint64_t Pack(uint64_t generation, uint64_t index) { return generation << 32 | index; }

}  // namespace

KernelPool* KernelPool::OfThisThread() { return this_thread_pool; }
void KernelPool::SetForThisThread(KernelPool* pool) { this_thread_pool = pool; }

KernelPool::KernelPool(int helpers, Stats* stats) : stats_(stats) {
  for (int i = 0; i < helpers; ++i) {
    threads_.emplace_back([this, i] {
      profiler::NameThisThread(i == 0 ? "kernel helper" : "kernel helper " + std::to_string(i));
      SetOpenMpThreads(1);
      Helper();
    });
  }
}

KernelPool::~KernelPool() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void KernelPool::RunChunks() {
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  const int n = n_.load(std::memory_order_acquire);
  while (true) {
    uint64_t v = next_.load(std::memory_order_acquire);
    int index = 0;
    do {
      if ((v >> 32) != (generation & 0xffffffffu) || static_cast<int>(v & 0xffffffffu) >= n) return;
      index = static_cast<int>(v & 0xffffffffu);
    } while (!next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire));
    try {
      (*fn_)(index);
    } catch (...) {
      absl::MutexLock lock(&error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void KernelPool::Helper() {
  uint64_t seen = 0;
  while (true) {
    // Kernels come back to back while a group runs: spin ~30 µs before sleeping (a longer spin
    // takes the core from the recording thread).
    const bool fresh = SpinUntil(std::chrono::microseconds(30),
                                 [&] { return generation_.load(std::memory_order_acquire) != seen; });
    if (!fresh) {
      absl::MutexLock lock(&mu_);
      auto woken = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || posted_ != seen; };
      mu_.Await(absl::Condition(&woken));
      if (stop_) return;
    }
    seen = generation_.load(std::memory_order_acquire);
    RunChunks();
  }
}

void KernelPool::ParallelFor(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (threads_.empty() || n == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  const int team = OpenMpThreads();
  SetOpenMpThreads(1);
  const uint64_t generation = (generation_.load(std::memory_order_relaxed) + 1) & 0xffffffffu;
  fn_ = &fn;
  n_.store(n, std::memory_order_release);
  done_.store(0, std::memory_order_release);
  next_.store(Pack(generation, 0), std::memory_order_release);
  generation_.store(generation, std::memory_order_release);
  {
    absl::MutexLock lock(&mu_);
    posted_ = generation;
  }
  RunChunks();
  // Chunks a helper claimed and still runs: wait for them (they are running, not queued).
  for (int spins = 0; done_.load(std::memory_order_acquire) < n; ++spins) {
    if (spins < 4000) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
  SetOpenMpThreads(team);
  std::exception_ptr error;
  {
    absl::MutexLock lock(&error_mu_);
    std::swap(error, error_);
  }
  if (error) std::rethrow_exception(error);
}

void RunSplitLoop(void* fn, int64_t* slots, int64_t lo, int64_t hi) {
  auto* body = reinterpret_cast<void (*)(int64_t, int64_t, int64_t*)>(fn);
  KernelPool* pool = KernelPool::OfThisThread();
  const int64_t n = hi - lo;
  if (pool == nullptr || pool->helpers() == 0 || n < 2) {
    body(lo, hi, slots);
    return;
  }
  // A few chunks per thread: a helper that gets its core late still finds work, and the
  // executor is never left waiting on one big chunk a late helper took.
  const int64_t chunks = std::min<int64_t>(n, 4 * (pool->helpers() + 1));
  if (pool->stats() != nullptr) pool->stats()->CountLoopSplit();
  pool->ParallelFor(static_cast<int>(chunks), [&](int c) {
    body(lo + n * c / chunks, lo + n * (c + 1) / chunks, slots);
  });
}

}  // namespace trn::runtime
