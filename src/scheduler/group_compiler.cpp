#include "scheduler/group_compiler.h"

#include <dlfcn.h>
#include <xxhash.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <new>
#include <sstream>
#include <string_view>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "mlir_lowering/host_jit.h"
#include "mlir_lowering/parallel_passes.h"
#include "mlir_lowering/trn_compile.h"
#include "runtime/kernel_pool.h"
#include "base/log.h"
#include "base/profiler.h"
#include "trn_version.h"

namespace trn::scheduler {
namespace {

using runtime::cache::Artifact;
using runtime::cache::Levels;

void RegisterExternsOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int n = 1; n <= runtime::kMaxExternOperands; ++n) {
      mlir_lowering::RegisterRuntimeSymbolPrefix(absl::StrCat("_mlir_ciface_trn_ext", n, "_"),
                                                 runtime::ExternEntry(n));
    }
    mlir_lowering::RegisterRuntimeSymbolPrefix(mlir_lowering::kParallelForSymbol,
                                               reinterpret_cast<void*>(&runtime::RunSplitLoop));
  });
}

// Host object code, linked by the compiler's ORC loader (mlir_lowering::LoadObject: checks the
// object first); every entry symbol that is not another loader's.
class HostObjectLoader final : public runtime::CodeLoader {
 public:
  explicit HostObjectLoader(bool perf_map) : perf_map_(perf_map) {}
  bool Accepts(std::string_view entry_symbol) const override {
    return entry_symbol.rfind(runtime::kNeuronCoreEntryPrefix, 0) != 0;
  }
  absl::StatusOr<std::shared_ptr<const runtime::CompiledCode>> Load(const Artifact& artifact, int tier) const override {
    mlir_lowering::ObjectCode object{artifact.object, artifact.entry_symbol, artifact.levels.opt};
    // The perf map names the code by its group key (the hex the profiler and stats print).
    const std::string label = perf_map_ ? absl::StrCat("group ", GroupKeyOf(artifact.key_material).Hex()) : "";
    absl::StatusOr<std::unique_ptr<mlir_lowering::LoadedObject>> loaded = mlir_lowering::LoadObject(object, label);
    if (!loaded.ok()) return loaded.status();
    void* entry = (*loaded)->entry();
    return runtime::MakeHostCode(entry, std::shared_ptr<const mlir_lowering::LoadedObject>(std::move(*loaded)),
                                 runtime::InfoOf(artifact, tier));
  }

 private:
  const bool perf_map_;  // NEURON_PERF_MAP: label the loaded code
};

// XXH3-64 of the shared library holding this code: any rebuild of torch-trn (even of an
// uncommitted change) gets a new compiler version, so stale entries are never loaded.
std::string LibraryHash() {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&LibraryHash), &info) == 0 || info.dli_fname == nullptr) {
    return "unknown";
  }
  std::ifstream in(info.dli_fname, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string s = bytes.str();
  return s.empty() ? "unknown" : absl::StrFormat("%016x", XXH3_64bits(s.data(), s.size()));
}

}  // namespace

void GroupCompiler::NoteTrnFallback(const CompileRequest& request, const trn::ir::Refusal& refusal) {
  const std::string reason = refusal.Message();  // "'math.sin' op has no trn lowering"
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    first = ++trn_fallbacks_[reason] == 1;
  }
  if (first) {
    base::Log(base::LogLevel::kInfo,
              absl::StrCat("group ", request.key_hex, " (", request.ops, " ops, first at ",
                           base::GlobalSourceTable().Format(request.lines.empty() ? base::kNoSource
                                                                                  : request.lines.front()),
                           ") runs as host code on ", options_.target->name(), ": ", reason));
  }
}

int64_t GroupCompiler::trn_internal_failures() const {
  absl::MutexLock lock(&mu_);
  return trn_internal_failures_;
}

std::map<std::string, int64_t> GroupCompiler::trn_fallbacks() const {
  absl::MutexLock lock(&mu_);
  return trn_fallbacks_;
}

std::string CompilerVersion() {
  static const std::string version = absl::StrCat("torch-trn ", TRN_GIT_REVISION, " build ", LibraryHash(), "; ",
                                                  mlir_lowering::ToolchainVersion());
  return version;
}

