#include "scheduler/group_compiler.h"

#include <chrono>
#include <fstream>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "mlir_lowering/host_jit.h"

namespace trn::scheduler {
namespace {

void RegisterExternsOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int n = 1; n <= runtime::kMaxExternOperands; ++n) {
      mlir_lowering::RegisterRuntimeSymbolPrefix(absl::StrCat("_mlir_ciface_trn_ext", n, "_"),
                                                 runtime::ExternEntry(n));
    }
  });
}

}  // namespace

GroupCompiler::GroupCompiler(CompilerOptions options, runtime::Stats* stats)
    : options_(std::move(options)), stats_(stats) {
  RegisterExternsOnce();
}

runtime::CodeCache::Entry GroupCompiler::GetOrCompile(const GroupKey& key, const mlir_lowering::LoweredGroup& lowered) {
  bool hit = false;
  runtime::CodeCache::Entry entry =
      cache_.GetOrCompile(key.material, [&] { return Compile(key, lowered); }, &hit);
  if (hit) {
    stats_->CountCompileCacheHit();
  }
  return entry;
}

std::vector<std::string> GroupCompiler::CompiledKeys() const {
  absl::MutexLock lock(&mu_);
  return compiled_keys_;
}

std::vector<double> GroupCompiler::CompileMillis() const {
  absl::MutexLock lock(&mu_);
  return compile_ms_;
}

runtime::CodeCache::Entry GroupCompiler::Compile(const GroupKey& key, const mlir_lowering::LoweredGroup& lowered) {
  {
    absl::MutexLock lock(&mu_);
    compiled_keys_.push_back(key.Hex());
  }
  if (!options_.dump_mlir_dir.empty()) {
    std::ofstream(absl::StrCat(options_.dump_mlir_dir, "/", key.Hex(), ".mlir")) << lowered.mlir;
  }
  if (2 + lowered.inputs.size() + lowered.outputs.size() > static_cast<size_t>(runtime::kMaxCompiledArgs)) {
    return absl::ResourceExhaustedError("more buffers than a compiled entry point takes");
  }
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<mlir_lowering::ObjectCode> object =
      mlir_lowering::CompileToObject(lowered.mlir, lowered.func, options_.opt_level);
  if (!object.ok()) {
    stats_->CountCompileFailure(std::string(object.status().message().substr(0, 200)));
    return object.status();
  }
  absl::StatusOr<std::unique_ptr<mlir_lowering::LoadedObject>> loaded = mlir_lowering::LoadObject(*object);
  if (!loaded.ok()) {
    stats_->CountCompileFailure(std::string(loaded.status().message().substr(0, 200)));
    return loaded.status();
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  stats_->CountCompile(ms);
  {
    absl::MutexLock lock(&mu_);
    compile_ms_.push_back(ms);
  }
  auto code = std::make_shared<runtime::CompiledCode>();
  code->entry = (*loaded)->entry();
  code->keep_alive = std::shared_ptr<const mlir_lowering::LoadedObject>(std::move(*loaded));
  code->num_inputs = static_cast<int>(lowered.inputs.size()) + (lowered.params.defined() ? 1 : 0);
  code->num_outputs = static_cast<int>(lowered.outputs.size() + lowered.checks.size());
  code->opt_level = options_.opt_level;
  return std::shared_ptr<const runtime::CompiledCode>(std::move(code));
}

}  // namespace trn::scheduler
