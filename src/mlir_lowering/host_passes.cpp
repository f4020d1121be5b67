// The host pipeline's module passes. See host_passes.h for what each one does and why.
#include "mlir_lowering/host_passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <mutex>

namespace trn::mlir_lowering {
namespace {


constexpr llvm::StringLiteral kWritable = "bufferization.writable";

// Applies `fn` to every public func.func with a body; stops at the first failure.
mlir::LogicalResult ForEachPublicFunc(mlir::ModuleOp module,
                                      llvm::function_ref<mlir::LogicalResult(mlir::func::FuncOp)> fn) {
  for (auto func : module.getOps<mlir::func::FuncOp>()) {
    if (!func.isExternal() && func.isPublic() && mlir::failed(fn(func))) {
      return mlir::failure();
    }
  }
  return mlir::success();
}

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
    if (mlir::failed(ForEachPublicFunc(getOperation(), [this](mlir::func::FuncOp f) { return rewrite(f); }))) {
      signalPassFailure();
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
    for (mlir::OpOperand& returned : ret->getOpOperands()) {
      // The new argument carries the result's attributes (e.g. trn.strides) plus writable.
      llvm::SmallVector<mlir::NamedAttribute> attrs(func.getResultAttrs(returned.getOperandNumber()));
      attrs.push_back(b.getNamedAttr(kWritable, b.getBoolAttr(true)));
      auto writable = b.getDictionaryAttr(attrs);
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


bool IsExtern(mlir::Operation* op) {
  auto generic = llvm::dyn_cast_or_null<mlir::linalg::GenericOp>(op);
  if (!generic) {
    return false;
  }
  auto call = generic.getLibraryCallAttr();
  return call && call.getValue().startswith(kExternPrefix);
}

// Whether `op` is a generic whose body reads one of its inits (a fold over size-1 dims, `out + x`,
// all loops parallel). Such a producer must not fuse: MLIR 16 keeps its init as an output of the
// fused op indexed by the consumer's map, so under a broadcast every iteration of the consumer
// accumulated into the one element (compile mode counted 2 non-NaN values of a 1-element
// nanquantile input).
bool ReadsItsInit(mlir::Operation* op) {
  auto generic = llvm::dyn_cast_or_null<mlir::linalg::GenericOp>(op);
  if (!generic) {
    return false;
  }
  for (mlir::OpOperand* init : generic.getDpsInitOperands()) {
    if (generic.payloadUsesValueFromOperand(init)) return true;
  }
  return false;
}

struct FuseElementwisePass
    : public mlir::PassWrapper<FuseElementwisePass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)

  llvm::StringRef getArgument() const final { return "trn-fuse-elementwise"; }
  llvm::StringRef getDescription() const final {
    return "Fuse elementwise linalg ops on tensors (never across extern calls)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::linalg::LinalgDialect, mlir::tensor::TensorDialect,
                    mlir::AffineDialect>();
  }

  void runOnOperation() override {
    mlir::MLIRContext* ctx = &getContext();
    mlir::linalg::ControlFusionFn control = [](mlir::OpOperand* fused) {
      mlir::Operation* producer = fused->get().getDefiningOp();
      return producer != nullptr && producer->hasOneUse() && !IsExtern(producer) &&
             !IsExtern(fused->getOwner()) && !ReadsItsInit(producer);
    };
    mlir::RewritePatternSet patterns(ctx);
    mlir::linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    mlir::linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    mlir::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    mlir::tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    // Patterns run on every op except extern placeholders (and what they contain): their body
    // is a stand-in, so "unused operand" and constant-folding rewrites would corrupt the call.
    // The op-list driver does not revisit producers of a newly fused op, so iterate to a fixed
    // point (each round re-collects the ops).
    mlir::FrozenRewritePatternSet frozen(std::move(patterns));
    for (int round = 0; round < 32; ++round) {
      llvm::SmallVector<mlir::Operation*> ops;
      getOperation()->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* op) {
        if (IsExtern(op)) {
          return mlir::WalkResult::skip();
        }
        if (op != getOperation().getOperation()) {
          ops.push_back(op);
        }
        return mlir::WalkResult::advance();
      });
      bool changed = false;
      if (mlir::failed(mlir::applyOpPatternsAndFold(ops, frozen, mlir::GreedyRewriteStrictness::ExistingAndNewOps,
                                                    &changed))) {
        return signalPassFailure();
      }
      if (!changed) {
        break;
      }
    }
  }
};

