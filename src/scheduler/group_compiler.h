// GroupCompiler: a lowered group -> loaded, callable host code (runtime::CompiledCode), through
// the cache tiers: memory (runtime/code_cache.h) -> disk (runtime/cache/disk_cache.h) -> peers
// (runtime/cache/remote_tier.h) -> build. A build compiles the group's MLIR with
// mlir_lowering::CompileToObject at given LLVM levels, loads the object, publishes the artifact
// to disk and to peers. Both modes build on a CompilePool (compile_pool.h), which calls Find and
// Build; Build never waits for a peer (it says "pending" and the pool retries later).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "mlir_lowering/group_lowering.h"
#include "mlir_lowering/group_replay.h"
#include "mlir_lowering/trn/TrnRefusal.h"
#include "runtime/cache/cache_stats.h"
#include "runtime/cache/disk_cache.h"
#include "runtime/cache/entry_format.h"
#include "runtime/cache/remote_tier.h"
#include "runtime/code_cache.h"
#include "runtime/code_loader.h"
#include "runtime/compiled_run.h"
#include "base/stats.h"
#include "scheduler/group_key.h"
#include "scheduler/plan_cache.h"

namespace trn::scheduler {

struct CompilerOptions {
  int opt_level = 3;
  bool verify_passes = false;  // NEURON_VERIFY_PASSES
  bool perf_map = false;       // NEURON_PERF_MAP (mlir_lowering::EnablePerfMap)
  std::string dump_mlir_dir;  // empty: no dump
  std::string test_fault;     // NEURON_TEST_COMPILE_FAULT: "fail" | "slow" | "bad_alloc" | "trn_internal" | ""
  runtime::CodeCacheLimits memory;
  runtime::cache::DiskCacheOptions disk;  // dir empty: no disk tier
  bool distributed = false;               // use the distributed tier when a store is available
  runtime::cache::RemoteOptions remote;
  const mlir_lowering::Target* target = &mlir_lowering::Target::Host();  // NEURON_TARGET
  // Bounds of the compile history kept for tools and tests (CompiledKeys, CompileMillis) and
  // of the failure reasons logged once: beyond them the oldest go (counted in the cache stats'
  // history_dropped), so a long run's memory stays flat.
  size_t history_limit = 4096;
};

// Everything a compile needs, detached from the group's tensors (a queued compile must not keep
// device memory alive). The IR is not part of it: only a build that compiles emits it, from the
// group's detached records (mlir_lowering/group_replay.h), so a group found on disk or at a peer
// never has its IR written.
struct CompileRequest {
  std::string key_hex;
  std::string key_material;
  std::shared_ptr<const mlir_lowering::GroupReplay> replay;
  std::string func;
  int num_inputs = 0;   // runtime-scalar buffer included
  int num_outputs = 0;  // device-side check counters included
  int64_t ops = 0;
  std::vector<base::SourceId> lines;  // distinct source lines of the group's ops (profiles)

  // The request of planned group `plan` whose records are `ops`.
  static CompileRequest Of(const GroupPlan& plan, const std::vector<runtime::OpRecord>& ops,
                           const mlir_lowering::Target& target);
};

// The outcome of one Build.
struct BuildResult {
  absl::StatusOr<runtime::CodeSlot::Code> code = absl::UnknownError("not built");
  bool pending = false;  // another rank holds the lease: nothing happened, ask again later
  std::string source;    // "disk" | "peer" | "compiled"
};

class GroupCompiler {
 public:
  GroupCompiler(CompilerOptions options, base::Stats* stats, runtime::cache::CacheStats* cache_stats);
  ~GroupCompiler();

  // The levels of a final build (NEURON_OPT_LEVEL) and of adaptive's fast first build.
  runtime::cache::Levels FinalLevels() const { return {options_.opt_level, options_.opt_level}; }
  static runtime::cache::Levels FastLevels() { return {1, 0}; }

  // An existing build of `request` at `levels` (on disk, or published by a peer), or nullopt.
  // Never compiles, never claims.
  std::optional<runtime::CodeSlot::Code> Find(const CompileRequest& request, const runtime::cache::Levels& levels,
                                              int tier);
  // The build of `request` at `levels` on this process's disk cache, loaded, or nullopt. Never
  // asks a peer (no store round trip): adaptive mode's executor calls it when it plans a new
  // group, so a restart runs compiled code from its first step.
  std::optional<runtime::CodeSlot::Code> FindOnDisk(const CompileRequest& request, const runtime::cache::Levels& levels,
                                                    int tier) {
    return FromDisk(request, levels, tier);
  }
  // Disk, then peers (claiming the build), then compile and publish. While another rank holds
  // the build's lease: nothing happens and the result says pending (the pool asks again later).
  BuildResult Build(const CompileRequest& request, const runtime::cache::Levels& levels, int tier);
  // Counts one build waited for on another rank (the pool, when it parks a job).
  void CountLeaseWait() {
    cache_stats_->Update([](runtime::cache::CacheCounters& c) { ++c.lease_waits; });
  }
  // Looks for torch.distributed's store while none was found (a build only uses a store found
  // before it: Build and Find never ask Python). Call on the flushing thread before queueing
  // builds, never on a compile thread (remote_tier.h says why).
  void RefreshRemote();

