#include "mlir_lowering/ir_emitter.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir_lowering/host_passes.h"
#include "mlir_lowering/ir_internal.h"

namespace trn::mlir_lowering {

using ir::Unwrap;
using ir::Wrap;

struct IrEmitter::Impl {
  IrModule module = IrModule::Create();
  mlir::MLIRContext* ctx = &module.context();
  mlir::OpBuilder b{ctx};
  mlir::Location loc = mlir::UnknownLoc::get(ctx);
  mlir::func::FuncOp func;
  mlir::Block* entry = nullptr;
  bool has_params = false;
  mlir::Operation* last_param_op = nullptr;  // the extracts of runtime scalars, at entry
  std::vector<std::vector<int64_t>> input_strides;
  bool finished = false;

  mlir::AffineMap MapOf(const std::vector<AffineTerm>& terms, int64_t loops) const {
    llvm::SmallVector<mlir::AffineExpr> exprs;
    for (const AffineTerm& t : terms) {
      mlir::AffineExpr e;
      for (const auto& [dim, coeff] : t.coeffs) {
        mlir::AffineExpr d = mlir::getAffineDimExpr(static_cast<unsigned>(dim), ctx);
        if (coeff != 1) d = d * coeff;
        e = e ? e + d : d;
      }
      if (t.constant != 0 || !e) {
        mlir::AffineExpr c = mlir::getAffineConstantExpr(t.constant, ctx);
        e = e ? e + c : c;
      }
      exprs.push_back(e);
    }
    return mlir::AffineMap::get(static_cast<unsigned>(loops), 0, exprs, ctx);
  }

  mlir::DenseI64ArrayAttr I64Array(const std::vector<int64_t>& v) const {
    return mlir::DenseI64ArrayAttr::get(ctx, v);
  }
};

IrEmitter::IrEmitter(std::string func_name) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.func = mlir::func::FuncOp::create(m.loc, func_name, m.b.getFunctionType({m.b.getI64Type()}, {}));
  m.module.module().push_back(m.func);
  m.entry = m.func.addEntryBlock();
  m.b.setInsertionPointToEnd(m.entry);
}

IrEmitter::~IrEmitter() = default;

void IrEmitter::SetOp(int64_t index, absl::string_view name, absl::string_view file, int line) {
  const mlir::StringAttr op = mlir::StringAttr::get(impl_->ctx, absl::StrCat("op ", index, " ", std::string(name)));
  if (file.empty()) {
    impl_->loc = mlir::NameLoc::get(op);
    return;
  }
  impl_->loc = mlir::NameLoc::get(
      op, mlir::FileLineColLoc::get(impl_->ctx, llvm::StringRef(file.data(), file.size()), line, 0));
}

IrValue IrEmitter::ctx() const { return Wrap(impl_->entry->getArgument(0)); }

IrValue IrEmitter::AddInput(const std::vector<int64_t>& sizes, c10::ScalarType dtype, std::vector<int64_t> strides) {
  impl_->input_strides.push_back(std::move(strides));
  return Wrap(impl_->entry->addArgument(ir::TensorType(impl_->ctx, sizes, dtype), impl_->loc));
}

IrValue IrEmitter::Param(int64_t k) {
  Impl& m = *impl_;
  if (!m.has_params) {
    m.entry->insertArgument(1u, mlir::RankedTensorType::get({mlir::ShapedType::kDynamic}, m.b.getF64Type()), m.loc);
    m.has_params = true;
  }
  mlir::OpBuilder at(m.ctx);
  if (m.last_param_op != nullptr) {
    at.setInsertionPointAfter(m.last_param_op);
  } else {
    at.setInsertionPointToStart(m.entry);
  }
  mlir::Value index = at.create<mlir::arith::ConstantIndexOp>(m.loc, k);
  auto extract = at.create<mlir::tensor::ExtractOp>(m.loc, m.entry->getArgument(1), mlir::ValueRange{index});
  m.last_param_op = extract;
  return Wrap(extract);
}

