#include "runtime/kernel_pool.h"

#include <algorithm>
#include <chrono>

#include "base/profiler.h"
#include "runtime/threads.h"

namespace trn::runtime {
namespace {

thread_local KernelPool* this_thread_pool = nullptr;

constexpr uint64_t Pack(uint64_t generation, uint64_t index) { return generation << 32 | index; }

// Straggler back-off bounds (kernel_pool.h), and the loss of a split that counts as a stall (a
// helper preempted inside its chunk for part of a scheduler time slice).
constexpr int64_t kMinBackoffNs = 1'000'000;
constexpr int64_t kMaxBackoffNs = 256'000'000;
constexpr int64_t kStallNs = 500'000;
// The most the gains of past splits can stand for: ~3 stalls of a scheduler time slice.
constexpr int64_t kMaxBalanceNs = 10'000'000;

}  // namespace

KernelPool* KernelPool::OfThisThread() { return this_thread_pool; }
void KernelPool::SetForThisThread(KernelPool* pool) { this_thread_pool = pool; }

KernelPool::KernelPool(int helpers, base::Stats* stats, const std::atomic<int>* recorder_waiting, int spare_cores)
    : stats_(stats), recorder_waiting_(recorder_waiting), spare_cores_(spare_cores) {
  for (int i = 0; i < helpers; ++i) {
    threads_.emplace_back([this, i] {
      base::profiler::NameThisThread(i == 0 ? "kernel helper" : "kernel helper " + std::to_string(i));
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

KernelPool::Ran KernelPool::RunChunks() {
  Ran ran;
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  const int n = n_.load(std::memory_order_acquire);
  while (true) {
    uint64_t v = next_.load(std::memory_order_acquire);
    int index = 0;
    do {
      if ((v >> 32) != (generation & 0xffffffffu) || static_cast<int>(v & 0xffffffffu) >= n) return ran;
      index = static_cast<int>(v & 0xffffffffu);
    } while (!next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire));
    const int64_t begin = base::SteadyNs();
    try {
      (*fn_)(index);
    } catch (...) {
      absl::MutexLock lock(&error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    ran.ns += base::SteadyNs() - begin;
    ++ran.chunks;
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
      // Announce the sleep before testing the generation again under mu_ (both seq_cst), so a
      // ParallelFor that published a kernel either sees a sleeper and wakes it, or published
      // before this test, which then sees the kernel: no kernel is missed by a sleeping helper.
      sleepers_.fetch_add(1);
      {
        absl::MutexLock lock(&mu_);
        auto woken = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stop_ || generation_.load() != seen;
        };
        mu_.Await(absl::Condition(&woken));
      }
      sleepers_.fetch_sub(1);
      if (Stopping()) return;
    }
    seen = generation_.load(std::memory_order_acquire);
    RunChunks();
  }
}

bool KernelPool::Stopping() {
  absl::MutexLock lock(&mu_);
  return stop_;
}

bool KernelPool::HelpersMayRun() const {
  return spare_cores_ > 0 || recorder_waiting_ == nullptr || recorder_waiting_->load(std::memory_order_acquire) > 0;
}

void KernelPool::ParallelFor(int n, const std::function<void(int)>& fn, int64_t expected_ns) {
  if (n <= 0) return;
  const int64_t start = base::SteadyNs();
  const bool short_for_sleepers = expected_ns >= 0 && expected_ns < kWakeWorthNs &&
                                  sleepers_.load(std::memory_order_acquire) >= static_cast<int>(threads_.size());
  if (threads_.empty() || n == 1 || short_for_sleepers || (alone_until_ns_ != 0 && start < alone_until_ns_) ||
      !HelpersMayRun()) {
    if (n > 1 && !threads_.empty() && stats_ != nullptr) stats_->CountKernelRunAlone();
    // As in a split: every chunk runs, then the first exception is rethrown.
    std::exception_ptr first;
    for (int i = 0; i < n; ++i) {
      try {
        fn(i);
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
    return;
  }
  const int team = OpenMpThreads();
  SetOpenMpThreads(1);
  const uint64_t generation = (generation_.load(std::memory_order_relaxed) + 1) & 0xffffffffu;
  fn_ = &fn;
  n_.store(n, std::memory_order_release);
  done_.store(0, std::memory_order_release);
  next_.store(Pack(generation, 0), std::memory_order_release);
  generation_.store(generation);  // seq_cst: ordered before the sleepers_ load (Helper)
  if (sleepers_.load() > 0) {
    absl::MutexLock lock(&mu_);  // the unlock wakes the sleeping helpers (their condition holds)
  }
  const Ran own = RunChunks();
  // Chunks a helper claimed and still runs: wait for them (they are running, not queued).
  for (int spins = 0; done_.load(std::memory_order_acquire) < n; ++spins) {
    if (spins < 4000) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
  const int64_t end = base::SteadyNs();
  // What the split gained: the kernel alone would have taken about n of the executor's own
  // chunks (they are of equal size); a straggler makes that negative. The balance of recent
  // gains decides: a few stalls among many splits that pay keep the splits going.
  const int64_t alone_estimate = own.chunks > 0 ? own.ns / own.chunks * n : 0;
  // Only a stall (a helper that lost its core inside a chunk) counts against the splits: a
  // smaller loss, such as waking a sleeping helper (~100 us here), is what any split risks
  // and is paid back by the next ones.
  const int64_t gain = alone_estimate - (end - start);
  const bool stalled = gain < -kStallNs;
  if (stalled && stats_ != nullptr) stats_->CountKernelStraggler();
  balance_ns_ = std::min(balance_ns_ + (stalled ? gain : std::max<int64_t>(gain, 0)), kMaxBalanceNs);
  if (balance_ns_ < 0) {  // the splits lost more than they won lately: run alone for a while
    backoff_ns_ = std::clamp(backoff_ns_ * 2, kMinBackoffNs, kMaxBackoffNs);
    alone_until_ns_ = end + backoff_ns_;
    balance_ns_ = 0;  // the next split after the back-off is judged afresh
  } else {
    backoff_ns_ /= 2;
    alone_until_ns_ = 0;
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
  // The nest's last time per outer iteration (the pool's caller is one thread: no lock). A split
  // run's time is about half the one-thread time, which only makes the estimate cautious. In
  // picoseconds: an elementwise loop over a flat tensor takes under a nanosecond an iteration,
  // which in nanoseconds rounded to 0 and made a 10 ms loop look short enough to run alone.
  const auto known = pool->nest_ps_per_iteration_.find(fn);
  const int64_t expected = known == pool->nest_ps_per_iteration_.end() ? -1 : known->second * n / 1000;
  const int64_t begin = base::SteadyNs();
  pool->ParallelFor(static_cast<int>(chunks), [&](int c) {
    body(lo + n * c / chunks, lo + n * (c + 1) / chunks, slots);
  }, expected);
  if (pool->nest_ps_per_iteration_.size() < 4096 || known != pool->nest_ps_per_iteration_.end()) {
    pool->nest_ps_per_iteration_[fn] = (base::SteadyNs() - begin) * 1000 / n;
  }
}

}  // namespace trn::runtime