  runtime::CodeCache& cache() { return cache_; }
  runtime::cache::DiskCache* disk() { return disk_.get(); }
  runtime::cache::RemoteTier* remote() { return remote_.get(); }
  const runtime::cache::Identity& identity() const { return identity_; }
  int opt_level() const { return options_.opt_level; }
  // Stops the distributed tier's heartbeat (at exit, with the compile pool).
  void Shutdown();
  // Hex keys of the groups compiled here (first builds only; the most recent
  // `history_limit`), in the order their builds started (with several compile threads that is
  // not always stream order).
  std::vector<std::string> CompiledKeys() const;
  // Wall milliseconds of each successful compile (lower to object + load), in compile order
  // (the most recent `history_limit`).
  std::vector<double> CompileMillis() const;
  // NEURON_TARGET=trn*: groups built as host code because the trn pipeline refused them, by
  // reason (the refused op and why: trn/TrnRefusal.h).
  std::map<std::string, int64_t> trn_fallbacks() const;
  // NEURON_TARGET=trn*: builds that failed because the trn pipeline failed without refusing (an
  // internal error: mlir_lowering/trn_compile.h). Such a build fails like any compile failure
  // (the group runs op by op, the reason in stats()["compile_failures"]); a test run expects 0.
  int64_t trn_internal_failures() const;

 private:
  struct Built {
    runtime::CodeSlot::Code code;
    runtime::cache::Artifact artifact;  // for the disk tier
    std::string artifact_bytes;         // encoded entry, for peers (empty without the distributed tier)
  };
  // The group's module (emitted from the request's replay with the builder API; counted in stats).
  absl::StatusOr<mlir_lowering::IrModule> EmitIr(const CompileRequest& request);
  // Compiles and loads; counts, logs failures once per reason, profiles.
  absl::StatusOr<Built> Compile(const CompileRequest& request, const runtime::cache::Levels& levels, int tier);
  absl::StatusOr<runtime::CodeSlot::Code> Link(const runtime::cache::Artifact& artifact, int tier);
  std::optional<runtime::CodeSlot::Code> FromDisk(const CompileRequest& request, const runtime::cache::Levels& levels,
                                                  int tier);
  std::optional<runtime::CodeSlot::Code> FromPeer(const CompileRequest& request, const std::string& name,
                                                  const std::string& dir_token, const runtime::cache::Levels& levels,
                                                  int tier);
  std::string RemoteName(const CompileRequest& request, const runtime::cache::Levels& levels) const;
  void NoteTrnFallback(const CompileRequest& request, const trn::ir::Refusal& refusal);

  const CompilerOptions options_;
  base::Stats* const stats_;
  runtime::cache::CacheStats* const cache_stats_;
  const runtime::cache::Identity identity_;
  runtime::CodeCache cache_;
  std::unique_ptr<runtime::cache::DiskCache> disk_;
  std::unique_ptr<runtime::cache::RemoteTier> remote_;
  // One per code format: the NeuronCore's streams, host objects (through the compiler's loader).
  std::vector<std::unique_ptr<runtime::CodeLoader>> loaders_;
  mutable absl::Mutex mu_;
  // Appends to a history, dropping the oldest beyond history_limit (counted).
  template <typename T>
  void AppendHistory(std::deque<T>* history, T value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::deque<std::string> compiled_keys_ ABSL_GUARDED_BY(mu_);
  std::deque<double> compile_ms_ ABSL_GUARDED_BY(mu_);
  // Each reason logged once (at most history_limit reasons remembered: then it starts over).
  absl::flat_hash_set<std::string> logged_failures_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> trn_fallbacks_ ABSL_GUARDED_BY(mu_);
  int64_t trn_internal_failures_ ABSL_GUARDED_BY(mu_) = 0;
};

// Entry symbol of a cached NeuronCore instruction stream: this prefix and the target.
inline constexpr const char* kTrnEntryPrefix = runtime::kNeuronCoreEntryPrefix;

// "torch-trn <git revision> build <hash of this library>; MLIR/LLVM <version>": entries built
// by any other build of torch-trn are never loaded.
std::string CompilerVersion();

}  // namespace trn::scheduler
