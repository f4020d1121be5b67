// OptimizeModule (src/mlir_lowering/llvm_optimize.h): -O1 vectorises loops but does not unroll
// them (adaptive mode's fast first build), -O3 unrolls.
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "mlir_lowering/llvm_optimize.h"

namespace {

// b[i] = a[i] * 2 over 1024 floats: one static loop, as a group's elementwise loop nest.
constexpr const char* kScaleLoop = R"ll(
define void @scale(ptr noalias %a, ptr noalias %b) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pa = getelementptr float, ptr %a, i64 %i
  %x = load float, ptr %pa
  %y = fmul float %x, 2.0
  %pb = getelementptr float, ptr %b, i64 %i
  store float %y, ptr %pb
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, 1024
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
)ll";

struct Counts {
  int fmuls = 0;         // fmul instructions left in @scale
  int vector_fmuls = 0;  // of which on vectors
};

Counts OptimizeAndCount(int opt_level) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  REQUIRE(static_cast<bool>(builder));
  auto machine = builder->createTargetMachine();
  REQUIRE(static_cast<bool>(machine));
  llvm::LLVMContext context;
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module =
      llvm::parseIR(llvm::MemoryBufferRef(kScaleLoop, "scale"), error, context);
  REQUIRE(module != nullptr);
  module->setDataLayout((*machine)->createDataLayout());
  module->setTargetTriple((*machine)->getTargetTriple().str());
  REQUIRE(trn::mlir_lowering::OptimizeModule(*module, **machine, opt_level).ok());
  Counts counts;
  for (const llvm::Instruction& inst : llvm::instructions(*module->getFunction("scale"))) {
    if (inst.getOpcode() != llvm::Instruction::FMul) continue;
    ++counts.fmuls;
    if (inst.getType()->isVectorTy()) ++counts.vector_fmuls;
  }
  return counts;
}

}  // namespace

TEST_CASE("O1 vectorises a loop without unrolling it, O3 unrolls it", "[mlir]") {
  const Counts o0 = OptimizeAndCount(0);
  const Counts o1 = OptimizeAndCount(1);
  const Counts o3 = OptimizeAndCount(3);
  INFO("fmuls at O0 " << o0.fmuls << ", O1 " << o1.fmuls << " (" << o1.vector_fmuls << " vector), O3 "
                      << o3.fmuls);
  CHECK(o0.fmuls == 1);
  CHECK(o0.vector_fmuls == 0);
  // -O1: the vectoriser's interleaving gives a few vector multiplies, and the loop stays a loop.
  CHECK(o1.vector_fmuls >= 1);
  CHECK(o1.fmuls <= 4);
  // -O3: the vectorised loop is unrolled further.
  CHECK(o3.fmuls > o1.fmuls);
}
