// Splitting large loop nests over the kernel pool. See parallel_passes.h for the contract.
#include "mlir_lowering/parallel_passes.h"

#include <algorithm>
#include <mutex>
#include <string>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/RegionUtils.h"

namespace trn::mlir_lowering {
namespace {

// Iterations of one loop dimension; 1 when its bounds are not constant (the estimate only
// decides whether to split).
int64_t Trips(mlir::Value lb, mlir::Value ub, mlir::Value step) {
  auto l = mlir::getConstantIntValue(lb);
  auto u = mlir::getConstantIntValue(ub);
  auto s = mlir::getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0) return 1;
  return std::max<int64_t>(0, (*u - *l + *s - 1) / *s);
}

int64_t Trips(mlir::scf::ParallelOp p) {
  int64_t trips = 1;
  for (size_t d = 0; d < p.getNumLoops(); ++d) {
    trips *= Trips(p.getLowerBound()[d], p.getUpperBound()[d], p.getStep()[d]);
  }
  return trips;
}

// Innermost iterations of the loops in `block` (a body without loops counts 1).
int64_t Iterations(mlir::Block& block) {
  int64_t total = 0;
  bool loops = false;
  for (mlir::Operation& op : block) {
    int64_t trips = 1;
    if (auto f = llvm::dyn_cast<mlir::scf::ForOp>(op)) {
      trips = Trips(f.getLowerBound(), f.getUpperBound(), f.getStep());
    } else if (auto p = llvm::dyn_cast<mlir::scf::ParallelOp>(op)) {
      trips = Trips(p);
    } else {
      continue;
    }
    loops = true;
    total += trips * Iterations(op.getRegion(0).front());
  }
  return loops ? total : 1;
}

// Whether chunks of the outer dimension of `p` can run at once (parallel_passes.h).
bool Splittable(mlir::scf::ParallelOp p) {
  if (p.getNumReductions() != 0) {
    return false;
  }
  auto lb = mlir::getConstantIntValue(p.getLowerBound()[0]);
  auto ub = mlir::getConstantIntValue(p.getUpperBound()[0]);
  auto step = mlir::getConstantIntValue(p.getStep()[0]);
  if (!lb || !ub || !step || *step != 1 || *ub - *lb < 2) {
    return false;
  }
  mlir::Value outer = p.getInductionVars()[0];
  bool ok = true;
  p.getBody()->walk([&](mlir::Operation* op) {
    if (!ok) {
      return;
    }
    if (auto store = llvm::dyn_cast<mlir::memref::StoreOp>(op)) {
      ok = llvm::is_contained(store.getIndices(), outer);  // chunks write disjoint elements
      return;
    }
    if (op->hasTrait<mlir::OpTrait::HasRecursiveMemoryEffects>()) {
      return;  // scf.for, scf.if, a nested scf.parallel: what is inside is walked
    }
    auto effects = llvm::dyn_cast<mlir::MemoryEffectOpInterface>(op);
    if (effects == nullptr) {
      ok = false;  // unknown effects (a call)
      return;
    }
    ok = !effects.hasEffect<mlir::MemoryEffects::Write>() && !effects.hasEffect<mlir::MemoryEffects::Free>();
  });
  return ok && Trips(p) * Iterations(*p.getBody()) >= kMinParallelWork;
}

// Moves `p` into a private function of (lo, hi, captures) and calls it on p's outer range.
void Outline(mlir::ModuleOp module, mlir::func::FuncOp f, mlir::scf::ParallelOp p, int k) {
  llvm::SetVector<mlir::Value> captured;
  for (mlir::Value v : p->getOperands()) captured.insert(v);
  mlir::getUsedValuesDefinedAbove(p.getRegion(), captured);
  // Constants are cloned into the callee (its loops keep constant bounds and strides, which
  // LLVM vectorises); every other value is a parameter.
  llvm::SmallVector<mlir::Value> params;
  llvm::SmallVector<mlir::Operation*> constants;
  for (mlir::Value v : captured) {
    mlir::Operation* def = v.getDefiningOp();
    if (def != nullptr && def->hasTrait<mlir::OpTrait::ConstantLike>()) {
      if (!llvm::is_contained(constants, def)) constants.push_back(def);
    } else {
      params.push_back(v);
    }
  }
  mlir::OpBuilder mb(module.getContext());
  mb.setInsertionPointAfter(f);
  llvm::SmallVector<mlir::Type> types = {mb.getIndexType(), mb.getIndexType()};
  for (mlir::Value v : params) types.push_back(v.getType());
  const std::string name = (llvm::Twine(kParallelPrefix) + llvm::Twine(k) + "_" + f.getName()).str();
  auto callee = mb.create<mlir::func::FuncOp>(p.getLoc(), name, mb.getFunctionType(types, {}));
  callee.setPrivate();
  mlir::Block* entry = callee.addEntryBlock();
  mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(entry);
  mlir::IRMapping map;
  for (size_t i = 0; i < params.size(); ++i) map.map(params[i], entry->getArgument(2 + i));
  for (mlir::Operation* c : constants) b.clone(*c, map);
  auto nest = llvm::cast<mlir::scf::ParallelOp>(b.clone(*p, map));
  nest->setOperand(0, entry->getArgument(0));                  // lower bound of the outer dim
  nest->setOperand(nest.getNumLoops(), entry->getArgument(1));  // its upper bound
  b.create<mlir::func::ReturnOp>(p.getLoc());

  mlir::OpBuilder cb(p);
  llvm::SmallVector<mlir::Value> args = {p.getLowerBound()[0], p.getUpperBound()[0]};
  args.append(params.begin(), params.end());
  auto call = cb.create<mlir::func::CallOp>(p.getLoc(), callee, args);
  call->setAttr(kParallelForAttr, cb.getUnitAttr());
  p.erase();
}

struct OutlineParallelPass
    : public mlir::PassWrapper<OutlineParallelPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OutlineParallelPass)

  llvm::StringRef getArgument() const final { return "trn-outline-parallel"; }
  llvm::StringRef getDescription() const final {
    return "Move large top-level scf.parallel nests into functions called on a range (to split it)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::func::FuncDialect, mlir::scf::SCFDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    llvm::SmallVector<mlir::func::FuncOp> funcs;
    for (auto f : module.getOps<mlir::func::FuncOp>()) {
      if (!f.isExternal() && f.isPublic()) funcs.push_back(f);
    }
    int k = 0;
    for (mlir::func::FuncOp f : funcs) {
      llvm::SmallVector<mlir::scf::ParallelOp> nests;
      for (mlir::Block& block : f.getBody()) {
        for (auto p : block.getOps<mlir::scf::ParallelOp>()) {
          if (Splittable(p)) nests.push_back(p);
        }
      }
      for (mlir::scf::ParallelOp p : nests) Outline(module, f, p, k++);
    }
  }
};

