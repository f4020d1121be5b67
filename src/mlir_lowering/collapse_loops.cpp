// `trn-collapse-loops`: merges adjacent loops of a linalg.generic on buffers where every operand
// lays the two dimensions out contiguously (host_passes.h says when and why).
#include "llvm/ADT/DenseMap.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/Pass.h"
#include "mlir_lowering/host_passes.h"

namespace trn::mlir_lowering {
namespace {

// One operand of the generic: its map, and the static shape and strides of its buffer (empty
// `strides` when they are not all static: such an operand blocks every merge it takes part in).
struct Operand {
  mlir::AffineMap map;
  llvm::ArrayRef<int64_t> shape;
  llvm::SmallVector<int64_t> strides;
};

// Result position of loop dimension `dim` in `map`, or -1 when the map does not use it.
int Position(mlir::AffineMap map, unsigned dim) {
  for (unsigned k = 0; k < map.getNumResults(); ++k) {
    auto d = map.getResult(k).dyn_cast<mlir::AffineDimExpr>();
    if (d && d.getPosition() == dim) return static_cast<int>(k);
  }
  return -1;
}

// Whether loops `i` and `i + 1` can run as one loop: the same iterator type, and in every
// operand either neither appears, or `i` and `i + 1` are adjacent results (in that order) whose
// buffer dimensions are contiguous (stride of i = stride of i+1 times the size of i+1).
bool Mergeable(unsigned i, llvm::ArrayRef<mlir::utils::IteratorType> iterators, llvm::ArrayRef<Operand> operands) {
  if (iterators[i] != iterators[i + 1]) return false;
  for (const Operand& o : operands) {
    const int a = Position(o.map, i), b = Position(o.map, i + 1);
    if (a < 0 && b < 0) continue;
    if (a < 0 || b != a + 1 || o.strides.empty()) return false;
    if (o.strides[a] != o.strides[b] * o.shape[b]) return false;
  }
  return true;
}

// The operands of `op`, or nothing when a map is not a projected permutation with constant-0
// results (broadcast dims of size 1) or a buffer is not a ranked memref of static shape.
std::optional<llvm::SmallVector<Operand>> OperandsOf(mlir::linalg::GenericOp op) {
  llvm::SmallVector<Operand> operands;
  for (mlir::OpOperand& use : op->getOpOperands()) {
    auto type = use.get().getType().dyn_cast<mlir::MemRefType>();
    if (!type || !type.hasStaticShape()) return std::nullopt;
    Operand o;
    o.map = op.getMatchingIndexingMap(&use);
    o.shape = type.getShape();
    llvm::SmallVector<bool> seen(op.getNumLoops(), false);
    for (mlir::AffineExpr e : o.map.getResults()) {
      if (auto d = e.dyn_cast<mlir::AffineDimExpr>()) {
        if (seen[d.getPosition()]) return std::nullopt;
        seen[d.getPosition()] = true;
      } else if (auto c = e.dyn_cast<mlir::AffineConstantExpr>(); !c || c.getValue() != 0) {
        return std::nullopt;
      }
    }
    int64_t offset = 0;
    if (mlir::succeeded(mlir::getStridesAndOffset(type, o.strides, offset)) &&
        llvm::any_of(o.strides, [](int64_t s) { return mlir::ShapedType::isDynamic(s); })) {
      o.strides.clear();
    }
    operands.push_back(std::move(o));
  }
  return operands;
}

// Rewrites `op` with its loops merged into `groups` (consecutive runs of loop dimensions).
void Collapse(mlir::linalg::GenericOp op, llvm::ArrayRef<Operand> operands,
              llvm::ArrayRef<llvm::SmallVector<unsigned>> groups) {
  mlir::MLIRContext* ctx = op.getContext();
  llvm::SmallVector<int> group_of(op.getNumLoops(), -1);  // set on a group's first loop only
  for (size_t g = 0; g < groups.size(); ++g) group_of[groups[g].front()] = static_cast<int>(g);
  mlir::OpBuilder b(op);
  llvm::SmallVector<mlir::Value> buffers;
  llvm::SmallVector<mlir::AffineMap> maps;
  llvm::DenseMap<std::pair<mlir::Value, mlir::AffineMap>, mlir::Value> views;
  for (auto [use, o] : llvm::zip(op->getOpOperands(), operands)) {
    llvm::SmallVector<mlir::ReassociationIndices> reassociation;
    llvm::SmallVector<mlir::AffineExpr> results;
    for (unsigned k = 0; k < o.map.getNumResults();) {
      mlir::AffineExpr e = o.map.getResult(k);
      auto d = e.dyn_cast<mlir::AffineDimExpr>();
      const size_t width = d ? groups[group_of[d.getPosition()]].size() : 1;
      mlir::ReassociationIndices r;
      for (size_t j = 0; j < width; ++j) r.push_back(static_cast<int64_t>(k + j));
      reassociation.push_back(std::move(r));
      results.push_back(d ? mlir::getAffineDimExpr(static_cast<unsigned>(group_of[d.getPosition()]), ctx) : e);
      k += static_cast<unsigned>(width);
    }
    mlir::Value buffer = use.get();
    if (reassociation.size() != o.map.getNumResults()) {
      // One view per buffer: an in-place update (trn-tie-in-place made input and output one
      // value) must stay one pointer, or LLVM guards the loop with an overlap check.
      mlir::Value& view = views[{buffer, o.map}];
      if (!view) view = b.create<mlir::memref::CollapseShapeOp>(op.getLoc(), buffer, reassociation).getResult();
      buffer = view;
    }
    buffers.push_back(buffer);
    maps.push_back(mlir::AffineMap::get(static_cast<unsigned>(groups.size()), 0, results, ctx));
  }
  llvm::SmallVector<mlir::utils::IteratorType> iterators;
  for (const auto& g : groups) iterators.push_back(op.getIteratorTypesArray()[g.front()]);
  const size_t num_inputs = op.getNumDpsInputs();
  auto merged = b.create<mlir::linalg::GenericOp>(
      op.getLoc(), mlir::TypeRange{}, llvm::ArrayRef<mlir::Value>(buffers).take_front(num_inputs),
      llvm::ArrayRef<mlir::Value>(buffers).drop_front(num_inputs), maps, iterators);
  merged.getRegion().takeBody(op.getRegion());
  op.erase();
}

struct CollapseLoopsPass : public mlir::PassWrapper<CollapseLoopsPass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CollapseLoopsPass)