// memref type with the same shape and element type and a fully dynamic strided layout.
mlir::MemRefType FullyDynamic(mlir::MemRefType type) {
  llvm::SmallVector<int64_t> strides(type.getRank(), mlir::ShapedType::kDynamic);
  auto layout = mlir::StridedLayoutAttr::get(type.getContext(), mlir::ShapedType::kDynamic, strides);
  return mlir::MemRefType::get(type.getShape(), type.getElementType(), layout,
                               type.getMemorySpace());
}

struct ExternCallsPass
    : public mlir::PassWrapper<ExternCallsPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExternCallsPass)

  llvm::StringRef getArgument() const final { return "trn-extern-calls"; }
  llvm::StringRef getDescription() const final {
    return "Turn linalg.generic placeholders with library_call = \"trn_ext...\" into calls";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::func::FuncDialect, mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    mlir::ModuleOp module = getOperation();
    llvm::SmallVector<mlir::linalg::GenericOp> externs;
    module.walk([&](mlir::linalg::GenericOp op) {
      if (IsExtern(op)) {
        externs.push_back(op);
      }
    });
    for (mlir::linalg::GenericOp op : externs) {
      if (op->getNumResults() != 0) {
        op.emitError() << "extern call " << op.getLibraryCallAttr()
                       << " still has tensor results: run after bufferization";
        return signalPassFailure();
      }
      mlir::OpBuilder b(op);
      llvm::SmallVector<mlir::Value> operands;
      llvm::SmallVector<mlir::Type> types;
      auto perms = op->getAttrOfType<mlir::ArrayAttr>(kExternPermsAttr);
      size_t tensor_operand = 0;
      for (mlir::Value v : op->getOperands()) {
        if (auto memref = v.getType().dyn_cast<mlir::MemRefType>()) {
          const size_t i = tensor_operand++;
          if (perms != nullptr) {
            auto perm = i < perms.size() ? perms[i].dyn_cast<mlir::DenseI64ArrayAttr>() : nullptr;
            if (perm == nullptr || (!perm.empty() && perm.size() != memref.getRank())) {
              op.emitError() << "extern call " << op.getLibraryCallAttr() << ": " << kExternPermsAttr
                             << " has no permutation of rank " << memref.getRank() << " for operand " << i;
              return signalPassFailure();
            }
            if (!perm.empty()) {
              if (!mlir::isPermutationVector(perm.asArrayRef())) {
                op.emitError() << "extern call " << op.getLibraryCallAttr() << ": operand " << i
                               << "'s order is not a permutation";
                return signalPassFailure();
              }
              // The same buffer with sizes and strides reordered. (Not memref.transpose: MLIR 16
              // lowers it to LLVM with the inverse of the permutation its result type has.)
              auto meta = b.create<mlir::memref::ExtractStridedMetadataOp>(op.getLoc(), v);
              llvm::SmallVector<mlir::OpFoldResult> sizes, strides;
              llvm::SmallVector<int64_t> shape;
              for (int64_t d : perm.asArrayRef()) {
                shape.push_back(memref.getDimSize(d));
                sizes.push_back(b.getIndexAttr(memref.getDimSize(d)));
                strides.push_back(meta.getStrides()[d]);
              }
              auto type = FullyDynamic(mlir::MemRefType::get(shape, memref.getElementType()));
              v = b.create<mlir::memref::ReinterpretCastOp>(op.getLoc(), type, meta.getBaseBuffer(),
                                                            mlir::OpFoldResult(meta.getOffset()), sizes, strides);
              memref = type;
            }
          }
          mlir::MemRefType dynamic = FullyDynamic(memref);
          if (dynamic != memref) {
            v = b.create<mlir::memref::CastOp>(op.getLoc(), dynamic, v);
          }
        }
        operands.push_back(v);
        types.push_back(v.getType());
      }
      llvm::StringRef name = op.getLibraryCallAttr().getValue();
      auto fn_type = b.getFunctionType(types, {});
      auto decl = module.lookupSymbol<mlir::func::FuncOp>(name);
      if (!decl) {
        mlir::OpBuilder mb(module.getBodyRegion());
        decl = mb.create<mlir::func::FuncOp>(op.getLoc(), name, fn_type);
        decl.setPrivate();
        decl->setAttr("llvm.emit_c_interface", mb.getUnitAttr());
      } else if (decl.getFunctionType() != fn_type) {
        op.emitError() << "extern " << name << " called with two different signatures";
        return signalPassFailure();
      }
      b.create<mlir::func::CallOp>(op.getLoc(), decl, operands);
      op.erase();
    }
  }
};

