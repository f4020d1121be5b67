// trn-bf16-types: the group lowering's spelling of bfloat16 -> MLIR's bf16, on the module as the
// group lowering writes it (tensors), before the group front.
//
// ir_builder.h writes bfloat16 elements as i16 and converts them with integer ops (LLVM 16's x86
// backend cannot select bfloat vectors), so the host pipeline compiles the same module when the
// trn pipeline refuses a group. The NeuronCore converts bf16 itself (its DMAs and engine outputs
// round to nearest even), so for trn the pass gives the values their type back:
//   load:      bitcast(shli(extui(x : i16 to i32), 16) : i32 to f32)      -> extf x : bf16 to f32
//   store:     trunci(select(cmpf uno (v, v), 0x7FC0, round(v)) : i32 to i16) -> truncf v : f32 to bf16
//   constants: an i16 (the value's bits) -> the bf16 with those bits
// and every i16 type (tensors, memrefs, block arguments, results, the function's) becomes bf16.
// On a trn target an i16 element is always a bfloat16: no int16 tensor is lowered for trn
// (Target::CanGroup). An i16 used any other way is refused by name (the group is then
// built as host code from the original module).
#include <memory>

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir_lowering/trn/TrnPasses.h"
#include "mlir_lowering/trn/TrnRefuse.h"

