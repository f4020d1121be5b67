// Counters of the compiled-code caches (memory, disk, distributed), behind
// torch_trn.cache_stats(). Kept apart from base::Stats (op execution) so the cache tiers
// only depend on this small struct.
//
// Thread-safety: every method may be called from any thread (one mutex; counters are bumped
// a few times per group build, never per op).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace trn::runtime::cache {

struct CacheCounters {
  // memory tier
  int64_t mem_hits = 0, mem_misses = 0, mem_evictions = 0;
  // disk tier
  int64_t disk_hits = 0, disk_misses = 0, disk_writes = 0, disk_write_errors = 0;
  int64_t disk_bytes_read = 0, disk_bytes_written = 0, disk_evictions = 0;
  std::map<std::string, int64_t> disk_rejected;  // by reason name
  // the disk tier's plan entries (scheduler/plan_store.h): segments whose plans were loaded
  // (hits) or looked for and not found (misses), entries written, rejected by reason
  int64_t plan_hits = 0, plan_misses = 0, plan_writes = 0, plan_write_errors = 0;
  int64_t plan_bytes_read = 0, plan_bytes_written = 0;
  std::map<std::string, int64_t> plan_rejected;
  // distributed tier
  int64_t remote_fetches = 0, remote_misses = 0, remote_publishes = 0;
  // lease_waits: builds this rank found claimed by another rank and waited for (once per build)
  int64_t lease_claims = 0, lease_waits = 0, lease_takeovers = 0, failures_published = 0;
  int64_t remote_errors = 0;
  // builds this process compiled (every tier of every group), and their wall time
  int64_t compiles = 0;
  double compile_seconds = 0;
  std::vector<std::string> miss_explanations;  // the first kMaxMissExplanations
  // bounded state that forgot its oldest entries (docs/memory.md, "Bounded state"): compile
  // history and logged failure reasons, miss-explainer signatures and explanations, this rank's
  // builds deleted from the distributed store
  int64_t history_dropped = 0, explainer_forgotten = 0, store_entries_deleted = 0;
};

inline constexpr size_t kMaxMissExplanations = 100;

class CacheStats {
 public:
  // Applies `f` to the counters under the lock.
  template <typename F>
  void Update(F&& f) {
    absl::MutexLock lock(&mu_);
    f(counters_);
  }
  CacheCounters Snapshot() const {
    absl::MutexLock lock(&mu_);
    return counters_;
  }
  void Reset() {
    absl::MutexLock lock(&mu_);
    counters_ = CacheCounters();
  }

 private:
  mutable absl::Mutex mu_;
  CacheCounters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::runtime::cache