struct StaticStridesPass
    : public mlir::PassWrapper<StaticStridesPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(StaticStridesPass)

  llvm::StringRef getArgument() const final { return "trn-static-strides"; }
  llvm::StringRef getDescription() const final {
    return "Give public function arguments the static strides named by trn.strides";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    if (mlir::failed(ForEachPublicFunc(getOperation(), [this](mlir::func::FuncOp f) { return rewrite(f); }))) {
      signalPassFailure();
    }
  }

  mlir::LogicalResult rewrite(mlir::func::FuncOp func) {
    mlir::OpBuilder b(func.getBody());
    llvm::SmallVector<mlir::Type> arg_types(func.getArgumentTypes());
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto strides = func.getArgAttrOfType<mlir::DenseI64ArrayAttr>(i, kStridesAttr);
      if (!strides) {
        continue;
      }
      func.removeArgAttr(i, kStridesAttr);
      mlir::BlockArgument arg = func.getArgument(i);
      auto type = arg.getType().dyn_cast<mlir::MemRefType>();
      if (!type || type.getRank() != static_cast<int64_t>(strides.size())) {
        return func.emitError() << "argument #" << i << " of type " << arg.getType()
                                << " cannot take trn.strides " << strides;
      }
      auto layout = mlir::StridedLayoutAttr::get(func.getContext(), mlir::ShapedType::kDynamic,
                                                 strides.asArrayRef());
      auto fixed = mlir::MemRefType::get(type.getShape(), type.getElementType(), layout,
                                         type.getMemorySpace());
      if (fixed == type) {
        continue;
      }
      arg.setType(fixed);
      arg_types[i] = fixed;
      auto cast = b.create<mlir::memref::CastOp>(func.getLoc(), type, arg);
      arg.replaceAllUsesExcept(cast.getResult(), cast);
    }
    func.setType(b.getFunctionType(arg_types, func.getResultTypes()));
    return mlir::success();
  }
};

