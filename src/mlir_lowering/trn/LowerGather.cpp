// trn-lower-linalg: the gathers and scatters the group lowering leaves as ATen runtime calls
// (`aten::embedding`, `aten::index_select` along dim 0, `aten::embedding_dense_backward`),
// recognised by the call's trn.extern_op / trn.extern_ints attributes (host_passes.h), lowered
// to indirect DMA: per block of <= 128 indices, the indices are loaded one per partition (i64
// narrowed to i32), `dma_gather` brings the table row of each index into its partition, and a
// DMA stores the block to the result. No compute engine is involved; an index out of range is
// an error of the dma_gather instruction (the runtime raises ATen's IndexError).
// Embedding backward is the scatter: the result is zeroed, then per block of <= 128 indices the
// gradient rows are added to the rows their indices name (`dma_scatter_add`, in index order, as
// ATen's CPU kernel adds them); rows whose index is padding_idx are zeroed first (a predicated
// copy of zeros, so an inf or NaN there does not reach the result either).
// index_add (in place or not, along dim 0, alpha 1) is the same scatter onto a copy of self, and
// so is scatter_add along dim 0 when its index is a row index (1-D, or expanded along dim 1).
#include <string>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir_lowering/host_passes.h"
#include "mlir_lowering/trn/LowerLinalgImpl.h"
#include "mlir_lowering/trn/TrnRefuse.h"

namespace trn::ir::lower_linalg_detail {
namespace {

using ::trn::mlir_lowering::kExternIntsAttr;
using ::trn::mlir_lowering::kExternOpAttr;
using ::trn::mlir_lowering::kExternPermsAttr;
using ::trn::mlir_lowering::kExternRowsAttr;

// Free elements of one gathered block per partition (as elementwise tiles: 8 KiB of fp32).
constexpr int64_t kMaxRowChunk = 2048;

bool IsIndexAdd(llvm::StringRef name) { return name == "aten::index_add" || name == "aten::index_add_"; }

bool IsScatterAdd(llvm::StringRef name) { return name == "aten::scatter_add" || name == "aten::scatter_add_"; }

bool RowMajor(mlir::MemRefType type, llvm::ArrayRef<int64_t> strides) {
  int64_t expect = 1;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    if (type.getShape()[d] != 1 && strides[d] != expect) return false;
    expect *= type.getShape()[d];
  }
  return true;
}

}  // namespace

bool Lowerer::IsGather(mlir::linalg::GenericOp g) {
  auto name = g->getAttrOfType<mlir::StringAttr>(kExternOpAttr);
  return name && (name.getValue() == "aten::embedding" || name.getValue() == "aten::index_select" ||
                  name.getValue() == "aten::embedding_dense_backward" || IsIndexAdd(name.getValue()) ||
                  IsScatterAdd(name.getValue()) || IsAdvancedIndex(name.getValue()));
}

