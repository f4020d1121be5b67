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

// Architecture limits the verifiers enforce (sources: docs/trn_target.md).
inline constexpr int64_t kMaxPartitions = 128;       // SBUF/PSUM partitions
inline constexpr int64_t kMatmulMaxStationaryFree = 128;  // M
inline constexpr int64_t kMatmulMaxMovingFree = 512;      // N
inline constexpr int64_t kPsumBankBytesPerPartition = 2048;  // one PSUM bank, per partition
inline constexpr int32_t kSemaphores = 32;  // per core, as modelled (docs/trn_target.md: not public)

}  // namespace trn::ir
