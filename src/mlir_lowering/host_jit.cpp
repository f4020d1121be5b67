// Host JIT: parse -> buildHostPipeline -> LLVM IR -> object bytes; object bytes -> ORC LLJIT.
#include "mlir_lowering/host_jit.h"

#include <atomic>

#include "mlir_lowering/host_pipeline.h"
#include "mlir_lowering/ir_module.h"
#include "mlir_lowering/llvm_optimize.h"
#include "mlir_lowering/object_check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/Attributes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalValue.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <mutex>
#include <vector>

namespace trn::mlir_lowering {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void InitializeLlvmOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

std::string ToString(llvm::Error error) { return llvm::toString(std::move(error)); }

// Runtime symbols by name prefix (RegisterRuntimeSymbolPrefix).
struct RuntimeSymbols {
  std::mutex mu;
  std::vector<std::pair<std::string, void*>> prefixes;  // guarded by mu
};

RuntimeSymbols& GlobalRuntimeSymbols() {
  static auto* symbols = [] {
    auto* s = new RuntimeSymbols();
    // MLIR's runtime support that lowered code may call (memref.copy of strided buffers).
    s->prefixes.emplace_back("memrefCopy", reinterpret_cast<void*>(&memrefCopy));
    return s;
  }();
  return *symbols;
}

// Resolves lookups of registered prefixes to the runtime's functions.
class RuntimeSymbolGenerator final : public llvm::orc::DefinitionGenerator {
 public:
  llvm::Error tryToGenerate(llvm::orc::LookupState&, llvm::orc::LookupKind, llvm::orc::JITDylib& jd,
                            llvm::orc::JITDylibLookupFlags,
                            const llvm::orc::SymbolLookupSet& lookup) override {
    llvm::orc::SymbolMap found;
    {
      RuntimeSymbols& symbols = GlobalRuntimeSymbols();
      std::lock_guard<std::mutex> lock(symbols.mu);
      for (const auto& [name, flags] : lookup) {
        llvm::StringRef n = *name;
        for (const auto& [prefix, address] : symbols.prefixes) {
          if (n.startswith(prefix)) {
            found[name] = llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(address),
                                                   llvm::JITSymbolFlags::Exported);
            break;
          }
        }
      }
    }
    if (found.empty()) {
      return llvm::Error::success();
    }
    return jd.define(llvm::orc::absoluteSymbols(std::move(found)));
  }
};

// Host triple/CPU/features, position-independent code (the object is linked at an address
// unknown at compile time, possibly far from libc).
absl::StatusOr<llvm::orc::JITTargetMachineBuilder> HostMachineBuilder() {
  InitializeLlvmOnce();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    return absl::InternalError(
        absl::StrCat("detecting the host target: ", ToString(builder.takeError())));
  }
  builder->setRelocationModel(llvm::Reloc::PIC_);
  return std::move(*builder);
}

llvm::CodeGenOpt::Level CodeGenLevel(int opt_level) {
  switch (opt_level) {
  case 0:
    return llvm::CodeGenOpt::None;
  case 1:
    return llvm::CodeGenOpt::Less;
  case 2:
    return llvm::CodeGenOpt::Default;
  default:
    return llvm::CodeGenOpt::Aggressive;
  }
}

// LLVM module -> object file bytes, optimised at `opt_level` for `machine`; records the two
// phases' wall times in `t`.
absl::StatusOr<std::string> EmitObject(llvm::Module& module, llvm::TargetMachine& machine,
                                       int opt_level, CompileTimings& t) {
  auto start = Clock::now();
  module.setDataLayout(machine.createDataLayout());
  module.setTargetTriple(machine.getTargetTriple().str());
  if (absl::Status optimized = OptimizeModule(module, machine, opt_level); !optimized.ok()) {
    return optimized;
  }
  t.optimize_ms = MsSince(start);
  start = Clock::now();
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, stream, nullptr, llvm::CGFT_ObjectFile)) {
    return absl::InternalError("the host TargetMachine cannot emit object files");
  }
  codegen.run(module);
  t.codegen_ms = MsSince(start);
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace

absl::StatusOr<ObjectCode> CompileToObject(std::string_view mlir_text, std::string_view func_name,
                                           int opt_level, CompileTimings* timings, int codegen_level,
                                           bool verify_each_pass) {
  const auto start = Clock::now();
  absl::StatusOr<IrModule> module = IrModule::Parse(mlir_text, func_name);
  if (!module.ok()) return module.status();
  const double parse_ms = MsSince(start);
  absl::StatusOr<ObjectCode> code =
      CompileToObject(std::move(*module), func_name, opt_level, timings, codegen_level, verify_each_pass);
  if (timings != nullptr) timings->parse_ms += parse_ms;
  return code;
}

