// The host (CPU) lowering pipeline: linalg on tensors -> LLVM dialect.
//
// Input contract: a builtin.module of func.func ops written in the func, arith, math, memref,
// linalg, tensor and scf dialects, in *functional* form: public functions take tensors and return
// tensors. The pipeline makes every returned tensor a caller-provided output buffer, so after it
// runs a public function `@f(%in0, ..., %inN) -> (%r0, ..., %rM)` has the C ABI
//   void _mlir_ciface_f(Memref* in0, ..., Memref* inN, Memref* r0, ..., Memref* rM)
// (one StridedMemRefType descriptor per tensor, identity layout; inputs are never written) when
// it carries the `llvm.emit_c_interface` attribute.
//
// Thread-safety: these functions only build pass managers; they are safe to call from any thread.
#pragma once

#include <memory>

namespace mlir {
class OpPassManager;
class Pass;
}  // namespace mlir

namespace trn::mlir_lowering {

// Appends the host pipeline to `pm`, which must be anchored on builtin.module. Stages:
//   1. fuse elementwise linalg ops (on tensors);
//   2. results -> out arguments (createResultsToOutArgsPass below);
//   3. one-shot bufferization across function boundaries with identity layouts, then
//      drop the returned buffers that alias an out argument, and insert deallocations;
//   4. linalg -> scf loops -> cf, strided metadata and affine -> arith;
//   5. memref/arith/math/func/cf -> LLVM dialect (math ops without an LLVM intrinsic become
//      libm calls), reconcile casts.
// Textually (mlir-opt-16): see README.md in this folder.
void buildHostPipeline(mlir::OpPassManager& pm);

// `trn-results-to-out-args` (module pass). Run after fusion and before bufferization. For each
// public func.func with a body, appends one argument per returned tensor, marked
// {bufferization.writable = true}, and makes the op producing that result write into it: the
// tensor.empty at the root of the result's destination chain (through destination-style ops,
// e.g. linalg.fill -> linalg.generic reduction) is replaced by the new argument. A result with
// no such chain (a returned input, a reshape) is copied into the new argument by a
// linalg.generic. Existing arguments without an explicit attribute are marked
// {bufferization.writable = false}: the caller's inputs are never written.
// Why not buffer-results-to-out-params: it runs after bufferization and costs an allocation plus
// a copy per result; here the last op writes straight into the caller's buffer.
// Why after fusion: linalg-fuse-elementwise-ops replaces an unread `outs` operand by a fresh
// tensor.empty, which would undo destination passing done before it.
std::unique_ptr<mlir::Pass> createResultsToOutArgsPass();

// `trn-check-no-results` (module pass). Run after bufferization: fails with a diagnostic if a
// public function still returns a buffer (the out argument could not be written in place), so
// a C-ABI mismatch is a compile error rather than a crash.
std::unique_ptr<mlir::Pass> createCheckNoResultsPass();

// Registers the two passes above and the pipeline as `trn-host-pipeline` with MLIR's global
// registries, for an -opt driver. Idempotent.
void registerHostPipeline();

}  // namespace trn::mlir_lowering