struct TieInPlacePass : public mlir::PassWrapper<TieInPlacePass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TieInPlacePass)

  llvm::StringRef getArgument() const final { return "trn-tie-in-place"; }
  llvm::StringRef getDescription() const final {
    return "Read an in-place input through the out argument the caller binds to the same memory";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::memref::MemRefDialect>();
  }

  void runOnOperation() override {
    if (mlir::failed(ForEachPublicFunc(getOperation(), [](mlir::func::FuncOp f) { return rewrite(f); }))) {
      signalPassFailure();
    }
  }

  static mlir::LogicalResult rewrite(mlir::func::FuncOp func) {
    mlir::OpBuilder b(func.getBody());
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto tied = func.getArgAttrOfType<mlir::IntegerAttr>(i, kTiedInputAttr);
      if (!tied) {
        continue;
      }
      func.removeArgAttr(i, kTiedInputAttr);
      const int64_t k = tied.getInt();
      if (k < 0 || k >= static_cast<int64_t>(i)) {
        return func.emitError() << "argument #" << i << " is tied to argument #" << k << ", not an earlier one";
      }
      mlir::BlockArgument out = func.getArgument(i);
      mlir::BlockArgument in = func.getArgument(static_cast<unsigned>(k));
      if (!out.getType().isa<mlir::MemRefType>() || !in.getType().isa<mlir::MemRefType>() ||
          !mlir::memref::CastOp::areCastCompatible(out.getType(), in.getType())) {
        return func.emitError() << "argument #" << i << " of type " << out.getType()
                                << " cannot stand for the argument #" << k << " of type " << in.getType();
      }
      mlir::Value replacement = out;
      if (out.getType() != in.getType()) {
        replacement = b.create<mlir::memref::CastOp>(func.getLoc(), in.getType(), out).getResult();
      }
      in.replaceAllUsesWith(replacement);
    }
    return mlir::success();
  }
};

struct MathApproximationPass
    : public mlir::PassWrapper<MathApproximationPass, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MathApproximationPass)

  llvm::StringRef getArgument() const final { return "trn-math-approximation"; }
  llvm::StringRef getDescription() const final {
    return "Polynomial approximations of f32 math ops (vectorisable, no libm calls)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::math::MathDialect, mlir::arith::ArithDialect, mlir::vector::VectorDialect>();
  }

  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&getContext());
    mlir::populateMathPolynomialApproximationPatterns(patterns);
    // atan/atan2 (max error ~2e-4) and expm1 (cancellation near 0) are not accurate enough for
    // float32 results: they stay libm calls. The patterns are rooted at the op they replace,
    // so rewriting only the listed roots leaves those alone.
    llvm::SmallVector<mlir::Operation*> roots;
    getOperation()->walk([&](mlir::Operation* op) {
      if (op->getDialect() != nullptr && op->getDialect()->getNamespace() == "math" &&
          !llvm::isa<mlir::math::AtanOp, mlir::math::Atan2Op, mlir::math::ExpM1Op>(op)) {
        roots.push_back(op);
      }
    });
    if (mlir::failed(mlir::applyOpPatternsAndFold(roots, std::move(patterns),
                                                  mlir::GreedyRewriteStrictness::ExistingAndNewOps))) {
      return signalPassFailure();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> createFuseElementwisePass() { return std::make_unique<FuseElementwisePass>(); }
std::unique_ptr<mlir::Pass> createResultsToOutArgsPass() { return std::make_unique<ResultsToOutArgsPass>(); }
std::unique_ptr<mlir::Pass> createCheckNoResultsPass() { return std::make_unique<CheckNoResultsPass>(); }
std::unique_ptr<mlir::Pass> createExternCallsPass() { return std::make_unique<ExternCallsPass>(); }
std::unique_ptr<mlir::Pass> createStaticStridesPass() { return std::make_unique<StaticStridesPass>(); }
std::unique_ptr<mlir::Pass> createTieInPlacePass() { return std::make_unique<TieInPlacePass>(); }
std::unique_ptr<mlir::Pass> createMathApproximationPass() { return std::make_unique<MathApproximationPass>(); }

void registerHostPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    mlir::PassRegistration<FuseElementwisePass>();
    mlir::PassRegistration<ResultsToOutArgsPass>();
    mlir::PassRegistration<CheckNoResultsPass>();
    mlir::PassRegistration<ExternCallsPass>();
    mlir::PassRegistration<StaticStridesPass>();
    mlir::PassRegistration<TieInPlacePass>();
    mlir::PassRegistration<MathApproximationPass>();
    mlir::registerPass([] { return createCollapseLoopsPass(); });
  });
}

}  // namespace trn::mlir_lowering
