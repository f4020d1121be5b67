// Source lines for backward ops. The autograd engine runs backward ops on its own thread, where
// no Python frame exists; we attribute each to the line of the forward op that created the
// autograd node being evaluated. At forward record time the node for the op has just been
// created by the autograd kernel (sequence number = peek() - 1 on the recording thread); during
// backward, get_current_node() names the node being evaluated.
//
// Thread-safe: Remember (recording threads) and Lookup (engine threads) take one mutex. The map
// is bounded (oldest entries are forgotten first).
#pragma once

#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "base/source_table.h"

namespace trn::trace {

class BackwardLines {
 public:
  explicit BackwardLines(size_t capacity = 1 << 16) : capacity_(capacity) {}
  // Call while recording a forward op whose inputs require grad (grad mode on).
  void RememberForward(base::SourceId forward);
  // The "(backward)" location of the node the calling thread is evaluating, or kNoSource.
  base::SourceId LookupBackward();

 private:
  const size_t capacity_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, base::SourceId> by_node_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<base::SourceId, base::SourceId> backward_of_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::trace
