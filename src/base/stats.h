// Runtime counters behind torch_trn.stats(): ops recorded / executed, host fallbacks by op and
// reason, syncs by reason, and compiled execution (groups, compiles, ops without a lowering).
//
// Thread-safe: all methods may be called from any thread. The two hot counters are atomics; the
// keyed maps take a mutex (they change only on slow paths: fallbacks and syncs).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace trn::base {

// Where the host's time goes, summed in nanoseconds with the ops each covers (stats()["host_time"],
// bench/steady.py). Cheap enough to be always on: one clock read per phase boundary.
enum class HostTime : int {
  kRecord,        // recording an op (fallback entry to return), flushes it triggers excluded
  kFlush,         // handing a pending segment to the executor (from a sync or a record): one walk
                  // over its records (scheduler/segment_refs.h), and releasing older units
  kPlan,          // executor: cutting a flushed segment into units, finding or starting their code
  kExecCompiled,  // executor: compiled groups (the ops they cover)
  kExecOpByOp,    // executor: ops run one by one (eager ops, unlowered ops, groups without code)
  kExecInstant,   // executor: groups without code run through their instant-tier program (all their ops)
  kSyncWait,      // waiting for the executor: a sync point after its flush, or a flush for the
                  // units two flushes back, whose tensors it releases (not a sync: ops 0)
  kCount
};
const char* HostTimeName(HostTime t);
// The host-time clock: the steady clock, or this thread's CPU time with
// NEURON_HOST_TIME_CLOCK=thread_cpu (so only differences on one thread mean anything).
int64_t MonotonicNs();
// The steady clock, always: for deadlines and times compared across threads.
int64_t SteadyNs();

struct StatsSnapshot {
  int64_t ops_recorded = 0;
  int64_t ops_executed = 0;
  int64_t views = 0;  // view ops: metadata only, never executed
  std::map<std::pair<std::string, std::string>, int64_t> host_fallbacks;  // (op, reason) -> count
  std::map<std::string, std::vector<std::string>> host_fallback_lines;    // op -> its first distinct lines
  std::map<std::string, int64_t> syncs;                                   // reason -> count
  // Compiled execution (compile / adaptive modes).
  int64_t groups_run_compiled = 0;
  int64_t ops_run_compiled = 0;
  int64_t compiled_bytes_written = 0;  // bytes compiled code stored into device buffers
  int64_t temporaries_elided = 0;      // written views compiled code kept out of device memory
  // Compiled loop nests split over the executor's kernel pool (mlir_lowering/parallel_passes.h).
  int64_t loops_split = 0;
  // Kernel pool (kernel_pool.h): splits whose executor waited for a preempted helper's chunk, and
  // kernels run on the executor alone during the back-off that follows.
  int64_t kernel_stragglers = 0;
  int64_t kernels_run_alone = 0;
  // compile / adaptive: storages freed right after the last unit of their flush that uses them,
  // before the flush's units are released (Executor::PlanEarlyRelease), and their bytes.
  int64_t storages_released_early = 0;
  int64_t bytes_released_early = 0;
  int64_t compiles = 0;
  double compile_ms = 0;
  int64_t tier_ups = 0;                // adaptive: optimised rebuilds that replaced a -O0 build
  int64_t ops_awaiting_compile = 0;    // adaptive: ops run one by one while their group compiled
  int64_t groups_awaiting_compile = 0;
  int64_t compile_queue_full = 0;      // adaptive: groups not queued because the queue was full
  // adaptive: the instant tier (instant_program.h): units run through their program and their
  // ops, the ones of those run in its chains (the others ran with ATen), programs built and the
  // time that took. (ops_awaiting_compile counts the groups without code run op by op.)
  int64_t groups_run_instant = 0;
  int64_t ops_run_instant = 0;
  int64_t ops_chained_instant = 0;
  int64_t instant_programs = 0;
  int64_t instant_build_ns = 0;
  int64_t shape_variants_refused = 0;  // new keys not compiled: NEURON_SHAPE_VARIANTS reached
  int64_t reads_before_last_flush = 0;  // host reads that waited for earlier flushes only (Stream::SyncRead)
  // adaptive mode's group growth (scheduler/group_growth.h): "small", "probe", "await" or
  // "grown"; "" in the other modes. A state, not a counter: Reset keeps it.
  std::string group_growth;
  int64_t compile_cache_hits = 0;
  // Group modules written as IR: only builds that compile emit (the flush plans, never emits).
  int64_t lowerings_emitted = 0;
  // Units a flush found in its plan cache (bound, no lowering run) vs planned by the grouper.
  int64_t plan_cache_hits = 0;
  int64_t plan_cache_misses = 0;
  // torch.compile(backend="neuron") graphs re-issued from their captured records
  // (trace/graph_replay.h), the ops they issued, and captures refused.
  int64_t graph_replays = 0;
  int64_t graph_replay_ops = 0;
  int64_t graph_captures_refused = 0;
  int64_t host_ns[static_cast<int>(HostTime::kCount)] = {};
  int64_t host_ops[static_cast<int>(HostTime::kCount)] = {};
  std::map<std::string, int64_t> unlowered_ops;     // op -> ops run op by op for lack of a lowering
  std::map<std::string, int64_t> compile_failures;  // reason -> groups run op by op instead
  // Collectives on device tensors (trace/collective.h), by collective: how many ran on the
  // executor, the time it spent in them (signature check, transfer and waiting for the peers),
  // and the bytes of their tensors.
  struct Collective {
    int64_t count = 0;
    int64_t ns = 0;
    int64_t bytes = 0;
  };
  std::map<std::string, Collective> collectives;
};

