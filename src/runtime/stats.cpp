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

void Stats::CountCompile(double ms, int tier) {
  absl::MutexLock lock(&mu_);
  ++compiles_;
  tier_ups_ += tier > 0 ? 1 : 0;
  compile_ms_ += ms;
}

void Stats::CountUnlowered(const std::string& op) {
  absl::MutexLock lock(&mu_);
  ++unlowered_ops_[op];
}

bool Stats::CountCompileFailure(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  return ++compile_failures_[reason] == 1;
}

StatsSnapshot Stats::Snapshot() const {
  StatsSnapshot s;
  s.ops_recorded = ops_recorded_.load(std::memory_order_relaxed);
  s.ops_executed = ops_executed_.load(std::memory_order_relaxed);
  s.views = views_.load(std::memory_order_relaxed);
  s.groups_run_compiled = groups_run_compiled_.load(std::memory_order_relaxed);
  s.ops_run_compiled = ops_run_compiled_.load(std::memory_order_relaxed);
  s.compiled_bytes_written = compiled_bytes_written_.load(std::memory_order_relaxed);
  s.temporaries_elided = temporaries_elided_.load(std::memory_order_relaxed);
  s.storages_released_early = storages_released_early_.load(std::memory_order_relaxed);
  s.bytes_released_early = bytes_released_early_.load(std::memory_order_relaxed);
  s.compile_cache_hits = compile_cache_hits_.load(std::memory_order_relaxed);
  s.ops_awaiting_compile = ops_awaiting_compile_.load(std::memory_order_relaxed);
  s.groups_awaiting_compile = groups_awaiting_compile_.load(std::memory_order_relaxed);
  s.compile_queue_full = compile_queue_full_.load(std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  s.host_fallbacks = host_fallbacks_;
  s.syncs = syncs_;
  s.compiles = compiles_;
  s.compile_ms = compile_ms_;
  s.tier_ups = tier_ups_;
  s.unlowered_ops = unlowered_ops_;
  s.compile_failures = compile_failures_;
  return s;
}

void Stats::Reset() {
  ops_recorded_ = 0;
  ops_executed_ = 0;
  views_ = 0;
  groups_run_compiled_ = 0;
  ops_run_compiled_ = 0;
  compiled_bytes_written_ = 0;
  temporaries_elided_ = 0;
  storages_released_early_ = 0;
  bytes_released_early_ = 0;
  compile_cache_hits_ = 0;
  ops_awaiting_compile_ = 0;
  groups_awaiting_compile_ = 0;
  compile_queue_full_ = 0;
  absl::MutexLock lock(&mu_);
  host_fallbacks_.clear();
  syncs_.clear();
  compiles_ = 0;
  compile_ms_ = 0;
  tier_ups_ = 0;
  unlowered_ops_.clear();
  compile_failures_.clear();
}

}  // namespace trn::runtime
