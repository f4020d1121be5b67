#include "mlir_lowering/ir_module.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir_lowering/host_pipeline.h"
#include "mlir_lowering/trn/TrnDialect.h"

namespace trn::mlir_lowering {

struct IrModule::Impl {
  std::shared_ptr<mlir::MLIRContext> context;  // shared by the clones
  mlir::OwningOpRef<mlir::ModuleOp> module;    // declared after the context: destroyed before it
};

namespace {

std::shared_ptr<mlir::MLIRContext> NewContext() {
  mlir::DialectRegistry registry = GroupDialectRegistry();
  registry.insert<trn::ir::TrnDialect>();
  return std::make_shared<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
}

}  // namespace

IrModule::IrModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IrModule::IrModule(IrModule&&) noexcept = default;
IrModule& IrModule::operator=(IrModule&&) noexcept = default;
IrModule::~IrModule() = default;

IrModule IrModule::Create() {
  auto impl = std::make_unique<Impl>();
  impl->context = NewContext();
  impl->context->loadDialect<mlir::func::FuncDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                             mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect>();
  impl->module = mlir::ModuleOp::create(mlir::UnknownLoc::get(impl->context.get()));
  return IrModule(std::move(impl));
}

absl::StatusOr<IrModule> IrModule::Parse(std::string_view text, std::string_view name) {
  auto impl = std::make_unique<Impl>();
  impl->context = NewContext();
  llvm::SourceMgr source_mgr;
  source_mgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(text.data(), text.size()), absl::StrCat("@", std::string(name))),
      llvm::SMLoc());
  std::string diagnostics;
  llvm::raw_string_ostream diag_stream(diagnostics);
  mlir::SourceMgrDiagnosticHandler diag_handler(source_mgr, impl->context.get(), diag_stream);
  impl->module = mlir::parseSourceFile<mlir::ModuleOp>(source_mgr, mlir::ParserConfig(impl->context.get()));
  if (!impl->module) {
    return absl::InvalidArgumentError(absl::StrCat("parsing the MLIR module for @", std::string(name), ":\n", diag_stream.str()));
  }
  return IrModule(std::move(impl));
}

IrModule IrModule::Clone() const {
  auto impl = std::make_unique<Impl>();
  impl->context = impl_->context;
  impl->module = impl_->module->clone();
  return IrModule(std::move(impl));
}

std::string IrModule::Print(bool locations) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  mlir::OpPrintingFlags flags;
  if (locations) flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  impl_->module->print(os, flags);
  os.flush();
  return text;
}

mlir::MLIRContext& IrModule::context() const { return *impl_->context; }
mlir::ModuleOp IrModule::module() const { return *impl_->module; }

struct IrDiagnostics::Impl {
  std::string text;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
};

IrDiagnostics::IrDiagnostics(const IrModule& module) : impl_(std::make_unique<Impl>()) {
  Impl* impl = impl_.get();
  impl->handler = std::make_unique<mlir::ScopedDiagnosticHandler>(&module.context(), [impl](mlir::Diagnostic& d) {
    llvm::raw_string_ostream os(impl->text);
    os << d.getLocation() << ": " << d.str() << "\n";
    return mlir::success();
  });
}

IrDiagnostics::~IrDiagnostics() = default;

const std::string& IrDiagnostics::str() const { return impl_->text; }

}  // namespace trn::mlir_lowering