CompileRequest CompileRequest::Of(const GroupPlan& plan, const std::vector<runtime::OpRecord>& ops,
                                  const mlir_lowering::Target& target) {
  CompileRequest r;
  r.key_hex = plan.key_hex;
  r.key_material = plan.key.material;
  mlir_lowering::PlanShape shape;
  for (const TensorPos& p : plan.inputs) {
    shape.inputs.push_back(mlir_lowering::TensorGeometry::Of(TensorAt(ops, p)));
  }
  for (const auto& [p, staged] : plan.outputs) {
    shape.outputs.emplace_back(mlir_lowering::TensorGeometry::Of(TensorAt(ops, p)), staged);
  }
  shape.param_args = plan.param_args;
  shape.checks = plan.checks == nullptr ? 0 : static_cast<int64_t>(plan.checks->size());
  r.replay = mlir_lowering::GroupReplay::Detach(ops, plan.live, std::move(shape), target);
  r.func = plan.func;
  r.num_inputs = static_cast<int>(plan.inputs.size()) + (plan.param_args.empty() ? 0 : 1);
  r.num_outputs = static_cast<int>(plan.outputs.size()) +
                  (plan.checks == nullptr ? 0 : static_cast<int>(plan.checks->size()));
  r.ops = static_cast<int64_t>(ops.size());
  absl::flat_hash_set<base::SourceId> seen;
  for (const runtime::OpRecord& op : ops) {
    if (seen.insert(op.source).second) {
      r.lines.push_back(op.source);
    }
  }
  return r;
}

GroupCompiler::GroupCompiler(CompilerOptions options, base::Stats* stats, runtime::cache::CacheStats* cache_stats)
    : options_(std::move(options)),
      stats_(stats),
      cache_stats_(cache_stats),
      identity_{CompilerVersion(), !options_.target->is_trn() ? mlir_lowering::HostTargetKey()
                                                                  : absl::StrCat(mlir_lowering::HostTargetKey(), "; neuroncore ",
                                                                                 options_.target->name())},
      cache_(options_.memory, cache_stats) {
  RegisterExternsOnce();
  if (options_.perf_map) mlir_lowering::EnablePerfMap(true);
  loaders_.push_back(runtime::MakeNeuronCoreLoader());
  loaders_.push_back(std::make_unique<HostObjectLoader>(options_.perf_map));
  if (!options_.disk.dir.empty()) {
    disk_ = std::make_unique<runtime::cache::DiskCache>(options_.disk, identity_, cache_stats_);
  }
  if (options_.distributed) {
    remote_ = std::make_unique<runtime::cache::RemoteTier>(options_.remote, nullptr, cache_stats_);
  }
}

GroupCompiler::~GroupCompiler() { Shutdown(); }

void GroupCompiler::Shutdown() {
  if (remote_ != nullptr) remote_->Shutdown();
}

std::string GroupCompiler::RemoteName(const CompileRequest& request, const Levels& levels) const {
  return absl::StrCat(runtime::cache::EntryHash(identity_, request.key_material), ".", levels.Suffix());
}

absl::StatusOr<runtime::CodeSlot::Code> GroupCompiler::Link(const Artifact& artifact, int tier) {
  return runtime::LoadArtifact(loaders_, artifact, tier);
}

std::optional<runtime::CodeSlot::Code> GroupCompiler::FromDisk(const CompileRequest& request, const Levels& levels,
                                                               int tier) {
  if (disk_ == nullptr) return std::nullopt;
  const double begin_us = base::profiler::NowUs();
  std::optional<Artifact> artifact = disk_->Load(request.key_material, levels);
  if (!artifact.has_value()) return std::nullopt;
  if (artifact->num_inputs != request.num_inputs || artifact->num_outputs != request.num_outputs) {
    disk_->RejectLoaded(request.key_material, levels, "entry point arity differs from the group's");
    return std::nullopt;
  }
  const double read_us = base::profiler::NowUs();
  absl::StatusOr<runtime::CodeSlot::Code> code = Link(*artifact, tier);
  if (!code.ok()) {
    disk_->RejectLoaded(request.key_material, levels, std::string(code.status().message()));
    return std::nullopt;
  }
  if (base::profiler::Enabled()) {  // the load's read + verify and its link, on this thread's lane
    base::profiler::Event e;
    e.cat = "load";
    e.name = absl::StrCat("load ", request.key_hex, " ", levels.Suffix(), " from disk");
    e.begin_us = begin_us;
    e.end_us = base::profiler::NowUs();
    e.lines = request.lines;
    e.sargs = {{"key", request.key_hex}};
    e.nargs = {{"read_ms", (read_us - begin_us) / 1e3}, {"link_ms", (e.end_us - read_us) / 1e3},
               {"bytes", static_cast<double>(artifact->object.size())}};
    base::profiler::Add(std::move(e));
  }
  return *code;
}

