// The device's op stream: recorded ops enter in issue order and leave for the executor as
// execution units. In eager mode (this issue) every op is its own unit; the grouping modes
// (compile, adaptive) will cut the same stream into groups here.
//
// Thread-safe: Record and Sync may be called from any thread (the Python thread records forward
// ops, the autograd engine's device thread records backward ops). Records are numbered under one
// mutex, so stream order is the order in which Record calls return.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "runtime/executor.h"
#include "runtime/knobs.h"
#include "runtime/stats.h"

namespace trn::scheduler {

class Stream {
 public:
  Stream(const runtime::Knobs& knobs, runtime::Stats* stats);

  // Appends `record` to the stream. With launch_blocking, also runs it and returns its error.
  absl::Status Record(runtime::OpRecord record);
  // Runs everything recorded so far; returns the first error since the last sync. `reason`
  // names the sync point in stats ("item", "to_host", "user", ...).
  absl::Status Sync(const std::string& reason);
  // The mode the stream executes in (adaptive/compile run as eager until implemented).
  runtime::Mode mode() const { return mode_; }
  runtime::Executor& executor() { return executor_; }

 private:
  const runtime::Mode mode_;
  const bool launch_blocking_;
  runtime::Stats* const stats_;
  absl::Mutex mu_;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  runtime::Executor executor_;
};

}  // namespace trn::scheduler
