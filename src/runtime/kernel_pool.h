// KernelPool: helper threads that let one large library kernel of the executor (a matrix
// product) use the cores the recording thread leaves idle.
//
// A kernel is split into chunks (rows of a product's result, batches of a batched one) that the
// executor thread and the helpers claim from a shared counter. Claiming, not assigning: a helper
// that does not get a core (the recording thread is busy) never delays the kernel, since the
// executor runs whatever chunk nobody has claimed yet, so a split kernel is never slower than
// the unsplit one by more than the hand-off. Helpers spin briefly for the next kernel (the
// executor issues them back to back), then sleep on a condition variable: an idle pool costs no
// CPU, unlike OpenMP workers that spin for milliseconds against the recording thread
// (docs/adaptive.md, "Threads on a small machine").
//
// Whose cores: the executor and the recording thread each need one. Helpers beyond those
// (`spare_cores`: the machine's cores minus two) always split; the helper that would take the
// recording thread's core splits only while the recording thread waits for the executor (a
// sync, a flush waiting for its units, backpressure: `recorder_waiting` > 0). While it records,
// the executor runs its kernels alone: the executor then has slack (it keeps up with the
// recording), and a helper on the recording thread's core moves work onto the step's critical
// path (measurements: docs/adaptive.md, "Whose core"). On this 2-core machine there is no spare
// core: kernels split exactly while the program waits for them.
//
// Each chunk runs its kernel single-threaded (the helpers' and, during the split, the executor's
// OpenMP team size is 1), so there is no nested parallelism.
//
// A claimed chunk must finish before the kernel does, so a helper preempted in the middle of one
// (other processes, DataLoader workers or a compiler on the same cores) stalls the executor for
// a scheduler time slice, milliseconds for a kernel of microseconds: measured with 4 builds
// running beside gpt's steady step, a group of 32 `zero_` took 11.2 ms split against 71 us op by
// op. So the pool keeps a balance of what its recent splits gained against running alone (the
// executor's own chunk time times the chunk count, minus the split's time; capped at 10 ms of
// credit), in which only stalls (a loss over 0.5 ms) count as losses. When it goes negative, every kernel runs alone for a back-off time that doubles each
// time (1 ms .. 256 ms) and halves with each split that leaves the balance positive. On a quiet
// machine the occasional stall (the recording thread took the helper's core) is paid from the
// credit and the splits go on; on a loaded one, one probe per back-off costs one stall.
//
// Thread-safety: ParallelFor is called by one thread at a time (the executor thread); the
// helpers are internal. The pool is destroyed with the executor.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "base/stats.h"

namespace trn::runtime {

class KernelPool {
 public:
  // `stats` (may be null) counts the loop nests RunSplitLoop splits. `recorder_waiting` (may be
  // null: every helper splits) counts the threads waiting for the executor; `spare_cores` is
  // the number of cores left beside the executor's and the recording thread's.
  explicit KernelPool(int helpers, base::Stats* stats = nullptr, const std::atomic<int>* recorder_waiting = nullptr,
                      int spare_cores = 0);
  ~KernelPool();
  KernelPool(const KernelPool&) = delete;
  KernelPool& operator=(const KernelPool&) = delete;

  int helpers() const { return static_cast<int>(threads_.size()); }
  base::Stats* stats() const { return stats_; }
  // Runs fn(i) for every i in [0, n), on the calling thread and the helpers; returns when all
  // ran. The first exception a chunk threw is rethrown here (after every chunk finished).
  // `expected_ns`, when known (>= 0), is about how long the whole kernel takes on one thread:
  // a kernel shorter than kWakeWorthNs runs on the caller alone while every helper sleeps, since
  // a sleeping helper reaches its core ~100 us after the wake-up here (a split 32-op AdamW
  // group of small loops took 275 us against 140 us alone).
  void ParallelFor(int n, const std::function<void(int)>& fn, int64_t expected_ns = -1);
  static constexpr int64_t kWakeWorthNs = 150'000;

  // The pool of the executor thread (set by the executor on its own thread), or null elsewhere:
  // host fallbacks on the Python thread never split.
  static KernelPool* OfThisThread();
  static void SetForThisThread(KernelPool* pool);

 private:
  void Helper();
  bool Stopping();
  // Claims and runs chunks of the current kernel until none is left; returns how many it ran
  // and the nanoseconds they took.
  struct Ran {
    int64_t ns = 0;
    int chunks = 0;
  };
  Ran RunChunks();

  // Whether a kernel may split now (see "Whose cores" above).
  bool HelpersMayRun() const;

  base::Stats* const stats_;
  const std::atomic<int>* const recorder_waiting_;
  const int spare_cores_;
  std::vector<std::thread> threads_;
  // The current kernel: chunks [0, n_), next_ the next unclaimed one, done_ the finished ones.
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<int> n_{0};
  std::atomic<uint64_t> next_{0};        // (generation << 32) | next unclaimed chunk
  std::atomic<int> done_{0};
  std::atomic<uint64_t> generation_{0};  // bumped for each kernel (32 bits)
  std::exception_ptr error_ ABSL_GUARDED_BY(error_mu_);
  absl::Mutex error_mu_;
  absl::Mutex mu_;  // sleeping helpers wait here for a new generation or stop_
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // Helpers asleep on mu_ (or about to be): ParallelFor takes mu_ only then, to wake them, so
  // kernels issued back to back to spinning helpers never touch the mutex.
  std::atomic<int> sleepers_{0};
  // Straggler back-off (see above); read and written by the ParallelFor caller only.
  int64_t balance_ns_ = 0;  // recent splits' gains (ns saved against running alone), capped
  // RunSplitLoop's estimates: picoseconds per outer iteration of each nest (at most 4096 nests).
  friend void RunSplitLoop(void* fn, int64_t* slots, int64_t lo, int64_t hi);
  absl::flat_hash_map<void*, int64_t> nest_ps_per_iteration_;
  int64_t backoff_ns_ = 0;
  int64_t alone_until_ns_ = 0;
};

// What compiled code calls for a loop nest split over the pool (mlir_lowering/parallel_passes.h):
// runs fn(lo', hi', slots) for chunks [lo', hi') covering [lo, hi) on the calling thread's pool
// (the executor's), or fn(lo, hi, slots) at once on a thread without one. `slots` holds the
// nest's other arguments; fn is `void(int64_t, int64_t, int64_t*)`. Thread-safe as ParallelFor.
// The pool learns each nest's time per outer iteration (by its function) from its last run, as
// the expected_ns of the next.
void RunSplitLoop(void* fn, int64_t* slots, int64_t lo, int64_t hi);

}  // namespace trn::runtime
