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

bool Executor::HasRoom() const { return static_cast<int64_t>(queue_.size()) < options_.max_pending; }

void Executor::Submit(OpRecord record) {
  {
    absl::MutexLock lock(&mu_);
    if (HasRoom()) {
      queue_.push_back(std::move(record));
      return;
    }
  }
  // Backpressure. Locking: the blocking hooks (which release and retake the GIL) run outside
  // mu_: `lock` is released before `wait` retakes the GIL.
  ScopedBlockingWait wait;
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &Executor::HasRoom));
  queue_.push_back(std::move(record));
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
  return static_cast<int64_t>(queue_.size()) + (running_.has_value() ? 1 : 0);
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
    std::optional<OpRecord> record;
    bool poisoned = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Executor::HasWork));
      if (queue_.empty()) {
        return;  // stop_ and drained
      }
      record.emplace(std::move(queue_.front()));
      queue_.pop_front();
      running_ = ExecutedOp{OpName(record->op), record->source, record->seq, false};
      poisoned = !first_error_.ok();
    }
    absl::Status status;
    if (!poisoned) {
      status = ExecuteRecord(*record);
      stats_->CountExecuted();
    }
    SourceId source = record->source;
    record.reset();  // drop the snapshots (storage references) before reporting completion
    absl::MutexLock lock(&mu_);
    ExecutedOp done = std::move(*running_);
    running_.reset();
    if (!status.ok()) {
      done.failed = true;
      first_error_ = WithOpContext(status, done.op, GlobalSourceTable().Format(source));
    }
    if (poisoned) {
      continue;
    }
    last_ops_.push_back(std::move(done));
    if (static_cast<int64_t>(last_ops_.size()) > options_.last_ops_capacity) {
      last_ops_.pop_front();
    }
  }
}

}  // namespace trn::runtime
