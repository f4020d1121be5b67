#include "runtime/stats.h"

namespace trn::runtime {

void Stats::CountHostFallback(const std::string& op, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  ++host_fallbacks_[{op, reason}];
}

void Stats::CountSync(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  ++syncs_[reason];
}

StatsSnapshot Stats::Snapshot() const {
  StatsSnapshot s;
  s.ops_recorded = ops_recorded_.load(std::memory_order_relaxed);
  s.ops_executed = ops_executed_.load(std::memory_order_relaxed);
  s.views = views_.load(std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  s.host_fallbacks = host_fallbacks_;
  s.syncs = syncs_;
  return s;
}

void Stats::Reset() {
  ops_recorded_ = 0;
  ops_executed_ = 0;
  views_ = 0;
  absl::MutexLock lock(&mu_);
  host_fallbacks_.clear();
  syncs_.clear();
}

}  // namespace trn::runtime
