// The executor thread: runs submitted units one at a time, in submission (stream) order. A unit
// is a run of OpRecords, executed either op by op with ATen's CPU kernels on host aliases of
// device storage, or as one compiled group (compiled_run.h).
//
// Errors are stored (with the op and its source line) and returned by the next Wait(); ops
// submitted after a failed op are skipped until that Wait() reports the failure, since their
// inputs may be garbage. Like CUDA's asynchronous errors, but recoverable. Every storage a
// failed or skipped op writes is poisoned with the failure (poison.h): after the Wait(), ops
// that read a poisoned storage are skipped in turn (poisoning what they write), and reading one
// on the host raises the failure again; ops on good data run as usual.
//
// Thread-safe: Submit, Wait, LastOps, CurrentOp, TakeRetired and WaitFinishedThrough may be
// called from any thread. A unit's `plan` runs on the executor thread. Submit blocks while `max_pending` ops are queued (backpressure keeps
// memory bounded).
#pragma once

#include <cstdint>
#include <atomic>
#include <deque>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include <c10/util/Exception.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "runtime/code_cache.h"
#include "runtime/compiled_run.h"
#include "runtime/group_bench.h"
#include "runtime/kernel_pool.h"
#include "runtime/op_record.h"
#include "runtime/op_runner.h"
#include "base/stats.h"
#include "runtime/unit_ring.h"

namespace trn::runtime {

struct ExecutedOp {
  // The op (its name is built only when asked for: the executor fills one of these per op).
  std::optional<c10::OperatorHandle> handle;
  std::string op() const { return handle.has_value() ? OpName(*handle) : std::string(); }
  base::SourceId source = base::kNoSource;
  uint64_t seq = 0;
  bool failed = false;
  // The group the op belongs to ("" outside groups), its op count, and whether it runs as
  // compiled code (then `op` is the group's first op: the whole group is one call).
  std::string group_key;
  int64_t group_ops = 0;
  bool compiled = false;
};

// A unit of execution: ops in stream order, plus the compiled group that computes them all (or
// nothing: then they run op by op).
//  - eager: one op, no group.
//  - a group (compile / adaptive): `compiled` holds this run's buffers; its code is either set
//    already or taken from `slot` when the unit runs. No code then (adaptive: still compiling;
//    or the compile failed) means the ops run one by one. The executor never waits for a slot.
//  - `unlowered`: ops the grouper could not put in a group (no lowering): op by op.
//  - a flushed segment not planned yet (`plan` set): the executor thread calls `plan` with the
//    segment's records when the unit reaches the front of the queue (or earlier, while it waits
//    for a build) and queues the units it returns in its place (compile and adaptive mode plan
//    here, not on the recording thread).
struct ExecUnit {
  std::vector<OpRecord> ops;
  std::optional<CompiledUnit> compiled;
  std::shared_ptr<const CodeSlot> slot;
  // compile mode: the executor waits for `slot` when the unit's turn comes and its code is not
  // there yet (the segment builders are building it), instead of running the ops one by one.
  bool await_code = false;
  std::string key;  // hex group key ("" outside groups)
  bool unlowered = false;
  uint64_t batch = 0;  // the flush that submitted the unit (grouping modes; see TakeRetired)
  // Storages nothing reads after this unit: their memory is freed once it has run, long before
  // the unit itself is released (the stream decides them: scheduler/segment_refs.h). Kept alive
  // by the unit's tensors.
  std::vector<c10::StorageImpl*> release_after;
  // A segment to plan (see above); called once, on the executor thread.
  std::function<std::vector<ExecUnit>(std::vector<OpRecord> records)> plan;
};

struct ExecutorOptions {
  int64_t max_pending = 4096;
  int64_t last_ops_capacity = 256;
  // Keep finished units (so their tensors' storage use counts) until the stream takes them
  // (TakeRetired), at points of the stream (grouping modes); else release them as below.
  bool retain_finished = false;
  // OpenMP threads of the kernels the executor runs (0: leave the default).
  int64_t kernel_threads = 0;
  // NEURON_BENCH_GROUPS: run every compiled group op by op too, timed (group_bench.h).
  bool bench_groups = false;
  // Helper threads that take chunks of the executor's large matrix products (kernel_pool.h).
  int64_t kernel_helpers = 0;
  // NEURON_INSTANT_TIER: a group without code runs through its instant program (instant_program.h).
  bool instant_tier = false;
};

class Executor {
 public:
  // Finished units the recording thread lets wait before it releases them (ReleaseFinished).
  static constexpr size_t kReleaseBatch = 32;
  Executor(ExecutorOptions options, base::Stats* stats);
  ~Executor();  // finishes queued work, then joins the thread
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void Submit(OpRecord record);
  void Submit(ExecUnit unit);
  // While in scope, the calling thread counts as waiting for the executor (as inside Wait), so
  // the kernel pool's helper may take its core (kernel_pool.h). A sync holds one from before its
  // flush: the segment it submits may start running before Wait is entered.
  class WaitingScope {
   public:
    explicit WaitingScope(Executor& executor) : waiting_(executor.waiting_) {
      waiting_.fetch_add(1, std::memory_order_acq_rel);
    }
    ~WaitingScope() { waiting_.fetch_sub(1, std::memory_order_acq_rel); }
    WaitingScope(const WaitingScope&) = delete;
    WaitingScope& operator=(const WaitingScope&) = delete;