class Stats {
 public:
  void CountRecorded() { ops_recorded_.fetch_add(1, std::memory_order_relaxed); }
  void CountExecuted() { ops_executed_.fetch_add(1, std::memory_order_relaxed); }
  void CountView() { views_.fetch_add(1, std::memory_order_relaxed); }
  // `line`: the model's source line that issued it ("" if unknown); the first
  // kMaxFallbackLines distinct lines per op are kept (python -m torch_trn audit lists them).
  void CountHostFallback(const std::string& op, const std::string& reason, const std::string& line = "");
  static constexpr size_t kMaxFallbackLines = 8;
  // Distinct (op, reason) host fallbacks and compile-failure reasons kept (a reason may name a
  // group or sizes, so a long job could have many); the rest are counted under kOtherReasons.
  static constexpr size_t kMaxReasons = 1024;
  static constexpr const char* kOtherReasons = "(more distinct reasons than stats keep)";
  void CountSync(const std::string& reason);
  void CountCompiledRun(int64_t ops, int64_t bytes_written) {
    groups_run_compiled_.fetch_add(1, std::memory_order_relaxed);
    ops_run_compiled_.fetch_add(ops, std::memory_order_relaxed);
    compiled_bytes_written_.fetch_add(bytes_written, std::memory_order_relaxed);
  }
  void CountTemporariesElided(int64_t n) { temporaries_elided_.fetch_add(n, std::memory_order_relaxed); }
  void CountLoopSplit() { loops_split_.fetch_add(1, std::memory_order_relaxed); }
  void CountKernelStraggler() { kernel_stragglers_.fetch_add(1, std::memory_order_relaxed); }
  void CountKernelRunAlone() { kernels_run_alone_.fetch_add(1, std::memory_order_relaxed); }
  void CountReleasedEarly(int64_t bytes) {
    storages_released_early_.fetch_add(1, std::memory_order_relaxed);
    bytes_released_early_.fetch_add(bytes, std::memory_order_relaxed);
  }
  void CountCompile(double ms, int tier = 0);
  void CountAwaitingCompile(int64_t ops) {
    groups_awaiting_compile_.fetch_add(1, std::memory_order_relaxed);
    ops_awaiting_compile_.fetch_add(ops, std::memory_order_relaxed);
  }
  void CountInstantRun(int64_t ops, int64_t chained_ops) {
    groups_run_instant_.fetch_add(1, std::memory_order_relaxed);
    ops_run_instant_.fetch_add(ops, std::memory_order_relaxed);
    ops_chained_instant_.fetch_add(chained_ops, std::memory_order_relaxed);
  }
  void CountInstantBuild(int64_t ns) {
    instant_programs_.fetch_add(1, std::memory_order_relaxed);
    instant_build_ns_.fetch_add(ns, std::memory_order_relaxed);
  }
  void CountCompileQueueFull() { compile_queue_full_.fetch_add(1, std::memory_order_relaxed); }
  void CountShapeVariantRefused() { shape_variants_refused_.fetch_add(1, std::memory_order_relaxed); }
  void SetGroupGrowth(std::string phase);
  void CountReadBeforeLastFlush() { reads_before_last_flush_.fetch_add(1, std::memory_order_relaxed); }
  void CountCompileCacheHit() { compile_cache_hits_.fetch_add(1, std::memory_order_relaxed); }
  void CountLoweringEmitted() { lowerings_emitted_.fetch_add(1, std::memory_order_relaxed); }
  void CountPlans(int64_t hits, int64_t misses) {
    plan_cache_hits_.fetch_add(hits, std::memory_order_relaxed);
    plan_cache_misses_.fetch_add(misses, std::memory_order_relaxed);
  }
  void CountGraphReplay(int64_t ops) {
    graph_replays_.fetch_add(1, std::memory_order_relaxed);
    graph_replay_ops_.fetch_add(ops, std::memory_order_relaxed);
  }
  void CountGraphCaptureRefused() { graph_captures_refused_.fetch_add(1, std::memory_order_relaxed); }
  void AddTime(HostTime t, int64_t ns, int64_t ops) {
    host_ns_[static_cast<int>(t)].fetch_add(ns, std::memory_order_relaxed);
    host_ops_[static_cast<int>(t)].fetch_add(ops, std::memory_order_relaxed);
  }
  void CountUnlowered(const std::string& op);
  void CountCollective(const std::string& name, int64_t ns, int64_t bytes);
  // Returns true the first time `reason` is counted (since the last Reset): log it then.
  bool CountCompileFailure(const std::string& reason);
  StatsSnapshot Snapshot() const;
  void Reset();

