#include "scheduler/group_compiler.h"

#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "mlir_lowering/host_jit.h"
#include "runtime/log.h"
#include "runtime/profiler.h"

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

CompileRequest CompileRequest::Of(const GroupKey& key, const mlir_lowering::LoweredGroup& lowered,
                                  const std::vector<runtime::OpRecord>& ops) {
  CompileRequest r;
  r.key_hex = key.Hex();
  r.mlir = lowered.mlir;
  r.func = lowered.func;
  r.num_inputs = static_cast<int>(lowered.inputs.size()) + (lowered.params.defined() ? 1 : 0);
  r.num_outputs = static_cast<int>(lowered.outputs.size() + lowered.checks.size());
  r.ops = static_cast<int64_t>(ops.size());
  absl::flat_hash_set<runtime::SourceId> seen;
  for (const runtime::OpRecord& op : ops) {
    if (seen.insert(op.source).second) {
      r.lines.push_back(op.source);
    }
  }
  return r;
}

GroupCompiler::GroupCompiler(CompilerOptions options, runtime::Stats* stats)
    : options_(std::move(options)), stats_(stats) {
  RegisterExternsOnce();
}

absl::StatusOr<runtime::CodeSlot::Code> GroupCompiler::GetOrCompile(const GroupKey& key,
                                                                     const CompileRequest& request) {
  bool created = false;
  std::shared_ptr<runtime::CodeSlot> slot = cache_.Lookup(key.material, &created);
  if (!created) {
    stats_->CountCompileCacheHit();
    return slot->Await();
  }
  absl::StatusOr<runtime::CodeSlot::Code> code = Compile(request, options_.opt_level, 0);
  if (code.ok()) {
    slot->Publish(*code, 0);
  } else {
    slot->Fail(code.status());
  }
  return code;
}

std::vector<std::string> GroupCompiler::CompiledKeys() const {
  absl::MutexLock lock(&mu_);
  return compiled_keys_;
}

std::vector<double> GroupCompiler::CompileMillis() const {
  absl::MutexLock lock(&mu_);
  return compile_ms_;
}

absl::StatusOr<runtime::CodeSlot::Code> GroupCompiler::Compile(const CompileRequest& request, int opt_level,
                                                                int tier, int codegen_level) {
  const int cg = codegen_level < 0 ? opt_level : codegen_level;
  if (tier == 0) {
    absl::MutexLock lock(&mu_);
    compiled_keys_.push_back(request.key_hex);
  }
  if (!options_.dump_mlir_dir.empty() && tier == 0) {
    std::ofstream(absl::StrCat(options_.dump_mlir_dir, "/", request.key_hex, ".mlir")) << request.mlir;
  }
  const double profile_begin = runtime::profiler::NowUs();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<runtime::CodeSlot::Code> result = [&]() -> absl::StatusOr<runtime::CodeSlot::Code> {
    if (options_.test_fault == "fail") {
      return absl::InternalError("injected compile failure (NEURON_TEST_COMPILE_FAULT=fail)");
    }
    if (options_.test_fault == "slow") {
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    if (1 + request.num_inputs + request.num_outputs > runtime::kMaxCompiledArgs) {  // + ctx
      return absl::ResourceExhaustedError("more buffers than a compiled entry point takes");
    }
    absl::StatusOr<mlir_lowering::ObjectCode> object =
        mlir_lowering::CompileToObject(request.mlir, request.func, opt_level, nullptr, cg);
    if (!object.ok()) {
      return object.status();
    }
    absl::StatusOr<std::unique_ptr<mlir_lowering::LoadedObject>> loaded = mlir_lowering::LoadObject(*object);
    if (!loaded.ok()) {
      return loaded.status();
    }
    auto code = std::make_shared<runtime::CompiledCode>();
    code->entry = (*loaded)->entry();
    code->keep_alive = std::shared_ptr<const mlir_lowering::LoadedObject>(std::move(*loaded));
    code->num_inputs = request.num_inputs;
    code->num_outputs = request.num_outputs;
    code->opt_level = opt_level;
    code->tier = tier;
    return runtime::CodeSlot::Code(std::move(code));
  }();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (result.ok()) {
    stats_->CountCompile(ms, tier);
    absl::MutexLock lock(&mu_);
    compile_ms_.push_back(ms);
  } else {
    const std::string reason(result.status().message().substr(0, 200));
    stats_->CountCompileFailure(reason);
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      first = logged_failures_.insert(reason).second;
    }
    if (first) {
      runtime::Log(runtime::LogLevel::kWarning,
                   absl::StrCat("group ", request.key_hex, " (", request.ops, " ops, first at ",
                                runtime::GlobalSourceTable().Format(request.lines.empty() ? runtime::kNoSource
                                                                                          : request.lines.front()),
                                ") did not compile; it runs op by op. Reason: ", reason));
    }
  }
  if (runtime::profiler::Enabled()) {
    runtime::profiler::Event e;
    e.cat = "compile";
    e.name = absl::StrCat("compile ", request.key_hex, " -O", opt_level, cg != opt_level ? absl::StrCat(" (codegen -O", cg, ")") : "");
    e.begin_us = profile_begin;
    e.end_us = runtime::profiler::NowUs();
    e.lines = request.lines;
    e.sargs = {{"key", request.key_hex}, {"result", result.ok() ? "ok" : std::string(result.status().message().substr(0, 200))}};
    e.nargs = {{"ops", static_cast<double>(request.ops)}, {"tier", tier}, {"opt_level", opt_level}, {"codegen_level", cg}, {"ms", ms}};
    runtime::profiler::Add(std::move(e));
  }
  return result;
}

}  // namespace trn::scheduler
