// trn-lower-linalg: advanced indexing, which the group lowering leaves as ATen runtime calls with
// the index list as inputs (trn.extern_lists[0]: 1 per index tensor, 0 per None):
//  - `aten::index` (x[idx], x[:, idx], x[i, j]): a gather. The index tensors sit on adjacent dims
//    of self, which is seen as [pre, rows, post] (rows = the indexed dims merged); each index is
//    wrapped (i + size where i < 0) and the row is their mixed-radix combination, computed per
//    block of <= 128 indices on [P, 1] i32 tiles; then `dma_gather` brings row L[p] of the
//    [rows, pre, post] window into partition p and a DMA stores the block to [pre, N, post].
//  - `aten::_index_put_impl_` / `aten::index_put` with accumulate=True (x[idx] += v, index's
//    backward): self copied to the result (unless it is self's buffer), then `dma_scatter_add`
//    of the values' rows at the same rows, in index order (ATen's CPU order per element).
// Out of range: with one index tensor the wrapped row is outside the table, with several a
// per-dim check marks the row -1; either fails the indirect DMA, which the runtime raises as
// IndexError (never an out-of-bounds read).
#include <string>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir_lowering/host_passes.h"
#include "mlir_lowering/trn/LowerLinalgImpl.h"
#include "mlir_lowering/trn/TrnRefuse.h"

namespace trn::ir::lower_linalg_detail {
namespace {

using ::trn::mlir_lowering::kExternIntsAttr;
using ::trn::mlir_lowering::kExternListsAttr;

constexpr int64_t kMaxChunk = 2048;  // free elements of a gathered block per partition

// Dims [lo, hi) of a buffer as one axis: (size, stride) when each dim (of size > 1) steps over
// the next one exactly (a row-major run); std::nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> Merge(llvm::ArrayRef<int64_t> sizes, llvm::ArrayRef<int64_t> strides,
                                                 int64_t lo, int64_t hi) {
  int64_t size = 1, stride = 1, inner = -1;  // inner: the last dim of size > 1 seen so far
  for (int64_t d = hi - 1; d >= lo; --d) {
    if (sizes[d] == 1) continue;
    if (inner >= 0 && strides[d] != strides[inner] * sizes[inner]) return std::nullopt;
    if (inner < 0) stride = strides[d];
    inner = d;
    size *= sizes[d];
  }
  return std::make_pair(size, stride);
}

bool Dense(llvm::ArrayRef<int64_t> sizes, llvm::ArrayRef<int64_t> strides) {
  int64_t expect = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expect) return false;
    expect *= sizes[d];
  }
  return true;
}

}  // namespace

bool Lowerer::IsAdvancedIndex(llvm::StringRef name) {
  return name == "aten::index" || name == "aten::index_put" || name == "aten::index_put_" ||
         name == "aten::_index_put_impl" || name == "aten::_index_put_impl_";
}

// Rows of self named by the index tiles of one block: L = sum_j wrap(i_j) * (sizes of the later
// indexed dims), with -1 where some i_j is outside its dim (several index tensors only).
Value Lowerer::IndexRows(llvm::ArrayRef<Value> tiles, llvm::ArrayRef<int64_t> sizes, int64_t p) {
  const mlir::Type i32 = b_.getI32Type();
  auto scalar = [&](Value src, const char* op, double imm, mlir::Type type) {
    Value dst = Sbuf(p, {1}, type);
    Make<TensorScalarOp>(src, dst, b_.getStringAttr(op), b_.getF32FloatAttr(static_cast<float>(imm)), Value());
    return dst;
  };
  auto tensor = [&](Value lhs, Value rhs, const char* op) {
    Value dst = Sbuf(p, {1}, i32);
    Make<TensorTensorOp>(lhs, rhs, dst, b_.getStringAttr(op));
    return dst;
  };
  Value rows, bad;
  for (size_t j = 0; j < tiles.size(); ++j) {
    const double size = static_cast<double>(sizes[j]);
    // w = i + size * (i < 0): PyTorch's wrap of a negative index.
    Value w = tensor(tiles[j], scalar(scalar(tiles[j], "is_lt", 0, i32), "multiply", size, i32), "add");
    if (tiles.size() > 1) {
      Value out = tensor(scalar(w, "is_lt", 0, i32), scalar(w, "is_ge", size, i32), "add");
      bad = bad ? tensor(bad, out, "add") : out;
    }
    rows = rows ? tensor(scalar(rows, "multiply", size, i32), w, "add") : w;
  }
  if (bad) {
    Value minus_one = Sbuf(p, {1}, i32);
    Make<MemsetOp>(minus_one, b_.getF64FloatAttr(-1.0));
    Make<CopyPredicatedOp>(minus_one, scalar(bad, "is_gt", 0, b_.getI1Type()), rows);
  }
  return rows;
}