bool IrEmitter::IsArgument(IrValue v) const {
  auto arg = Unwrap(v).dyn_cast<mlir::BlockArgument>();
  return arg && arg.getOwner() == impl_->entry;
}

IrValue IrEmitter::Constant(const c10::Scalar& value, c10::ScalarType dtype) {
  return Wrap(impl_->b.create<mlir::arith::ConstantOp>(
      impl_->loc, ir::ConstantAttr(impl_->ctx, value, dtype, /*stored=*/true)));
}

IrValue IrEmitter::Empty(const std::vector<int64_t>& shape, c10::ScalarType dtype) {
  return Wrap(impl_->b.create<mlir::tensor::EmptyOp>(impl_->loc, shape, ir::ElementType(impl_->ctx, dtype)));
}

IrValue IrEmitter::Filled(const std::vector<int64_t>& shape, c10::ScalarType dtype, IrValue value) {
  const mlir::Value empty = Unwrap(Empty(shape, dtype));
  const mlir::Value v = Unwrap(value);
  return Wrap(
      impl_->b.create<mlir::linalg::FillOp>(impl_->loc, mlir::ValueRange{v}, mlir::ValueRange{empty}).getResult(0));
}

std::vector<IrValue> IrEmitter::Generic(int64_t loops, const std::vector<int64_t>& reduced,
                                        const std::vector<GenericOperand>& ins, const std::vector<GenericOperand>& outs,
                                        const Body& body, const ExternAttrs* extern_attrs) {
  Impl& m = *impl_;
  llvm::SmallVector<mlir::Value> in_values, out_values;
  llvm::SmallVector<mlir::Type> result_types;
  llvm::SmallVector<mlir::AffineMap> maps;
  for (const GenericOperand& in : ins) {
    in_values.push_back(Unwrap(in.value));
    maps.push_back(m.MapOf(in.map, loops));
  }
  for (const GenericOperand& out : outs) {
    out_values.push_back(Unwrap(out.value));
    result_types.push_back(out_values.back().getType());
    maps.push_back(m.MapOf(out.map, loops));
  }
  llvm::SmallVector<mlir::utils::IteratorType> iterators(static_cast<size_t>(loops), mlir::utils::IteratorType::parallel);
  for (int64_t r : reduced) iterators[static_cast<size_t>(r)] = mlir::utils::IteratorType::reduction;
  const mlir::Location loc = m.loc;
  auto op = m.b.create<mlir::linalg::GenericOp>(
      loc, result_types, in_values, out_values, maps, iterators,
      [&](mlir::OpBuilder& nested, mlir::Location, mlir::ValueRange args) {
        ScalarBuilder sb(&nested, loc.getAsOpaquePointer());
        std::vector<IrValue> block_args;
        for (mlir::Value a : args) block_args.push_back(Wrap(a));
        llvm::SmallVector<mlir::Value> yields;
        for (IrValue y : body(sb, block_args)) yields.push_back(Unwrap(y));
        nested.create<mlir::linalg::YieldOp>(loc, yields);
      });
  if (extern_attrs != nullptr) {
    const ExternAttrs& e = *extern_attrs;
    op.setLibraryCallAttr(mlir::StringAttr::get(m.ctx, e.call));
    auto arrays = [&](const std::vector<std::vector<int64_t>>& lists) {
      llvm::SmallVector<mlir::Attribute> a;
      for (const std::vector<int64_t>& l : lists) a.push_back(m.I64Array(l));
      return mlir::ArrayAttr::get(m.ctx, a);
    };
    if (!e.perms.empty()) op->setAttr(kExternPermsAttr, arrays(e.perms));
    if (!e.rows.empty()) op->setAttr(kExternRowsAttr, m.I64Array(e.rows));
    op->setAttr(kExternOpAttr, mlir::StringAttr::get(m.ctx, e.op));
    op->setAttr(kExternIntsAttr, m.I64Array(e.ints));
    op->setAttr(kExternListsAttr, arrays(e.lists));
  }
  std::vector<IrValue> results;
  for (mlir::Value r : op.getResults()) results.push_back(Wrap(r));
  return results;
}