// ---- LLVM dialect: calls of outlined functions -> trn_parallel_for ----

// `base` + i slots of 8 bytes, as a pointer to `type`.
mlir::Value SlotOf(mlir::OpBuilder& b, mlir::Location loc, mlir::Value base, int64_t i, mlir::Type type) {
  auto i64 = b.getI64Type();
  mlir::Value index = b.create<mlir::LLVM::ConstantOp>(loc, i64, b.getI64IntegerAttr(i));
  mlir::Value slot = b.create<mlir::LLVM::GEPOp>(loc, mlir::LLVM::LLVMPointerType::get(i64), base, mlir::ValueRange{index});
  return b.create<mlir::LLVM::BitcastOp>(loc, mlir::LLVM::LLVMPointerType::get(type), slot);
}

// `<fn>_packed(lo, hi, slots)`: loads fn's other arguments from the slots and calls it.
mlir::LLVM::LLVMFuncOp PackedWrapper(mlir::ModuleOp module, mlir::LLVM::LLVMFuncOp fn) {
  const std::string name = (fn.getName() + "_packed").str();
  if (auto existing = module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(name)) return existing;
  mlir::OpBuilder mb(module.getContext());
  mb.setInsertionPointAfter(fn);
  auto i64 = mb.getI64Type();
  auto slots_type = mlir::LLVM::LLVMPointerType::get(i64);
  auto type = mlir::LLVM::LLVMFunctionType::get(mlir::LLVM::LLVMVoidType::get(module.getContext()),
                                                {i64, i64, slots_type});
  auto packed = mb.create<mlir::LLVM::LLVMFuncOp>(fn.getLoc(), name, type, mlir::LLVM::Linkage::Internal);
  mlir::Block* entry = packed.addEntryBlock();
  mlir::OpBuilder b = mlir::OpBuilder::atBlockBegin(entry);
  mlir::LLVM::LLVMFunctionType fn_type = fn.getFunctionType();
  llvm::SmallVector<mlir::Value> args = {entry->getArgument(0), entry->getArgument(1)};
  for (unsigned i = 2; i < fn_type.getNumParams(); ++i) {
    mlir::Value slot = SlotOf(b, fn.getLoc(), entry->getArgument(2), i - 2, fn_type.getParamType(i));
    args.push_back(b.create<mlir::LLVM::LoadOp>(fn.getLoc(), slot));
  }
  b.create<mlir::LLVM::CallOp>(fn.getLoc(), fn, args);
  b.create<mlir::LLVM::ReturnOp>(fn.getLoc(), mlir::ValueRange{});
  return packed;
}

