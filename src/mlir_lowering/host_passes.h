// The module passes of the host pipeline (host_pipeline.h strings them together).
//
// Thread-safety: pass objects are created per pass manager; the create functions are safe to
// call from any thread.
#pragma once

#include <memory>

namespace mlir {
class Pass;
}  // namespace mlir

namespace trn::mlir_lowering {

// Attribute names shared by the group lowering (which writes them) and these passes.
//  - `trn.strides` (array<i64>) on a public function's tensor argument or result: the element
//    strides of the buffer the caller passes for it. The buffer's offset stays dynamic.
//  - `library_call = "trn_ext<N>_<k>"` on a linalg.generic: an extern call into the runtime
//    (see createExternCallsPass); N is the number of tensor operands (inputs and outputs; the
//    two leading i64 scalars, ctx and op index, are not counted), k numbers call sites.
inline constexpr const char kStridesAttr[] = "trn.strides";
inline constexpr const char kExternPrefix[] = "trn_ext";
//  - `trn.extern_perms` (array of array<i64>, one per tensor operand) on such a generic: operand
//    i is passed to the call as its buffer with dimensions reordered (memref.transpose; result
//    dimension d is operand dimension perm[d]), so the callee sees a strided view; an empty
//    array passes the operand as it is.
inline constexpr const char kExternPermsAttr[] = "trn.extern_perms";
//  - `trn.extern_op` (string, the ATen schema name) and `trn.extern_ints` (array<i64>, the op's
//    int and bool arguments in schema order) on such a generic: what the call computes, for a pipeline
//    that lowers some calls itself (the trn pipeline's gathers, LowerGather.cpp); the host
//    pipeline ignores them.
inline constexpr const char kExternOpAttr[] = "trn.extern_op";
inline constexpr const char kExternIntsAttr[] = "trn.extern_ints";
//  - `trn.extern_lists` (array of array<i64>): the op's int and bool list arguments in schema
//    order, an absent optional argument (None) as an empty array (bools as 0 / 1; bool and int
//    arguments are in trn.extern_ints, bools as 0 / 1).
inline constexpr const char kExternListsAttr[] = "trn.extern_lists";
//  - `trn.extern_rows` (array<i64>, absent when empty): the positions among the call's tensor
//    operands of those of rank >= 2 whose values depend on the first index only (a row index
//    expanded along the other dimensions: scatter_add as a row scatter, LowerGather.cpp).
inline constexpr const char kExternRowsAttr[] = "trn.extern_rows";
//  - `trn.tied_input` (i64) on a public function's result: the caller binds this result's buffer
//    to the very view it passes as that argument (an in-place update the group lowering did not
//    stage); see createTieInPlacePass.
inline constexpr const char kTiedInputAttr[] = "trn.tied_input";

// `trn-fuse-elementwise` (func pass): linalg elementwise fusion on tensors, like MLIR's
// linalg-fuse-elementwise-ops, but never fusing into or out of an extern call (a generic with a
// `library_call`), whose body is a placeholder. A producer is fused only into its single user,
// and never when its body reads its init (a fold over size-1 dims: MLIR 16 would accumulate into
// that init once per iteration of a consumer that reads it through a broadcast).
std::unique_ptr<mlir::Pass> createFuseElementwisePass();

// `trn-results-to-out-args` (module pass). Run after fusion and before bufferization. For each
// public func.func with a body, appends one argument per returned tensor, marked
// {bufferization.writable = true} plus the result's own attributes (e.g. trn.strides), and
// makes the op producing that result write into it: the tensor.empty at the root of the
// result's destination chain (through destination-style ops, e.g. linalg.fill -> linalg.generic
// reduction) is replaced by the new argument. A result with no such chain (a returned input, a
// reshape) is copied into the new argument by a linalg.generic. Existing arguments without an
// explicit attribute are marked {bufferization.writable = false}: inputs are never written.
// Why not buffer-results-to-out-params: it runs after bufferization and costs an allocation plus
// a copy per result; here the last op writes straight into the caller's buffer.
// Why after fusion: linalg-fuse-elementwise-ops replaces an unread `outs` operand by a fresh
// tensor.empty, which would undo destination passing done before it.
std::unique_ptr<mlir::Pass> createResultsToOutArgsPass();

// `trn-check-no-results` (module pass). Run after bufferization: fails with a diagnostic if a
// public function still returns a buffer (the out argument could not be written in place), so
// a C-ABI mismatch is a compile error rather than a crash.
std::unique_ptr<mlir::Pass> createCheckNoResultsPass();

// `trn-extern-calls` (module pass). Run after bufferization. Rewrites each linalg.generic whose
// `library_call` starts with "trn_ext" into a func.call of that name (declared private with
// llvm.emit_c_interface), passing its operands in order: scalars as they are, memrefs cast to
// fully dynamic strided layouts (transposed first where `trn.extern_perms` says so). The C side is `void _mlir_ciface_<name>(scalars...,
// StridedMemRefType<T, rank>*...)`, resolved by the runtime's symbol table (host_jit.h).
std::unique_ptr<mlir::Pass> createExternCallsPass();

// `trn-static-strides` (module pass). Run after bufferization with fully dynamic layouts at the
// function boundary. Each public function argument carrying `trn.strides` gets a memref type
// with those static strides (offset stays dynamic); a memref.cast back to the dynamic type keeps
// the body valid, and canonicalization then folds the cast into its users so loops index with
// constant strides (which LLVM can vectorise).
std::unique_ptr<mlir::Pass> createStaticStridesPass();

// `trn-tie-in-place` (module pass). Run after trn-static-strides. For each public function
// argument carrying `trn.tied_input = k` (an out argument, from a result's attribute), the body
// reads argument #k through this argument instead. The caller passes one view for both, so
// nothing changes but what the compiler can see: loads and stores at the same index of one
// pointer, where two pointers would have cost a runtime overlap check per loop that always
// failed and sent the loop to its scalar version (AdamW's in-place updates ran 1.4-2.6x slower
// than ATen; src/mlir_lowering/README.md).
std::unique_ptr<mlir::Pass> createTieInPlacePass();

// `trn-collapse-loops` (func pass, collapse_loops.cpp). Run after trn-static-strides and
// trn-tie-in-place, before the loops: merges adjacent loops of a linalg.generic on buffers into
// one where they have the same iterator type and every operand either lays the two dimensions
// out contiguously (static strides) or does not index them. A batch norm over [64, 8, 8, 8]
// then runs 64-iteration inner loops instead of 8-iteration ones, and an elementwise op over
// contiguous buffers one flat loop: LLVM does not vectorise loops of fewer than 16 iterations,
// so the small spatial dimensions of a CNN left its compiled groups entirely scalar. Generics
// that read their indices (linalg.index) or call the runtime are left alone.
std::unique_ptr<mlir::Pass> createCollapseLoopsPass();

// `trn-math-approximation` (func pass): MLIR's polynomial approximations of f32 transcendental
// math ops (exp, log, tanh, erf, sin, cos, ...), so they stay inline arithmetic that LLVM
// vectorises instead of libm calls. atan, atan2 and expm1 are left to libm (their
// approximations miss float32 accuracy).
std::unique_ptr<mlir::Pass> createMathApproximationPass();

// Registers all passes above with MLIR's global registry. Idempotent.
void registerHostPasses();

}  // namespace trn::mlir_lowering
