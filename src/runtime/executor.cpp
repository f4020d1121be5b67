#include "runtime/executor.h"

#include "runtime/device_model.h"

#include "absl/strings/str_cat.h"
#include "runtime/host_view.h"
#include "runtime/instant_kernels.h"
#include "base/blocking.h"
#include "base/op_error.h"
#include "runtime/op_runner.h"
#include "runtime/poison.h"
#include "base/profiler.h"
#include "runtime/schema_util.h"
#include "runtime/threads.h"

#include <algorithm>
#include <chrono>

namespace trn::runtime {

// Collects the warnings kernels raise on the executor thread (thread-local c10 handler).
class ExecutorWarningHandler final : public c10::WarningHandler {
 public:
  explicit ExecutorWarningHandler(Executor* executor) : executor_(executor) {}
  void process(const c10::Warning& warning) override { executor_->CollectWarning(warning); }

 private:
  Executor* executor_;
};

namespace {
constexpr size_t kMaxPendingWarnings = 64;
}  // namespace

void Executor::CollectWarning(const c10::Warning& warning) {
  // Artifact of running functional ops through their out= variants into preallocated outputs:
  // eager PyTorch would not warn the user about an out= tensor they never passed.
  if (warning.msg().find("was resized since it had shape") != std::string::npos) {
    return;
  }
  absl::MutexLock lock(&mu_);
  for (const c10::Warning& w : warnings_) {
    if (w.msg() == warning.msg()) {
      return;
    }
  }
  if (warnings_.size() < kMaxPendingWarnings) {
    warnings_.push_back(warning);
  }
}

void Executor::ReraiseWarnings() {
  std::vector<c10::Warning> warnings;
  {
    absl::MutexLock lock(&mu_);
    warnings.swap(warnings_);
  }
  for (const c10::Warning& w : warnings) {
    c10::warn(w);
  }
}

namespace {

// The executor's and a sync's spin before sleeping (threads.h): a hand-off of small work usually
// ends within it.
constexpr std::chrono::microseconds kSpinBeforeSleep{50};
// How long the executor waits for new work before it releases finished units itself (Loop).
constexpr absl::Duration kQuietBeforeRelease = absl::Milliseconds(2);
// While it waits for a unit's build, the executor plans the segments queued behind it this often.
constexpr absl::Duration kPlanAheadEvery = absl::Milliseconds(1);

// The cores left beside the executor's and the recording thread's (kernel_pool.h).
int SpareCores() { return std::max(0, static_cast<int>(std::thread::hardware_concurrency()) - 2); }

}  // namespace

Executor::Executor(ExecutorOptions options, base::Stats* stats)
    : options_(options),
      stats_(stats),
      kernel_pool_(std::make_unique<KernelPool>(static_cast<int>(options.kernel_helpers), stats, &waiting_,
                                                SpareCores())),
      thread_([this] { Loop(); }) {}

void Executor::ReleaseEarly(ExecUnit& unit) {
  for (c10::StorageImpl* storage : unit.release_after) {
    const int64_t bytes = static_cast<int64_t>(storage->nbytes());
    storage->reset();  // frees the block; the (now empty) storage lives on until the unit is released
    stats_->CountReleasedEarly(bytes);
  }
  unit.release_after.clear();
}

Executor::~Executor() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &Executor::Idle));
    stop_ = true;
  }
  thread_.join();
}

bool Executor::HasRoom() const { return queued_ops_ < options_.max_pending; }

void Executor::Submit(OpRecord record) {
  ExecUnit unit;
  unit.ops.push_back(std::move(record));
  Submit(std::move(unit));
}

void Executor::Enqueue(ExecUnit unit, int64_t n) {
  queued_ops_ += n;
  queue_.push_back(std::move(unit));
  queued_units_.fetch_add(1, std::memory_order_release);
  unfinished_units_.fetch_add(1, std::memory_order_release);
}

void Executor::Submit(ExecUnit unit) {
  const int64_t n = static_cast<int64_t>(unit.ops.size());
  ReleaseFinished(kReleaseBatch);
  {
    absl::MutexLock lock(&mu_);
    if (HasRoom()) {
      Enqueue(std::move(unit), n);
      return;
    }
  }
  // Backpressure. Locking: the blocking hooks (which release and retake the GIL) run outside
  // mu_: `lock` is released before `wait` retakes the GIL. A unit larger than max_pending is
  // admitted once the queue is below the bound (progress is guaranteed).
  base::ScopedBlockingWait wait;
  WaitingScope counted(*this);
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &Executor::HasRoom));
  Enqueue(std::move(unit), n);
}

