// trn-lower-linalg, matmuls: linalg.matmul / batch_matmul -> TensorE matmuls over K tiles into
// PSUM blocks, with operand tiles reused through a cache and loaded ahead of their use (the rest
// of the pass is in LowerLinalg.cpp; shared declarations in LowerLinalgImpl.h).
#include "mlir_lowering/trn/LowerLinalgImpl.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir_lowering/trn/TrnDialect.h"
#include "mlir_lowering/trn/TrnRefuse.h"

namespace trn::ir::lower_linalg_detail {

// Matmul operand tiles kept in SBUF for reuse across output blocks, bytes per partition.
constexpr int64_t kMatmulCacheBytes = 96 * 1024;
// Matmul steps whose operands are loaded ahead of the step being computed.
constexpr int64_t kMatmulLookahead = 8;

// ---- matmul ----

// Whether `out` was just zero-filled: the nearest earlier op touching it is linalg.fill(0).
mlir::linalg::FillOp Lowerer::ZeroFillBefore(mlir::Operation* op, Value out) {
  for (mlir::Operation* prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (!llvm::is_contained(prev->getOperands(), out)) continue;
    auto fill = mlir::dyn_cast<mlir::linalg::FillOp>(prev);
    if (fill && fill.getDpsInitOperand(0)->get() == out && ConstantOf(fill.getDpsInputOperand(0)->get()) == 0.0) {
      return fill;
    }
    return {};
  }
  return {};
}

// The bf16 / f16 buffer whose exact f32 widening `operand` (a scratch buffer) is, as an Hbm
// indexed like `operand`: `operand` is a memref.alloc written by one generic `yield extf(x)`
// (identity map on the alloc, parallel loops) that comes before `op`, and nothing between the
// two writes the half buffer. `widen` is that generic. nullopt otherwise.
std::optional<Hbm> Lowerer::HalfSource(mlir::Operation* op, Value operand, mlir::linalg::GenericOp* widen) {
  auto alloc = operand.getDefiningOp<mlir::memref::AllocOp>();
  if (!alloc || !alloc.getType().getElementType().isF32()) return std::nullopt;
  mlir::linalg::GenericOp g;
  for (mlir::Operation* user : operand.getUsers()) {
    auto w = mlir::dyn_cast<mlir::linalg::GenericOp>(user);
    if (!w || w.getNumDpsInits() != 1 || w.getDpsInitOperand(0)->get() != operand) continue;
    if (g) return std::nullopt;  // written twice
    g = w;
  }
  if (!g || g.getNumDpsInputs() != 1 || g->getBlock() != op->getBlock() || !g->isBeforeInBlock(op) ||
      g.getNumReductionLoops() != 0 || !g.getIndexingMapsArray()[1].isIdentity()) {
    return std::nullopt;
  }
  mlir::Block& body = g.getRegion().front();
  auto yield = mlir::cast<mlir::linalg::YieldOp>(body.getTerminator());
  auto ext = yield.getOperand(0).getDefiningOp<mlir::arith::ExtFOp>();
  if (!ext || ext.getIn() != body.getArgument(0) || &body.front() != ext.getOperation()) return std::nullopt;
  Value src = g.getDpsInputOperand(0)->get();
  if (!(ElementOf(src).isBF16() || ElementOf(src).isF16())) return std::nullopt;
  std::string why;
  auto access = AccessOf(src, g.getIndexingMapsArray()[0], &why);
  if (!access) return std::nullopt;
  for (mlir::Operation* between = g->getNextNode(); between != op; between = between->getNextNode()) {
    auto dps = mlir::dyn_cast<mlir::DestinationStyleOpInterface>(between);
    for (Value v : between->getOperands()) {
      std::optional<Hbm> h = HbmOf(v, &why);
      const bool written = !dps || llvm::any_of(dps.getDpsInitOperands(), [&](mlir::OpOperand* o) { return o->get() == v; });
      if (h && h->memref == access->hbm.memref && written && !mlir::isa<mlir::memref::DeallocOp>(between)) {
        return std::nullopt;
      }
    }
  }
  *widen = g;
  return Hbm{access->hbm.memref, access->stride, access->base};
}

// Matmuls of bf16 / f16 tensors reach the pass with both operands widened to f32 scratch buffers
// (ops/contractions.cpp: so the host pipeline can compile the same module). TensorE takes the
// half buffers themselves: the products are the same (exact in fp32, accumulated in fp32 PSUM),
// with half the operand bytes and a quarter of the fp32 matmul time. A widening nothing else
// reads is not lowered.
void Lowerer::FindHalfOperands(llvm::ArrayRef<mlir::Operation*> ops) {
  for (mlir::Operation* op : ops) {
    if (!mlir::isa<mlir::linalg::MatmulOp, mlir::linalg::BatchMatmulOp>(op)) continue;
    auto dps = mlir::cast<mlir::DestinationStyleOpInterface>(op);
    Value a = dps.getDpsInputOperand(0)->get(), bm = dps.getDpsInputOperand(1)->get();
    mlir::linalg::GenericOp wa, wb;
    std::optional<Hbm> ha = HalfSource(op, a, &wa), hb = ha ? HalfSource(op, bm, &wb) : std::nullopt;
    if (!hb || ElementOf(ha->memref) != ElementOf(hb->memref)) continue;
    half_operands_[op] = HalfOperands{*ha, *hb, ElementOf(ha->memref)};
    for (auto [v, w] : {std::make_pair(a, wa), std::make_pair(bm, wb)}) {
      const bool only = llvm::all_of(v.getUsers(), [&](mlir::Operation* u) {
        return u == op || u == w.getOperation() || mlir::isa<mlir::memref::DeallocOp>(u);
      });
      if (only) skipped_.insert(w);
    }
  }
}

LogicalResult Lowerer::LowerMatmul(mlir::Operation* op, bool batched) {
  auto dps = mlir::cast<mlir::DestinationStyleOpInterface>(op);
  Value a = dps.getDpsInputOperand(0)->get(), bm = dps.getDpsInputOperand(1)->get(), c = dps.getDpsInitOperand(0)->get();
  auto half = half_operands_.find(op);
  const mlir::Type ta = half != half_operands_.end() ? half->second.element : ElementOf(a);
  const mlir::Type tb = half != half_operands_.end() ? half->second.element : ElementOf(bm), tc = ElementOf(c);
  auto operand = [](mlir::Type t) { return t.isF32() || t.isBF16() || t.isF16(); };
  if (ta != tb || !operand(ta) || !operand(tc)) {
    return refuse(op) << "matmul operands must be f32, bf16 or f16 (and alike)";
  }
  std::string why;
  auto ha = HbmOf(a, &why), hb = HbmOf(bm, &why), hc = HbmOf(c, &why);
  if (!ha || !hb || !hc) return refuse(op) << why;
  if (half != half_operands_.end()) {
    ha = half->second.a;
    hb = half->second.b;
  }
  auto sa = a.getType().cast<mlir::MemRefType>().getShape(), sc = c.getType().cast<mlir::MemRefType>().getShape();
  const int o = batched ? 1 : 0;
  const int64_t batch = batched ? sa[0] : 1, m = sa[o], k = sa[o + 1], n = sc[o + 1];
  if (llvm::any_of(llvm::ArrayRef<int64_t>{batch, m, k, n}, [](int64_t x) { return mlir::ShapedType::isDynamic(x); })) {
    return op->emitOpError("has dynamic shapes");
  }
  const bool fresh = fresh_.count(op) > 0;
  if (m == 0 || n == 0) return success();
  if (k == 0) {
    if (fresh) return LowerFillZero(c);
    return success();
  }
  // Loop dimensions: (b, m, n, k). Accesses by dimension strides.
  auto bs = [&](const Hbm& h) { return batched ? h.strides[0] : 0; };
  OperandAccess A{*ha, ha->offset, {bs(*ha), ha->strides[o], 0, ha->strides[o + 1]}};
  OperandAccess B{*hb, hb->offset, {bs(*hb), 0, hb->strides[o + 1], hb->strides[o]}};
  OperandAccess C{*hc, hc->offset, {bs(*hc), hc->strides[o], hc->strides[o + 1], 0}};
  struct Step {
    int64_t b, m0, n0, k0, mb, nb, kb;
    Value at, bt;
  };
  std::vector<Step> steps;
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t n0 = 0; n0 < n; n0 += kMatmulMaxMovingFree) {
      for (int64_t m0 = 0; m0 < m; m0 += kMatmulMaxStationaryFree) {
        for (int64_t k0 = 0; k0 < k; k0 += kMaxPartitions) {
          steps.push_back({bi, m0, n0, k0, std::min<int64_t>(kMatmulMaxStationaryFree, m - m0),
                           std::min<int64_t>(kMatmulMaxMovingFree, n - n0), std::min<int64_t>(kMaxPartitions, k - k0),
                           Value(), Value()});
        }
      }
    }
  }
  // Operand tiles: stationary A^T[k, m] and moving B[k, n], loaded once and reused while they
  // fit kMatmulCacheBytes (least recently loaded leaves first).
  using Key = std::tuple<int, int64_t, int64_t, int64_t>;
  std::map<Key, Value> cache;
  std::deque<std::pair<Key, int64_t>> order;
  int64_t cached_bytes = 0;
  const int64_t esize = ta.getIntOrFloatBitWidth() / 8;
  auto tile_of = [&](int which, const Step& s) {
    const Key key{which, s.b, s.k0, which == 0 ? s.m0 : s.n0};
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    TileSpace t;
    t.base = {s.b, s.m0, s.n0, s.k0};
    t.partition = {3, 1, s.kb};
    const int64_t free = which == 0 ? s.mb : s.nb;
    t.free = {{which == 0 ? 1 : 2, 1, free}};
    Value tile = Load(which == 0 ? A : B, t, ta);
    cache[key] = tile;
    order.push_back({key, free * esize});
    cached_bytes += free * esize;
    while (cached_bytes > kMatmulCacheBytes && !order.empty()) {
      cached_bytes -= order.front().second;
      cache.erase(order.front().first);
      order.pop_front();
    }
    return tile;
  };
  size_t loaded = 0;
  auto load_until = [&](size_t end) {
    for (; loaded < std::min(end, steps.size()); ++loaded) {
      steps[loaded].at = tile_of(0, steps[loaded]);
      steps[loaded].bt = tile_of(1, steps[loaded]);
    }
  };
  Value acc;
  for (size_t i = 0; i < steps.size(); ++i) {
    load_until(i + 1 + kMatmulLookahead);
    const Step& s = steps[i];
    if (s.k0 == 0) acc = Psum(s.mb, {s.nb});
    auto mm = Make<MatmulOp>(s.at, s.bt, acc);
    if (s.k0 > 0) mm.setAccumulateAttr(b_.getUnitAttr());
    if (s.k0 + s.kb < k) continue;
    // The block is complete: PSUM -> SBUF (plus C when accumulating into it) -> HBM.
    TileSpace t;
    t.base = {s.b, s.m0, s.n0, 0};
    t.partition = {1, 1, s.mb};
    t.free = {{2, 1, s.nb}};
    Value out = Sbuf(s.mb, {s.nb}, tc);
    if (fresh) {
      Make<TensorCopyOp>(acc, out);
    } else {
      Value old = Load(C, t, tc);
      Make<TensorTensorOp>(acc, old, out, b_.getStringAttr("add"));
    }
    Store(out, C, t);
  }
  return success();
}

LogicalResult Lowerer::LowerFillZero(Value c) {
  auto type = c.getType().cast<mlir::MemRefType>();
  std::string why;
  auto acc = AccessOf(c, mlir::AffineMap::getMultiDimIdentityMap(type.getRank(), b_.getContext()), &why);
  if (!acc) return failure();
  for (const TileSpace& t : Tiles(type.getShape(), {})) {
    Value tile = Sbuf(t.partition.count, t.FreeShape(), type.getElementType());
    Make<MemsetOp>(tile, b_.getF64FloatAttr(0.0));
    Store(tile, *acc, t);
  }
  return success();
}

}  // namespace trn::ir::lower_linalg_detail
