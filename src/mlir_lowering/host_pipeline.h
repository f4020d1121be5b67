// The host (CPU) lowering pipeline: linalg on tensors -> LLVM dialect.
//
// Input contract: a builtin.module of func.func ops written in the func, arith, math, memref,
// linalg, tensor and scf dialects, in *functional* form: public functions take tensors (and
// scalars) and return tensors. The pipeline makes every returned tensor a caller-provided output
// buffer, so after it runs a public function `@f(%in0, ..., %inN) -> (%r0, ..., %rM)` has the
// C ABI
//   void _mlir_ciface_f(in0, ..., inN, Memref* r0, ..., Memref* rM)
// (one StridedMemRefType descriptor pointer per tensor, scalars by value; inputs are never
// written) when it carries the `llvm.emit_c_interface` attribute. Descriptors carry the real
// strides and offset; a tensor argument or result with `trn.strides` is compiled for exactly
// those strides (host_passes.h), others for any strides.
//
// Thread-safety: these functions only build pass managers; they are safe to call from any thread.
#pragma once

#include "mlir/IR/DialectRegistry.h"

#include "mlir_lowering/host_passes.h"

namespace mlir {
class OpPassManager;
}  // namespace mlir

namespace trn::mlir_lowering {

// Appends the host pipeline to `pm`, which must be anchored on builtin.module. Stages:
//   1. fuse elementwise linalg ops on tensors (trn-fuse-elementwise);
//   2. results -> out arguments (trn-results-to-out-args);
//   3. one-shot bufferization across function boundaries with fully dynamic layouts, drop the
//      returned buffers that alias an out argument, extern placeholders -> calls, static
//      strides where known, canonicalize, insert deallocations;
//   4. linalg -> scf loops -> cf, strided metadata and affine -> arith;
//   5. f32 transcendental math -> polynomial approximations; memref/arith/math/func/cf -> LLVM
//      dialect (remaining math ops without an LLVM intrinsic become libm calls).
//   6. canonicalize the LLVM dialect (folds the memref descriptors' insert/extract chains).
// Textually: see README.md in this folder.
void buildHostPipeline(mlir::OpPassManager& pm);

// Stages 1-3 of the host pipeline (fusion, destination passing, bufferization, static strides,
// canonicalize): the form the trn pipeline starts from too. `extern_calls`: turn runtime-call
// placeholders into calls (the host's way); the trn pipeline keeps them, to name them.
void buildGroupFront(mlir::OpPassManager& pm, bool extern_calls);

// The dialects (and their bufferization models) a group module uses, for a fresh context.
mlir::DialectRegistry GroupDialectRegistry();

// Registers the passes of host_passes.h and this pipeline as `trn-host-pipeline` with MLIR's
// global registries, for an -opt driver. Idempotent.
void registerHostPipeline();

}  // namespace trn::mlir_lowering
