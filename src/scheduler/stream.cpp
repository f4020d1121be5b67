#include "scheduler/stream.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/blocking.h"
#include "runtime/cache/remote_auth.h"
#include "base/log.h"
#include "runtime/op_runner.h"
#include "runtime/op_trace.h"
#include "base/profiler.h"
#include "scheduler/grouper.h"

namespace trn::scheduler {
namespace {

thread_local int64_t flush_ns_on_thread = 0;

bool Adaptive(const base::Knobs& knobs) { return knobs.mode == base::Mode::kAdaptive; }

// The knobs' target (NEURON_TARGET, validated when the knobs were parsed).
const mlir_lowering::Target& TargetOf(const base::Knobs& knobs) {
  absl::StatusOr<const mlir_lowering::Target*> target = mlir_lowering::Target::Named(knobs.target);
  return target.ok() ? **target : mlir_lowering::Target::Host();
}

// Eager mode on a trn target: each op is a group of one, compiled when its signature is first
// seen (the group key; memory cache only, as in eager mode) and run on the NeuronCore model at
// once. That is compile mode with one-op groups flushed at every op.
bool EagerOnTrn(const base::Knobs& knobs) {
  return knobs.mode == base::Mode::kEager && TargetOf(knobs).is_trn();
}
// adaptive mode with NEURON_ADAPTIVE_GROW and a larger NEURON_MAX_GROUP_OPS to grow to.
bool Grows(const base::Knobs& knobs) {
  return Adaptive(knobs) && knobs.adaptive_grow && knobs.max_group_ops > knobs.adaptive_group_ops;
}
base::Mode StreamMode(const base::Knobs& knobs) {
  return EagerOnTrn(knobs) ? base::Mode::kCompile : knobs.mode;
}

CompilerOptions CompilerOptionsOf(const base::Knobs& knobs) {
  CompilerOptions o;
  o.opt_level = knobs.opt_level;
  o.verify_passes = knobs.verify_passes;
  o.perf_map = knobs.perf_map;
  o.dump_mlir_dir = knobs.dump_mlir_dir;
  o.test_fault = knobs.test_compile_fault;
  o.memory = runtime::CodeCacheLimits{knobs.cache_mem_entries, knobs.cache_mem_bytes};
  if (knobs.mode != base::Mode::kEager) {  // eager compiles nothing: leave the caches alone
    o.disk = runtime::cache::DiskCacheOptions{knobs.cache_dir, knobs.cache_readonly, knobs.cache_disk_bytes,
                                              knobs.test_cache_uid, knobs.test_cache_fault};
    o.distributed = knobs.cache_distributed;
  }
  o.remote = runtime::cache::RemoteOptions{knobs.cache_lease_s,
                                           knobs.cache_poll_ms,
                                           knobs.test_cache_fault,
                                           knobs.cache_secret,
                                           runtime::cache::DefaultSecretFile(),
                                           knobs.test_cache_uid};
  o.target = &TargetOf(knobs);
  return o;
}

}  // namespace

int64_t FlushNsOnThisThread() { return flush_ns_on_thread; }

Stream::Stream(const base::Knobs& knobs, base::Stats* stats)
    : mode_(StreamMode(knobs)),
      launch_blocking_(knobs.launch_blocking),
      target_(TargetOf(knobs)),
      stats_(stats),
      dump_dir_(knobs.dump_mlir_dir),
      variants_(knobs.shape_variants),
      compiler_(CompilerOptionsOf(knobs), stats, &cache_stats_),
      growth_(Grows(knobs)),
      pool_(Adaptive(knobs) ? std::make_unique<CompilePool>(
                                  CompilePoolOptions{static_cast<int>(knobs.compile_workers), knobs.compile_queue,
                                                     knobs.tiering && !target_.is_trn(), knobs.opt_level,
                                                     static_cast<int>(knobs.compile_nice), knobs.cache_poll_ms},
                                  &compiler_)
                            : nullptr),
      builders_(StreamMode(knobs) != base::Mode::kCompile ? nullptr
                                : std::make_unique<CompilePool>(
                                      CompilePoolOptions{static_cast<int>(knobs.compile_workers), INT64_MAX,
                                                         /*tiering=*/false, knobs.opt_level, /*nice=*/0,
                                                         knobs.cache_poll_ms, "segment builder"},
                                      &compiler_)),
      executor_(runtime::ExecutorOptions{knobs.max_pending_ops, knobs.last_ops_capacity,
                                         /*retain_finished=*/StreamMode(knobs) != base::Mode::kEager,
                                         knobs.executor_threads, knobs.bench_groups, knobs.matmul_threads - 1,
                                         knobs.instant_tier},
                stats) {
  // Compile mode flushes a segment once it holds about a group's worth of ops (at a
  // content-defined point, so segments repeat every step), not only at a sync: the executor runs
  // the first groups of a step while the rest is still being recorded. Adaptive mode starts with
  // its small groups and may grow to compile mode's (group_growth.h).
  auto add_sizing = [&](int64_t max_group_ops) {
    auto sizing = std::make_unique<Sizing>();
    sizing->flush = CutPolicy::UpTo(std::min(max_group_ops, knobs.max_pending_ops));
    sizing->max_group_ops = max_group_ops;
    if (compiler_.disk() != nullptr && knobs.cache_plans && mode_ != base::Mode::kEager) {
      // The context of a stored plan: what besides the records decides the cuts.
      sizing->store = std::make_unique<PlanStore>(
          compiler_.disk(), absl::StrCat(Adaptive(knobs) ? "adaptive" : "compile", " ops ", max_group_ops,
                                         " target ", target_.name()));
    }
    cut_fingerprints_ = cut_fingerprints_ || sizing->flush.max_ops > 1 || max_group_ops > 1;
    sizings_.push_back(std::move(sizing));
  };
  add_sizing(EagerOnTrn(knobs) ? 1 : Adaptive(knobs) ? knobs.adaptive_group_ops : knobs.max_group_ops);
  if (Grows(knobs)) add_sizing(knobs.max_group_ops);
  if (Adaptive(knobs)) stats_->SetGroupGrowth(std::string(GroupGrowth::Name(GroupGrowth::Phase::kSmall)));
}

absl::Status Stream::Record(runtime::OpRecord record, double record_begin_us) {
  stats_->CountRecorded();
  if (runtime::optrace::Enabled()) runtime::optrace::Add(record);
  if (base::profiler::Enabled()) {
    base::profiler::Event e;
    e.cat = "record";
    e.name = runtime::OpName(record.op);
    e.begin_us = record_begin_us;
    e.end_us = base::profiler::NowUs();
    e.lines = {record.source};
    base::profiler::Add(std::move(e));
  }
  bool full = false;
  // Content-defined cuts (cut_policy.h): the fingerprint, outside the lock (~0.1 µs).
  if (Groups() && cut_fingerprints_) {
    record.cut_fp = CutFingerprint(record);
  }
  record.thread = std::hash<std::thread::id>{}(std::this_thread::get_id());
  // The recording thread changed (forward -> backward on the autograd thread -> optimizer):
  // the grouper cuts there anyway, so the pending ops go to the executor first and run while
  // the next phase is recorded, instead of waiting for the next sync or full segment.
  bool thread_changed = false;
  {
    absl::MutexLock lock(&mu_);
    thread_changed = Groups() && !pending_.empty() && pending_.back().thread != record.thread;
    if (!thread_changed) full = Append(std::move(record));
  }
  if (thread_changed) {
    Flush();
    absl::MutexLock lock(&mu_);
    full = Append(std::move(record));
  }
  if (full) {
    Flush();  // (not a sync: nothing waits for the flushed ops to run)
  }
  if (launch_blocking_) {
    return Sync("launch_blocking");
  }
  return absl::OkStatus();
}

bool Stream::Append(runtime::OpRecord record) {
  // Numbering and submission happen under one lock (mu_) so the executor sees stream order
  // even when the Python thread and the autograd thread record at once.
  record.seq = next_seq_++;
  if (!Groups()) {
    executor_.Submit(std::move(record));
    return false;
  }
  if (pending_.empty()) pending_sizing_ = sizing_;  // (a segment is cut one way throughout)
  ++recorded_;
  pending_.push_back(std::move(record));
  return sizings_[pending_sizing_]->flush.Ends(static_cast<int64_t>(pending_.size()), pending_.back().cut_fp);
}

absl::Status Stream::Sync(const std::string& reason) { return SyncThrough(reason, nullptr); }

absl::Status Stream::SyncRead(const std::string& reason, absl::Span<const c10::StorageImpl* const> storages) {
  return SyncThrough(reason, Groups() ? &storages : nullptr);
}

absl::Status Stream::SyncThrough(const std::string& reason, const absl::Span<const c10::StorageImpl* const>* read) {
  stats_->CountSync(reason);
  const double begin = base::profiler::NowUs();
  runtime::Executor::WaitingScope waiting(executor_);  // from the flush on: nothing is recorded until it returns
  const uint64_t flushed = Groups() ? Flush() : 0;
  uint64_t through = flushed;  // the flushes to wait for
  if (read != nullptr) {
    through = 0;
    for (const c10::StorageImpl* storage : *read) {
      through = std::max(through, ledger_.LastReferencing(storage));
    }
  }
  const int64_t wait_begin = base::MonotonicNs();
  absl::Status status;
  if (through < flushed) {
    status = executor_.WaitThrough(through);
    stats_->CountReadBeforeLastFlush();
  } else {
    status = executor_.Wait();
  }
  stats_->AddTime(base::HostTime::kSyncWait, base::MonotonicNs() - wait_begin, 1);
  if (mode_ != base::Mode::kEager) {  // the executor retires units in these modes
    ReleaseThrough(through);  // they ran: drop the finished units' tensors
  }
  if (sizings_.size() > 1) Grow(flushed);
  if (builders_ != nullptr || pool_ != nullptr) {
    // Builds the flush (compile mode) or a compile worker (adaptive mode) could not evict while
    // they were unfinished are loaded now: the memory tier is within its limits at every sync
    // (what cache_stats() reads).
    compiler_.cache().Trim();
  }
  if (base::profiler::Enabled()) {
    base::profiler::Event e;
    e.cat = "sync";
    e.name = absl::StrCat("sync: ", reason);
    e.begin_us = begin;
    e.end_us = base::profiler::NowUs();
    e.sargs = {{"reason", reason}};
    if (through < flushed) {
      e.sargs.emplace_back("waited_through_flush", absl::StrCat(through, " of ", flushed));
    }
    base::profiler::Add(std::move(e));
  }
  return status;
}

void Stream::Grow(uint64_t flushed) {
  GroupGrowth::Progress p;
  p.flushed = flushed;
  // planned_ first: the misses of every segment it counts were added before it was stored.
  p.planned = planned_.load(std::memory_order_acquire);
  p.plan_misses = plan_misses_.load(std::memory_order_relaxed);
  p.compiling = pool_ != nullptr && pool_->Busy();
  absl::MutexLock growth(&growth_mu_);
  {
    absl::MutexLock lock(&mu_);
    p.ops_recorded = recorded_;
  }
  const GroupGrowth::Phase before = growth_.phase();
  const GroupGrowth::Phase phase = growth_.OnSync(p);
  if (phase == before) return;
  {
    absl::MutexLock lock(&mu_);
    sizing_ = GroupGrowth::Large(phase) ? 1 : 0;
  }
  stats_->SetGroupGrowth(std::string(GroupGrowth::Name(phase)));
  base::Log(base::LogLevel::kInfo,
            absl::StrCat("adaptive mode: groups ", GroupGrowth::Name(phase), " (up to ",
                         sizings_[GroupGrowth::Large(phase) ? 1 : 0]->max_group_ops, " ops) from op ", p.ops_recorded));
}

void Stream::WaitForFlushed() {
  if (!Groups()) return;
  base::ScopedBlockingWait no_gil;  // (before flush_mu_, as Flush)
  uint64_t flushed = 0;
  {
    absl::MutexLock flush(&flush_mu_);
    flushed = batches_;
  }
  executor_.WaitFinishedThrough(flushed);
}

void Stream::WaitForCompiles() {
  if (pool_ != nullptr) {
    WaitForFlushed();  // (their new groups are queued when they are planned)
    base::ScopedBlockingWait no_gil;
    pool_->WaitIdle();
  }
}

void Stream::ShutdownCompiles() {
  base::ScopedBlockingWait no_gil;
  if (pool_ != nullptr) {
    pool_->Shutdown();
  }
  if (builders_ != nullptr) {
    builders_->Shutdown();
  }
  compiler_.Shutdown();  // the distributed tier's heartbeat
}

void Stream::ExplainMiss(const std::string& key_hex, const std::vector<runtime::OpRecord>& ops) {
  int64_t forgotten = 0;
  std::optional<std::string> why = explainer_.OnMiss(key_hex, ops, &forgotten);
  if (forgotten > 0) {
    cache_stats_.Update([&](runtime::cache::CacheCounters& c) { c.explainer_forgotten += forgotten; });
  }
  if (!why.has_value()) return;
  base::Log(base::LogLevel::kInfo, *why);
  cache_stats_.Update([&](runtime::cache::CacheCounters& c) {
    if (c.miss_explanations.size() < runtime::cache::kMaxMissExplanations) c.miss_explanations.push_back(*why);
  });
}

void Stream::RefreshRemote() {
  runtime::cache::RemoteTier* remote = compiler_.remote();
  if (remote == nullptr || remote->known_store() != nullptr) return;
  const int64_t now = base::SteadyNs();
  // Throttled, except for a while after a process group was created (remote_tier.h).
  if (!runtime::cache::RemoteRefreshDue(now, remote_refreshed_ns_, runtime::cache::ProcessGroupCreatedNs())) {
    return;
  }
  remote_refreshed_ns_ = now;
  compiler_.RefreshRemote();
}

void Stream::ReleaseThrough(uint64_t batch) {
  std::deque<runtime::ExecUnit> units = executor_.TakeRetired(batch);
  ledger_.Release(batch, [&units] { units.clear(); });
}

runtime::ExecUnit Stream::MakeGroupUnit(PlannedUnit& p) {
  const GroupPlan& plan = *p.plan;
  if (!dump_dir_.empty()) {  // NEURON_DUMP_MLIR: the key material too, to explain cache misses
    std::ofstream(absl::StrCat(dump_dir_, "/", plan.key_hex, ".key"), std::ios::binary) << plan.key.material;
  }
  runtime::ExecUnit unit;
  unit.key = plan.key_hex;
  bool created = false;
  std::shared_ptr<runtime::CodeSlot> slot = compiler_.cache().Lookup(plan.key.material, &created);
  if (created && !variants_.Admit(unit.key, p.ops)) {
    // One more shape of a group already compiled in NEURON_SHAPE_VARIANTS shapes: not worth a
    // compile (the key stays cached as refused, so it is not considered again).
    slot->Fail(absl::FailedPreconditionError(
        absl::StrCat("not compiled: its ops and lines were compiled in ", variants_.limit(),
                     " other shapes already (NEURON_SHAPE_VARIANTS)")));
    stats_->CountShapeVariantRefused();
  } else if (created) {
    ExplainMiss(unit.key, p.ops);
    CompilePool* pool = builders_ != nullptr ? builders_.get() : pool_.get();
    CompileRequest request = CompileRequest::Of(plan, p.ops, target_);
    // adaptive: a group whose final build is on disk is loaded here, when its segment is planned
    // (a read and a link, ~0.1-0.5 ms; running its ops one by one costs more), so a restarted
    // process runs its first step compiled. Only compiles (and peers' builds) are left to the pool.
    std::optional<runtime::CodeSlot::Code> on_disk;
    if (pool_ != nullptr) on_disk = compiler_.FindOnDisk(request, compiler_.FinalLevels(), 1);
    if (on_disk.has_value()) {
      slot->Publish(*on_disk, 1);
    } else if (!pool->Submit(std::move(request), slot)) {
      if (builders_ != nullptr) {  // only once shut down
        slot->Fail(absl::CancelledError("the compile threads shut down before building this group"));
      } else {
        compiler_.cache().Erase(plan.key.material);  // queue full: queued again when next seen
        stats_->CountCompileQueueFull();
      }
    }
  } else {
    stats_->CountCompileCacheHit();
  }
  runtime::CodeSlot::Code code = slot->code();
  if (builders_ != nullptr) {
    // compile mode: the executor waits for a build still running when the group's turn comes; a
    // failed build runs op by op.
    if (code == nullptr && !slot->failure().ok()) {
      unit.ops = std::move(p.ops);
      return unit;
    }
    unit.await_code = code == nullptr;
  }
  unit.slot = std::move(slot);
  stats_->CountTemporariesElided(plan.temporaries);
  runtime::CompiledUnit compiled;
  compiled.code = std::move(code);
  compiled.params = std::move(p.params);
  compiled.inputs.reserve(plan.inputs.size());
  for (const TensorPos& pos : plan.inputs) {
    compiled.inputs.push_back(TensorAt(p.ops, pos));
  }
  compiled.outputs.reserve(plan.outputs.size());
  for (const auto& [pos, staged] : plan.outputs) {
    compiled.outputs.push_back(runtime::OutputBuffer{TensorAt(p.ops, pos), staged});
  }
  compiled.checks = plan.checks;
  compiled.bytes_written = plan.bytes_written;
  unit.compiled = std::move(compiled);
  unit.ops = std::move(p.ops);
  return unit;
}

std::vector<runtime::ExecUnit> Stream::PlanSegment(std::vector<runtime::OpRecord> records, const SegmentRefs& refs,
                                                   Sizing& sizing, uint64_t batch) {
  const int64_t begin_ns = base::MonotonicNs();
  const double begin = base::profiler::NowUs();
  const size_t n = records.size();
  const std::vector<std::pair<size_t, c10::StorageImpl*>>& releases = refs.releases();
  size_t next_release = 0;
  // One unit at a time. compile mode: a new group's build is queued on the segment builders
  // (several build at once; with peers, each rank builds the groups nobody has claimed yet and
  // fetches the others) and the executor waits for it when its turn comes, after the whole
  // segment is planned: the builds of one segment run in parallel.
  SegmentPlanner planner(std::move(records), &sizing.plans, sizing.max_group_ops, target_, stats_, &refs,
                         sizing.store.get());
  std::vector<runtime::ExecUnit> units;
  while (!planner.Done()) {
    PlannedUnit p = planner.Next();
    const size_t end = p.begin + p.ops.size();
    runtime::ExecUnit unit;
    if (p.plan != nullptr) {
      unit = MakeGroupUnit(p);
    } else {
      unit.ops = std::move(p.ops);
      unit.unlowered = p.unlowered;
    }
    for (; next_release < releases.size() && releases[next_release].first < end; ++next_release) {
      unit.release_after.push_back(releases[next_release].second);
    }
    units.push_back(std::move(unit));
  }
  planner.Persist();
  stats_->CountPlans(planner.cache_hits(), planner.cache_misses());
  plan_misses_.fetch_add(planner.cache_misses(), std::memory_order_relaxed);
  planned_.store(batch, std::memory_order_release);  // (segments are planned in flush order)
  stats_->AddTime(base::HostTime::kPlan, base::MonotonicNs() - begin_ns, static_cast<int64_t>(n));
  if (base::profiler::Enabled()) {
    base::profiler::Event e;
    e.cat = "plan";
    e.name = absl::StrCat("plan ", n, " ops into ", units.size(), " units");
    e.begin_us = begin;
    e.end_us = base::profiler::NowUs();
    e.nargs = {{"ops", static_cast<double>(n)}, {"units", static_cast<double>(units.size())},
               {"plan_hits", static_cast<double>(planner.cache_hits())},
               {"plan_misses", static_cast<double>(planner.cache_misses())}};
    base::profiler::Add(std::move(e));
  }
  return units;
}

uint64_t Stream::Flush() {
  // Without the GIL for the whole flush (another Python thread may run meanwhile). Taking
  // flush_mu_ while still holding the GIL could deadlock with a flushing thread waiting to
  // retake it.
  base::ScopedBlockingWait no_gil;
  absl::MutexLock flush(&flush_mu_);
  std::vector<runtime::OpRecord> segment;
  // The next segment's vector is allocated here, outside mu_, at this segment's likely size:
  // one allocation per flush instead of a reallocation (and a move of every record) each time
  // the pending vector doubles while ops are recorded.
  std::vector<runtime::OpRecord> next;
  next.reserve(last_flush_ops_);
  int sizing = 0;
  {
    absl::MutexLock lock(&mu_);
    sizing = pending_sizing_;
    segment.swap(pending_);
    pending_.swap(next);
  }
  if (segment.empty()) {
    return batches_;
  }
  last_flush_ops_ = std::max(segment.size(), size_t{16});
  const int64_t begin_ns = base::MonotonicNs();
  const size_t n = segment.size();
  struct CountFlush {
    base::Stats* stats;
    int64_t begin, ops;
    int64_t waited = 0;  // waiting for the executor (counted as kSyncWait, not as flushing)
    ~CountFlush() {
      const int64_t ns = base::MonotonicNs() - begin;
      flush_ns_on_thread += ns;
      stats->AddTime(base::HostTime::kFlush, ns - waited, ops);
      stats->AddTime(base::HostTime::kSyncWait, waited, 0);
    }
  } count_flush{stats_, begin_ns, static_cast<int64_t>(n)};
  const double begin = base::profiler::NowUs();
  const uint64_t batch = ++batches_;
  // What the references at this point of the stream decide (liveness, memory freed early:
  // segment_refs.h); the executor plans the segment with it when its turn comes, so the
  // recording thread goes back to the program after one walk over the records.
  auto refs = std::make_shared<const SegmentRefs>(ledger_.Hold(segment, batch));
  RefreshRemote();  // before a build may need the store
  runtime::ExecUnit job;
  job.ops = std::move(segment);
  job.batch = batch;
  job.plan = [this, refs, sizing, batch](std::vector<runtime::OpRecord> records) {
    return PlanSegment(std::move(records), *refs, *sizings_[static_cast<size_t>(sizing)], batch);
  };
  executor_.Submit(std::move(job));
  if (base::profiler::Enabled()) {
    base::profiler::Event e;
    e.cat = "record";
    e.name = absl::StrCat("flush ", n, " ops");
    e.begin_us = begin;
    e.end_us = base::profiler::NowUs();
    e.nargs = {{"ops", static_cast<double>(n)}, {"flush", static_cast<double>(batch)}};
    base::profiler::Add(std::move(e));
  }
  if (builders_ != nullptr) {
    compiler_.cache().Trim();  // builds of earlier flushes may have passed the memory tier's limits
  }
  // Units finished two flushes ago release their tensors now (waiting for them if the executor
  // is behind): a point fixed in the stream, so storage use counts do not depend on timing.
  if (batch > kRetiredBatches) {
    const int64_t wait_begin = base::MonotonicNs();
    executor_.WaitFinishedThrough(batch - kRetiredBatches);
    count_flush.waited = base::MonotonicNs() - wait_begin;
    ReleaseThrough(batch - kRetiredBatches);
  }
  return batch;
}

}  // namespace trn::scheduler
