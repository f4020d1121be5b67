// GroupCompiler: LoweredGroup -> runtime::CompiledCode, through the in-memory code cache.
// Compiles the group's MLIR with mlir_lowering::CompileToObject at the configured LLVM level,
// loads the object, and wires the runtime's extern entry points into the loader (once).
//
// Thread-safety: GetOrCompile may be called from any thread (the cache dedups concurrent
// compiles of one key).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "absl/status/statusor.h"
#include "mlir_lowering/group_lowering.h"
#include "runtime/code_cache.h"
#include "runtime/compiled_run.h"
#include "runtime/stats.h"
#include "scheduler/group_key.h"

namespace trn::scheduler {

struct CompilerOptions {
  int opt_level = 3;
  std::string dump_mlir_dir;  // empty: no dump
};

class GroupCompiler {
 public:
  GroupCompiler(CompilerOptions options, runtime::Stats* stats);

  // The code for `key`, compiled from `lowered` on a miss. Errors are compile failures (the
  // caller runs the group op by op); they are cached like successes.
  runtime::CodeCache::Entry GetOrCompile(const GroupKey& key, const mlir_lowering::LoweredGroup& lowered);
  runtime::CodeCache& cache() { return cache_; }
  // Hex keys of every group compiled so far, in compile order (for tests and tools).
  std::vector<std::string> CompiledKeys() const;
  // Wall milliseconds of each successful compile (lower to object + load), in compile order.
  std::vector<double> CompileMillis() const;

 private:
  runtime::CodeCache::Entry Compile(const GroupKey& key, const mlir_lowering::LoweredGroup& lowered);

  const CompilerOptions options_;
  runtime::Stats* const stats_;
  runtime::CodeCache cache_;
  mutable absl::Mutex mu_;
  std::vector<std::string> compiled_keys_ ABSL_GUARDED_BY(mu_);
  std::vector<double> compile_ms_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::scheduler
