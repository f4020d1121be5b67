// trn module -> instruction stream, and the whole linalg -> stream compile.
//
// EmitInstructionStream takes a module after trn-lower-linalg, trn-assign-engines and
// trn-allocate: one function whose memref arguments are the HBM bindings (argument i is
// binding i) and whose memref.allocs are scratch HBM buffers. It builds one queue per engine in
// program order and inserts, for every dependency between engines (read after write, write
// after read or write, found by overlapping SBUF/PSUM byte ranges, so reused addresses are
// ordered too), a `signal` after the producer and a `wait` before the consumer, one semaphore
// per producing engine; a wait already implied by an earlier wait is dropped.
//
// Thread-safety: reentrant (no shared state); each call uses its own MLIR context.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "mlir/IR/BuiltinOps.h"
#include "runtime/neuroncore/instruction_stream.h"

namespace trn::ir {

absl::StatusOr<runtime::neuroncore::InstructionStream> EmitInstructionStream(mlir::ModuleOp module,
                                                                             const std::string& target);

// Parses `mlir_text` (linalg on memrefs, one function), runs buildTrnPipeline(target) and emits
// the stream. Errors carry MLIR's diagnostics (the op that has no trn lowering, a capacity).
absl::StatusOr<runtime::neuroncore::InstructionStream> CompileToStream(const std::string& mlir_text,
                                                                       const std::string& target,
                                                                       std::string* trn_mlir = nullptr);

}  // namespace trn::ir