   private:
    std::atomic<int>& waiting_;
  };
  // Blocks until every submitted op has run; returns (and clears) the first error since the
  // previous Wait, with "<op> at <file:line (function)>: " prepended. Warnings the kernels
  // raised meanwhile are re-raised (c10::warn) on the waiting thread, where PyTorch turns them
  // into Python warnings.
  absl::Status Wait();
  // Ops submitted but not yet executed (counted per op, also inside compiled units).
  int64_t Pending() const;
  // The most recent executed ops, oldest first (at most n).
  std::vector<ExecutedOp> LastOps(size_t n) const;
  // The op executing right now, if any.
  std::optional<ExecutedOp> CurrentOp() const;
  // With options.retain_finished, a finished unit keeps its tensors (so its storages' use counts)
  // until taken here: every unit of batch <= `batch` (waiting for them to finish first), for the
  // caller to destroy. The stream takes them at deterministic points (flushes, syncs), so storage
  // use counts seen by the program, e.g. by autograd when it decides whether to accumulate a
  // gradient in place, never depend on how far the executor has got.
  std::deque<ExecUnit> TakeRetired(uint64_t batch);
  // Waits until every unit of batch <= `batch` finished (what TakeRetired waits for first), so a
  // caller can time the wait apart from the release.
  void WaitFinishedThrough(uint64_t batch);
  // A host read of data that only units of batch <= `batch` touch: waits for those units, not
  // for the later ones. When an error is pending by then (in those units or in any that ran
  // meanwhile), it is Wait() instead: the error is reported now, as at a full sync. Otherwise
  // later units go on running and a failure among them is reported by the next Wait.
  absl::Status WaitThrough(uint64_t batch);
  // options.bench_groups: each compiled group's time compiled and op by op (group_bench.h).
  std::vector<GroupBenchRow> GroupBenchRows() const { return group_bench_.Rows(); }