absl::StatusOr<ObjectCode> CompileToObject(IrModule ir, std::string_view func_name, int opt_level,
                                           CompileTimings* timings, int codegen_level, bool verify_each_pass) {
  if (opt_level < 0 || opt_level > 3) {
    return absl::InvalidArgumentError(absl::StrCat("opt_level must be 0..3, got ", opt_level));
  }
  if (codegen_level < -1 || codegen_level > 3) {
    return absl::InvalidArgumentError(absl::StrCat("codegen_level must be -1..3, got ", codegen_level));
  }
  CompileTimings local_timings;
  CompileTimings& t = timings != nullptr ? *timings : local_timings;
  const std::string name(func_name);
  auto start = Clock::now();

  mlir::MLIRContext& context = ir.context();
  mlir::ModuleOp module = ir.module();
  IrDiagnostics diagnostics(ir);
  auto func = module.lookupSymbol<mlir::func::FuncOp>(name);
  if (!func || func.isExternal()) {
    return absl::NotFoundError(absl::StrCat("the module has no func.func @", name, " with a body"));
  }
  func->setAttr("llvm.emit_c_interface", mlir::UnitAttr::get(&context));
  t.parse_ms = MsSince(start);

  start = Clock::now();
  mlir::PassManager pm(&context);
  // Verifying after each of the ~25 passes took ~30 % of the pipeline's time on the zoo's groups
  // (src/mlir_lowering/README.md); by default the result is verified once instead.
  pm.enableVerifier(verify_each_pass);
  buildHostPipeline(pm);
  if (mlir::failed(pm.run(module))) {
    return absl::InternalError(
        absl::StrCat("host pipeline failed for @", name, ":\n", diagnostics.str()));
  }
  if (!verify_each_pass && mlir::failed(mlir::verify(module))) {
    return absl::InternalError(absl::StrCat("the host pipeline made invalid IR for @", name,
                                            " (NEURON_VERIFY_PASSES=1 names the pass):\n",
                                            diagnostics.str()));
  }
  t.pipeline_ms = MsSince(start);

  start = Clock::now();
  auto builder = HostMachineBuilder();
  if (!builder.ok()) {
    return builder.status();
  }
  builder->setCodeGenOptLevel(CodeGenLevel(codegen_level < 0 ? opt_level : codegen_level));
  auto machine = builder->createTargetMachine();
  if (!machine) {
    return absl::InternalError(
        absl::StrCat("creating the host TargetMachine: ", ToString(machine.takeError())));
  }
  llvm::LLVMContext llvm_context;
  std::unique_ptr<llvm::Module> llvm_module =
      mlir::translateModuleToLLVMIR(module, llvm_context, name);
  if (!llvm_module) {
    return absl::InternalError(
        absl::StrCat("translating @", name, " to LLVM IR:\n", diagnostics.str()));
  }
  // `_mlir_ciface_<name>` (the entry point) unpacks every memref descriptor into scalars and calls
  // `<name>` with them: hundreds of arguments for a group with many tensors, which FastISel cannot
  // lower, so at -O0 SelectionDAG built a DAG of the whole call, and the callee spilled every
  // argument again. Inlining the body into the wrapper leaves loads from the descriptors: -O0
  // codegen ~2x faster, objects ~40 % smaller (src/mlir_lowering/README.md).
  if (llvm::Function* body = llvm_module->getFunction(name); body != nullptr && !body->isDeclaration()) {
    body->setLinkage(llvm::GlobalValue::InternalLinkage);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
  }
  t.translate_ms = MsSince(start);
  absl::StatusOr<std::string> bytes = EmitObject(*llvm_module, **machine, opt_level, t);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        absl::StrCat("compiling @", name, ": ", bytes.status().message()));
  }
  return ObjectCode{std::move(*bytes), absl::StrCat("_mlir_ciface_", name), opt_level};
}

// One process-wide LLJIT; every loaded object gets its own JITDylib (linked against the main
// one, which resolves process and runtime symbols), so objects defining the same symbol names
// coexist and each can be unloaded on its own. Creating an LLJIT per object cost ~1 ms (host
// detection, session, linking layer), which dominated loading a cached group.
struct SharedJit {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::atomic<uint64_t> next_id{0};
};

