// The host pipeline's passes that split large loop nests over the executor's kernel pool.
//
// A group's compiled code runs on the executor thread. Its large elementwise and row-wise loop
// nests (LayerNorm, softmax, GELU, AdamW over a big parameter) can use the core the recording
// thread leaves idle, the way the executor's matrix products already do (runtime/kernel_pool.h):
//  1. `trn-outline-parallel` (scf level) moves each large top-level scf.parallel of a public
//     function into a private function `trn_par<k>_<name>(lo, hi, captures...)` that runs the
//     nest for outer indices [lo, hi), and calls it on the whole range (func.call marked
//     `trn.parallel_for`).
//  2. `trn-parallel-calls` (LLVM dialect, after func-to-llvm) turns each call marked
//     `trn.parallel_for` into
//     `trn_parallel_for(fn, slots, lo, hi)`: the call's arguments are stored in an array of
//     8-byte slots, and `fn` is a generated `<callee>_packed(lo, hi, slots)` that loads them and
//     calls the outlined function. The runtime splits [lo, hi) into chunks that the executor and
//     the pool's helpers claim (a chunk no helper takes runs on the executor), or runs the
//     whole range on the calling thread when there is no pool.
//
// A nest is split only when it is safe and pays: no reductions carried by the scf.parallel
// itself, constant bounds with step 1 on the outer dimension and at least two outer iterations,
// every write a memref.store whose indices include the outer induction variable (so chunks
// write disjoint elements), no other side effects (calls, copies, frees), and at least
// kMinParallelWork innermost iterations in all.
//
// Thread-safety: pass objects are created per pass manager; the create functions are safe to
// call from any thread.
#pragma once

#include <cstdint>
#include <memory>

namespace mlir {
class Pass;
}  // namespace mlir

namespace trn::mlir_lowering {

// Name prefix of the outlined functions, the mark on their calls, and the runtime entry the
// calls become.
inline constexpr const char kParallelPrefix[] = "trn_par";
inline constexpr const char kParallelForAttr[] = "trn.parallel_for";
inline constexpr const char kParallelForSymbol[] = "trn_parallel_for";
// Innermost iterations below which a nest runs on one thread (the hand-off costs ~1-5 us).
inline constexpr int64_t kMinParallelWork = int64_t{1} << 16;

std::unique_ptr<mlir::Pass> createOutlineParallelPass();
std::unique_ptr<mlir::Pass> createParallelCallsPass();
void registerParallelPasses();

}  // namespace trn::mlir_lowering