absl::Status Executor::Wait() {
  absl::Status status;
  bool idle = false;
  {
    WaitingScope counted(*this);
    // A short wait (a sync right after a few small ops) ends here, without the sleep and wake-up.
    SpinUntil(kSpinBeforeSleep, [this] { return unfinished_units_.load(std::memory_order_acquire) == 0; });
    {
      absl::MutexLock lock(&mu_);
      idle = Idle();
    }
    if (!idle) {
      base::ScopedBlockingWait wait;
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Executor::Idle));
    }
  }
  {
    absl::MutexLock lock(&mu_);
    status = std::move(first_error_);
    first_error_ = absl::OkStatus();
  }
  ReleaseFinished(0);  // everything ran: its tensors go before the sync returns
  PrunePoison();       // (marks of storages freed meanwhile)
  ReraiseWarnings();
  return status;
}

int64_t Executor::Pending() const {
  absl::MutexLock lock(&mu_);
  return queued_ops_ + (running_.has_value() ? 1 : 0);
}

std::vector<ExecutedOp> Executor::LastOps(size_t n) const {
  absl::MutexLock lock(&mu_);
  size_t start = last_ops_.size() > n ? last_ops_.size() - n : 0;
  return std::vector<ExecutedOp>(last_ops_.begin() + start, last_ops_.end());
}

std::optional<ExecutedOp> Executor::CurrentOp() const {
  absl::MutexLock lock(&mu_);
  return running_;
}


void Executor::Loop() {
  SetOpenMpThreads(static_cast<int>(options_.kernel_threads));  // (the setting is per thread: threads.h)
  KernelPool::SetForThisThread(kernel_pool_.get());
  ExecutorWarningHandler handler(this);
  c10::WarningUtils::WarningHandlerGuard guard(&handler);
  base::profiler::NameThisThread("executor");
  while (true) {
    std::optional<ExecUnit> unit;
    bool poisoned = false;
    if (!SpinUntil(kSpinBeforeSleep, [this] { return queued_units_.load(std::memory_order_acquire) > 0; })) {
      // The recording thread has been quiet for a while: release the finished units here (no
      // allocator contention now). Not sooner: while it records, this thread runs out of work
      // between its ops all the time, and freeing what the recording thread allocated starved
      // that thread's malloc cache (perf, the tiny add: _int_free ~20 % of the recording thread).
      bool quiet = false;
      {
        absl::MutexLock lock(&mu_);
        quiet = !mu_.AwaitWithTimeout(absl::Condition(this, &Executor::HasWork), kQuietBeforeRelease);
      }
      if (quiet) {
        ReleaseFinished(0);
      }
    }
    bool plan_front = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Executor::HasWork));
      if (queue_.empty()) {
        return;  // stop_ and drained
      }
      plan_front = static_cast<bool>(queue_.front().plan);
      if (!plan_front) {
        unit.emplace(queue_.pop_front());
        queued_units_.fetch_sub(1, std::memory_order_release);
        // running_ is set in the same critical section as the pop: Wait() must never see an
        // empty queue and nothing running while a unit is in hand.
        const OpRecord& first = unit->ops.front();
        running_ = ExecutedOp{first.op, first.source, first.seq, false, unit->key,
                              static_cast<int64_t>(unit->ops.size()), false};
        running_batch_ = unit->batch;
        poisoned = !first_error_.ok();
      }
    }
    if (plan_front) {
      PlanQueuedSegment();  // the segment's units take its place at the front
      continue;
    }
    RunUnit(*unit, poisoned);
    absl::MutexLock lock(&mu_);
    // retain_finished: taken by the stream (TakeRetired), at a point of the stream. Otherwise
    // released by the recording thread (Submit, Wait), or by this thread once it is quiet: see
    // ReleaseFinished.
    retired_.push_back(std::move(*unit));
    if (!options_.retain_finished) finished_units_.fetch_add(1, std::memory_order_release);
    running_.reset();
    unfinished_units_.fetch_sub(1, std::memory_order_release);
  }
}

