// The host pipeline: which passes run, in which order. The passes of our own are in
// host_passes.cpp.
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
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "mlir_lowering/parallel_passes.h"

#include <mutex>

namespace trn::mlir_lowering {

mlir::DialectRegistry GroupDialectRegistry() {
  mlir::DialectRegistry registry;
  registry.insert<mlir::AffineDialect, mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect, mlir::cf::ControlFlowDialect,
                  mlir::func::FuncDialect, mlir::linalg::LinalgDialect, mlir::LLVM::LLVMDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect, mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect>();
  mlir::arith::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::bufferization::registerAllocationOpInterfaceExternalModels(registry);
  mlir::linalg::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::scf::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(registry);
  mlir::registerLLVMDialectTranslation(registry);
  return registry;
}

void buildGroupFront(mlir::OpPassManager& pm, bool extern_calls) {
  using mlir::func::FuncOp;
  namespace bufferization = mlir::bufferization;

  // 1-2. Fusion on tensors, then destination passing (the order matters: see host_passes.h).
  pm.addNestedPass<FuncOp>(createFuseElementwisePass());
  pm.addPass(createResultsToOutArgsPass());

  // 3. Bufferization. Fully dynamic layouts at the boundary: the caller's buffers are views
  // with any strides and offset; trn-static-strides then pins the strides it knows.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createEmptyTensorToAllocTensorPass());
  bufferization::OneShotBufferizationOptions options;
  options.bufferizeFunctionBoundaries = true;
  options.functionBoundaryTypeConversion = bufferization::LayoutMapOption::FullyDynamicLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(options));
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(createCheckNoResultsPass());
  if (extern_calls) pm.addPass(createExternCallsPass());
  pm.addPass(createStaticStridesPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

void buildHostPipeline(mlir::OpPassManager& pm) {
  using mlir::func::FuncOp;
  namespace bufferization = mlir::bufferization;

  buildGroupFront(pm, /*extern_calls=*/true);
  pm.addPass(createTieInPlacePass());
  pm.addNestedPass<FuncOp>(bufferization::createBufferDeallocationPass());
  // Loops that every buffer lays out contiguously become one loop (LLVM vectorises no loop of
  // fewer than 16 iterations: small spatial dimensions stayed scalar).
  pm.addNestedPass<FuncOp>(createCollapseLoopsPass());

  // 4. Loops. expand-strided-metadata emits affine.apply, so lower-affine comes after it.
  // Parallel loops where linalg has parallel iterators: the large nests are moved into functions
  // the runtime splits over the kernel pool (parallel_passes.h); scf-to-cf makes the rest (and
  // the moved nests' bodies) ordinary loops.
  pm.addNestedPass<FuncOp>(mlir::createConvertLinalgToParallelLoopsPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(createOutlineParallelPass());
  pm.addPass(mlir::createConvertSCFToCFPass());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());

  // 5. Math approximations, then the LLVM dialect. math-to-libm after math-to-llvm: only ops
  // without an intrinsic or approximation (f64 tanh, erf...) become libm calls, resolved from
  // the process when the object is loaded.
  pm.addNestedPass<FuncOp>(createMathApproximationPass());
  pm.addPass(mlir::createMemRefToLLVMConversionPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertMathToLibmPass());
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  pm.addPass(mlir::cf::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  pm.addPass(createParallelCallsPass());
  // 6. Fold the memref descriptors' insertvalue/extractvalue chains and dead address math:
  // ~5 ms here saves ~15 ms of instruction selection and a fifth of the object's size.
  pm.addPass(mlir::createCanonicalizerPass());
}

void registerHostPipeline() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerHostPasses();
    registerParallelPasses();
    mlir::PassPipelineRegistration<>("trn-host-pipeline",
                                     "torch-trn host pipeline: linalg on tensors -> LLVM dialect",
                                     buildHostPipeline);
  });
}

}  // namespace trn::mlir_lowering
