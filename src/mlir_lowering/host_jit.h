// Host JIT: MLIR module text -> relocatable object code -> loaded, callable entry point.
//
// Compiling and loading are separate so a cache can store the object bytes (see ObjectCode) and
// load them later, in this process or another one on the same host CPU. This header pulls in no
// MLIR or LLVM header: modules cross the boundary as IrModule (ir_module.h), artifacts as bytes
// plus this small API.
//
// Thread-safety:
//  - CompileToObject may be called from any thread, concurrently: each call owns its module's
//    MLIRContext (multithreading disabled), llvm::LLVMContext and TargetMachine, and shares no
//    mutable state with other calls. LLVM's target registry is initialised once (std::call_once).
//  - LoadObject may be called from any thread, concurrently; every object is linked into its own
//    JITDylib of one process-wide ORC LLJIT (ORC's session is thread-safe), and destroying the
//    LoadedObject removes that JITDylib.
//  - A LoadedObject is immutable after LoadObject returns: entry() may be called and the entry
//    point invoked from any thread, as long as the LoadedObject outlives the calls. Destroying
//    it frees the code.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "mlir_lowering/ir_module.h"

namespace trn::mlir_lowering {

// A relocatable ELF object file for the host CPU (triple, CPU name and features of the compiling
// host: see HostTargetKey) holding one public function with the MLIR C interface.
struct ObjectCode {
  std::string bytes;         // the object file
  std::string entry_symbol;  // "_mlir_ciface_<func>"
  int opt_level = 0;         // LLVM opt level 0..3 used for IR optimisation and codegen
};

// Wall-clock milliseconds spent in the phases of one CompileToObject call.
struct CompileTimings {
  double parse_ms = 0;     // context creation + parsing (text), finding the function
  double pipeline_ms = 0;  // buildHostPipeline passes
  double translate_ms = 0; // TargetMachine creation + translation to LLVM IR
  double optimize_ms = 0;  // LLVM IR optimisation at opt_level
  double codegen_ms = 0;   // instruction selection .. object emission at codegen_level
};

// Parses `mlir_text` (a builtin.module in the func/arith/math/memref/linalg/tensor/scf dialects,
// in the functional form described in host_pipeline.h), runs buildHostPipeline, translates to
// LLVM IR, optimises it at `opt_level` (0..3) and emits a native object file for the host.
// `func_name` names the public func.func to export; it gets `llvm.emit_c_interface`, so the entry
// point has the signature `void(Memref* in..., Memref* out...)` (StridedMemRefType descriptors).
// Errors: InvalidArgument for a bad opt level or a module that does not parse or verify,
// NotFound when the function is missing, Internal when a pass or LLVM fails. The message carries
// the MLIR diagnostics with their source locations.
// `codegen_level` (0..3, or -1: the same as `opt_level`) sets the code generator's level apart
// from the IR optimisation level: IR -O1 with codegen -O0 (fast instruction selection and
// register allocation, and no loop unrolling at IR -O1: llvm_optimize.h) built about 9x faster
// than -O3 on the zoo's convolution groups (2.5x on the demo transformer before -O1 stopped
// unrolling).
// `verify_each_pass` verifies the module after every pass (NEURON_VERIFY_PASSES; a pass that
// breaks the IR is then named); otherwise it is verified once, after the pipeline.
absl::StatusOr<ObjectCode> CompileToObject(std::string_view mlir_text, std::string_view func_name,
                                           int opt_level, CompileTimings* timings = nullptr,
                                           int codegen_level = -1, bool verify_each_pass = false);
// The same for a module built in memory (the group lowering's: ir_emitter.h), which the
// pipeline consumes: nothing is printed or parsed.
absl::StatusOr<ObjectCode> CompileToObject(IrModule module, std::string_view func_name, int opt_level,
                                           CompileTimings* timings = nullptr, int codegen_level = -1,
                                           bool verify_each_pass = false);

// Object code linked into the process, in a JITDylib of its own that this object owns. Symbols the code
// needs (malloc, free, memcpy, libm) are resolved from the current process.
class LoadedObject {
 public:
  ~LoadedObject();
  LoadedObject(const LoadedObject&) = delete;
  LoadedObject& operator=(const LoadedObject&) = delete;

  // Address of the C-interface entry point; cast to the function type the module defines.
  void* entry() const { return entry_; }

 private:
  struct Jit;
  friend absl::StatusOr<std::unique_ptr<LoadedObject>> LoadObject(const ObjectCode& code, std::string_view label);
  LoadedObject(std::unique_ptr<Jit> jit, void* entry);

  std::unique_ptr<Jit> jit_;
  void* entry_;
};

// Makes every undefined symbol of a loaded object that starts with `prefix` resolve to
// `address` (a C function of the runtime). The group lowering names extern calls
// "_mlir_ciface_trn_ext<N>_<k>": one registration per arity N serves every call site.
// Thread-safe; affects objects loaded afterwards.
void RegisterRuntimeSymbolPrefix(std::string prefix, void* address);

// Checks `code.bytes` (CheckObject in object_check.h), links a copy into a fresh JITDylib and
// resolves `code.entry_symbol`. Errors: InvalidArgument for a malformed object (refused before
// the linker sees it), Internal when the object cannot be linked or the symbol is missing.
// Note: only load bytes you produced or verified (DESIGN.md §3.8): this runs native code.
// `label` names the code in the perf map (EnablePerfMap), e.g. the group's key.
absl::StatusOr<std::unique_ptr<LoadedObject>> LoadObject(const ObjectCode& code, std::string_view label = "");

// For profiling compiled code with Linux perf (NEURON_PERF_MAP=1): while enabled, LoadObject
// appends each loaded object's functions to /tmp/perf-<pid>.map, one "<start> <size> <name>"
// line each (hex, the format perf reads for code in anonymous memory), so `perf report` names a
// group's functions ("trn <label> <symbol>") instead of [unknown]. The file stays after exit
// (perf reads it when it reports) and is never trimmed: an address whose object was unloaded
// and reused by a later one has two lines, and perf may name it by either. Thread-safe; called
// once at start-up by the compiler's owner.
void EnablePerfMap(bool on);

// "<triple>;<cpu>;<features>" of the host the objects are compiled for. Disk cache keys must
// include it: an object compiled for one CPU may use instructions another lacks.
std::string HostTargetKey();

// "MLIR/LLVM <version>" of the toolchain this library links (part of a cache entry's identity).
std::string ToolchainVersion();

struct SelfTestResult {
  double compile_ms_o0 = 0;
  double compile_ms_o3 = 0;
  double load_ms = 0;  // mean of the two loads
  bool results_match = false;
};

// End-to-end probe of the toolchain: compiles `@probe(%a, %b) -> out = max(a + b, 0)` (two
// linalg.generic ops on tensor<?xf32>, fused by the pipeline; C ABI `(a, b, out)` over
// memref<?xf32>) at O0 and at O3, loads both, runs each on 1000 floats and compares with a plain
// C++ reference. A compile or load failure is an error; a wrong result is results_match = false.
absl::StatusOr<SelfTestResult> RunSelfTest();

}  // namespace trn::mlir_lowering
