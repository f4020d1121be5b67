// Small thread utilities: brief spinning before a thread sleeps, and the calling thread's
// OpenMP team size.
//
// SpinUntil is for waits expected to end within microseconds (the executor between units, a sync
// waiting for the last small ops, kernel-pool helpers between products): waking a sleeping
// thread on an idle core costs ~100 µs on this machine's virtual CPUs (the core halts), more
// than the spin. It reads the clock every 32 pauses only, and yields the core there: when the
// thread it waits for shares this core (another process busy on the other one: the scheduler
// then keeps the recording thread and the executor together, waking each other), spinning
// held the core that thread needed until the budget ran out, and a sync round trip of one tiny
// op took 108 µs (median) instead of 6 (sched_yield returns at once when nothing else waits).
//
// OpenMpThreads / SetOpenMpThreads act on the calling thread (OpenMP's "nthreads" setting is per
// thread), through libtorch's own libgomp resolved from the process rather than linked, so no
// second OpenMP runtime gets loaded. MKL with the GNU threading layer follows the setting. Both
// first let ATen initialise the thread's setting (it does so on a thread's first parallel call,
// to what torch.set_num_threads() last asked for): done later, that silently gave the executor
// the user's team size back whenever the script had called torch.set_num_threads().
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <sched.h>

#include <chrono>

namespace trn::runtime {

inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// Spins until `ready()` or `budget` passed; returns whether `ready()` turned true.
template <typename Pred>
bool SpinUntil(std::chrono::nanoseconds budget, Pred ready) {
  const auto until = std::chrono::steady_clock::now() + budget;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    CpuRelax();
    if ((i & 31) == 31) {
      if (std::chrono::steady_clock::now() >= until) return false;
      sched_yield();
    }
  }
}

int OpenMpThreads();             // 1 when no OpenMP runtime is loaded
void SetOpenMpThreads(int n);    // no-op for n <= 0 or without an OpenMP runtime

// Runs the calling thread's ATen kernels on that thread alone while in scope (OpenMP team size 1),
// then restores its setting. For the copies the recording thread makes itself (a host tensor
// into a fresh device tensor, a device tensor to the host): with a team of two, each such copy
// above ATen's grain size woke an OpenMP worker that then spun for its wait policy's time on the
// core the executor and its kernel pool run on (mlp in eager mode: that worker took a quarter
// as much CPU as the executor, for copies of 256 KB).
class ScopedSerialKernels {
 public:
  ScopedSerialKernels() : previous_(OpenMpThreads()) {
    if (previous_ > 1) SetOpenMpThreads(1);
  }
  ~ScopedSerialKernels() {
    if (previous_ > 1) SetOpenMpThreads(previous_);
  }
  ScopedSerialKernels(const ScopedSerialKernels&) = delete;
  ScopedSerialKernels& operator=(const ScopedSerialKernels&) = delete;

 private:
  const int previous_;
};

}  // namespace trn::runtime