// Operands of the call: ctx, op index, the reads in argument order (embedding: weight, indices;
// index_select: self, index), then the result.
LogicalResult Lowerer::LowerGather(mlir::linalg::GenericOp g) {
  const std::string name = g->getAttrOfType<mlir::StringAttr>(kExternOpAttr).getValue().str();
  if (g->hasAttr(kExternPermsAttr)) return refuse(g) << "gathers through a permuted operand (no trn lowering)";
  if (name == "aten::embedding_dense_backward") return LowerEmbeddingBackward(g);
  if (IsIndexAdd(name) || IsScatterAdd(name)) return LowerIndexAdd(g);
  if (IsAdvancedIndex(name)) return LowerAdvancedIndex(g);
  if (g->getNumOperands() != 5) return g.emitOpError("is not a two-input, one-result gather");
  Value table = g->getOperand(2), indices = g->getOperand(3), out = g->getOperand(4);
  auto table_type = table.getType().dyn_cast<mlir::MemRefType>();
  auto index_type = indices.getType().dyn_cast<mlir::MemRefType>();
  auto out_type = out.getType().dyn_cast<mlir::MemRefType>();
  if (!table_type || !index_type || !out_type || !table_type.hasStaticShape() || !index_type.hasStaticShape() ||
      !out_type.hasStaticShape()) {
    return g.emitOpError("gather operands must be memrefs of static shape");
  }
  if (name == "aten::index_select") {
    auto ints = g->getAttrOfType<mlir::DenseI64ArrayAttr>(kExternIntsAttr);
    const int64_t rank = table_type.getRank();
    if (!ints || ints.size() != 1 || (ints[0] != 0 && ints[0] != -rank) || rank > 2 || rank < 1) {
      return refuse(g) << "index_select along a dimension other than the first of a 1-D or 2-D tensor (no trn lowering)";
    }
  } else if (table_type.getRank() != 2) {
    return refuse(g) << "embedding of a table that is not 2-D";
  }
  const mlir::Type index_element = ElementOf(indices);
  if (!index_element.isInteger(64) && !index_element.isInteger(32)) return refuse(g) << "indices must be int32 or int64";
  if (!Supported(table) || !Supported(out)) return refuse(g) << "gathers an element type that has no trn lowering";
  std::string why;
  auto table_hbm = HbmOf(table, &why), index_hbm = table_hbm ? HbmOf(indices, &why) : std::nullopt,
       out_hbm = index_hbm ? HbmOf(out, &why) : std::nullopt;
  if (!out_hbm) return refuse(g) << "gather operand: " << why;
  if (!RowMajor(index_type, index_hbm->strides) || !RowMajor(out_type, out_hbm->strides)) {
    return refuse(g) << "gathers with strided indices or result (no trn lowering)";
  }
  const int64_t rows = table_type.getShape()[0];
  const int64_t row = table_type.getRank() == 2 ? table_type.getShape()[1] : 1;
  const int64_t row_stride = table_hbm->strides[0];
  const int64_t col_stride = table_type.getRank() == 2 ? table_hbm->strides[1] : 1;
  const int64_t n = index_type.getNumElements();
  if (n * row != out_type.getNumElements()) return g.emitOpError("result size is not indices x row");
  const mlir::Type element = DeviceType(ElementOf(table));
  for (int64_t n0 = 0; n0 < n; n0 += kMaxPartitions) {
    const int64_t p = std::min<int64_t>(kMaxPartitions, n - n0);
    Value idx = Sbuf(p, {1}, b_.getI32Type());
    SetHbmWindow(Make<DmaCopyOp>(index_hbm->memref, idx), index_hbm->offset + n0, {p, 1}, {1, 1});
    for (int64_t c0 = 0; c0 < row; c0 += kMaxRowChunk) {
      const int64_t c = std::min(kMaxRowChunk, row - c0);
      Value block = Sbuf(p, {c}, element);
      SetHbmWindow(Make<DmaGatherOp>(table_hbm->memref, idx, block), table_hbm->offset + c0 * col_stride, {rows, c},
             {row_stride, col_stride});
      SetHbmWindow(Make<DmaCopyOp>(block, out_hbm->memref), out_hbm->offset + n0 * row + c0, {p, c}, {row, 1});
    }
  }
  return success();
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
// operands ctx, op index, grad_output [..., D], indices [...], result [num_weights, D];
// trn.extern_ints = num_weights, padding_idx, scale_grad_by_freq.
LogicalResult Lowerer::LowerEmbeddingBackward(mlir::linalg::GenericOp g) {
  if (g->getNumOperands() != 5) return g.emitOpError("is not a two-input, one-result embedding backward");
  auto ints = g->getAttrOfType<mlir::DenseI64ArrayAttr>(kExternIntsAttr);
  if (!ints || ints.size() != 3) return g.emitOpError("embedding backward without its int arguments");
  if (ints[2] != 0) return refuse(g) << "embedding backward with scale_grad_by_freq (no trn lowering)";
  const int64_t padding_idx = ints[1];
  Value grad = g->getOperand(2), indices = g->getOperand(3), out = g->getOperand(4);
  auto grad_type = grad.getType().dyn_cast<mlir::MemRefType>();
  auto index_type = indices.getType().dyn_cast<mlir::MemRefType>();
  auto out_type = out.getType().dyn_cast<mlir::MemRefType>();
  if (!grad_type || !index_type || !out_type || !grad_type.hasStaticShape() || !index_type.hasStaticShape() ||
      !out_type.hasStaticShape() || out_type.getRank() != 2) {
    return refuse(g) << "embedding backward operands must be memrefs of static shape, the result 2-D";
  }
  const mlir::Type index_element = ElementOf(indices);
  if (!index_element.isInteger(64) && !index_element.isInteger(32)) return refuse(g) << "indices must be int32 or int64";
  if (!ElementOf(grad).isF32() || !ElementOf(out).isF32()) {
    return refuse(g) << "embedding backward of a type other than f32 (no trn lowering)";
  }
  std::string why;
  auto grad_hbm = HbmOf(grad, &why), index_hbm = grad_hbm ? HbmOf(indices, &why) : std::nullopt,
       out_hbm = index_hbm ? HbmOf(out, &why) : std::nullopt;
  if (!out_hbm) return refuse(g) << "embedding backward operand: " << why;
  if (!RowMajor(index_type, index_hbm->strides) || !RowMajor(grad_type, grad_hbm->strides) ||
      !RowMajor(out_type, out_hbm->strides)) {
    return refuse(g) << "embedding backward with strided operands (no trn lowering)";
  }
  const int64_t rows = out_type.getShape()[0], row = out_type.getShape()[1];
  const int64_t n = index_type.getNumElements();
  if (n * row != grad_type.getNumElements()) return g.emitOpError("grad_output size is not indices x row");
  const mlir::Type f32 = b_.getF32Type(), i32 = b_.getI32Type();
  // The result starts at zero: one zero tile stored over it.
  const int64_t zp = std::min<int64_t>(kMaxPartitions, rows), zc = std::min(kMaxRowChunk, row);
  Value zeros = Sbuf(zp, {zc}, f32);
  Make<MemsetOp>(zeros, b_.getF64FloatAttr(0.0));
  for (int64_t r0 = 0; r0 < rows; r0 += kMaxPartitions) {
    const int64_t p = std::min<int64_t>(kMaxPartitions, rows - r0);
    for (int64_t c0 = 0; c0 < row; c0 += kMaxRowChunk) {
      const int64_t c = std::min(kMaxRowChunk, row - c0);
      Value z = zeros;
      if (p != zp || c != zc) {  // the last block: a tile of its own shape
        z = Sbuf(p, {c}, f32);
        Make<MemsetOp>(z, b_.getF64FloatAttr(0.0));
      }
      SetHbmWindow(Make<DmaCopyOp>(z, out_hbm->memref), out_hbm->offset + r0 * row + c0, {p, c}, {row, 1});
    }
  }
  for (int64_t n0 = 0; n0 < n; n0 += kMaxPartitions) {
    const int64_t p = std::min<int64_t>(kMaxPartitions, n - n0);
    Value idx = Sbuf(p, {1}, i32);
    SetHbmWindow(Make<DmaCopyOp>(index_hbm->memref, idx), index_hbm->offset + n0, {p, 1}, {1, 1});
    for (int64_t c0 = 0; c0 < row; c0 += kMaxRowChunk) {
      const int64_t c = std::min(kMaxRowChunk, row - c0);
      Value rows_tile = Sbuf(p, {c}, f32);
      SetHbmWindow(Make<DmaCopyOp>(grad_hbm->memref, rows_tile), grad_hbm->offset + n0 * row + c0, {p, c}, {row, 1});
      if (padding_idx >= 0 && padding_idx < rows) {
        // pad[p, f] = indices[p] == padding_idx (the index column spread over the row), and
        // zeros copied over those rows.
        Value spread = Sbuf(p, {c}, i32);
        Make<MemsetOp>(spread, b_.getF64FloatAttr(0.0));
        Make<TensorScalarOp>(spread, spread, b_.getStringAttr("add"), mlir::FloatAttr(), idx);
        Value pad = Sbuf(p, {c}, b_.getI1Type());
        Make<TensorScalarOp>(spread, pad, b_.getStringAttr("is_equal"),
                             b_.getF32FloatAttr(static_cast<float>(padding_idx)), Value());
        Value zero = Sbuf(p, {c}, f32);
        Make<MemsetOp>(zero, b_.getF64FloatAttr(0.0));
        Make<CopyPredicatedOp>(zero, pad, rows_tile);
      }
      SetHbmWindow(Make<DmaScatterAddOp>(rows_tile, idx, out_hbm->memref), out_hbm->offset + c0, {rows, c}, {row, 1});
    }
  }
  return success();
}

// index_add(self, dim, index, source, alpha) and scatter_add(self, dim, index, src): operands
// ctx, op index, self [R, ...], index, source, result [R, ...]; trn.extern_ints = dim (, alpha).
// index_add: index [N], source [N, ...]. scatter_add of a 1-D self: index [N], src [>= N]; of a
// 2-D self [R, C]: index [N, D] (D <= C) whose columns repeat (trn.extern_rows names it), src
// [>= N, >= D]: row index[n, 0] of the result's first D columns += src[n, :D].
// Self is copied to the result (unless the result is self's buffer), then per block of <= 128
// indices the source rows are added to the rows their indices name (dma_scatter_add, in index
// order: ATen's CPU order).
LogicalResult Lowerer::LowerIndexAdd(mlir::linalg::GenericOp g) {
  const std::string name = g->getAttrOfType<mlir::StringAttr>(kExternOpAttr).getValue().str();
  const bool scatter = IsScatterAdd(name);
  const char* op = scatter ? "scatter_add" : "index_add";
  if (g->getNumOperands() != 6) return g.emitOpError("is not a three-input, one-result ") << op;
  auto ints = g->getAttrOfType<mlir::DenseI64ArrayAttr>(kExternIntsAttr);
  Value self = g->getOperand(2), indices = g->getOperand(3), source = g->getOperand(4), out = g->getOperand(5);
  auto self_type = self.getType().dyn_cast<mlir::MemRefType>();
  auto index_type = indices.getType().dyn_cast<mlir::MemRefType>();
  auto source_type = source.getType().dyn_cast<mlir::MemRefType>();
  auto out_type = out.getType().dyn_cast<mlir::MemRefType>();
  if (!self_type || !index_type || !source_type || !out_type || !self_type.hasStaticShape() ||
      !index_type.hasStaticShape() || !source_type.hasStaticShape() || out_type.getShape() != self_type.getShape() ||
      self_type.getRank() < 1) {
    return refuse(g) << op << " operands must be memrefs of static shape, the result self's";
  }
  const int64_t rank = self_type.getRank();
  if (!ints || ints.size() != (scatter ? 1u : 2u) || (ints[0] != 0 && ints[0] != -rank)) {
    return refuse(g) << op << " along a dimension other than the first (no trn lowering)";
  }
  if (!scatter && ints[1] != 1) return refuse(g) << "index_add with alpha other than 1 (no trn lowering)";
  const int64_t rows = self_type.getShape()[0], row = self_type.getNumElements() / std::max<int64_t>(rows, 1);
  const int64_t n = scatter ? index_type.getShape()[0] : index_type.getNumElements();
  const int64_t src_rows = source_type.getRank() ? source_type.getShape()[0] : 1;
  const int64_t src_row = source_type.getNumElements() / std::max<int64_t>(src_rows, 1);
  std::string why;
  auto self_hbm = HbmOf(self, &why), index_hbm = self_hbm ? HbmOf(indices, &why) : std::nullopt,
       source_hbm = index_hbm ? HbmOf(source, &why) : std::nullopt,
       out_hbm = source_hbm ? HbmOf(out, &why) : std::nullopt;
  if (!out_hbm) return refuse(g) << op << " operand: " << why;
  int64_t width = row;  // the columns the scatter adds to
  // Row n's index: element n * index_row (the first column of a row index).
  int64_t index_row = index_type.getRank() ? index_hbm->strides[0] : 1;
  if (scatter) {
    // A row index: expanded in the group (trn.extern_rows) or an input whose columns have stride 0.
    auto by_row = g->getAttrOfType<mlir::DenseI64ArrayAttr>(kExternRowsAttr);
    const bool row_index = rank == 1 || (by_row && llvm::is_contained(by_row.asArrayRef(), int64_t{1})) ||
                           (index_type.getRank() == 2 && index_hbm->strides[1] == 0);
    if (rank > 2 || index_type.getRank() != rank || source_type.getRank() != rank || !row_index || index_row < 1) {
      return refuse(g) << "scatter_add whose index is not a row index of a 1-D or 2-D tensor (no trn lowering)";
    }
    width = rank == 2 ? index_type.getShape()[1] : 1;
    if (src_rows < n || src_row < width || width > row) return g.emitOpError("scatter_add index exceeds src or self");
  } else if (n * row != source_type.getNumElements()) {
    return g.emitOpError("source size is not indices x row");
  }
  const mlir::Type index_element = ElementOf(indices);
  if (!index_element.isInteger(64) && !index_element.isInteger(32)) return refuse(g) << "indices must be int32 or int64";
  if (!ElementOf(self).isF32() || !ElementOf(source).isF32()) {
    return refuse(g) << op << " of a type other than f32 (no trn lowering)";
  }
  if (!RowMajor(self_type, self_hbm->strides) || (!scatter && !RowMajor(index_type, index_hbm->strides)) ||
      !RowMajor(source_type, source_hbm->strides) || !RowMajor(out_type, out_hbm->strides)) {
    return refuse(g) << op << " with strided operands (no trn lowering)";
  }
  const mlir::Type f32 = b_.getF32Type(), i32 = b_.getI32Type();
  if (self_hbm->memref != out_hbm->memref || self_hbm->offset != out_hbm->offset) {
    for (int64_t r0 = 0; r0 < rows; r0 += kMaxPartitions) {
      const int64_t p = std::min<int64_t>(kMaxPartitions, rows - r0);
      for (int64_t c0 = 0; c0 < row; c0 += kMaxRowChunk) {
        const int64_t c = std::min(kMaxRowChunk, row - c0);
        Value t = Sbuf(p, {c}, f32);
        SetHbmWindow(Make<DmaCopyOp>(self_hbm->memref, t), self_hbm->offset + r0 * row + c0, {p, c}, {row, 1});
        SetHbmWindow(Make<DmaCopyOp>(t, out_hbm->memref), out_hbm->offset + r0 * row + c0, {p, c}, {row, 1});
      }
    }
  }
  for (int64_t n0 = 0; n0 < n; n0 += kMaxPartitions) {
    const int64_t p = std::min<int64_t>(kMaxPartitions, n - n0);
    Value idx = Sbuf(p, {1}, i32);
    SetHbmWindow(Make<DmaCopyOp>(index_hbm->memref, idx), index_hbm->offset + n0 * index_row, {p, 1}, {index_row, 1});
    for (int64_t c0 = 0; c0 < width; c0 += kMaxRowChunk) {
      const int64_t c = std::min(kMaxRowChunk, width - c0);
      Value rows_tile = Sbuf(p, {c}, f32);
      SetHbmWindow(Make<DmaCopyOp>(source_hbm->memref, rows_tile), source_hbm->offset + n0 * src_row + c0, {p, c},
                   {src_row, 1});
      SetHbmWindow(Make<DmaScatterAddOp>(rows_tile, idx, out_hbm->memref), out_hbm->offset + c0, {rows, c}, {row, 1});
    }
  }
  return success();
}

}  // namespace trn::ir::lower_linalg_detail
