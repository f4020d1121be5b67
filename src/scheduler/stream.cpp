#include "scheduler/stream.h"

#include <cstdint>
#include <fstream>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/blocking.h"
#include "runtime/log.h"
#include "runtime/op_runner.h"
#include "runtime/op_trace.h"
#include "runtime/profiler.h"
#include "scheduler/grouper.h"

namespace trn::scheduler {
namespace {

bool Adaptive(const runtime::Knobs& knobs) { return knobs.mode == runtime::Mode::kAdaptive; }

// Eager mode on a trn target: each op is a group of one, compiled when its signature is first
// seen (the group key; memory cache only, as in eager mode) and run on the NeuronCore model at
// once. That is compile mode with one-op groups flushed at every op.
bool EagerOnTrn(const runtime::Knobs& knobs) {
  return knobs.mode == runtime::Mode::kEager && knobs.target != "host";
}
runtime::Mode StreamMode(const runtime::Knobs& knobs) {
  return EagerOnTrn(knobs) ? runtime::Mode::kCompile : knobs.mode;
}

CompilerOptions CompilerOptionsOf(const runtime::Knobs& knobs) {
  CompilerOptions o;
  o.opt_level = knobs.opt_level;
  o.verify_passes = knobs.verify_passes;
  o.dump_mlir_dir = knobs.dump_mlir_dir;
  o.test_fault = knobs.test_compile_fault;
  o.memory = runtime::CodeCacheLimits{knobs.cache_mem_entries, knobs.cache_mem_bytes};
  if (knobs.mode != runtime::Mode::kEager) {  // eager compiles nothing: leave the caches alone
    o.disk = runtime::cache::DiskCacheOptions{knobs.cache_dir, knobs.cache_readonly, knobs.cache_disk_bytes,
                                              knobs.test_cache_uid, knobs.test_cache_fault};
    o.distributed = knobs.cache_distributed;
  }
  o.remote = runtime::cache::RemoteOptions{knobs.cache_lease_s, knobs.cache_poll_ms, knobs.test_cache_fault};
  o.target = knobs.target;
  return o;
}

}  // namespace

Stream::Stream(const runtime::Knobs& knobs, runtime::Stats* stats)
    : mode_(StreamMode(knobs)),
      launch_blocking_(knobs.launch_blocking),
      flush_policy_(CutPolicy::UpTo(EagerOnTrn(knobs) ? 1
                                    : Adaptive(knobs) ? std::min(knobs.adaptive_group_ops, knobs.max_pending_ops)
                                                      : knobs.max_pending_ops)),
      max_group_ops_(EagerOnTrn(knobs) ? 1 : Adaptive(knobs) ? knobs.adaptive_group_ops : knobs.max_group_ops),
      stats_(stats),
      dump_dir_(knobs.dump_mlir_dir),
      compiler_(CompilerOptionsOf(knobs), stats, &cache_stats_),
      pool_(Adaptive(knobs) ? std::make_unique<CompilePool>(
                                  CompilePoolOptions{static_cast<int>(knobs.compile_workers), knobs.compile_queue,
                                                     knobs.tiering && knobs.target == "host", knobs.opt_level,
                                                     static_cast<int>(knobs.compile_nice), knobs.cache_poll_ms},
                                  &compiler_)
                            : nullptr),
      builders_(StreamMode(knobs) != runtime::Mode::kCompile ? nullptr
                                : std::make_unique<CompilePool>(
                                      CompilePoolOptions{static_cast<int>(knobs.compile_workers), INT64_MAX,
                                                         /*tiering=*/false, knobs.opt_level, /*nice=*/0,
                                                         knobs.cache_poll_ms, "segment builder"},
                                      &compiler_)),
      executor_(runtime::ExecutorOptions{knobs.max_pending_ops, knobs.last_ops_capacity,
                                         /*track_refs=*/StreamMode(knobs) != runtime::Mode::kEager,
                                         knobs.executor_threads},
                stats) {}

absl::Status Stream::Record(runtime::OpRecord record, double record_begin_us) {
  stats_->CountRecorded();
  if (runtime::optrace::Enabled()) runtime::optrace::Add(record);
  if (runtime::profiler::Enabled()) {
    runtime::profiler::Event e;
    e.cat = "record";
    e.name = runtime::OpName(record.op);
    e.begin_us = record_begin_us;
    e.end_us = runtime::profiler::NowUs();
    e.lines = {record.source};
    runtime::profiler::Add(std::move(e));
  }
  bool full = false;
  // Content-defined cuts (cut_policy.h): the fingerprint, outside the lock (~0.1 µs).
  if (Groups() && (flush_policy_.max_ops > 1 || max_group_ops_ > 1)) {
    record.cut_fp = CutFingerprint(record);
  }
  {
    // Numbering and submission happen under one lock so the executor sees stream order even
    // when the Python thread and the autograd thread record at once.
    absl::MutexLock lock(&mu_);
    record.seq = next_seq_++;
    record.thread = std::hash<std::thread::id>{}(std::this_thread::get_id());
    if (Groups()) {
      pending_.push_back(std::move(record));
      full = flush_policy_.Ends(static_cast<int64_t>(pending_.size()), pending_.back().cut_fp);
    } else {
      executor_.Submit(std::move(record));
    }
  }
  if (full) {
    if (mode_ == runtime::Mode::kCompile && flush_policy_.max_ops > 1) {  // (eager on trn flushes every op)
      stats_->CountSync("backpressure");
    }
    Flush();
  }
  if (launch_blocking_) {
    return Sync("launch_blocking");
  }
  return absl::OkStatus();
}

absl::Status Stream::Sync(const std::string& reason) {
  stats_->CountSync(reason);
  const double begin = runtime::profiler::NowUs();
  if (Groups()) {
    Flush();
  }
  absl::Status status = executor_.Wait();
  if (mode_ != runtime::Mode::kEager) {  // the executor retires units in these modes
    executor_.ReleaseRetired(UINT64_MAX);  // everything ran: drop the finished units' tensors
  }
  if (runtime::profiler::Enabled()) {
    runtime::profiler::Event e;
    e.cat = "sync";
    e.name = absl::StrCat("sync: ", reason);
    e.begin_us = begin;
    e.end_us = runtime::profiler::NowUs();
    e.sargs = {{"reason", reason}};
    runtime::profiler::Add(std::move(e));
  }
  return status;
}

void Stream::WaitForCompiles() {
  if (pool_ != nullptr) {
    runtime::ScopedBlockingWait no_gil;
    pool_->WaitIdle();
  }
}

void Stream::ShutdownCompiles() {
  runtime::ScopedBlockingWait no_gil;
  if (pool_ != nullptr) {
    pool_->Shutdown();
  }
  if (builders_ != nullptr) {
    builders_->Shutdown();
  }
  compiler_.Shutdown();  // the distributed tier's heartbeat
}

void Stream::ExplainMiss(const std::string& key_hex, const std::vector<runtime::OpRecord>& ops) {
  std::optional<std::string> why = explainer_.OnMiss(key_hex, ops);
  if (!why.has_value()) return;
  runtime::Log(runtime::LogLevel::kInfo, *why);
  cache_stats_.Update([&](runtime::cache::CacheCounters& c) {
    if (c.miss_explanations.size() < 100) c.miss_explanations.push_back(*why);
  });
}

void Stream::RefreshRemoteOnce(bool* done) {
  // Here, on the flushing thread, not on a compile thread: finding the store may take the GIL
  // and import a module (runtime/cache/remote_tier.h).
  if (!*done) {
    *done = true;
    compiler_.RefreshRemote();
  }
}

runtime::ExecUnit Stream::MakeGroupUnit(PlannedUnit& p, bool* remote_refreshed) {
  mlir_lowering::LoweredGroup& lowered = *p.lowered;
  std::vector<runtime::OutputBuffer> outputs;
  for (const mlir_lowering::GroupOutput& o : lowered.outputs) {
    outputs.push_back(runtime::OutputBuffer{o.tensor, o.staged});
  }
  std::vector<const runtime::OpRecord*> ops;
  for (const runtime::OpRecord& r : p.ops) {
    ops.push_back(&r);
  }
  const GroupKey key = MakeGroupKey(ops, lowered.inputs, outputs, lowered.param_args);
  if (!dump_dir_.empty()) {  // NEURON_DUMP_MLIR: the key material too, to explain cache misses
    std::ofstream(absl::StrCat(dump_dir_, "/", key.Hex(), ".key"), std::ios::binary) << key.material;
  }
  runtime::ExecUnit unit;
  unit.key = key.Hex();
  runtime::CodeSlot::Code code;
  if (builders_ != nullptr) {  // compile mode: queue the build of a new key on the segment builders
    bool created = false;
    std::shared_ptr<runtime::CodeSlot> slot = compiler_.cache().Lookup(key.material, &created);
    if (created) {
      ExplainMiss(unit.key, p.ops);
      RefreshRemoteOnce(remote_refreshed);
      if (!builders_->Submit(CompileRequest::Of(key, lowered, p.ops), slot)) {  // only once shut down
        slot->Fail(absl::CancelledError("the compile threads shut down before building this group"));
      }
    } else {
      stats_->CountCompileCacheHit();
    }
    if (!slot->settled()) {
      unit.slot = std::move(slot);  // Flush awaits it before submitting this unit
    } else {
      absl::StatusOr<runtime::CodeSlot::Code> compiled = slot->Await();
      if (!compiled.ok()) {
        unit.ops = std::move(p.ops);
        return unit;  // runs op by op
      }
      code = *compiled;
    }
  } else {  // adaptive: attach the slot; start its compile if the key is new
    bool created = false;
    std::shared_ptr<runtime::CodeSlot> slot = compiler_.cache().Lookup(key.material, &created);
    if (created) {
      ExplainMiss(unit.key, p.ops);
      RefreshRemoteOnce(remote_refreshed);
      if (!pool_->Submit(CompileRequest::Of(key, lowered, p.ops), slot)) {
        compiler_.cache().Erase(key.material);  // queue full: queued again when next seen
        stats_->CountCompileQueueFull();
      }
    } else {
      stats_->CountCompileCacheHit();
    }
    code = slot->code();
    unit.slot = std::move(slot);
  }
  stats_->CountTemporariesElided(lowered.temporaries);
  std::vector<at::Tensor> inputs;
  if (lowered.params.defined()) {
    inputs.push_back(lowered.params);  // the runtime scalars come first
  }
  inputs.insert(inputs.end(), lowered.inputs.begin(), lowered.inputs.end());
  std::vector<runtime::CheckSlot> checks;
  for (const mlir_lowering::GroupCheck& c : lowered.checks) {
    checks.push_back(runtime::CheckSlot{c.op_index, c.message});
  }
  unit.compiled = runtime::CompiledUnit{std::move(code), std::move(inputs), std::move(outputs), std::move(checks),
                                        lowered.bytes_written};
  unit.ops = std::move(p.ops);
  return unit;
}

void Stream::Flush() {
  // Without the GIL for the whole flush (lowering and compiling take a while; another Python
  // thread may run meanwhile). Taking flush_mu_ while still holding the GIL could deadlock
  // with a flushing thread waiting to retake it.
  runtime::ScopedBlockingWait no_gil;
  absl::MutexLock flush(&flush_mu_);
  std::vector<runtime::OpRecord> segment;
  {
    absl::MutexLock lock(&mu_);
    segment.swap(pending_);
  }
  if (segment.empty()) {
    return;
  }
  const double begin = runtime::profiler::NowUs();
  const size_t n = segment.size();
  std::vector<PlannedUnit> planned = CutIntoUnits(std::move(segment), max_group_ops_, stats_, executor_.earlier_refs());
  if (runtime::profiler::Enabled()) {
    runtime::profiler::Event e;
    e.cat = "record";
    e.name = absl::StrCat("cut ", n, " ops into ", planned.size(), " units");
    e.begin_us = begin;
    e.end_us = runtime::profiler::NowUs();
    runtime::profiler::Add(std::move(e));
  }
  const uint64_t batch = ++batches_;
  // compile mode: every new group of the segment is queued on the builders by MakeGroupUnit
  // (several build at once; with peers, each rank builds the groups nobody has claimed yet and
  // fetches the others). From the first unit whose code is not there yet, units are held and
  // submitted in stream order, each as soon as its code is: the executor runs the built groups
  // while the later ones still build.
  std::vector<runtime::ExecUnit> units;
  units.reserve(planned.size());
  bool remote_refreshed = false;
  for (PlannedUnit& p : planned) {
    runtime::ExecUnit& unit = units.emplace_back();
    if (p.lowered.has_value()) {
      unit = MakeGroupUnit(p, &remote_refreshed);
    } else {
      unit.ops = std::move(p.ops);
      unit.unlowered = true;
    }
    unit.batch = batch;
  }
  planned.clear();  // the lowerings' tensors are no references the units need
  // Intermediate results nothing outside the flush references are freed after their last use,
  // not when the flush's units are released (executor.h).
  executor_.PlanEarlyRelease(units);
  std::vector<runtime::ExecUnit> held;
  for (runtime::ExecUnit& unit : units) {
    const bool unsettled = builders_ != nullptr && unit.slot != nullptr && !unit.slot->settled();
    if (unsettled || !held.empty()) {
      held.push_back(std::move(unit));
      continue;
    }
    executor_.Submit(std::move(unit));
  }
  for (runtime::ExecUnit& unit : held) {
    if (unit.slot != nullptr && unit.compiled.has_value()) {
      absl::StatusOr<runtime::CodeSlot::Code> code = unit.slot->Await();
      if (code.ok()) unit.compiled->code = *code;  // else the executor runs it op by op
    }
    executor_.Submit(std::move(unit));
  }
  if (!held.empty()) {
    compiler_.cache().Trim();  // the builds that ran at once may have passed the memory tier's limits
  }
  // Units finished two flushes ago release their tensors now (waiting for them if the executor
  // is behind): a point fixed in the stream, so storage use counts do not depend on timing.
  if (batch > kRetiredBatches) {
    executor_.ReleaseRetired(batch - kRetiredBatches);
  }
}

}  // namespace trn::scheduler
