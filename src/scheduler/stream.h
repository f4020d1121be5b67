// The device's op stream: recorded ops enter in issue order and leave for the executor as
// execution units.
//  - eager (and adaptive, until it lands): every op is its own unit, submitted at once.
//  - compile: ops wait in the pending segment; at a sync point (or when the segment reaches
//    NEURON_MAX_PENDING_OPS: backpressure) the segment is cut into groups (grouper.h), each
//    group is compiled (blocking; the in-memory cache makes step 2 compile nothing) and the
//    units are submitted in order. Results equal eager's: same ops, same order.
//
// Thread-safety: Record and Sync may be called from any thread (the Python thread records forward
// ops, the autograd engine's device thread records backward ops). Records are numbered under one
// mutex, so stream order is the order in which Record calls return. Flushes are serialised by
// their own mutex, so units reach the executor in stream order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "runtime/executor.h"
#include "runtime/knobs.h"
#include "runtime/stats.h"
#include "scheduler/group_compiler.h"

namespace trn::scheduler {

class Stream {
 public:
  Stream(const runtime::Knobs& knobs, runtime::Stats* stats);

  // Appends `record` to the stream. With launch_blocking, also runs it and returns its error.
  absl::Status Record(runtime::OpRecord record);
  // Runs everything recorded so far; returns the first error since the last sync. `reason`
  // names the sync point in stats ("item", "to_host", "user", ...).
  absl::Status Sync(const std::string& reason);
  runtime::Mode mode() const { return mode_; }
  runtime::Executor& executor() { return executor_; }
  GroupCompiler& compiler() { return compiler_; }

 private:
  bool Groups() const { return mode_ == runtime::Mode::kCompile && !launch_blocking_; }
  // compile mode: cut, compile and submit the pending segment.
  void Flush();

  const runtime::Mode mode_;
  const bool launch_blocking_;
  const int64_t max_pending_;
  const int64_t max_group_ops_;
  runtime::Stats* const stats_;
  absl::Mutex mu_;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<runtime::OpRecord> pending_ ABSL_GUARDED_BY(mu_);
  absl::Mutex flush_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  GroupCompiler compiler_;
  runtime::Executor executor_;
};

}  // namespace trn::scheduler
