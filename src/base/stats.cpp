#include "base/stats.h"

#include "base/knobs.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <utility>

namespace trn::base {

const char* HostTimeName(HostTime t) {
  switch (t) {
    case HostTime::kRecord: return "record";
    case HostTime::kFlush: return "flush";
    case HostTime::kPlan: return "plan";
    case HostTime::kExecCompiled: return "exec_compiled";
    case HostTime::kExecOpByOp: return "exec_op_by_op";
    case HostTime::kExecInstant: return "exec_instant";
    case HostTime::kSyncWait: return "sync_wait";
    case HostTime::kCount: break;
  }
  return "?";
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t MonotonicNs() {
  static const bool cpu = [] {
    const absl::StatusOr<Knobs>& k = GetKnobs();
    return k.ok() && k->host_time_thread_cpu;
  }();
  if (cpu) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
  }
  return SteadyNs();
}

void Stats::CountHostFallback(const std::string& op, const std::string& reason, const std::string& line) {
  absl::MutexLock lock(&mu_);
  std::pair<std::string, std::string> key{op, reason};
  if (host_fallbacks_.size() >= kMaxReasons && !host_fallbacks_.contains(key)) key.second = kOtherReasons;
  ++host_fallbacks_[key];
  if (line.empty()) return;
  std::vector<std::string>& lines = host_fallback_lines_[op];
  if (lines.size() < kMaxFallbackLines && std::find(lines.begin(), lines.end(), line) == lines.end()) {
    lines.push_back(line);
  }
}

void Stats::SetGroupGrowth(std::string phase) {
  absl::MutexLock lock(&mu_);
  group_growth_ = std::move(phase);
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

void Stats::CountCollective(const std::string& name, int64_t ns, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  StatsSnapshot::Collective& c = collectives_[name];
  ++c.count;
  c.ns += ns;
  c.bytes += bytes;
}

bool Stats::CountCompileFailure(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (compile_failures_.size() >= kMaxReasons && !compile_failures_.contains(reason)) {
    return ++compile_failures_[kOtherReasons] == 1;
  }
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
  s.loops_split = loops_split_.load(std::memory_order_relaxed);
  s.kernel_stragglers = kernel_stragglers_.load(std::memory_order_relaxed);
  s.kernels_run_alone = kernels_run_alone_.load(std::memory_order_relaxed);
  s.storages_released_early = storages_released_early_.load(std::memory_order_relaxed);
  s.bytes_released_early = bytes_released_early_.load(std::memory_order_relaxed);
  s.compile_cache_hits = compile_cache_hits_.load(std::memory_order_relaxed);
  s.lowerings_emitted = lowerings_emitted_.load(std::memory_order_relaxed);
  s.plan_cache_hits = plan_cache_hits_.load(std::memory_order_relaxed);
  s.plan_cache_misses = plan_cache_misses_.load(std::memory_order_relaxed);
  s.graph_replays = graph_replays_.load(std::memory_order_relaxed);
  s.graph_replay_ops = graph_replay_ops_.load(std::memory_order_relaxed);
  s.graph_captures_refused = graph_captures_refused_.load(std::memory_order_relaxed);
  s.ops_awaiting_compile = ops_awaiting_compile_.load(std::memory_order_relaxed);
  s.groups_awaiting_compile = groups_awaiting_compile_.load(std::memory_order_relaxed);
  s.compile_queue_full = compile_queue_full_.load(std::memory_order_relaxed);
  s.groups_run_instant = groups_run_instant_.load(std::memory_order_relaxed);
  s.ops_run_instant = ops_run_instant_.load(std::memory_order_relaxed);
  s.ops_chained_instant = ops_chained_instant_.load(std::memory_order_relaxed);
  s.instant_programs = instant_programs_.load(std::memory_order_relaxed);
  s.instant_build_ns = instant_build_ns_.load(std::memory_order_relaxed);
  s.shape_variants_refused = shape_variants_refused_.load(std::memory_order_relaxed);
  s.reads_before_last_flush = reads_before_last_flush_.load(std::memory_order_relaxed);
  for (int i = 0; i < static_cast<int>(HostTime::kCount); ++i) {
    s.host_ns[i] = host_ns_[i].load(std::memory_order_relaxed);
    s.host_ops[i] = host_ops_[i].load(std::memory_order_relaxed);
  }
  absl::MutexLock lock(&mu_);
  s.host_fallbacks = host_fallbacks_;
  s.syncs = syncs_;
  s.group_growth = group_growth_;
  s.compiles = compiles_;
  s.compile_ms = compile_ms_;
  s.tier_ups = tier_ups_;
  s.unlowered_ops = unlowered_ops_;
  s.compile_failures = compile_failures_;
  s.host_fallback_lines = host_fallback_lines_;
  s.collectives = collectives_;
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
  loops_split_ = 0;
  kernel_stragglers_ = 0;
  kernels_run_alone_ = 0;
  storages_released_early_ = 0;
  bytes_released_early_ = 0;
  compile_cache_hits_ = 0;
  lowerings_emitted_ = 0;
  plan_cache_hits_ = 0;
  plan_cache_misses_ = 0;
  graph_replays_ = 0;
  graph_replay_ops_ = 0;
  graph_captures_refused_ = 0;
  ops_awaiting_compile_ = 0;
  groups_awaiting_compile_ = 0;
  compile_queue_full_ = 0;
  groups_run_instant_ = 0;
  ops_run_instant_ = 0;
  ops_chained_instant_ = 0;
  instant_programs_ = 0;
  instant_build_ns_ = 0;
  shape_variants_refused_ = 0;
  reads_before_last_flush_ = 0;
  for (int i = 0; i < static_cast<int>(HostTime::kCount); ++i) {
    host_ns_[i] = 0;
    host_ops_[i] = 0;
  }
  absl::MutexLock lock(&mu_);
  host_fallbacks_.clear();
  syncs_.clear();
  compiles_ = 0;
  compile_ms_ = 0;
  tier_ups_ = 0;
  unlowered_ops_.clear();
  compile_failures_.clear();
  host_fallback_lines_.clear();
  collectives_.clear();
}

}  // namespace trn::base
