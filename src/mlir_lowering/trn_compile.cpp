#include "mlir_lowering/trn_compile.h"

#include "absl/strings/str_cat.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
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
  mlir::DialectRegistry registry = GroupDialectRegistry();
  registry.insert<trn::ir::TrnDialect>();
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  const std::string name(func_name);
  llvm::SourceMgr source_mgr;
  source_mgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(mlir_text.data(), mlir_text.size()), absl::StrCat("@", name)),
      llvm::SMLoc());
  std::string diagnostics;
  llvm::raw_string_ostream diag_stream(diagnostics);
  mlir::SourceMgrDiagnosticHandler diag_handler(source_mgr, &context, diag_stream);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(source_mgr, mlir::ParserConfig(&context));
  if (!module) {
    return absl::InternalError(absl::StrCat("trn: parsing the MLIR module for @", name, ":\n", diag_stream.str()));
  }
  auto func = module->lookupSymbol<mlir::func::FuncOp>(name);
  if (!func || func.isExternal()) {
    return absl::InternalError(absl::StrCat("trn: the module has no func.func @", name, " with a body"));
  }
  mlir::PassManager pm(&context);
  pm.addPass(trn::ir::createBf16TypesPass());  // the host's spelling of bfloat16 -> bf16
  buildGroupFront(pm, /*extern_calls=*/false);
  trn::ir::buildTrnPipeline(pm, target);
  if (options.inject_internal_failure) pm.addPass(std::make_unique<InjectedFailurePass>());
  trn::ir::RefusalScope refusals;  // the pipeline runs on this thread (threading disabled)
  if (mlir::failed(pm.run(*module))) {
    if (!refusals.refusals().empty()) return TrnCompiled{"", refusals.refusals().front()};
    return absl::InternalError(absl::StrCat("trn pipeline failed without refusing an op (an internal error):\n",
                                            diag_stream.str()));
  }
  absl::StatusOr<runtime::neuroncore::InstructionStream> stream = trn::ir::EmitInstructionStream(*module, target);
  if (!stream.ok()) {
    // The pipeline accepted the module, so the emitter must encode it: anything else is a bug.
    return absl::InternalError(absl::StrCat("trn emitter: ", stream.status().ToString()));
  }
  return TrnCompiled{runtime::neuroncore::Encode(*stream), std::nullopt};
}

}  // namespace trn::mlir_lowering