std::optional<runtime::CodeSlot::Code> GroupCompiler::FromPeer(const CompileRequest& request, const std::string& name,
                                                               const std::string& dir_token, const Levels& levels,
                                                               int tier) {
  // A peer sharing our cache directory wrote the entry there: read it from disk.
  if (disk_ != nullptr && !dir_token.empty() && dir_token == disk_->DirToken()) {
    if (std::optional<runtime::CodeSlot::Code> code = FromDisk(request, levels, tier)) {
      cache_stats_->Update([](runtime::cache::CacheCounters& c) { ++c.remote_fetches; });
      return code;
    }
  }
  absl::StatusOr<std::string> bytes = remote_->FetchBytes(name);
  runtime::cache::Reject reject = runtime::cache::Reject::kNone;
  absl::StatusOr<Artifact> artifact =
      bytes.ok() ? runtime::cache::Decode(*bytes, &identity_, &request.key_material, &reject) : bytes.status();
  absl::StatusOr<runtime::CodeSlot::Code> code =
      artifact.ok() ? Link(*artifact, tier) : absl::StatusOr<runtime::CodeSlot::Code>(artifact.status());
  if (!code.ok()) {
    cache_stats_->Update([](runtime::cache::CacheCounters& c) { ++c.remote_errors; });
    base::Log(base::LogLevel::kWarning,
              absl::StrCat("distributed compile cache: the build of ", name,
                           " published by another rank is not usable (", code.status().message(),
                           "); compiling it here"));
    return std::nullopt;
  }
  cache_stats_->Update([](runtime::cache::CacheCounters& c) { ++c.remote_fetches; });
  if (disk_ != nullptr) disk_->Store(*artifact).IgnoreError();  // so a restart finds it (errors counted)
  return *code;
}

std::optional<runtime::CodeSlot::Code> GroupCompiler::Find(const CompileRequest& request, const Levels& levels,
                                                           int tier) {
  if (std::optional<runtime::CodeSlot::Code> code = FromDisk(request, levels, tier)) return code;
  std::shared_ptr<runtime::cache::RemoteStore> store = remote_ != nullptr ? remote_->known_store() : nullptr;
  if (store == nullptr) return std::nullopt;
  // Peek only: a published build is fetched; nothing is claimed.
  const std::string name = RemoteName(request, levels);
  absl::StatusOr<std::optional<std::string>> done = remote_->Done(name);
  if (!done.ok() || !done->has_value() || !absl::StartsWith(**done, "ok:")) return std::nullopt;
  return FromPeer(request, name, (*done)->substr(3), levels, tier);
}

BuildResult GroupCompiler::Build(const CompileRequest& request, const Levels& levels, int tier) {
  BuildResult result;
  if (std::optional<runtime::CodeSlot::Code> code = FromDisk(request, levels, tier)) {
    result.code = *code;
    result.source = "disk";
    return result;
  }
  bool claimed = false;
  const std::string name = RemoteName(request, levels);
  if (remote_ != nullptr && remote_->known_store() != nullptr) {
    runtime::cache::RemoteTier::Probe probe = remote_->FetchOrClaim(name);
    using State = runtime::cache::RemoteTier::State;
    switch (probe.state) {
      case State::kPublished:
        if (std::optional<runtime::CodeSlot::Code> code = FromPeer(request, name, probe.detail, levels, tier)) {
          result.code = *code;
          result.source = "peer";
          return result;
        }
        break;  // unusable: build it here, unclaimed
      case State::kFailed:
        result.code = absl::InternalError(absl::StrCat("failed to compile on another rank: ", probe.detail));
        return result;
      case State::kClaimed:
        claimed = true;
        break;
      case State::kError:
        break;  // the store is not answering: build it here
      case State::kHeldElsewhere:
        result.pending = true;  // the caller counts the wait (once per build) and asks again later
        return result;
    }
  }
  absl::StatusOr<Built> built = Compile(request, levels, tier);
  if (!built.ok()) {
    if (claimed) remote_->PublishFailure(name, std::string(built.status().message().substr(0, 200)));
    result.code = built.status();
    return result;
  }
  if (disk_ != nullptr) disk_->Store(built->artifact).IgnoreError();  // errors are counted and warned about
  if (claimed) remote_->Publish(name, built->artifact_bytes, disk_ != nullptr ? disk_->DirToken() : "");
  result.code = built->code;
  result.source = "compiled";
  return result;
}

