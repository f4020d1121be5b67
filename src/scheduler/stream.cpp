#include "scheduler/stream.h"

namespace trn::scheduler {

Stream::Stream(const runtime::Knobs& knobs, runtime::Stats* stats)
    : mode_(knobs.mode),
      launch_blocking_(knobs.launch_blocking),
      stats_(stats),
      executor_(runtime::ExecutorOptions{knobs.max_pending_ops, knobs.last_ops_capacity}, stats) {}

absl::Status Stream::Record(runtime::OpRecord record) {
  stats_->CountRecorded();
  {
    // Numbering and submission happen under one lock so the executor sees stream order even
    // when the Python thread and the autograd thread record at once.
    absl::MutexLock lock(&mu_);
    record.seq = next_seq_++;
    executor_.Submit(std::move(record));
  }
  if (launch_blocking_) {
    return Sync("launch_blocking");
  }
  return absl::OkStatus();
}

absl::Status Stream::Sync(const std::string& reason) {
  stats_->CountSync(reason);
  return executor_.Wait();
}

}  // namespace trn::scheduler
