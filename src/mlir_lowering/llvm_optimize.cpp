// LLVM's default module pipeline at a level, with our tuning options (llvm_optimize.h).
#include "mlir_lowering/llvm_optimize.h"

#include <optional>

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Target/TargetMachine.h"

namespace trn::mlir_lowering {
namespace {

llvm::OptimizationLevel Level(int opt_level) {
  switch (opt_level) {
  case 0:
    return llvm::OptimizationLevel::O0;
  case 1:
    return llvm::OptimizationLevel::O1;
  case 2:
    return llvm::OptimizationLevel::O2;
  default:
    return llvm::OptimizationLevel::O3;
  }
}

}  // namespace

absl::Status OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine, int opt_level) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = opt_level >= 2;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::ModulePassManager pipeline = opt_level == 0
                                         ? builder.buildO0DefaultPipeline(Level(opt_level))
                                         : builder.buildPerModuleDefaultPipeline(Level(opt_level));
  pipeline.run(module, modules);
  return absl::OkStatus();
}

}  // namespace trn::mlir_lowering