absl::StatusOr<SharedJit*> GetSharedJit() {
  // Never destroyed: loaded objects may outlive any static's destruction order at exit.
  static absl::StatusOr<SharedJit*>* shared = [] {
    InitializeLlvmOnce();
    auto lljit = llvm::orc::LLJITBuilder().create();
    if (!lljit) {
      return new absl::StatusOr<SharedJit*>(
          absl::InternalError(absl::StrCat("creating an LLJIT: ", ToString(lljit.takeError()))));
    }
    auto process_symbols = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        (*lljit)->getDataLayout().getGlobalPrefix());
    if (!process_symbols) {
      return new absl::StatusOr<SharedJit*>(absl::InternalError(
          absl::StrCat("resolving process symbols: ", ToString(process_symbols.takeError()))));
    }
    (*lljit)->getMainJITDylib().addGenerator(std::move(*process_symbols));
    (*lljit)->getMainJITDylib().addGenerator(std::make_unique<RuntimeSymbolGenerator>());
    auto* jit = new SharedJit;
    jit->lljit = std::move(*lljit);
    return new absl::StatusOr<SharedJit*>(jit);
  }();
  return *shared;
}

struct LoadedObject::Jit {
  SharedJit* shared = nullptr;
  llvm::orc::JITDylib* dylib = nullptr;
};

LoadedObject::LoadedObject(std::unique_ptr<Jit> jit, void* entry)
    : jit_(std::move(jit)), entry_(entry) {}

LoadedObject::~LoadedObject() {
  if (jit_ != nullptr && jit_->dylib != nullptr) {
    // Frees the object's code and data. An error here would mean a bug in ORC's bookkeeping;
    // the code then simply stays mapped.
    llvm::consumeError(jit_->shared->lljit->getExecutionSession().removeJITDylib(*jit_->dylib));
  }
}

namespace {

std::atomic<bool> perf_map_enabled{false};

// Appends the defined functions of `code` (linked into `dylib`) to /tmp/perf-<pid>.map.
void WritePerfMap(llvm::orc::LLJIT& lljit, llvm::orc::JITDylib& dylib, const ObjectCode& code,
                  std::string_view label) {
  auto object = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(code.bytes.data(), code.bytes.size()), code.entry_symbol));
  if (!object) {
    llvm::consumeError(object.takeError());
    return;
  }
  std::string lines;
  for (const llvm::object::SymbolRef& symbol : (*object)->symbols()) {
    auto type = symbol.getType();
    auto name = symbol.getName();
    auto flags = symbol.getFlags();
    if (!type || !name || !flags || *type != llvm::object::SymbolRef::ST_Function ||
        (*flags & llvm::object::SymbolRef::SF_Undefined)) {
      if (!type) llvm::consumeError(type.takeError());
      if (!name) llvm::consumeError(name.takeError());
      if (!flags) llvm::consumeError(flags.takeError());
      continue;
    }
    const uint64_t size = llvm::object::ELFSymbolRef(symbol).getSize();
    auto address = lljit.lookup(dylib, *name);
    if (!address) {  // a local symbol: not looked up by name
      llvm::consumeError(address.takeError());
      continue;
    }
    const std::string_view what = label.empty() ? std::string_view("object") : label;
    lines += absl::StrFormat("%x %x trn %s %s\n", address->getValue(), size, what,
                             std::string_view(name->data(), name->size()));
  }
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (FILE* f = std::fopen(absl::StrCat("/tmp/perf-", ::getpid(), ".map").c_str(), "a")) {
    std::fwrite(lines.data(), 1, lines.size(), f);
    std::fclose(f);
  }
}

}  // namespace

void EnablePerfMap(bool on) { perf_map_enabled.store(on, std::memory_order_relaxed); }

absl::StatusOr<std::unique_ptr<LoadedObject>> LoadObject(const ObjectCode& code, std::string_view label) {
  // The linker trusts the object's structure: a malformed one aborted the process (issue 34).
  if (absl::Status checked = CheckObject(code.bytes); !checked.ok()) {
    return absl::Status(checked.code(), absl::StrCat("refusing the object for ", code.entry_symbol, ": ",
                                                     checked.message()));
  }
  absl::StatusOr<SharedJit*> shared = GetSharedJit();
  if (!shared.ok()) {
    return shared.status();
  }
  llvm::orc::LLJIT& lljit = *(*shared)->lljit;
  auto dylib = lljit.createJITDylib(absl::StrCat("trn_object_", (*shared)->next_id.fetch_add(1)));
  if (!dylib) {
    return absl::InternalError(absl::StrCat("creating a JITDylib: ", ToString(dylib.takeError())));
  }
  auto jit = std::make_unique<LoadedObject::Jit>();
  jit->shared = *shared;
  jit->dylib = &*dylib;
  // From here on, jit's owner (the LoadedObject, or this guard on failure) removes the dylib.
  auto remove_on_error = [&] {
    llvm::consumeError(lljit.getExecutionSession().removeJITDylib(*jit->dylib));
  };
  dylib->addToLinkOrder(lljit.getMainJITDylib());
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(code.bytes.data(), code.bytes.size()), code.entry_symbol);
  if (llvm::Error error = lljit.addObjectFile(*dylib, std::move(buffer))) {
    remove_on_error();
    return absl::InternalError(
        absl::StrCat("linking the object for ", code.entry_symbol, ": ", ToString(std::move(error))));
  }
  auto entry = lljit.lookup(*dylib, code.entry_symbol);
  if (!entry) {
    remove_on_error();
    return absl::InternalError(absl::StrCat("resolving ", code.entry_symbol, ": ",
                                            ToString(entry.takeError())));
  }
  if (perf_map_enabled.load(std::memory_order_relaxed)) {
    WritePerfMap(lljit, *dylib, code, label);
  }
  return std::unique_ptr<LoadedObject>(new LoadedObject(std::move(jit), entry->toPtr<void*>()));
}

