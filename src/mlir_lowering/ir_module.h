// IrModule: one group's MLIR module together with the context that owns it, handed from the
// front (which builds it with the builder API: ir_emitter.h) to the back (the host and trn
// pipelines: host_jit.h, trn_compile.h) without printing or parsing text.
//
// This header pulls in no MLIR header (the scheduler and the front's op files include it
// through group_lowering.h); code that reads or changes the module includes MLIR itself and
// calls context() / module().
//
// Thread-safety: an IrModule, and every module cloned from it (they share one context, whose
// multithreading is disabled), is used by one thread at a time. Distinct IrModules created by
// Create or Parse share nothing and may be used on different threads concurrently.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mlir {
class MLIRContext;
class ModuleOp;
}  // namespace mlir

namespace trn::mlir_lowering {

class IrModule {
 public:
  // A fresh context (the group dialects of host_pipeline.h's GroupDialectRegistry and the trn
  // dialect registered; func, arith, math, linalg and tensor loaded) and an empty module.
  static IrModule Create();
  // `text` parsed into a fresh context. InvalidArgument (with the parser's diagnostics, their
  // locations in "@<name>") when it does not parse or verify.
  static absl::StatusOr<IrModule> Parse(std::string_view text, std::string_view name);

  IrModule(IrModule&&) noexcept;
  IrModule& operator=(IrModule&&) noexcept;
  ~IrModule();

  // A copy of the module in the same context (the trn pipeline changes its copy; the host
  // fallback compiles the original).
  IrModule Clone() const;
  // The module as MLIR text (NEURON_DUMP_MLIR, golden tests, error messages); with `locations`,
  // each op's location too (the group lowering's: the recorded op and the model's line).
  std::string Print(bool locations = false) const;

  mlir::MLIRContext& context() const;
  mlir::ModuleOp module() const;

 private:
  struct Impl;
  explicit IrModule(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Collects the diagnostics reported in a module's context while it lives, one
// "<location>: <message>" line each, for error messages (the host and trn pipelines, the
// emitter's verifier). Used on the module's thread.
class IrDiagnostics {
 public:
  explicit IrDiagnostics(const IrModule& module);
  ~IrDiagnostics();
  IrDiagnostics(const IrDiagnostics&) = delete;
  IrDiagnostics& operator=(const IrDiagnostics&) = delete;

  const std::string& str() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trn::mlir_lowering