struct ParallelCallsPass : public mlir::PassWrapper<ParallelCallsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ParallelCallsPass)

  llvm::StringRef getArgument() const final { return "trn-parallel-calls"; }
  llvm::StringRef getDescription() const final {
    return "Turn calls of outlined loop nests into trn_parallel_for(fn, slots, lo, hi)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::LLVM::LLVMDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    llvm::SmallVector<mlir::LLVM::CallOp> calls;
    module.walk([&](mlir::LLVM::CallOp call) {
      if (call->hasAttr(kParallelForAttr)) calls.push_back(call);  // (func-to-llvm keeps it)
    });
    if (calls.empty()) return;
    mlir::MLIRContext* ctx = module.getContext();
    auto i64 = mlir::IntegerType::get(ctx, 64);
    auto i8_ptr = mlir::LLVM::LLVMPointerType::get(mlir::IntegerType::get(ctx, 8));
    auto slots_type = mlir::LLVM::LLVMPointerType::get(i64);
    auto runtime = module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(kParallelForSymbol);
    if (!runtime) {
      mlir::OpBuilder mb(module.getBodyRegion());
      auto type = mlir::LLVM::LLVMFunctionType::get(mlir::LLVM::LLVMVoidType::get(ctx), {i8_ptr, slots_type, i64, i64});
      runtime = mb.create<mlir::LLVM::LLVMFuncOp>(module.getLoc(), kParallelForSymbol, type);
    }
    const mlir::DataLayout layout(module);
    for (mlir::LLVM::CallOp call : calls) {
      std::optional<llvm::StringRef> callee = call.getCallee();
      auto fn = callee ? module.lookupSymbol<mlir::LLVM::LLVMFuncOp>(*callee) : nullptr;
      if (!fn || fn.isExternal() || fn.getFunctionType().getNumParams() < 2 || call.getNumOperands() < 2) {
        call.emitError() << "a call of an outlined loop nest without its (lo, hi, ...) function";
        return signalPassFailure();
      }
      for (mlir::Value v : call.getOperands().drop_front(2)) {
        if (layout.getTypeSize(v.getType()) > 8) {
          call.emitError() << "an outlined loop nest's argument of type " << v.getType() << " is wider than a slot";
          return signalPassFailure();
        }
      }
      fn.setLinkage(mlir::LLVM::Linkage::Internal);  // reached through its wrapper only
      mlir::LLVM::LLVMFuncOp packed = PackedWrapper(module, fn);
      mlir::OpBuilder b(call);
      const mlir::Location loc = call.getLoc();
      const int64_t n = static_cast<int64_t>(call.getNumOperands()) - 2;
      mlir::Value count = b.create<mlir::LLVM::ConstantOp>(loc, i64, b.getI64IntegerAttr(std::max<int64_t>(n, 1)));
      mlir::Value slots = b.create<mlir::LLVM::AllocaOp>(loc, slots_type, count, /*alignment=*/8);
      for (int64_t i = 0; i < n; ++i) {
        mlir::Value v = call.getOperand(2 + i);
        b.create<mlir::LLVM::StoreOp>(loc, v, SlotOf(b, loc, slots, i, v.getType()));
      }
      mlir::Value address = b.create<mlir::LLVM::AddressOfOp>(loc, packed);
      mlir::Value fn_ptr = b.create<mlir::LLVM::BitcastOp>(loc, i8_ptr, address);
      b.create<mlir::LLVM::CallOp>(loc, runtime, mlir::ValueRange{fn_ptr, slots, call.getOperand(0), call.getOperand(1)});
      call.erase();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> createOutlineParallelPass() { return std::make_unique<OutlineParallelPass>(); }
std::unique_ptr<mlir::Pass> createParallelCallsPass() { return std::make_unique<ParallelCallsPass>(); }

void registerParallelPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::PassRegistration<OutlineParallelPass>();
    mlir::PassRegistration<ParallelCallsPass>();
  });
}

}  // namespace trn::mlir_lowering