void RegisterRuntimeSymbolPrefix(std::string prefix, void* address) {
  RuntimeSymbols& symbols = GlobalRuntimeSymbols();
  std::lock_guard<std::mutex> lock(symbols.mu);
  for (auto& entry : symbols.prefixes) {
    if (entry.first == prefix) {
      entry.second = address;
      return;
    }
  }
  symbols.prefixes.emplace_back(std::move(prefix), address);
}

std::string ToolchainVersion() { return "MLIR/LLVM " LLVM_VERSION_STRING; }

std::string HostTargetKey() {
  auto builder = HostMachineBuilder();
  if (!builder.ok()) {
    return "unknown-host";
  }
  std::vector<std::string> features = builder->getFeatures().getFeatures();
  std::sort(features.begin(), features.end());
  return absl::StrCat(builder->getTargetTriple().str(), ";", builder->getCPU(), ";",
                      llvm::join(features, ","));
}

namespace {

// out = max(a + b, 0) as two elementwise linalg ops; the pipeline fuses them and writes the
// result into a third, caller-provided buffer.
constexpr std::string_view kProbeModule = R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func @probe(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e0 = tensor.empty(%n) : tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e0 : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %e1 = tensor.empty(%n) : tensor<?xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%sum : tensor<?xf32>) outs(%e1 : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maxf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<?xf32>
  return %relu : tensor<?xf32>
}
)mlir";

using Memref1D = StridedMemRefType<float, 1>;
using ProbeFn = void (*)(Memref1D*, Memref1D*, Memref1D*);

Memref1D Describe(std::vector<float>& data) {
  return Memref1D{data.data(), data.data(), 0, {static_cast<int64_t>(data.size())}, {1}};
}

bool RunProbe(const LoadedObject& loaded, std::vector<float> a, std::vector<float> b,
              const std::vector<float>& expected) {
  std::vector<float> out(expected.size(), std::nanf(""));
  Memref1D da = Describe(a), db = Describe(b), dout = Describe(out);
  reinterpret_cast<ProbeFn>(loaded.entry())(&da, &db, &dout);
  return out == expected;
}

}  // namespace

absl::StatusOr<SelfTestResult> RunSelfTest() {
  constexpr int kSize = 1000;
  std::vector<float> a(kSize), b(kSize), expected(kSize);
  for (int i = 0; i < kSize; ++i) {
    a[i] = static_cast<float>(i % 17) - 8.25f;
    b[i] = static_cast<float>((i * 7) % 13) * 0.5f - 3.0f;
    expected[i] = std::max(a[i] + b[i], 0.0f);
  }
  InitializeLlvmOnce();  // keep one-time setup out of the O0 timing

  SelfTestResult result;
  result.results_match = true;
  double load_ms_total = 0;
  for (int opt_level : {0, 3}) {
    auto start = Clock::now();
    absl::StatusOr<ObjectCode> code = CompileToObject(kProbeModule, "probe", opt_level);
    if (!code.ok()) {
      return absl::Status(code.status().code(), absl::StrCat("self-test at O", opt_level, ": ",
                                                             code.status().message()));
    }
    (opt_level == 0 ? result.compile_ms_o0 : result.compile_ms_o3) = MsSince(start);
    start = Clock::now();
    absl::StatusOr<std::unique_ptr<LoadedObject>> loaded = LoadObject(*code);
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(), absl::StrCat("self-test at O", opt_level, ": ",
                                                               loaded.status().message()));
    }
    load_ms_total += MsSince(start);
    result.results_match = RunProbe(**loaded, a, b, expected) && result.results_match;
  }
  result.load_ms = load_ms_total / 2;
  return result;
}

}  // namespace trn::mlir_lowering
