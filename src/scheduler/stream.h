// The device's op stream: recorded ops enter in issue order and leave for the executor as
// execution units.
//  - eager: every op is its own unit, submitted at once.
//  - compile: ops wait in the pending segment; at a sync point, or once the segment holds half
//    of NEURON_MAX_GROUP_OPS ops at a content-defined point (at the latest when it holds all of
//    them: the executor runs a step's first groups while the rest is recorded), the segment is
//    cut into groups (grouper.h), each
//    group is compiled (blocking; the in-memory cache makes step 2 compile nothing) and the
//    units are submitted in order. New groups build in parallel on NEURON_COMPILE_WORKERS
//    threads; each unit is submitted as soon as its code is there.
//  - adaptive: the segment is cut at a content-defined point once it holds half of
//    NEURON_ADAPTIVE_GROUP_OPS ops, at the latest when it holds all of them (cut_policy.h), and
//    at sync points. A group whose key has no code yet is queued on the
//    CompilePool and submitted anyway: the executor runs it compiled if its code is ready when
//    its turn comes, else op by op. Cuts depend only on the recorded ops, never on timing, so
//    every training step yields the same keys.
//    With NEURON_ADAPTIVE_GROW, once the compiler has caught up, adaptive mode flushes and cuts
//    as compile mode does (group_growth.h): small groups compile fast, larger ones run faster.
//  - compile and adaptive: the pending ops are also flushed when the recording thread changes
//    (forward on the Python thread, backward on the autograd thread, the optimizer back on the
//    Python thread): the grouper cuts there anyway, and the executor runs the forward while the
//    backward is recorded, the backward while the optimizer is.
// Results equal eager's in every mode: same ops, same order.
//
// Thread-safety: Record and Sync may be called from any thread (the Python thread records forward
// ops, the autograd engine's device thread records backward ops). Records are numbered under one
// mutex, so stream order is the order in which Record calls return. Flushes are serialised by
// their own mutex, so units reach the executor in stream order.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "runtime/executor.h"
#include "base/knobs.h"
#include "base/stats.h"
#include "scheduler/compile_pool.h"
#include "scheduler/cut_policy.h"
#include "scheduler/group_compiler.h"
#include "scheduler/group_growth.h"
#include "scheduler/grouper.h"
#include "scheduler/plan_cache.h"
#include "scheduler/plan_store.h"
#include "scheduler/segment_planner.h"
#include "scheduler/segment_refs.h"
#include "scheduler/shape_variants.h"
#include "scheduler/miss_explainer.h"

namespace trn::scheduler {

// Nanoseconds this thread has spent in flushes so far (so recording time can leave them out).
int64_t FlushNsOnThisThread();

class Stream {
 public:
  Stream(const base::Knobs& knobs, base::Stats* stats);

  // Appends `record` to the stream. With launch_blocking, also runs it and returns its error.
  // `record_begin_us`: profiler time at which recording the op started (0: not profiling).
  absl::Status Record(runtime::OpRecord record, double record_begin_us = 0);
  // Runs everything recorded so far; returns the first error since the last sync. `reason`
  // names the sync point in stats ("item", "to_host", "user", ...).
  absl::Status Sync(const std::string& reason);
  // A sync point that reads `storages` on the host (item(), a copy to the host): flushes as Sync,
  // then waits only for the flushes whose records reference one of them (compile and adaptive
  // modes; a full Sync otherwise). The rest of the stream, typically the optimizer step recorded
  // after the loss, goes on running while the program records the next step. Errors are
  // reported as by Sync when they happened by then; a later unit's failure at the next sync
  // point (what poisoned data the program reads raises at once: poison.h).
  absl::Status SyncRead(const std::string& reason, absl::Span<const c10::StorageImpl* const> storages);
  base::Mode mode() const { return mode_; }
  runtime::Executor& executor() { return executor_; }
  GroupCompiler& compiler() { return compiler_; }
  runtime::cache::CacheStats& cache_stats() { return cache_stats_; }
  // Hands the pending segment to the executor (compile and adaptive modes; nothing is pending in
  // eager mode), with what the references at this point decide (SegmentRefs), and releases the
  // units of kRetiredBatches flushes ago. Not a sync: nothing waits for the units to run.
  // Collectives call it after recording (trace/collective.h). Returns the number of the last
  // flush (this one, or the one before when nothing was pending).
  uint64_t Flush();
  // Waits until the executor has run every unit flushed so far (compile and adaptive mode; eager
  // mode's units are not waited for). Not a sync point: nothing is flushed and errors stay
  // pending. stats() calls it, so that what it reports after a host read (which may return
  // before the last flushes ran: SyncRead) does not depend on the executor's progress.
  void WaitForFlushed();
  // adaptive mode: blocks until the executor has planned (and run) every flushed segment, so their
  // new groups are queued, and then until no background compile is queued or running (no-op
  // otherwise). A host read may return before the last flushes are planned (SyncRead).
  void WaitForCompiles();
  // Stops the background compilers (queued compiles are dropped). At exit.
  void ShutdownCompiles();