IrValue IrEmitter::MatMul(IrValue a, IrValue b, const std::vector<int64_t>& shape, bool batched) {
  Impl& m = *impl_;
  // The empty tensor before the zero, as the text emitter wrote them (modules compared equal).
  const mlir::Value empty = Unwrap(Empty(shape, c10::kFloat));
  const mlir::Value zero = Unwrap(Constant(0.0, c10::kFloat));
  const mlir::Value out =
      m.b.create<mlir::linalg::FillOp>(m.loc, mlir::ValueRange{zero}, mlir::ValueRange{empty}).getResult(0);
  const mlir::Type type = out.getType();
  const mlir::Value operands[] = {Unwrap(a), Unwrap(b)};  // a ValueRange does not own its values
  const mlir::ValueRange ins(operands);
  if (batched) {
    return Wrap(m.b.create<mlir::linalg::BatchMatmulOp>(m.loc, mlir::TypeRange{type}, ins, mlir::ValueRange{out})
                    .getResult(0));
  }
  return Wrap(
      m.b.create<mlir::linalg::MatmulOp>(m.loc, mlir::TypeRange{type}, ins, mlir::ValueRange{out}).getResult(0));
}

IrValue IrEmitter::InsertSlice(IrValue src, IrValue dst, const std::vector<int64_t>& offsets,
                               const std::vector<int64_t>& sizes) {
  Impl& m = *impl_;
  llvm::SmallVector<mlir::OpFoldResult> o, s, st;
  for (size_t i = 0; i < offsets.size(); ++i) {
    o.push_back(m.b.getIndexAttr(offsets[i]));
    s.push_back(m.b.getIndexAttr(sizes[i]));
    st.push_back(m.b.getIndexAttr(1));
  }
  return Wrap(m.b.create<mlir::tensor::InsertSliceOp>(m.loc, Unwrap(src), Unwrap(dst), o, s, st));
}

absl::StatusOr<IrModule> IrEmitter::Finish(const std::vector<GroupResult>& results) {
  Impl& m = *impl_;
  if (m.finished) return absl::InternalError("IrEmitter::Finish called twice");
  m.finished = true;
  llvm::SmallVector<mlir::Value> values;
  llvm::SmallVector<mlir::Type> types;
  for (const GroupResult& r : results) {
    values.push_back(Unwrap(r.value));
    types.push_back(values.back().getType());
  }
  m.b.setInsertionPointToEnd(m.entry);
  m.b.create<mlir::func::ReturnOp>(m.loc, values);
  m.func.setType(m.b.getFunctionType(m.entry->getArgumentTypes(), types));
  const unsigned leading = m.has_params ? 2 : 1;
  for (size_t i = 0; i < m.input_strides.size(); ++i) {
    m.func.setArgAttr(leading + static_cast<unsigned>(i), kStridesAttr, m.I64Array(m.input_strides[i]));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    m.func.setResultAttr(static_cast<unsigned>(i), kStridesAttr, m.I64Array(results[i].strides));
    if (results[i].tied_argument >= 0) {
      m.func.setResultAttr(static_cast<unsigned>(i), kTiedInputAttr, m.b.getI64IntegerAttr(results[i].tied_argument));
    }
  }
  {
    IrDiagnostics diagnostics(m.module);
    if (mlir::failed(mlir::verify(m.module.module()))) {
      return absl::InternalError(absl::StrCat("the emitted module does not verify:\n", diagnostics.str()));
    }
  }
  return std::move(m.module);
}

}  // namespace trn::mlir_lowering
