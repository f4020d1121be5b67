// A group's module (linalg on tensors, the form GroupLowering writes) -> a NeuronCore
// instruction stream for a trn target: the host pipeline's front (fusion, destination
// passing, bufferization, static strides), then trn/TrnPasses.h's pipeline and emitter.
//
// The stream's HBM buffer i is the entry point's argument i: ctx (no buffer), the runtime
// scalars (an f64 vector, which the runtime passes converted to f32), inputs, outputs.
//
// Thread-safety: reentrant; each call owns its MLIR context (any thread, concurrently).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace trn::mlir_lowering {

// Encoded stream bytes (runtime/neuroncore/instruction_stream.h), or why the group has no trn
// lowering (kUnimplemented, naming the op), for the caller to run it as host code instead.
absl::StatusOr<std::string> CompileToTrnStream(std::string_view mlir_text, std::string_view func_name,
                                               const std::string& target);

}  // namespace trn::mlir_lowering
