// LLVM's default module pipeline at a level, with our tuning options (llvm_optimize.h).
#include "mlir_lowering/llvm_optimize.h"

#include <optional>

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/LoopUtils.h"

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

// The floating-point operations of a loop body that its chain of results goes through.
int FloatingPointOps(const llvm::Loop& loop) {
  int ops = 0;
  for (const llvm::BasicBlock* block : loop.blocks()) {
    for (const llvm::Instruction& inst : *block) {
      const bool computes = !llvm::isa<llvm::LoadInst, llvm::PHINode>(inst) &&
                            inst.getType()->isFloatingPointTy();
      if (computes || llvm::isa<llvm::FCmpInst>(inst)) {
        ++ops;
      }
    }
  }
  return ops;
}

// Interleaves the vectorised form of innermost loops whose body is a long floating-point chain
// (llvm_optimize.h). Runs just before the loop vectoriser, on scalar loops.
class InterleaveLongChains : public llvm::PassInfoMixin<InterleaveLongChains> {
 public:
  llvm::PreservedAnalyses run(llvm::Function& function, llvm::FunctionAnalysisManager& analyses) {
    llvm::LoopInfo& loops = analyses.getResult<llvm::LoopAnalysis>(function);
    llvm::ScalarEvolution& evolution = analyses.getResult<llvm::ScalarEvolutionAnalysis>(function);
    bool changed = false;
    for (llvm::Loop* loop : loops.getLoopsInPreorder()) {
      if (!loop->isInnermost() ||
          llvm::getOptionalIntLoopAttribute(loop, "llvm.loop.interleave.count").has_value()) {
        continue;
      }
      const int ops = FloatingPointOps(*loop);
      const unsigned count = ops >= kLongChainOps ? 8 : ops >= kLongChainOps / 2 ? 4 : 1;
      // A static trip count too short for `count` vectors of 16 lanes, four times over, would
      // leave the work to the scalar remainder loop.
      const unsigned trips = evolution.getSmallConstantTripCount(loop);  // 0: not static
      if (count == 1 || (trips != 0 && trips < count * 16 * 4)) {
        continue;
      }
      llvm::addStringMetadataToLoop(loop, "llvm.loop.interleave.count", count);
      changed = true;
    }
    if (!changed) {
      return llvm::PreservedAnalyses::all();
    }
    llvm::PreservedAnalyses kept;
    kept.preserveSet<llvm::CFGAnalyses>();
    return kept;
  }

 private:
  static constexpr int kLongChainOps = 48;
};

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
  builder.registerVectorizerStartEPCallback(
      [](llvm::FunctionPassManager& passes, llvm::OptimizationLevel) {
        passes.addPass(InterleaveLongChains());
      });
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