bool Executor::PlanQueuedSegment() {
  std::function<std::vector<ExecUnit>(std::vector<OpRecord>)> plan;
  std::vector<OpRecord> ops;
  uint64_t batch = 0;
  bool poisoned = false;
  size_t index = 0;
  {
    absl::MutexLock lock(&mu_);
    while (index < queue_.size() && !queue_[index].plan) ++index;
    if (index == queue_.size()) {
      return false;
    }
    // The unit stays queued while it is planned (its ops counted, Wait() sees work); only this
    // thread pops or plans, so `index` still names it afterwards.
    ExecUnit& queued = queue_[index];
    plan = std::move(queued.plan);
    queued.plan = nullptr;
    ops = std::move(queued.ops);
    batch = queued.batch;
    poisoned = !first_error_.ok();
  }
  std::vector<ExecUnit> units;
  if (poisoned) {  // skipped anyway: not worth planning
    units.emplace_back().ops = std::move(ops);
  } else {
    units = plan(std::move(ops));
  }
  for (ExecUnit& u : units) u.batch = batch;
  const int64_t added = static_cast<int64_t>(units.size()) - 1;
  absl::MutexLock lock(&mu_);
  queue_.Replace(index, std::move(units));
  queued_units_.fetch_add(added, std::memory_order_release);
  unfinished_units_.fetch_add(added, std::memory_order_release);
  return true;
}

namespace {

// How a unit ran, for the profile.
const char* UnitKind(const ExecUnit& unit, bool compiled, bool instant = false) {
  if (compiled) {
    return "compiled";
  }
  if (instant) {
    return "instant";  // no code yet (or a failed build): its instant program
  }
  if (unit.unlowered) {
    return "not_lowered";
  }
  if (!unit.key.empty()) {
    return unit.slot != nullptr && unit.slot->failure().ok() ? "awaiting_compile" : "compile_failed";
  }
  return "op";
}

// The storages `record` writes: its fresh outputs and the arguments it writes (in place, out=).
void PoisonWrites(const OpRecord& record, const absl::Status& origin) {
  auto poison = [&](const c10::IValue& v) {
    ForEachTensor(v, [&](const at::Tensor& t) {
      if (t.defined() && IsDeviceTensor(t)) Poison(t.storage().unsafeGetStorageImpl(), origin);
    });
  };
  for (const c10::IValue& o : record.outputs) poison(o);
  const c10::FunctionSchema& schema = record.op.schema();
  for (size_t j = 0; j < record.args.size() && j < schema.arguments().size(); ++j) {
    if (WritesArg(schema, j)) poison(record.args[j]);
  }
}

// The failure that poisoned a storage `record` reads (any device argument: an in-place op reads
// the storage it writes), or OK. Only called while some storage is poisoned.
absl::Status PoisonedInput(const OpRecord& record) {
  absl::Status found;
  for (const c10::IValue& a : record.args) {
    ForEachTensor(a, [&](const at::Tensor& t) {
      if (found.ok() && t.defined() && IsDeviceTensor(t)) found = PoisonOf(t.storage().unsafeGetStorageImpl());
    });
    if (!found.ok()) break;
  }
  return found;
}

bool ReadsPoison(const ExecUnit& unit) {
  if (!AnyPoisoned()) return false;
  for (const OpRecord& op : unit.ops) {
    if (!PoisonedInput(op).ok()) return true;
  }
  return false;
}

std::vector<base::SourceId> DistinctLines(const std::vector<OpRecord>& ops, size_t begin = 0, size_t end = SIZE_MAX) {
  std::vector<base::SourceId> lines;
  for (size_t i = begin; i < std::min(end, ops.size()); ++i) {
    if (std::find(lines.begin(), lines.end(), ops[i].source) == lines.end()) {
      lines.push_back(ops[i].source);
    }
  }
  return lines;
}

}  // namespace

