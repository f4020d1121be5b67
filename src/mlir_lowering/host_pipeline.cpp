// The host pipeline and its two small module passes. See host_pipeline.h for the contract.
#include "mlir_lowering/host_pipeline.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

namespace trn::mlir_lowering {
namespace {

constexpr llvm::StringLiteral kWritable = "bufferization.writable";

// Follows `value` through destination-style ops to the tensor.empty its buffer would come from:
// returns the init operand that holds that tensor.empty, or null if the chain ends elsewhere
// (a function argument, a reshape, a constant...).
mlir::OpOperand* findEmptyRoot(mlir::Value value) {
  auto result = value.dyn_cast<mlir::OpResult>();
  while (result) {
    auto dps = llvm::dyn_cast<mlir::DestinationStyleOpInterface>(result.getOwner());
    if (!dps) {
      return nullptr;
    }
    mlir::OpOperand* init = dps.getTiedOpOperand(result);
    if (init->get().getDefiningOp<mlir::tensor::EmptyOp>()) {
      return init;
    }
    result = init->get().dyn_cast<mlir::OpResult>();
  }
  return nullptr;
}

// out = value, as an identity linalg.generic (the fallback when the result has no empty root).
mlir::Value copyInto(mlir::OpBuilder& b, mlir::Location loc, mlir::Value value, mlir::Value out) {
  auto type = value.getType().cast<mlir::RankedTensorType>();
  mlir::AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  llvm::SmallVector<mlir::utils::IteratorType> iters(type.getRank(),
                                                     mlir::utils::IteratorType::parallel);
  auto copy = b.create<mlir::linalg::GenericOp>(
      loc, mlir::TypeRange{type}, mlir::ValueRange{value}, mlir::ValueRange{out},
      llvm::ArrayRef<mlir::AffineMap>{id, id}, iters,
      [](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
        nb.create<mlir::linalg::YieldOp>(l, args[0]);
      });
  return copy.getResult(0);
}

struct ResultsToOutArgsPass
    : public mlir::PassWrapper<ResultsToOutArgsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ResultsToOutArgsPass)

  llvm::StringRef getArgument() const final { return "trn-results-to-out-args"; }
  llvm::StringRef getDescription() const final {
    return "Make each returned tensor of a public function a writable out argument that the "
           "producing op writes into (destination passing before bufferization)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::bufferization::BufferizationDialect, mlir::linalg::LinalgDialect>();
  }

  void runOnOperation() override {
    for (auto func : getOperation().getOps<mlir::func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic()) {
        continue;
      }
      if (mlir::failed(rewrite(func))) {
        return signalPassFailure();
      }
    }
  }

  mlir::LogicalResult rewrite(mlir::func::FuncOp func) {
    mlir::MLIRContext* ctx = func.getContext();
    mlir::OpBuilder b(ctx);
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      if (!func.getArgAttr(i, kWritable)) {
        func.setArgAttr(i, kWritable, b.getBoolAttr(false));
      }
    }
    auto ret = llvm::cast<mlir::func::ReturnOp>(func.getBody().front().getTerminator());
    auto writable = b.getDictionaryAttr(b.getNamedAttr(kWritable, b.getBoolAttr(true)));
    for (mlir::OpOperand& returned : ret->getOpOperands()) {
      mlir::Value value = returned.get();
      if (!value.getType().isa<mlir::RankedTensorType>()) {
        return func.emitError() << "result #" << returned.getOperandNumber()
                                << " has type " << value.getType()
                                << "; only ranked tensors can be returned";
      }
      unsigned index = func.getNumArguments();
      func.insertArgument(index, value.getType(), writable, value.getLoc());
      mlir::Value out = func.getArgument(index);
      if (mlir::OpOperand* root = findEmptyRoot(value)) {
        root->set(out);
        continue;
      }
      b.setInsertionPoint(ret);
      returned.set(copyInto(b, value.getLoc(), value, out));
    }
    // tensor.empty ops left without users (their only user now writes to an out argument).
    func.walk([](mlir::tensor::EmptyOp empty) {
      if (empty->use_empty()) {
        empty->erase();
      }
    });
    return mlir::success();
  }
};

struct CheckNoResultsPass
    : public mlir::PassWrapper<CheckNoResultsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckNoResultsPass)

  llvm::StringRef getArgument() const final { return "trn-check-no-results"; }
  llvm::StringRef getDescription() const final {
    return "Fail if a public function still returns a value after bufferization";
  }

  void runOnOperation() override {
    for (auto func : getOperation().getOps<mlir::func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic() || func.getNumResults() == 0) {
        continue;
      }
      func.emitError() << "still returns " << func.getNumResults()
                       << " value(s) after bufferization: an output could not be written in "
                          "place into its out argument";
      return signalPassFailure();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> createResultsToOutArgsPass() {
  return std::make_unique<ResultsToOutArgsPass>();
}

std::unique_ptr<mlir::Pass> createCheckNoResultsPass() {
  return std::make_unique<CheckNoResultsPass>();
}

void buildHostPipeline(mlir::OpPassManager& pm) {
  using mlir::func::FuncOp;
  namespace bufferization = mlir::bufferization;

  // 1-2. Fusion on tensors, then destination passing (the order matters: see the header).
  pm.addNestedPass<FuncOp>(mlir::createLinalgElementwiseOpFusionPass());
  pm.addPass(createResultsToOutArgsPass());

  // 3. Bufferization.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  bufferization::OneShotBufferizationOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(options));
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(createCheckNoResultsPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addNestedPass<FuncOp>(bufferization::createBufferDeallocationPass());

  // 4. Loops. expand-strided-metadata emits affine.apply, so lower-affine comes after it.
  pm.addNestedPass<FuncOp>(mlir::createConvertLinalgToLoopsPass());
  pm.addPass(mlir::createConvertSCFToCFPass());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());

  // 5. LLVM dialect. math-to-libm after math-to-llvm: only ops without an intrinsic (tanh, erf,
  // atan...) become libm calls, resolved from the process when the object is loaded.
  pm.addPass(mlir::createMemRefToLLVMConversionPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertMathToLibmPass());
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  pm.addPass(mlir::cf::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
}

void registerHostPipeline() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::PassRegistration<ResultsToOutArgsPass>();
    mlir::PassRegistration<CheckNoResultsPass>();
    mlir::PassPipelineRegistration<>("trn-host-pipeline",
                                     "torch-trn host pipeline: linalg on tensors -> LLVM dialect",
                                     buildHostPipeline);
  });
}

}  // namespace trn::mlir_lowering
