#include "runtime/executor.h"

#include "absl/strings/str_cat.h"
#include "runtime/blocking.h"
#include "runtime/op_error.h"
#include "runtime/op_runner.h"

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

Executor::Executor(ExecutorOptions options, Stats* stats)
    : options_(options), stats_(stats), thread_([this] { Loop(); }) {}

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

void Executor::Submit(ExecUnit unit) {
  const int64_t n = static_cast<int64_t>(unit.ops.size());
  {
    absl::MutexLock lock(&mu_);
    if (HasRoom()) {
      queued_ops_ += n;
      queue_.push_back(std::move(unit));
      return;
    }
  }
  // Backpressure. Locking: the blocking hooks (which release and retake the GIL) run outside
  // mu_: `lock` is released before `wait` retakes the GIL. A unit larger than max_pending is
  // admitted once the queue is below the bound (progress is guaranteed).
  ScopedBlockingWait wait;
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &Executor::HasRoom));
  queued_ops_ += n;
  queue_.push_back(std::move(unit));
}

absl::Status Executor::Wait() {
  absl::Status status;
  bool idle = false;
  {
    absl::MutexLock lock(&mu_);
    idle = Idle();
  }
  if (!idle) {
    ScopedBlockingWait wait;
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &Executor::Idle));
  }
  {
    absl::MutexLock lock(&mu_);
    status = std::move(first_error_);
    first_error_ = absl::OkStatus();
  }
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
  ExecutorWarningHandler handler(this);
  c10::WarningUtils::WarningHandlerGuard guard(&handler);
  while (true) {
    std::optional<ExecUnit> unit;
    bool poisoned = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Executor::HasWork));
      if (queue_.empty()) {
        return;  // stop_ and drained
      }
      unit.emplace(std::move(queue_.front()));
      queue_.pop_front();
      // running_ is set in the same critical section as the pop: Wait() must never see an
      // empty queue and nothing running while a unit is in hand.
      const OpRecord& first = unit->ops.front();
      running_ = ExecutedOp{OpName(first.op), first.source, first.seq, false};
      poisoned = !first_error_.ok();
    }
    RunUnit(*unit, poisoned);
  }
}

void Executor::RunUnit(ExecUnit& unit, bool poisoned) {
  const int64_t n = static_cast<int64_t>(unit.ops.size());
  if (unit.compiled.has_value() && !poisoned) {
    {
      absl::MutexLock lock(&mu_);
      queued_ops_ -= n;
    }
    int64_t failed = -1;
    absl::Status status = RunCompiledUnit(*unit.compiled, unit.ops, &failed);
    if (status.ok()) {
      stats_->CountCompiledRun(n, unit.compiled->bytes_written);
    }
    for (int64_t i = 0; i < n; ++i) {
      stats_->CountExecuted();
      const bool blamed = !status.ok() && (failed == i || (failed < 0 && i == 0));
      Finish(unit.ops[i], blamed ? status : absl::OkStatus(), false);
    }
    unit.ops.clear();
    unit.compiled.reset();  // drop buffer references before reporting completion
    absl::MutexLock lock(&mu_);
    running_.reset();
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    OpRecord& record = unit.ops[i];
    {
      // running_ stays set from the first op of the unit to its end, so Wait() cannot see the
      // executor idle in the middle of a unit.
      absl::MutexLock lock(&mu_);
      running_ = ExecutedOp{OpName(record.op), record.source, record.seq, false};
      --queued_ops_;
      poisoned = poisoned || !first_error_.ok();
    }
    absl::Status status;
    if (!poisoned) {
      status = ExecuteRecord(record);
      stats_->CountExecuted();
    }
    Finish(record, std::move(status), poisoned);
  }
  unit.ops.clear();  // drop the snapshots (storage references) before reporting completion
  absl::MutexLock lock(&mu_);
  running_.reset();
}

void Executor::Finish(const OpRecord& op, absl::Status status, bool poisoned) {
  ExecutedOp done{OpName(op.op), op.source, op.seq, !status.ok()};
  absl::MutexLock lock(&mu_);
  if (!status.ok() && first_error_.ok()) {
    first_error_ = WithOpContext(status, done.op, GlobalSourceTable().Format(op.source));
  }
  if (poisoned) {
    return;
  }
  last_ops_.push_back(std::move(done));
  if (static_cast<int64_t>(last_ops_.size()) > options_.last_ops_capacity) {
    last_ops_.pop_front();
  }
}

}  // namespace trn::runtime