void Executor::RunUnit(ExecUnit& unit, bool poisoned) {
  const int64_t n = static_cast<int64_t>(unit.ops.size());
  if (unit.compiled.has_value() && unit.compiled->code == nullptr && unit.slot != nullptr) {
    if (unit.await_code && !poisoned) {  // compile mode: its build is running on the segment builders
      // Meanwhile plan the segments queued behind this unit, so their new groups build too (the
      // builders build in parallel) instead of one flush's builds after another's.
      while (!unit.slot->AwaitFor(kPlanAheadEvery)) {
        while (PlanQueuedSegment()) {
        }
      }
      unit.compiled->code = unit.slot->code();  // null after a failed build: the ops run one by one
    } else {
      unit.compiled->code = unit.slot->code();  // adaptive: whatever is ready now, never waiting
    }
  }
  // A unit that reads a poisoned storage runs op by op: its ops that read one are skipped.
  const bool reads_poison = !poisoned && ReadsPoison(unit);
  const bool compiled = unit.compiled.has_value() && unit.compiled->code != nullptr && !poisoned && !reads_poison;
  // No code (yet): the key's instant program, when it has a chain (instant_program.h).
  std::shared_ptr<const InstantProgram> program;
  if (!compiled && options_.instant_tier && !poisoned && !reads_poison && unit.compiled.has_value() &&
      unit.slot != nullptr && DeviceModel::Get() == nullptr && instant::Available()) {
    program = InstantProgramOf(unit);
  }
  const bool profile = base::profiler::Enabled();
  base::profiler::Event event;
  if (profile) {
    event.cat = "execute";
    event.begin_us = base::profiler::NowUs();
    event.sargs = {{"kind", UnitKind(unit, compiled, program != nullptr)}};
    event.name = unit.key.empty() ? OpName(unit.ops.front().op)
                                  : absl::StrCat("group ", unit.key, " (", event.sargs[0].second, ")");
    if (!unit.key.empty()) {
      event.sargs.push_back({"key", unit.key});
    }
    event.nargs = {{"ops", static_cast<double>(n)}};
    if (unit.batch > 0) {
      event.nargs.push_back({"flush", static_cast<double>(unit.batch)});  // (the flush event's number)
    }
    if (compiled) {
      event.nargs.push_back({"tier", unit.compiled->code->info().tier});
    }
    event.lines = DistinctLines(unit.ops);
  }
  const int64_t op_by_op_ns = compiled && options_.bench_groups ? GroupBench::RunOpByOpAndRestore(unit.ops) : -1;
  const int64_t begin_ns = base::MonotonicNs();
  if (compiled) {
    RunCompiled(unit);
    const int64_t ns = base::MonotonicNs() - begin_ns;
    stats_->AddTime(base::HostTime::kExecCompiled, ns, n);
    if (unit.slot != nullptr && unit.compiled->code->info().tier == 0) unit.slot->AddPayoffNs(ns);  // for a tier-up
    if (op_by_op_ns >= 0) group_bench_.Record(unit.key, unit.ops, op_by_op_ns, ns);
  } else if (program != nullptr) {
    const bool awaiting = unit.slot->failure().ok();
    const int64_t bench_ns = options_.bench_groups ? GroupBench::RunOpByOpAndRestore(unit.ops) : -1;
    const int64_t instant_begin_ns = bench_ns >= 0 ? base::MonotonicNs() : begin_ns;
    unit.compiled.reset();
    RunInstant(unit, *program, profile && n > 1);
    const int64_t ns = base::MonotonicNs() - instant_begin_ns;
    stats_->AddTime(base::HostTime::kExecInstant, ns, n);
    stats_->CountInstantRun(n, program->chained_ops());
    // What its first build would save now: the time it takes in the instant tier (compile_pool.h).
    if (awaiting) unit.slot->AddPayoffNs(ns);
    if (bench_ns >= 0) group_bench_.RecordInstant(unit.key, unit.ops, bench_ns, ns);
  } else {
    if (!poisoned && !reads_poison && std::string_view(UnitKind(unit, false)) == "awaiting_compile") {
      stats_->CountAwaitingCompile(n);
    }
    const bool awaiting = !poisoned && !reads_poison && unit.slot != nullptr && unit.slot->failure().ok();
    unit.compiled.reset();
    RunOpByOp(unit, poisoned, profile && n > 1);
    const int64_t ns = base::MonotonicNs() - begin_ns;
    stats_->AddTime(base::HostTime::kExecOpByOp, ns, n);
    if (awaiting) unit.slot->AddPayoffNs(ns);  // what its first build would save (compile_pool.h)
  }
  if (profile) {
    event.end_us = base::profiler::NowUs();
    base::profiler::Add(std::move(event));
  }
  if (options_.retain_finished) {
    ReleaseEarly(unit);
  }
}

void Executor::ReleaseFinished(size_t at_least) {
  if (options_.retain_finished) {
    return;
  }
  if (finished_units_.load(std::memory_order_acquire) < static_cast<int64_t>(std::max<size_t>(at_least, 1))) {
    return;  // (read without mu_: Submit calls this for every unit)
  }
  absl::MutexLock release_lock(&release_mu_);
  {
    absl::MutexLock lock(&mu_);
    releasing_.swap(retired_);
    finished_units_.store(0, std::memory_order_release);
  }
  releasing_.clear();  // (here, not under mu_: destroying the records frees their tensors)
}

