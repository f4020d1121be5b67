// A group's module (linalg on tensors, the form GroupLowering writes) -> a NeuronCore
// instruction stream for a trn target: the host pipeline's front (fusion, destination
// passing, bufferization, static strides), then trn/TrnPasses.h's pipeline and emitter.
//
// The stream's HBM buffer i is the entry point's argument i: ctx (no buffer), the runtime
// scalars (an f64 vector, which the runtime passes converted to f32), inputs, outputs.
//
// Refused is told from failed: a group with an op the NeuronCore target cannot run is a
// *refusal*, returned as data (the op and the reason: trn/TrnRefusal.h), and the caller runs it
// as host code; every error status is an *internal failure* (the module did not parse, a pass
// failed without refusing, a verifier, the emitter), which the caller must report as a failed
// build, never turn into host code silently.
//
// Thread-safety: reentrant; a call uses its module's context (the module's thread-safety:
// ir_module.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "mlir_lowering/ir_module.h"
#include "mlir_lowering/trn/TrnRefusal.h"

namespace trn::mlir_lowering {

struct TrnCompileOptions {
  // Tests only (NEURON_TEST_COMPILE_FAULT=trn_internal): a pass at the end of the trn pipeline
  // fails without refusing, as a pass with a bug would.
  bool inject_internal_failure = false;
};

// What the trn pipeline made of a group: exactly one of the two is set.
struct TrnCompiled {
  std::string stream;                      // encoded bytes (runtime/neuroncore/instruction_stream.h)
  std::optional<trn::ir::Refusal> refusal;  // the first op refused
};

absl::StatusOr<TrnCompiled> CompileToTrnStream(std::string_view mlir_text, std::string_view func_name,
                                               const std::string& target, const TrnCompileOptions& options = {});
// The same for a module built in memory; the pipeline runs on a clone, so `module` is left as
// it was (a refused group is then compiled for the host from it).
absl::StatusOr<TrnCompiled> CompileToTrnStream(const IrModule& module, std::string_view func_name,
                                               const std::string& target, const TrnCompileOptions& options = {});

}  // namespace trn::mlir_lowering