 private:
  void Loop();
  // Runs `unit` (the executor thread); records completed ops and the first error.
  void RunUnit(ExecUnit& unit, bool poisoned);
  // Replaces the first queued segment (a unit with `plan`) by the units its plan makes of its
  // records; false when none is queued. The executor thread only.
  bool PlanQueuedSegment();
  void RunCompiled(ExecUnit& unit);
  void RunOpByOp(ExecUnit& unit, bool poisoned, bool profile);
  // Op `i` of `unit`, op by op (RunOpByOp's step): skipped when `poisoned` or an error is pending.
  void RunOneOp(ExecUnit& unit, int64_t i, bool poisoned, bool profile);
  // A group without code through its instant program: chains through the tile kernels, the
  // other ops as RunOneOp (a failure skips the rest, as op by op).
  void RunInstant(ExecUnit& unit, const InstantProgram& program, bool profile);
  // The instant program of `unit`'s key (built and kept on its slot on the first call), or null
  // when it has no chain.
  std::shared_ptr<const InstantProgram> InstantProgramOf(const ExecUnit& unit);
  // Records that `op` ran (or failed: the first error is kept) or was skipped, and poisons what
  // it writes when it failed or was skipped (poison.h): by `skip_origin` when not OK, else by
  // the pending first error.
  void Finish(const OpRecord& op, absl::Status status, bool skipped, const absl::Status& skip_origin,
              const ExecUnit& unit, bool compiled);
  void CollectWarning(const c10::Warning& warning);
  void ReraiseWarnings();
  friend class ExecutorWarningHandler;
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !queue_.empty(); }
  bool HasRoom() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends `unit` (of `n` ops) to the queue, with its counts.
  void Enqueue(ExecUnit unit, int64_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !running_.has_value(); }
  // Every unit of batch <= b has finished (units run in submission order).
  bool FinishedThrough(uint64_t b) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !(running_.has_value() && running_batch_ <= b) && (queue_.empty() || queue_.front().batch > b);
  }

  // Frees the memory of `unit.release_after` (the executor thread, after the unit ran).
  void ReleaseEarly(ExecUnit& unit);
  // Without retain_finished: releases the finished units (their records' tensors, snapshots and
  // vectors) when at least `at_least` are waiting. The recording thread calls it every
  // kReleaseBatch submits and at Wait, the executor when no work came for kQuietBeforeRelease. Most
  // of what a unit frees was allocated by the recording thread; freed on the executor, malloc's
  // arena lock convoyed the two threads (perf, the tiny add of bench/record_overhead.py: ~20 %
  // of the recording thread in futex wake-ups of the executor blocked in free()).
  void ReleaseFinished(size_t at_least);

  const ExecutorOptions options_;
  base::Stats* const stats_;
  GroupBench group_bench_;
  // Threads blocked on this executor (Wait, WaitFinishedThrough, Submit's backpressure): while
  // one waits, its core is idle and the kernel pool's helper may use it (kernel_pool.h).
  std::atomic<int> waiting_{0};
  std::unique_ptr<KernelPool> kernel_pool_;  // created before the executor thread starts
  mutable absl::Mutex mu_;
  UnitRing<ExecUnit> queue_ ABSL_GUARDED_BY(mu_);
  int64_t queued_ops_ ABSL_GUARDED_BY(mu_) = 0;
  // Mirrors of queue_.size() and of "queued or running" units, written under mu_ where those
  // change and read without it: the executor spins on the first for new work and Wait() on the
  // second for completion, briefly, before they sleep on mu_ (a sleeping thread's wake-up costs
  // ~100 µs on a virtual machine's idle core; threads.h).
  std::atomic<int64_t> queued_units_{0};
  std::atomic<int64_t> unfinished_units_{0};
  std::atomic<int64_t> finished_units_{0};  // retired_.size() without retain_finished
  std::optional<ExecutedOp> running_ ABSL_GUARDED_BY(mu_);
  uint64_t running_batch_ ABSL_GUARDED_BY(mu_) = 0;
  UnitRing<ExecUnit> retired_ ABSL_GUARDED_BY(mu_);  // finished, not yet released
  // ReleaseFinished swaps retired_ with this one and destroys its units outside mu_, keeping both
  // rings' slots allocated. Both the recording thread and the executor release.
  absl::Mutex release_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  UnitRing<ExecUnit> releasing_ ABSL_GUARDED_BY(release_mu_);
  std::deque<ExecutedOp> last_ops_ ABSL_GUARDED_BY(mu_);
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  std::vector<c10::Warning> warnings_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace trn::runtime