void Executor::WaitFinishedThrough(uint64_t batch) {
  absl::MutexLock lock(&mu_);
  auto finished = [this, batch]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return FinishedThrough(batch); };
  if (!finished()) {
    WaitingScope counted(*this);
    // (The callers hold no GIL here: Flush runs under ScopedBlockingWait, Sync after Wait.)
    mu_.Await(absl::Condition(&finished));
  }
}

absl::Status Executor::WaitThrough(uint64_t batch) {
  {
    base::ScopedBlockingWait wait;  // (without the GIL while it waits, as Wait)
    WaitFinishedThrough(batch);     // (units skipped after a failure finish too)
  }
  bool error = false;
  {
    absl::MutexLock lock(&mu_);
    error = !first_error_.ok();
  }
  if (error) {
    return Wait();
  }
  ReraiseWarnings();
  return absl::OkStatus();
}

std::deque<ExecUnit> Executor::TakeRetired(uint64_t batch) {
  WaitFinishedThrough(batch);  // (units run in submission order: they stay finished)
  std::deque<ExecUnit> taken;
  absl::MutexLock lock(&mu_);
  while (!retired_.empty() && retired_.front().batch <= batch) {
    taken.push_back(retired_.pop_front());
  }
  return taken;
}

void Executor::RunCompiled(ExecUnit& unit) {
  const int64_t n = static_cast<int64_t>(unit.ops.size());
  {
    absl::MutexLock lock(&mu_);
    queued_ops_ -= n;
    if (running_.has_value()) {
      running_->compiled = true;
    }
  }
  int64_t failed = -1;
  absl::Status status = RunCompiledUnit(*unit.compiled, unit.ops, &failed);
  if (status.ok()) {
    stats_->CountCompiledRun(n, unit.compiled->bytes_written);
    DeviceModel* device = DeviceModel::Get();
    if (device != nullptr && !unit.compiled->code->on_device()) {  // host code under a trn target
      int64_t bytes = 0;
      for (const at::Tensor& t : unit.compiled->inputs) bytes += ViewBytes(t);
      for (const OutputBuffer& o : unit.compiled->outputs) bytes += ViewBytes(o.tensor);
      device->ChargeHost(bytes, n, /*group=*/true);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    stats_->CountExecuted();
    const bool blamed = !status.ok() && (failed == i || (failed < 0 && i == 0));
    Finish(unit.ops[i], blamed ? status : absl::OkStatus(), false, absl::OkStatus(), unit, true);
  }
  if (!status.ok()) {  // the group wrote none, some or all of its results: none of them is valid
    absl::Status origin;
    {
      absl::MutexLock lock(&mu_);
      origin = first_error_;
    }
    for (const OpRecord& op : unit.ops) PoisonWrites(op, origin.ok() ? status : origin);
  }
}

void Executor::RunOpByOp(ExecUnit& unit, bool poisoned, bool profile) {
  const int64_t n = static_cast<int64_t>(unit.ops.size());
  for (int64_t i = 0; i < n; ++i) RunOneOp(unit, i, poisoned, profile);
}

void Executor::RunOneOp(ExecUnit& unit, int64_t i, bool poisoned, bool profile) {
  const int64_t n = static_cast<int64_t>(unit.ops.size());
  OpRecord& record = unit.ops[i];
  {
    // running_ stays set from the first op of the unit to its end, so Wait() cannot see the
    // executor idle in the middle of a unit.
    absl::MutexLock lock(&mu_);
    running_ = ExecutedOp{record.op, record.source, record.seq, false, unit.key, n, false};
    --queued_ops_;
    poisoned = poisoned || !first_error_.ok();
  }
  const double begin = profile ? base::profiler::NowUs() : 0;
  absl::Status status;
  // After the sync that reported a failure, an op reading what the failure poisoned is skipped
  // (and poisons what it writes): poison.h.
  const absl::Status poisoned_input = !poisoned && AnyPoisoned() ? PoisonedInput(record) : absl::OkStatus();
  if (!poisoned && poisoned_input.ok()) {
    status = ExecuteRecord(record);
    stats_->CountExecuted();
    if (DeviceModel* device = DeviceModel::Get(); device != nullptr) {  // an op on the host under a trn target
      int64_t bytes = 0;
      auto count = [&](const c10::IValue& v) {
        ForEachTensor(v, [&](const at::Tensor& t) {
          if (t.defined() && IsDeviceTensor(t)) bytes += ViewBytes(t);
        });
      };
      for (const c10::IValue& a : record.args) count(a);
      for (const c10::IValue& o : record.outputs) count(o);
      device->ChargeHost(bytes, 1, /*group=*/false);
    }
  }
  if (profile) {
    base::profiler::Event e;
    e.cat = "execute";
    e.name = OpName(record.op);
    e.begin_us = begin;
    e.end_us = base::profiler::NowUs();
    e.lines = {record.source};
    base::profiler::Add(std::move(e));
  }
  Finish(record, std::move(status), poisoned || !poisoned_input.ok(), poisoned_input, unit, false);
}

std::shared_ptr<const InstantProgram> Executor::InstantProgramOf(const ExecUnit& unit) {
  std::shared_ptr<const InstantProgram> program = unit.slot->instant();
  if (program == nullptr) {
    const int64_t begin = base::MonotonicNs();
    std::vector<at::Tensor> outputs;
    outputs.reserve(unit.compiled->outputs.size());
    for (const OutputBuffer& o : unit.compiled->outputs) outputs.push_back(o.tensor);
    program = InstantProgram::Build(unit.ops, outputs);
    stats_->CountInstantBuild(base::MonotonicNs() - begin);
    unit.slot->SetInstant(program);
  }
  return program->chained_ops() > 0 ? program : nullptr;
}

void Executor::RunInstant(ExecUnit& unit, const InstantProgram& program, bool profile) {
  const int64_t n = static_cast<int64_t>(unit.ops.size());
  for (const InstantProgram::Step& step : program.steps()) {
    if (step.chain < 0) {
      RunOneOp(unit, step.begin, false, profile);
      continue;
    }
    const int64_t len = step.end - step.begin;
    bool poisoned = false;
    {
      absl::MutexLock lock(&mu_);
      const OpRecord& first = unit.ops[step.begin];
      running_ = ExecutedOp{first.op, first.source, first.seq, false, unit.key, n, false};
      poisoned = !first_error_.ok();
    }
    const double begin = profile ? base::profiler::NowUs() : 0;
    // (The unit read no poisoned storage when it started; an op that failed since set first_error_.)
    if (!poisoned && !program.RunChain(step.chain, unit.ops)) {
      for (int32_t i = step.begin; i < step.end; ++i) RunOneOp(unit, i, false, profile);  // a scalar was not real
      continue;
    }
    {
      absl::MutexLock lock(&mu_);
      queued_ops_ -= len;
    }
    if (profile) {
      base::profiler::Event e;
      e.cat = "execute";
      e.name = absl::StrCat("instant chain (", len, " ops)");
      e.begin_us = begin;
      e.end_us = base::profiler::NowUs();
      e.nargs = {{"ops", static_cast<double>(len)}};
      e.lines = DistinctLines(unit.ops, static_cast<size_t>(step.begin), static_cast<size_t>(step.end));
      base::profiler::Add(std::move(e));
    }
    for (int32_t i = step.begin; i < step.end; ++i) {
      if (!poisoned) stats_->CountExecuted();
      Finish(unit.ops[i], absl::OkStatus(), poisoned, absl::OkStatus(), unit, false);
    }
  }
}

void Executor::Finish(const OpRecord& op, absl::Status status, bool skipped, const absl::Status& skip_origin,
                      const ExecUnit& unit, bool compiled) {
  ExecutedOp done{op.op, op.source, op.seq, !status.ok(), unit.key,
                  static_cast<int64_t>(unit.ops.size()), compiled};
  absl::Status origin;  // what poisons the op's writes (OK: nothing)
  {
    absl::MutexLock lock(&mu_);
    if (!status.ok()) {
      origin = base::WithOpContext(status, done.op(), base::GlobalSourceTable().Format(op.source));
      if (first_error_.ok()) first_error_ = origin;
    } else if (skipped) {
      // Skipped for a poisoned input, or because an error is pending (first_error_, set until
      // the next Wait() reports it).
      origin = !skip_origin.ok() ? skip_origin
               : !first_error_.ok() ? first_error_
                                    : absl::InternalError("neuron: an op was skipped after an earlier error");
    }
    if (!skipped) {
      last_ops_.push_back(std::move(done));
      if (static_cast<int64_t>(last_ops_.size()) > options_.last_ops_capacity) {
        last_ops_.pop_front();
      }
    }
  }
  if (!origin.ok()) PoisonWrites(op, origin);
}

}  // namespace trn::runtime