void GroupCompiler::RefreshRemote() {
  if (remote_ != nullptr) remote_->store();
}

std::vector<std::string> GroupCompiler::CompiledKeys() const {
  absl::MutexLock lock(&mu_);
  return {compiled_keys_.begin(), compiled_keys_.end()};
}

std::vector<double> GroupCompiler::CompileMillis() const {
  absl::MutexLock lock(&mu_);
  return {compile_ms_.begin(), compile_ms_.end()};
}

template <typename T>
void GroupCompiler::AppendHistory(std::deque<T>* history, T value) {
  history->push_back(std::move(value));
  if (history->size() > options_.history_limit) {
    history->pop_front();
    cache_stats_->Update([](runtime::cache::CacheCounters& c) { ++c.history_dropped; });
  }
}

absl::StatusOr<mlir_lowering::IrModule> GroupCompiler::EmitIr(const CompileRequest& request) {
  if (request.replay == nullptr) {
    return absl::InternalError("a compile request without the group's records");
  }
  bool first = false;
  absl::StatusOr<mlir_lowering::IrModule> module = request.replay->Emit(&first);
  if (first) stats_->CountLoweringEmitted();
  return module;
}

absl::StatusOr<GroupCompiler::Built> GroupCompiler::Compile(const CompileRequest& request, const Levels& levels,
                                                            int tier) {
  const int opt_level = levels.opt;
  const int cg = levels.codegen;
  if (tier == 0) {
    absl::MutexLock lock(&mu_);
    AppendHistory(&compiled_keys_, request.key_hex);
  }
  const double profile_begin = base::profiler::NowUs();
  const auto start = std::chrono::steady_clock::now();
  double emit_ms = 0;  // replaying the records into a module (the front's share of the build)
  auto compile = [&]() -> absl::StatusOr<Built> {
    const auto emit_start = std::chrono::steady_clock::now();
    absl::StatusOr<mlir_lowering::IrModule> mlir = EmitIr(request);
    emit_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - emit_start).count();
    if (!mlir.ok()) {
      return mlir.status();
    }
    if (!options_.dump_mlir_dir.empty() && tier == 0) {
      std::ofstream(absl::StrCat(options_.dump_mlir_dir, "/", request.key_hex, ".mlir")) << mlir->Print(/*locations=*/true);
    }
    if (options_.test_fault == "fail") {
      return absl::InternalError("injected compile failure (NEURON_TEST_COMPILE_FAULT=fail)");
    }
    if (options_.test_fault == "slow") {
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    if (options_.test_fault == "bad_alloc") {
      throw std::bad_alloc();
    }
    if (1 + request.num_inputs + request.num_outputs > runtime::kMaxCompiledArgs) {  // + ctx
      return absl::ResourceExhaustedError("more buffers than a compiled entry point takes");
    }
    if (options_.target->is_trn()) {
      // The NeuronCore first; a group it refuses (an op or dtype it has no instruction for)
      // runs as host code, its transfers charged by the model (runtime/device_model.h). A
      // failure that is not a refusal is an internal error: the build fails (never host code).
      mlir_lowering::TrnCompileOptions trn_options;
      trn_options.inject_internal_failure = options_.test_fault == "trn_internal";
      absl::StatusOr<mlir_lowering::TrnCompiled> trn =
          mlir_lowering::CompileToTrnStream(*mlir, request.func, options_.target->name(), trn_options);
      if (!trn.ok()) {
        {
          absl::MutexLock lock(&mu_);
          ++trn_internal_failures_;
        }
        return trn.status();
      }
      if (!trn->refusal.has_value()) {
        Artifact artifact;
        artifact.key_material = request.key_material;
        artifact.object = std::move(trn->stream);
        artifact.entry_symbol = absl::StrCat(kTrnEntryPrefix, options_.target->name());
        artifact.levels = levels;
        artifact.tier = tier;
        artifact.num_inputs = request.num_inputs;
        artifact.num_outputs = request.num_outputs;
        absl::StatusOr<runtime::CodeSlot::Code> code = Link(artifact, tier);
        if (!code.ok()) return code.status();
        std::string bytes = remote_ != nullptr ? runtime::cache::Encode(artifact, identity_) : "";
        return Built{*code, std::move(artifact), std::move(bytes)};
      }
      NoteTrnFallback(request, *trn->refusal);
    }
    absl::StatusOr<mlir_lowering::ObjectCode> object =
        mlir_lowering::CompileToObject(std::move(*mlir), request.func, opt_level, nullptr, cg,
                                      options_.verify_passes);
    if (!object.ok()) {
      return object.status();
    }
    Artifact artifact;
    artifact.key_material = request.key_material;
    artifact.object = std::move(object->bytes);
    artifact.entry_symbol = object->entry_symbol;
    artifact.levels = levels;
    artifact.tier = tier;
    artifact.num_inputs = request.num_inputs;
    artifact.num_outputs = request.num_outputs;
    absl::StatusOr<runtime::CodeSlot::Code> code = Link(artifact, tier);
    if (!code.ok()) {
      return code.status();
    }
    std::string bytes = remote_ != nullptr ? runtime::cache::Encode(artifact, identity_) : "";
    return Built{*code, std::move(artifact), std::move(bytes)};
  };
  // A compile thread must not take the process down: running out of memory (or any exception
  // from the compiler) fails this build like any other failure; the group runs op by op.
  absl::StatusOr<Built> result = absl::InternalError("not compiled");
  try {
    result = compile();
  } catch (const std::bad_alloc&) {
    result = absl::InternalError("out of memory while compiling the group");
  } catch (const std::exception& e) {
    result = absl::InternalError(absl::StrCat("the compiler threw: ", e.what()));
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  cache_stats_->Update([ms](runtime::cache::CacheCounters& c) {
    ++c.compiles;
    c.compile_seconds += ms / 1000;
  });
  if (result.ok()) {
    stats_->CountCompile(ms, tier);
    absl::MutexLock lock(&mu_);
    AppendHistory(&compile_ms_, ms);
  } else {
    const std::string reason(result.status().message().substr(0, 200));
    stats_->CountCompileFailure(reason);
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      if (logged_failures_.size() >= options_.history_limit && !logged_failures_.contains(reason)) {
        logged_failures_.clear();  // a reason seen again may be logged again: bounded memory
        cache_stats_->Update([](runtime::cache::CacheCounters& c) { ++c.history_dropped; });
      }
      first = logged_failures_.insert(reason).second;
    }
    if (first) {
      base::Log(base::LogLevel::kWarning,
                absl::StrCat("group ", request.key_hex, " (", request.ops, " ops, first at ",
                             base::GlobalSourceTable().Format(request.lines.empty() ? base::kNoSource
                                                                                    : request.lines.front()),
                             ") did not compile; it runs op by op. Reason: ", reason));
    }
  }
  if (base::profiler::Enabled()) {
    base::profiler::Event e;
    e.cat = "compile";
    e.name = absl::StrCat("compile ", request.key_hex, " -O", opt_level, cg != opt_level ? absl::StrCat(" (codegen -O", cg, ")") : "");
    e.begin_us = profile_begin;
    e.end_us = base::profiler::NowUs();
    e.lines = request.lines;
    e.sargs = {{"key", request.key_hex}, {"result", result.ok() ? "ok" : std::string(result.status().message().substr(0, 200))}};
    e.nargs = {{"ops", static_cast<double>(request.ops)}, {"tier", tier}, {"opt_level", opt_level}, {"codegen_level", cg}, {"ms", ms}, {"emit_ms", emit_ms}};
    base::profiler::Add(std::move(e));
  }
  return result;
}

}  // namespace trn::scheduler
