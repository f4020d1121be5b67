// OptimizeModule (src/mlir_lowering/llvm_optimize.h): -O1 vectorises loops but does not unroll
// them (adaptive mode's fast first build), -O3 unrolls; a long floating-point chain is
// interleaved eight ways unless its static trip count is short.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"

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

// One loop b[i] = f(a[i]) over `bound` floats (a constant, or %n: a runtime count); `body`
// computes `result` from %x.
std::string OneLoop(const std::string& name, const std::string& body, const std::string& result,
                    const std::string& bound) {
  return absl::StrCat("define void @", name, R"ll((ptr noalias %a, ptr noalias %b, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pa = getelementptr float, ptr %a, i64 %i
  %x = load float, ptr %pa
)ll",
                      body, "  %pb = getelementptr float, ptr %b, i64 %i\n  store float ", result,
                      R"ll(, ptr %pb
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, )ll",
                      bound, R"ll(
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
)ll");
}

// b[i] = a[i] * 2 over 1024 floats: one static loop, as a group's elementwise loop nest.
std::string ScaleLoop() { return OneLoop("scale", "  %y = fmul float %x, 2.0\n", "%y", "1024"); }

// b[i] = a[i] through `links` dependent multiply-adds and one division over `trips` floats
// (0: a runtime count), as a fused transcendental chain's loop.
std::string ChainLoop(int links, int trips) {
  std::string body = "  %c0 = fdiv float 1.0, %x\n";
  for (int k = 0; k < links; ++k) {
    absl::StrAppend(&body, "  %m", k, " = fmul float %c", k, ", 1.5\n", "  %c", k + 1, " = fadd float %m",
                    k, ", %x\n");
  }
  return OneLoop("chain", body, absl::StrCat("%c", links), trips == 0 ? "%n" : std::to_string(trips));
}

struct Counts {
  int total = 0;   // instructions of `opcode` left in the function
  int vector = 0;  // of which on vectors
};

Counts OptimizeAndCount(int opt_level, const std::string& ir = ScaleLoop(),
                        const char* function = "scale",
                        unsigned opcode = llvm::Instruction::FMul) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  REQUIRE(static_cast<bool>(builder));
  auto machine = builder->createTargetMachine();
  REQUIRE(static_cast<bool>(machine));
  llvm::LLVMContext context;
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module =
      llvm::parseIR(llvm::MemoryBufferRef(ir, function), error, context);
  INFO(error.getMessage().str());
  REQUIRE(module != nullptr);
  module->setDataLayout((*machine)->createDataLayout());
  module->setTargetTriple((*machine)->getTargetTriple().str());
  REQUIRE(trn::mlir_lowering::OptimizeModule(*module, **machine, opt_level).ok());
  Counts counts;
  for (const llvm::Instruction& inst : llvm::instructions(*module->getFunction(function))) {
    if (inst.getOpcode() != opcode) continue;
    ++counts.total;
    if (inst.getType()->isVectorTy()) ++counts.vector;
  }
  return counts;
}

}  // namespace

TEST_CASE("O1 vectorises a loop without unrolling it, O3 unrolls it", "[mlir]") {
  const Counts o0 = OptimizeAndCount(0);
  const Counts o1 = OptimizeAndCount(1);
  const Counts o3 = OptimizeAndCount(3);
  INFO("fmuls at O0 " << o0.total << ", O1 " << o1.total << " (" << o1.vector << " vector), O3 "
                      << o3.total);
  CHECK(o0.total == 1);
  CHECK(o0.vector == 0);
  // -O1: the vectoriser's interleaving gives a few vector multiplies, and the loop stays a loop.
  CHECK(o1.vector >= 1);
  CHECK(o1.total <= 4);
  // -O3: the vectorised loop is unrolled further.
  CHECK(o3.total > o1.total);
}

TEST_CASE("A long floating-point chain is interleaved eight ways", "[mlir]") {
  // One division per element: the vector body holds one vector division per interleaved part.
  const Counts long_static = OptimizeAndCount(1, ChainLoop(30, 1 << 16), "chain", llvm::Instruction::FDiv);
  const Counts long_runtime = OptimizeAndCount(1, ChainLoop(30, 0), "chain", llvm::Instruction::FDiv);
  CHECK(long_static.vector == 8);
  // A trip count known only at run time: the eight parts, plus one division in the vectorised
  // epilogue LLVM adds where the main loop is wide (16 lanes with AVX-512, as on this AMD EPYC
  // machine; none with 8-lane AVX2 bodies).
  CHECK(long_runtime.vector >= 8);
  CHECK(long_runtime.vector <= 9);
  // 64 iterations: eight parts of even 8 lanes would leave everything to the scalar remainder.
  const Counts long_short = OptimizeAndCount(1, ChainLoop(30, 64), "chain", llvm::Instruction::FDiv);
  CHECK(long_short.vector < 8);
  // A short chain is left to the vectoriser's own choice (at most 4 parts on x86).
  const Counts short_chain = OptimizeAndCount(1, ChainLoop(4, 1 << 16), "chain", llvm::Instruction::FDiv);
  CHECK(short_chain.vector >= 1);
  CHECK(short_chain.vector < 8);
}
