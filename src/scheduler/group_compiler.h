// GroupCompiler: a lowered group -> loaded, callable host code (runtime::CompiledCode).
// Compiles the group's MLIR with mlir_lowering::CompileToObject at a given LLVM level, loads the
// object, and wires the runtime's extern entry points into the loader (once per process).
// It owns the in-memory code cache; compile mode compiles through GetOrCompile (blocking),
// adaptive mode through the CompilePool (compile_pool.h), which calls Compile.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "mlir_lowering/group_lowering.h"
#include "runtime/code_cache.h"
#include "runtime/compiled_run.h"
#include "runtime/stats.h"
#include "scheduler/group_key.h"

namespace trn::scheduler {

struct CompilerOptions {
  int opt_level = 3;
  std::string dump_mlir_dir;  // empty: no dump
  std::string test_fault;     // NEURON_TEST_COMPILE_FAULT: "fail" | "slow" | ""
};

// Everything a compile needs, detached from the group's tensors (a queued compile must not keep
// device memory alive).
struct CompileRequest {
  std::string key_hex;
  std::string mlir;
  std::string func;
  int num_inputs = 0;   // runtime-scalar buffer included
  int num_outputs = 0;  // device-side check counters included
  int64_t ops = 0;
  std::vector<runtime::SourceId> lines;  // distinct source lines of the group's ops (profiles)

  static CompileRequest Of(const GroupKey& key, const mlir_lowering::LoweredGroup& lowered,
                           const std::vector<runtime::OpRecord>& ops);
};

class GroupCompiler {
 public:
  GroupCompiler(CompilerOptions options, runtime::Stats* stats);

  // Compiles `request` at LLVM `opt_level` (IR optimisation) and `codegen_level` (-1: the
  // same). `tier` (0 first build, 1 optimised rebuild) goes into stats and the profile.
  // Failures are counted, and logged once per reason.
  absl::StatusOr<runtime::CodeSlot::Code> Compile(const CompileRequest& request, int opt_level, int tier,
                                                  int codegen_level = -1);
  // compile mode: the code for `key`, compiled here at the configured level on a miss.
  absl::StatusOr<runtime::CodeSlot::Code> GetOrCompile(const GroupKey& key, const CompileRequest& request);
  runtime::CodeCache& cache() { return cache_; }
  int opt_level() const { return options_.opt_level; }
  // Hex keys of every group compiled so far (first builds only), in compile order.
  std::vector<std::string> CompiledKeys() const;
  // Wall milliseconds of each successful compile (lower to object + load), in compile order.
  std::vector<double> CompileMillis() const;

 private:
  const CompilerOptions options_;
  runtime::Stats* const stats_;
  runtime::CodeCache cache_;
  mutable absl::Mutex mu_;
  std::vector<std::string> compiled_keys_ ABSL_GUARDED_BY(mu_);
  std::vector<double> compile_ms_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> logged_failures_ ABSL_GUARDED_BY(mu_);  // each reason logged once
};

}  // namespace trn::scheduler