 private:
  std::atomic<int64_t> ops_recorded_{0};
  std::atomic<int64_t> ops_executed_{0};
  std::atomic<int64_t> views_{0};
  std::atomic<int64_t> groups_run_compiled_{0};
  std::atomic<int64_t> ops_run_compiled_{0};
  std::atomic<int64_t> compiled_bytes_written_{0};
  std::atomic<int64_t> temporaries_elided_{0};
  std::atomic<int64_t> loops_split_{0};
  std::atomic<int64_t> kernel_stragglers_{0};
  std::atomic<int64_t> kernels_run_alone_{0};
  std::atomic<int64_t> storages_released_early_{0};
  std::atomic<int64_t> bytes_released_early_{0};
  std::atomic<int64_t> compile_cache_hits_{0};
  std::atomic<int64_t> lowerings_emitted_{0};
  std::atomic<int64_t> plan_cache_hits_{0};
  std::atomic<int64_t> plan_cache_misses_{0};
  std::atomic<int64_t> graph_replays_{0};
  std::atomic<int64_t> graph_replay_ops_{0};
  std::atomic<int64_t> graph_captures_refused_{0};
  std::atomic<int64_t> host_ns_[static_cast<int>(HostTime::kCount)] = {};
  std::atomic<int64_t> host_ops_[static_cast<int>(HostTime::kCount)] = {};
  std::atomic<int64_t> ops_awaiting_compile_{0};
  std::atomic<int64_t> groups_awaiting_compile_{0};
  std::atomic<int64_t> compile_queue_full_{0};
  std::atomic<int64_t> groups_run_instant_{0};
  std::atomic<int64_t> ops_run_instant_{0};
  std::atomic<int64_t> ops_chained_instant_{0};
  std::atomic<int64_t> instant_programs_{0};
  std::atomic<int64_t> instant_build_ns_{0};
  std::atomic<int64_t> shape_variants_refused_{0};
  std::atomic<int64_t> reads_before_last_flush_{0};
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, int64_t> host_fallbacks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::string>> host_fallback_lines_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> syncs_ ABSL_GUARDED_BY(mu_);
  std::string group_growth_ ABSL_GUARDED_BY(mu_);
  int64_t compiles_ ABSL_GUARDED_BY(mu_) = 0;
  double compile_ms_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t tier_ups_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> unlowered_ops_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> compile_failures_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, StatsSnapshot::Collective> collectives_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::base