namespace trn::ir {
namespace {

bool IsI16(mlir::Type t) { return t.isInteger(16); }

// `t` with an i16 element (or itself i16) as bf16; other types unchanged.
mlir::Type AsBf16(mlir::Type t) {
  const mlir::Type bf16 = mlir::BFloat16Type::get(t.getContext());
  if (IsI16(t)) return bf16;
  if (auto r = t.dyn_cast<mlir::RankedTensorType>(); r && IsI16(r.getElementType())) {
    return mlir::RankedTensorType::get(r.getShape(), bf16, r.getEncoding());
  }
  if (auto m = t.dyn_cast<mlir::MemRefType>(); m && IsI16(m.getElementType())) {
    return mlir::MemRefType::get(m.getShape(), bf16, m.getLayout(), m.getMemorySpace());
  }
  if (auto u = t.dyn_cast<mlir::UnrankedTensorType>(); u && IsI16(u.getElementType())) {
    return mlir::UnrankedTensorType::get(bf16);
  }
  return t;
}

bool HasI16(mlir::Type t) { return AsBf16(t) != t; }

bool IsConstantInt(mlir::Value v, int64_t value) {
  auto c = v.getDefiningOp<mlir::arith::ConstantIntOp>();
  return c && c.value() == value;
}

// Erases arith ops nothing uses, until none is left (the conversions' integer ops).
void EraseDeadArith(mlir::ModuleOp module) {
  for (bool changed = true; changed;) {
    llvm::SmallVector<mlir::Operation*> dead;
    module.walk([&](mlir::Operation* op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "arith" && mlir::isOpTriviallyDead(op)) {
        dead.push_back(op);
      }
    });
    for (mlir::Operation* op : dead) op->erase();  // unused, so none of them uses another
    changed = !dead.empty();
  }
}

// bitcast(shli(extui(x : i16), 16)) : i32 to f32 -> x (the bf16 whose value it is), else null.
mlir::Value LoadedBf16(mlir::arith::BitcastOp cast) {
  if (!cast.getType().isF32()) return {};
  auto shl = cast.getIn().getDefiningOp<mlir::arith::ShLIOp>();
  if (!shl || !IsConstantInt(shl.getRhs(), 16)) return {};
  auto ext = shl.getLhs().getDefiningOp<mlir::arith::ExtUIOp>();
  if (!ext || !IsI16(ext.getIn().getType())) return {};
  return ext.getIn();
}

// trunci(select(cmpf uno (v, v), 0x7FC0, ...)) : i32 to i16 -> v (the f32 it rounds), else null.
mlir::Value StoredBf16(mlir::arith::TruncIOp trunc) {
  if (!IsI16(trunc.getType())) return {};
  auto sel = trunc.getIn().getDefiningOp<mlir::arith::SelectOp>();
  if (!sel || !IsConstantInt(sel.getTrueValue(), 0x7FC0)) return {};
  auto nan = sel.getCondition().getDefiningOp<mlir::arith::CmpFOp>();
  if (!nan || nan.getPredicate() != mlir::arith::CmpFPredicate::UNO || nan.getLhs() != nan.getRhs() ||
      !nan.getLhs().getType().isF32()) {
    return {};
  }
  return nan.getLhs();
}

// Ops that move i16 elements without reading them as integers (their type changes with them).
bool MovesElements(mlir::Operation* op) {
  if (mlir::isa<mlir::arith::ConstantOp, mlir::arith::ExtFOp, mlir::arith::TruncFOp, mlir::linalg::YieldOp,
                mlir::func::ReturnOp>(op)) {
    return true;
  }
  const llvm::StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  // Shaped ops (tensor, memref, bufferization, linalg structure) and the scalar moves among them.
  return dialect == "tensor" || dialect == "memref" || dialect == "bufferization" ||
         (dialect == "linalg" && !mlir::isa<mlir::linalg::LinalgOp>(op)) || mlir::isa<mlir::linalg::GenericOp>(op) ||
         mlir::isa<mlir::linalg::FillOp, mlir::linalg::CopyOp, mlir::linalg::TransposeOp>(op);
}

struct Bf16TypesPass : public mlir::PassWrapper<Bf16TypesPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(Bf16TypesPass)
  llvm::StringRef getArgument() const final { return "trn-bf16-types"; }
  llvm::StringRef getDescription() const final {
    return "bfloat16 spelled as i16 with integer conversions (the host's form) -> bf16 with extf / truncf";
  }
  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    mlir::OpBuilder b(module.getContext());
    const mlir::Type bf16 = b.getBF16Type();
    // 1. The conversions become extf / truncf (created on the i16 values; retyped in 3).
    llvm::SmallVector<mlir::arith::BitcastOp> loads;
    llvm::SmallVector<mlir::arith::TruncIOp> stores;
    module.walk([&](mlir::arith::BitcastOp op) { if (LoadedBf16(op)) loads.push_back(op); });
    module.walk([&](mlir::arith::TruncIOp op) { if (StoredBf16(op)) stores.push_back(op); });
    for (mlir::arith::BitcastOp op : loads) {
      b.setInsertionPoint(op);
      auto ext = b.create<mlir::arith::ExtFOp>(op.getLoc(), b.getF32Type(), LoadedBf16(op));
      op.getResult().replaceAllUsesWith(ext.getResult());
      op->erase();
    }
    for (mlir::arith::TruncIOp op : stores) {
      b.setInsertionPoint(op);
      auto trunc = b.create<mlir::arith::TruncFOp>(op.getLoc(), bf16, StoredBf16(op));
      op.getResult().replaceAllUsesWith(trunc.getResult());
      op->erase();
    }
    EraseDeadArith(module);
    // 2. Anything else that reads or makes an i16 is not a bfloat16 move: refuse it.
    mlir::Operation* bad = nullptr;
    module.walk([&](mlir::Operation* op) {
      if (bad || MovesElements(op)) return;
      auto i16 = [](mlir::Value v) { return IsI16(v.getType()); };
      if (llvm::any_of(op->getOperands(), i16) || llvm::any_of(op->getResults(), i16)) bad = op;
    });
    if (bad) {
      (void)(refuse(bad) << "reads a bfloat16 element (i16) in a form the trn lowering does not recognise");
      return signalPassFailure();
    }
    // 3. Retype: constants keep their bits, values and block arguments change type.
    module.walk([&](mlir::Operation* op) {
      if (auto c = mlir::dyn_cast<mlir::arith::ConstantOp>(op)) {
        if (auto i = c.getValue().dyn_cast<mlir::IntegerAttr>(); i && IsI16(i.getType())) {
          const llvm::APFloat f(llvm::APFloat::BFloat(), i.getValue());
          c->setAttr("value", mlir::FloatAttr::get(bf16, f));
        } else if (auto d = c.getValue().dyn_cast<mlir::DenseIntElementsAttr>(); d && IsI16(d.getElementType())) {
          c->setAttr("value", d.bitcast(bf16));
        }
      }
      for (mlir::Value r : op->getResults()) r.setType(AsBf16(r.getType()));
      for (mlir::Region& region : op->getRegions()) {
        for (mlir::Block& block : region) {
          for (mlir::BlockArgument a : block.getArguments()) a.setType(AsBf16(a.getType()));
        }
      }
    });
    for (auto f : module.getOps<mlir::func::FuncOp>()) {
      auto type = f.getFunctionType();
      llvm::SmallVector<mlir::Type> ins, outs;
      for (mlir::Type t : type.getInputs()) ins.push_back(AsBf16(t));
      for (mlir::Type t : type.getResults()) outs.push_back(AsBf16(t));
      if (llvm::any_of(type.getInputs(), HasI16) || llvm::any_of(type.getResults(), HasI16)) {
        f.setType(b.getFunctionType(ins, outs));
      }
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> createBf16TypesPass() { return std::make_unique<Bf16TypesPass>(); }

}  // namespace trn::ir
