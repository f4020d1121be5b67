// The trn pipeline: linalg on memrefs -> trn tiles and instructions -> an instruction stream.
//
//   trn-bf16-types      (before the group front, on tensors) bfloat16 written as i16 with integer
//                       conversions, the host's form (ir_builder.h), -> bf16 with extf / truncf.
//
//   trn-lower-linalg    linalg.matmul / batch_matmul / fill / elementwise and reducing
//                       linalg.generic -> trn ops on SBUF/PSUM tiles, tiled to 128 partitions
//                       and the TensorE limits, with DMA between HBM (the memref arguments) and
//                       SBUF; matmul operands are prefetched ahead of their use so DMA overlaps
//                       compute. An op it cannot lower fails the pass with the op named.
//   trn-assign-engines  each instruction gets an `engine` attribute: fixed by the op (matmul on
//                       tensor, activation on scalar, DMA on dma) or, for ops VectorE and GpSimd
//                       both run, the engine with less modeled work so far.
//   trn-allocate        each trn.alloc gets `offset` (bytes within every partition of SBUF, or
//                       of PSUM: bank-aligned) from the tiles' live ranges; a freed block is not
//                       reused for `slack` instructions, which gives double buffering: the DMA of
//                       the next tile does not wait for the compute on the previous one.
// EmitInstructionStream then turns the allocated module into per-engine queues with semaphore
// signal/wait pairs for every cross-engine dependency (trn/TrnEmit.cpp).
//
// Thread-safety: passes are MLIR passes (one module per thread); the functions here are
// reentrant.
#pragma once

#include <memory>
#include <string>

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace trn::ir {

std::unique_ptr<mlir::Pass> createBf16TypesPass();
std::unique_ptr<mlir::Pass> createLowerLinalgToTrnPass();
std::unique_ptr<mlir::Pass> createAssignEnginesPass();
std::unique_ptr<mlir::Pass> createAllocateTilesPass(std::string target);

// The whole pipeline on a module whose functions take memrefs (HBM) and contain linalg ops.
void buildTrnPipeline(mlir::OpPassManager& pm, const std::string& target);

// Registers the passes and the pipeline `trn-pipeline{target=trn2}` for -opt drivers.
void registerTrnPasses();

// Attribute names shared by the passes and the emitter.
inline constexpr const char kEngineAttr[] = "engine";
inline constexpr const char kOffsetAttr[] = "offset";        // trn.alloc: bytes per partition
inline constexpr const char kSourceOpAttr[] = "trn.op";      // recorded-op index (linalg and trn ops)
inline constexpr const char kHbmOffsetAttr[] = "hbm_offset";  // dma_copy: HBM window, elements
inline constexpr const char kHbmSizesAttr[] = "hbm_sizes";    // [partitions, free...]
inline constexpr const char kHbmStridesAttr[] = "hbm_strides";
// dma_copy between HBM and a part of a tile: the tile side's window (all its partitions),
// elements within each partition (a zero-padded input tile of a convolution, LowerConv.cpp).
inline constexpr const char kTileOffsetAttr[] = "tile_offset";    // i64
inline constexpr const char kTileSizesAttr[] = "tile_sizes";      // [free...]
inline constexpr const char kTileStridesAttr[] = "tile_strides";  // [free...]

}  // namespace trn::ir