  llvm::StringRef getArgument() const final { return "trn-collapse-loops"; }
  llvm::StringRef getDescription() const final {
    return "Merge adjacent loops of a linalg.generic on buffers that every operand lays out contiguously";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::memref::MemRefDialect, mlir::linalg::LinalgDialect>();
  }

  void runOnOperation() override {
    llvm::SmallVector<mlir::linalg::GenericOp> ops;
    getOperation().walk([&](mlir::linalg::GenericOp op) { ops.push_back(op); });
    for (mlir::linalg::GenericOp op : ops) {
      if (!op.hasBufferSemantics() || op.hasIndexSemantics() || op.getNumLoops() < 2 ||
          op->hasAttr("library_call")) {
        continue;
      }
      std::optional<llvm::SmallVector<Operand>> operands = OperandsOf(op);
      if (!operands) continue;
      const llvm::SmallVector<mlir::utils::IteratorType> iterators = op.getIteratorTypesArray();
      llvm::SmallVector<llvm::SmallVector<unsigned>> groups = {{0}};
      for (unsigned i = 0; i + 1 < op.getNumLoops(); ++i) {
        if (Mergeable(i, iterators, *operands)) {
          groups.back().push_back(i + 1);
        } else {
          groups.push_back({i + 1});
        }
      }
      if (groups.size() < op.getNumLoops()) Collapse(op, *operands, groups);
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> createCollapseLoopsPass() { return std::make_unique<CollapseLoopsPass>(); }

}  // namespace trn::mlir_lowering
