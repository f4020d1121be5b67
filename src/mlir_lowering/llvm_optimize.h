// LLVM IR optimisation of a group's module: LLVM's default -O<n> pipeline with both vectorisers
// on from -O1 up (as MLIR's makeOptimizingTransformer has them), and loop unrolling only from
// -O2 up.
//
// Why -O1 does not unroll: -O1 is adaptive mode's first, fast build (IR -O1, codegen -O0). A
// group is one function holding a long sequence of small static loop nests; unrolling them
// (full unrolling, then the runtime unrolling of vectorised loops) tripled the code and the
// time of the passes after it. On 76 convolution groups of the zoo, IR -O1 + codegen -O0 took
// 652 ms a group with unrolling and 188 ms without (src/mlir_lowering/README.md). -O2/-O3 (the
// tier-up and compile mode's default) keep unrolling: without it, in one bench/ttfs.py run,
// compile mode's steady step was 26 % (gpt) and 43 % (cnn) slower.
//
// Long floating-point chains are interleaved. A fused transcendental chain (gelu -> tanh ->
// sigmoid: ~100 dependent vector operations and 3 divisions an element) is bound by latency, not
// by throughput: the scheduler fills with one iteration's dependent operations, and the vector
// loop ran at IPC ~1 whether 8 or 16 lanes wide. At every level that runs the vectoriser, an
// innermost loop with >= 48 floating-point operations is asked for 8 interleaved parts (>= 24:
// 4), so neighbouring instructions belong to independent elements -- unless its static trip
// count is under 4 x 16 lanes a part. bench/fusion.py transcendental8: 51 -> 25 ms on one
// thread, 6.4x -> 10.5x PyTorch CPU eager; that group's -O3 build 33 -> 49 ms.
//
// Internal to mlir_lowering (host_jit.cpp); includes no LLVM header.
//
// Thread-safety: OptimizeModule may be called from any thread, concurrently, on modules of
// different llvm::LLVMContexts; it shares no mutable state between calls.
#pragma once

#include "absl/status/status.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace trn::mlir_lowering {

// Optimises `module` (already given `machine`'s data layout and triple) at `opt_level` 0..3.
absl::Status OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine, int opt_level);

}  // namespace trn::mlir_lowering
