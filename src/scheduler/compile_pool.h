// CompilePool: threads that build groups whose key has no code yet and publish the code into the
// key's CodeSlot.
//  - adaptive mode: the background compilers. The executor finds the code the next time the group
//    runs; nobody ever waits for a compile (except WaitIdle, for tests and benchmarks).
//  - compile mode: the segment builders (no tiering, nice 0, unbounded). A flush queues every new
//    group of its segment, then awaits the slots in stream order, submitting each unit as soon as
//    its code is there: the groups build in parallel while the executor runs the built ones.
//
//  - Bounded: at most `queue_capacity` first builds wait; Submit refuses beyond that (the
//    caller forgets the key, so the group is queued again when next seen).
//  - Deduplicated by the caller: the CodeCache creates one slot per key, and only the creator
//    submits it.
//  - Tiering: a first build at LLVM -O0 (about 10x faster to compile), then an optimised rebuild
//    at `opt_level` that replaces it. Rebuilds wait in their own queue and run only when no
//    first build is waiting: covering new groups matters more than speeding up covered ones.
//  - Payoff order: a worker takes the queued build whose group has cost the most so far without
//    it (CodeSlot::payoff_ns: the executor's op-by-op time on the group while it waited, or its
//    fast-tier time for a tier-up), not the oldest: hot, expensive groups compile first.
//  - Low priority: workers run at nice `nice`, so recording and execution win the CPU.
//  - Caches first: a job looks for an existing build (disk, a peer rank) before compiling; a
//    found final-level build skips the fast tier. When another rank holds the build's lease,
//    the job is parked and retried every `poll_ms` (the group keeps running op by op).
//
// Thread-safety: every method may be called from any thread. Threads start on the first Submit.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "runtime/code_cache.h"
#include "scheduler/group_compiler.h"

namespace trn::scheduler {

struct CompilePoolOptions {
  int workers = 1;
  int64_t queue_capacity = 256;
  bool tiering = true;
  int opt_level = 3;  // the final tier's LLVM level
  int nice = 10;
  int64_t poll_ms = 50;  // retry period of jobs parked on another rank's lease
  std::string thread_name = "compile worker";  // profiler lane: "<thread_name> <index>"
};

class CompilePool {
 public:
  CompilePool(CompilePoolOptions options, GroupCompiler* compiler);
  ~CompilePool();  // Shutdown()
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Queues the first build of `slot`'s group. False when the queue is full or the pool is shut
  // down (nothing was queued).
  bool Submit(CompileRequest request, std::shared_ptr<runtime::CodeSlot> slot);
  // Blocks until no compile is queued or running (tier-ups included).
  void WaitIdle();
  // Whether a compile is queued, parked or running (tier-ups included), without waiting.
  bool Busy() const;
  // Drops every queued compile (failing its slot, so that nobody awaits it forever: parked jobs
  // and a running one that finds its lease held elsewhere fail with a CancelledError naming the
  // lease), waits for the running ones, stops the threads. Idempotent; no Submit succeeds afterwards. Called at exit, before LLVM's static destructors run.
  void Shutdown();

 private:
  struct Job {
    CompileRequest request;
    std::shared_ptr<runtime::CodeSlot> slot;
    int tier = 0;
    double not_before_s = 0;  // parked jobs: monotonic seconds of the next try
    bool parked = false;      // parked at least once (its wait was counted)
  };
  void Worker(int index);
  void Run(Job job);
  bool ParkedDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasJob() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stop_ || !first_.empty() || !tier_up_.empty() || ParkedDue();
  }
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return first_.empty() && tier_up_.empty() && parked_.empty() && running_ == 0;
  }

  const CompilePoolOptions options_;
  GroupCompiler* const compiler_;
  mutable absl::Mutex mu_;
  std::deque<Job> first_ ABSL_GUARDED_BY(mu_);
  std::deque<Job> tier_up_ ABSL_GUARDED_BY(mu_);
  std::deque<Job> parked_ ABSL_GUARDED_BY(mu_);  // waiting for another rank's build
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::scheduler
