#include "scheduler/stream.h"

#include "runtime/blocking.h"
#include "scheduler/grouper.h"

namespace trn::scheduler {

Stream::Stream(const runtime::Knobs& knobs, runtime::Stats* stats)
    : mode_(knobs.mode),
      launch_blocking_(knobs.launch_blocking),
      max_pending_(knobs.max_pending_ops),
      max_group_ops_(knobs.max_group_ops),
      stats_(stats),
      compiler_(CompilerOptions{knobs.opt_level, knobs.dump_mlir_dir}, stats),
      executor_(runtime::ExecutorOptions{knobs.max_pending_ops, knobs.last_ops_capacity}, stats) {}

absl::Status Stream::Record(runtime::OpRecord record) {
  stats_->CountRecorded();
  bool full = false;
  {
    // Numbering and submission happen under one lock so the executor sees stream order even
    // when the Python thread and the autograd thread record at once.
    absl::MutexLock lock(&mu_);
    record.seq = next_seq_++;
    if (Groups()) {
      pending_.push_back(std::move(record));
      full = static_cast<int64_t>(pending_.size()) >= max_pending_;
    } else {
      executor_.Submit(std::move(record));
    }
  }
  if (full) {
    stats_->CountSync("backpressure");
    Flush();
  }
  if (launch_blocking_) {
    return Sync("launch_blocking");
  }
  return absl::OkStatus();
}

absl::Status Stream::Sync(const std::string& reason) {
  stats_->CountSync(reason);
  if (Groups()) {
    Flush();
  }
  return executor_.Wait();
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
  std::vector<PlannedUnit> planned = CutIntoUnits(std::move(segment), max_group_ops_, stats_);
  for (PlannedUnit& p : planned) {
    runtime::ExecUnit unit;
    if (p.lowered.has_value()) {
      mlir_lowering::LoweredGroup& lowered = *p.lowered;
      std::vector<runtime::OutputBuffer> outputs;
      for (const mlir_lowering::GroupOutput& o : lowered.outputs) {
        outputs.push_back(runtime::OutputBuffer{o.tensor, o.staged});
      }
      std::vector<const runtime::OpRecord*> ops;
      for (const runtime::OpRecord& r : p.ops) {
        ops.push_back(&r);
      }
      GroupKey key = MakeGroupKey(ops, lowered.inputs, outputs, lowered.param_args);
      runtime::CodeCache::Entry code = compiler_.GetOrCompile(key, lowered);
      if (code.ok()) {
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
        unit.compiled = runtime::CompiledUnit{*code, std::move(inputs), std::move(outputs), std::move(checks),
                                              lowered.bytes_written};
      }
    }
    unit.ops = std::move(p.ops);
    executor_.Submit(std::move(unit));
  }
}

}  // namespace trn::scheduler
