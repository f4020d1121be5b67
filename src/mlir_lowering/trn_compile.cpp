#include "mlir_lowering/trn_compile.h"

#include "absl/strings/str_cat.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir_lowering/host_pipeline.h"
#include "mlir_lowering/trn/TrnDialect.h"
#include "mlir_lowering/trn/TrnEmit.h"
#include "mlir_lowering/trn/TrnPasses.h"

namespace trn::mlir_lowering {
namespace {

// TrnCompileOptions::inject_internal_failure: fails the pipeline as a buggy pass would (an error
// diagnostic, no refusal).
struct InjectedFailurePass : mlir::PassWrapper<InjectedFailurePass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InjectedFailurePass)
  llvm::StringRef getArgument() const override { return "trn-test-injected-failure"; }
  void runOnOperation() override {
    getOperation().emitError("injected internal failure of the trn pipeline (NEURON_TEST_COMPILE_FAULT=trn_internal)");
    signalPassFailure();
  }
};

}  // namespace

absl::StatusOr<TrnCompiled> CompileToTrnStream(std::string_view mlir_text, std::string_view func_name,
                                               const std::string& target, const TrnCompileOptions& options) {
  absl::StatusOr<IrModule> module = IrModule::Parse(mlir_text, func_name);
  if (!module.ok()) return absl::InternalError(absl::StrCat("trn: ", module.status().message()));
  return CompileToTrnStream(*module, func_name, target, options);
}

absl::StatusOr<TrnCompiled> CompileToTrnStream(const IrModule& group, std::string_view func_name,
                                               const std::string& target, const TrnCompileOptions& options) {
  const std::string name(func_name);
  mlir::MLIRContext& context = group.context();
  IrDiagnostics diagnostics(group);
  auto func = group.module().lookupSymbol<mlir::func::FuncOp>(name);
  if (!func || func.isExternal()) {
    return absl::InternalError(absl::StrCat("trn: the module has no func.func @", name, " with a body"));
  }
  // The pipeline rewrites its own copy: a refused group is compiled for the host from `group`.
  IrModule copy = group.Clone();
  mlir::ModuleOp module = copy.module();
  mlir::PassManager pm(&context);
  pm.addPass(trn::ir::createBf16TypesPass());  // the host's spelling of bfloat16 -> bf16
  buildGroupFront(pm, /*extern_calls=*/false);
  trn::ir::buildTrnPipeline(pm, target);
  if (options.inject_internal_failure) pm.addPass(std::make_unique<InjectedFailurePass>());
  trn::ir::RefusalScope refusals;  // the pipeline runs on this thread (threading disabled)
  if (mlir::failed(pm.run(module))) {
    if (!refusals.refusals().empty()) return TrnCompiled{"", refusals.refusals().front()};
    return absl::InternalError(absl::StrCat("trn pipeline failed without refusing an op (an internal error):\n",
                                            diagnostics.str()));
  }
  absl::StatusOr<runtime::neuroncore::InstructionStream> stream = trn::ir::EmitInstructionStream(module, target);
  if (!stream.ok()) {
    // The pipeline accepted the module, so the emitter must encode it: anything else is a bug.
    return absl::InternalError(absl::StrCat("trn emitter: ", stream.status().ToString()));
  }
  return TrnCompiled{runtime::neuroncore::Encode(*stream), std::nullopt};
}

}  // namespace trn::mlir_lowering
