#include "mlir_lowering/trn_compile.h"

#include "absl/strings/str_cat.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir_lowering/host_pipeline.h"
#include "mlir_lowering/trn/TrnDialect.h"
#include "mlir_lowering/trn/TrnEmit.h"
#include "mlir_lowering/trn/TrnPasses.h"

namespace trn::mlir_lowering {

absl::StatusOr<std::string> CompileToTrnStream(std::string_view mlir_text, std::string_view func_name,
                                               const std::string& target) {
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
    return absl::InvalidArgumentError(absl::StrCat("parsing the MLIR module for @", name, ":\n", diag_stream.str()));
  }
  auto func = module->lookupSymbol<mlir::func::FuncOp>(name);
  if (!func || func.isExternal()) {
    return absl::NotFoundError(absl::StrCat("the module has no func.func @", name, " with a body"));
  }
  mlir::PassManager pm(&context);
  buildGroupFront(pm, /*extern_calls=*/false);
  trn::ir::buildTrnPipeline(pm, target);
  if (mlir::failed(pm.run(*module))) {
    return absl::UnimplementedError(absl::StrCat("no trn lowering: ", diag_stream.str()));
  }
  absl::StatusOr<runtime::neuroncore::InstructionStream> stream = trn::ir::EmitInstructionStream(*module, target);
  if (!stream.ok()) return stream.status();
  return runtime::neuroncore::Encode(*stream);
}

}  // namespace trn::mlir_lowering
