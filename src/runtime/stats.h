// Runtime counters behind torch_trn.stats(): ops recorded / executed, host fallbacks by op and
// reason, syncs by reason.
//
// Thread-safe: all methods may be called from any thread. The two hot counters are atomics; the
// keyed maps take a mutex (they change only on slow paths: fallbacks and syncs).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace trn::runtime {

struct StatsSnapshot {
  int64_t ops_recorded = 0;
  int64_t ops_executed = 0;
  int64_t views = 0;  // view ops: metadata only, never executed
  std::map<std::pair<std::string, std::string>, int64_t> host_fallbacks;  // (op, reason) -> count
  std::map<std::string, int64_t> syncs;                                   // reason -> count
};

class Stats {
 public:
  void CountRecorded() { ops_recorded_.fetch_add(1, std::memory_order_relaxed); }
  void CountExecuted() { ops_executed_.fetch_add(1, std::memory_order_relaxed); }
  void CountView() { views_.fetch_add(1, std::memory_order_relaxed); }
  void CountHostFallback(const std::string& op, const std::string& reason);
  void CountSync(const std::string& reason);
  StatsSnapshot Snapshot() const;
  void Reset();

 private:
  std::atomic<int64_t> ops_recorded_{0};
  std::atomic<int64_t> ops_executed_{0};
  std::atomic<int64_t> views_{0};
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, int64_t> host_fallbacks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> syncs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::runtime
