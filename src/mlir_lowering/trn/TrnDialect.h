// The `trn` dialect (TrnOps.td): NeuronCore tiles and instructions. No torch header here.
//
// Thread-safety: as any MLIR dialect (registered into a context before use; ops are immutable
// once built unless rewritten by a pass that owns them).
#pragma once

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mlir_lowering/trn/TrnOpsDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "mlir_lowering/trn/TrnOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "mlir_lowering/trn/TrnOps.h.inc"

namespace trn::ir {

// Architecture limits the verifiers enforce. Keys name the public pages in docs/trn_target.md §6.
// These are the Trn1/Trn2 limits; Trn3 allows a wider moving tile and bf16 PSUM results
// ([ISA] nc_matmul "Tile size"), which needs target-dependent verification (issue 6, to do).
// [G2] "NeuronCore-v2 Compute Engines"; [MEM]: SBUF and PSUM have 128 partitions.
inline constexpr int64_t kMaxPartitions = 128;
// [G2] "Tile Size"; [ISA] nc_matmul: stationary free size M <= 128.
inline constexpr int64_t kMatmulMaxStationaryFree = 128;
// [ISA] nc_matmul "Tile size": moving free size N <= 512 (one fp32 PSUM bank) on Trn1/Trn2.
inline constexpr int64_t kMatmulMaxMovingFree = 512;
// [G2] "Near-memory accumulation in PSUM": 8 banks of 2 KiB per partition (16 KiB).
inline constexpr int64_t kPsumBankBytesPerPartition = 2048;
// Not public (docs/trn_target.md §2.5: nki.isa has no semaphore instruction; the compiler
// inserts them). The model's own assumption.
inline constexpr int32_t kSemaphores = 32;

// The element type a DMA may give a tile of an HBM element type `t` besides `t` itself: the
// engines have no 64-bit types (f64 -> f32, i64 -> i32, as the Neuron compiler carries int64)
// and compute bf16 / f16 in f32 (widened exactly, rounded to nearest even when stored).
mlir::Type HbmTileType(mlir::Type t);

}  // namespace trn::ir