 private:
  bool Groups() const { return mode_ != base::Mode::kEager && !launch_blocking_; }
  // How a segment is flushed and cut into groups. Adaptive mode has two (small, large: group
  // growth); the other modes use the first only.
  struct Sizing {
    CutPolicy flush;         // when pending ops are flushed without a sync point
    int64_t max_group_ops;   // the grouper's largest group
    // Planning state: used by the executor thread only (PlanSegment). Plans of one sizing
    // never serve the other: a cached small group would match the start of a large one.
    PlanCache plans;
    // The plan cache's disk tier (NEURON_CACHE_PLANS, with the disk cache), or null.
    std::unique_ptr<PlanStore> store;
  };
  // At a sync point: group growth's phase for the ops recorded next (adaptive mode).
  void Grow(uint64_t flushed);
  // Sync, and SyncRead of `*read` when set: waits for the flushes that reference it only.
  absl::Status SyncThrough(const std::string& reason, const absl::Span<const c10::StorageImpl* const>* read);
  // Numbers `record` and submits it (eager) or appends it to the pending segment; returns
  // whether the segment should be flushed now (the pending segment's sizing).
  bool Append(runtime::OpRecord record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The executor thread, when a flushed segment's turn comes: cuts it into units, attaches (or
  // starts) their code.
  std::vector<runtime::ExecUnit> PlanSegment(std::vector<runtime::OpRecord> records, const SegmentRefs& refs,
                                            Sizing& sizing, uint64_t batch);
  runtime::ExecUnit MakeGroupUnit(PlannedUnit& planned);
  // Destroys the finished units of flushes <= batch and gives up their references.
  void ReleaseThrough(uint64_t batch);
  // Looks for torch.distributed's store while none is known (on the flushing thread: finding it
  // may take the GIL and import a module; throttled except right after a process group was
  // created: runtime::cache::RemoteRefreshDue).
  void RefreshRemote() ABSL_EXCLUSIVE_LOCKS_REQUIRED(flush_mu_);
  void ExplainMiss(const std::string& key_hex, const std::vector<runtime::OpRecord>& ops);

  const base::Mode mode_;
  const bool launch_blocking_;
  const mlir_lowering::Target& target_;  // NEURON_TARGET
  base::Stats* const stats_;
  const std::string dump_dir_;  // NEURON_DUMP_MLIR
  absl::Mutex mu_;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<runtime::OpRecord> pending_ ABSL_GUARDED_BY(mu_);
  int64_t recorded_ ABSL_GUARDED_BY(mu_) = 0;  // ops appended to segments so far
  // The sizing of the ops recorded from the next segment on, and of the pending segment.
  int sizing_ ABSL_GUARDED_BY(mu_) = 0;
  int pending_sizing_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex flush_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Flushes so far. Finished units are released kRetiredBatches flushes after the one that
  // submitted them (ReleaseThrough).
  static constexpr uint64_t kRetiredBatches = 2;
  uint64_t batches_ ABSL_GUARDED_BY(flush_mu_) = 0;
  size_t last_flush_ops_ ABSL_GUARDED_BY(flush_mu_) = 16;  // the last segment's ops: the next one's reserve
  int64_t remote_refreshed_ns_ ABSL_GUARDED_BY(flush_mu_) = -1;
  RefLedger ledger_;  // references of the flushes not released yet
  ShapeVariants variants_;  // NEURON_SHAPE_VARIANTS
  runtime::cache::CacheStats cache_stats_;
  MissExplainer explainer_;  // used by the executor thread only (PlanSegment)
  GroupCompiler compiler_;
  std::vector<std::unique_ptr<Sizing>> sizings_;  // [0] small (or the mode's one), [1] large
  bool cut_fingerprints_ = false;  // some sizing cuts between ops: records carry their CutFingerprint
  absl::Mutex growth_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  GroupGrowth growth_ ABSL_GUARDED_BY(growth_mu_);
  std::atomic<uint64_t> planned_{0};        // segments planned by the executor so far
  std::atomic<int64_t> plan_misses_{0};     // units planned from scratch so far
  std::unique_ptr<CompilePool> pool_;      // adaptive mode only: the background compilers
  std::unique_ptr<CompilePool> builders_;  // compile mode only: the segment builders
  runtime::Executor executor_;
};

}  // namespace trn::scheduler