// Operands: ctx, op index, self, the index tensors, [values,] result.
LogicalResult Lowerer::LowerAdvancedIndex(mlir::linalg::GenericOp g) {
  const std::string name = g->getAttrOfType<mlir::StringAttr>(::trn::mlir_lowering::kExternOpAttr).getValue().str();
  const bool put = name != "aten::index";
  auto lists = g->getAttrOfType<mlir::ArrayAttr>(kExternListsAttr);
  auto present = lists && !lists.empty() ? lists[0].dyn_cast<mlir::DenseI64ArrayAttr>() : nullptr;
  if (!present) return g.emitOpError("advanced indexing without its index list (trn.extern_lists)");
  llvm::SmallVector<int64_t> dims;
  for (size_t d = 0; d < present.size(); ++d) {
    if (present[d] != 0) dims.push_back(static_cast<int64_t>(d));
  }
  const int64_t k = static_cast<int64_t>(dims.size());
  if (k == 0 || g->getNumOperands() != static_cast<unsigned>(4 + k + (put ? 1 : 0))) {
    return g.emitOpError("advanced indexing with ") << g->getNumOperands() << " operands for " << k << " indices";
  }
  if (dims.back() - dims.front() != k - 1) return refuse(g) << "index tensors on dims that are not adjacent";
  if (put) {
    auto ints = g->getAttrOfType<mlir::DenseI64ArrayAttr>(kExternIntsAttr);
    if (!ints || ints.empty() || ints[0] == 0) {
      return refuse(g) << "index_put without accumulate (no overwriting indirect DMA in the trn dialect)";
    }
  }
  Value self = g->getOperand(2), out = g->getOperand(g->getNumOperands() - 1);
  Value values = put ? g->getOperand(3 + k) : Value();
  auto self_type = self.getType().dyn_cast<mlir::MemRefType>();
  auto out_type = out.getType().dyn_cast<mlir::MemRefType>();
  if (!self_type || !out_type || !self_type.hasStaticShape() || !out_type.hasStaticShape() ||
      dims.back() >= self_type.getRank()) {
    return g.emitOpError("advanced indexing operands must be memrefs of static shape");
  }
  std::string why;
  std::optional<Hbm> self_hbm = HbmOf(self, &why), out_hbm = self_hbm ? HbmOf(out, &why) : std::nullopt;
  if (!out_hbm) return refuse(g) << "advanced indexing operand: " << why;
  llvm::SmallVector<Hbm> index_hbm;
  llvm::SmallVector<int64_t> index_shape;
  for (int64_t j = 0; j < k; ++j) {
    Value idx = g->getOperand(3 + j);
    auto type = idx.getType().dyn_cast<mlir::MemRefType>();
    if (!type || !type.hasStaticShape()) return g.emitOpError("index tensors must be memrefs of static shape");
    if (j > 0 && type.getShape() != llvm::ArrayRef<int64_t>(index_shape)) {
      return refuse(g) << "index tensors of different shapes (broadcast; no trn lowering)";
    }
    index_shape.assign(type.getShape().begin(), type.getShape().end());
    if (!ElementOf(idx).isInteger(64) && !ElementOf(idx).isInteger(32)) {
      return refuse(g) << "indices must be int32 or int64";
    }
    std::optional<Hbm> h = HbmOf(idx, &why);
    if (!h) return refuse(g) << "index operand: " << why;
    if (!Dense(type.getShape(), h->strides)) return refuse(g) << "strided index tensors (no trn lowering)";
    index_hbm.push_back(*h);
  }
  int64_t n = 1;
  for (int64_t s : index_shape) n *= s;
  // self as [pre, rows, post] (each a merged run of dims).
  const llvm::ArrayRef<int64_t> shape = self_type.getShape();
  const int64_t rank = self_type.getRank();
  auto pre = Merge(shape, self_hbm->strides, 0, dims.front());
  auto rows = Merge(shape, self_hbm->strides, dims.front(), dims.back() + 1);
  auto post = Merge(shape, self_hbm->strides, dims.back() + 1, rank);
  if (!pre || !rows || !post) return refuse(g) << "advanced indexing of a strided tensor (no trn lowering)";
  llvm::SmallVector<int64_t> sizes(shape.begin() + dims.front(), shape.begin() + dims.back() + 1);
  const int64_t rows_stride = rows->second;
  const int64_t npre = pre->first, npost = post->first;
  // The gathered (or added) block: [pre dims, index dims, post dims] (the indexed result's shape),
  // each run of dims merged: [pre, N, post] with its strides (0 for values broadcast along a run).
  Value block_buffer = put ? values : out;
  std::optional<Hbm> block_hbm = put ? HbmOf(values, &why) : out_hbm;
  auto block_type = block_buffer.getType().dyn_cast<mlir::MemRefType>();
  const int64_t index_rank = static_cast<int64_t>(index_shape.size());
  const int64_t block_rank = dims.front() + index_rank + (rank - dims.back() - 1);
  if (!block_hbm || !block_type || !block_type.hasStaticShape() || block_type.getRank() != block_rank ||
      block_type.getNumElements() != npre * n * npost) {
    return refuse(g) << (put ? "index_put values" : "index result") << " not of the indexed shape (no trn lowering)";
  }
  const llvm::ArrayRef<int64_t> block_shape = block_type.getShape();
  auto block_pre = Merge(block_shape, block_hbm->strides, 0, dims.front());
  auto block_n = Merge(block_shape, block_hbm->strides, dims.front(), dims.front() + index_rank);
  auto block_post = Merge(block_shape, block_hbm->strides, dims.front() + index_rank, block_rank);
  if (!block_pre || !block_n || !block_post || block_pre->first != npre || block_post->first != npost) {
    return refuse(g) << (put ? "index_put values" : "index result") << " strided across dims (no trn lowering)";
  }
  const mlir::Type element = DeviceType(ElementOf(self));
  if (!Supported(self) || !Supported(out) || (put && (!ElementOf(self).isF32() || !ElementOf(values).isF32()))) {
    return refuse(g) << (put ? "index_put of a type other than f32" : "gathers an element type that has no trn lowering");
  }
  if (put && (!Dense(shape, self_hbm->strides) || !Dense(out_type.getShape(), out_hbm->strides))) {
    return refuse(g) << "index_put of a strided tensor (no trn lowering)";
  }
  if (put && (self_hbm->memref != out_hbm->memref || self_hbm->offset != out_hbm->offset)) {
    // The result starts as self: flat blocks of [<= 128, <= 2048] through SBUF.
    const int64_t total = self_type.getNumElements(), c = std::min(kMaxChunk, total);
    for (int64_t e0 = 0; e0 < total;) {
      const int64_t p = std::min<int64_t>(kMaxPartitions, (total - e0) / c);
      const int64_t pc = p > 0 ? p : 1, cc = p > 0 ? c : total - e0;
      Value t = Sbuf(pc, {cc}, b_.getF32Type());
      SetHbmWindow(Make<DmaCopyOp>(self_hbm->memref, t), self_hbm->offset + e0, {pc, cc}, {cc, 1});
      SetHbmWindow(Make<DmaCopyOp>(t, out_hbm->memref), out_hbm->offset + e0, {pc, cc}, {cc, 1});
      e0 += pc * cc;
    }
  }
  // Chunks of the [pre, post] free window: post first, then as many pre as fit.
  const int64_t cq = std::min(kMaxChunk, npost), cp = std::max<int64_t>(1, std::min(npre, kMaxChunk / cq));
  const Hbm& table = put ? *out_hbm : *self_hbm;
  for (int64_t n0 = 0; n0 < n; n0 += kMaxPartitions) {
    const int64_t p = std::min<int64_t>(kMaxPartitions, n - n0);
    llvm::SmallVector<Value> tiles;
    for (const Hbm& h : index_hbm) {
      Value t = Sbuf(p, {1}, b_.getI32Type());
      SetHbmWindow(Make<DmaCopyOp>(h.memref, t), h.offset + n0, {p, 1}, {1, 1});
      tiles.push_back(t);
    }
    Value idx = IndexRows(tiles, sizes, p);
    for (int64_t a0 = 0; a0 < npre; a0 += cp) {
      const int64_t a = std::min(cp, npre - a0);
      for (int64_t b0 = 0; b0 < npost; b0 += cq) {
        const int64_t bq = std::min(cq, npost - b0);
        const int64_t table_offset = table.offset + a0 * pre->second + b0 * post->second;
        const int64_t block_offset =
            block_hbm->offset + a0 * block_pre->second + n0 * block_n->second + b0 * block_post->second;
        const llvm::SmallVector<int64_t, 3> block_strides = {block_n->second, block_pre->second, block_post->second};
        Value block = Sbuf(p, {a * bq}, put ? b_.getF32Type() : element);
        if (put) {
          SetHbmWindow(Make<DmaCopyOp>(block_hbm->memref, block), block_offset, {p, a, bq}, block_strides);
          SetHbmWindow(Make<DmaScatterAddOp>(block, idx, table.memref), table_offset, {rows->first, a, bq},
                       {rows_stride, pre->second, post->second});
        } else {
          SetHbmWindow(Make<DmaGatherOp>(table.memref, idx, block), table_offset, {rows->first, a, bq},
                       {rows_stride, pre->second, post->second});
          SetHbmWindow(Make<DmaCopyOp>(block, block_hbm->memref), block_offset, {p, a, bq}, block_strides);
        }
      }
    }
  }
  return success();
}

}  // namespace trn::ir::lower_linalg_detail
