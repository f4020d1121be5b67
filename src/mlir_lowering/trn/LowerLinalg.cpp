// trn-lower-linalg: linalg on memrefs -> trn tiles and instructions (see TrnPasses.h). This file:
// the pass, the per-op dispatch, HBM windows, tiling, fills and elementwise and reducing generics;
// matmuls are in LowerMatmul.cpp, the declarations both share in LowerLinalgImpl.h.
//
// HBM is the functions' memref arguments (and memref.alloc scratch buffers). Every HBM access
// is a DMA window: an element offset and [partition, free...] sizes and strides, derived from
// the memref's static strides composed with the linalg indexing map, so views (transposes,
// broadcasts, slices) cost nothing but a different window.
#include "mlir_lowering/trn/LowerLinalgImpl.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "mlir_lowering/trn/TrnDialect.h"
#include "mlir_lowering/trn/TrnPasses.h"
#include "mlir_lowering/trn/TrnRefuse.h"

namespace trn::ir {
namespace lower_linalg_detail {

// Free elements per partition of one elementwise tile (fp32: 8 KiB of the 192-256 KiB).
constexpr int64_t kMaxFreeElements = 2048;
// Free axes of a tile (the DMA window: partition + 1..4 free).
constexpr int kMaxFreeAxes = 4;

// ---- HBM windows ----

std::optional<Hbm> HbmOf(Value v, std::string* why) {
  auto type = v.getType().dyn_cast<mlir::MemRefType>();
  if (!type) {
    *why = "not a memref";
    return std::nullopt;
  }
  if (auto sv = v.getDefiningOp<mlir::memref::SubViewOp>()) {  // a static window of a buffer
    auto src = HbmOf(sv.getSource(), why);
    if (!src) return std::nullopt;
    if (mlir::ShapedType::isDynamicShape(sv.getStaticOffsets()) || mlir::ShapedType::isDynamicShape(sv.getStaticStrides()) ||
        sv.getStaticOffsets().size() != src->strides.size()) {
      *why = "a memref.subview with dynamic offsets or strides";
      return std::nullopt;
    }
    Hbm h;
    h.memref = src->memref;
    h.offset = src->offset;
    const llvm::SmallBitVector dropped = sv.getDroppedDims();
    for (size_t i = 0; i < src->strides.size(); ++i) {
      h.offset += sv.getStaticOffsets()[i] * src->strides[i];
      if (!dropped.test(i)) h.strides.push_back(src->strides[i] * sv.getStaticStrides()[i]);
    }
    return h;
  }
  if (!v.isa<mlir::BlockArgument>() && !v.getDefiningOp<mlir::memref::AllocOp>()) {
    *why = "a memref view inside the function (only arguments, allocations and static subviews are HBM buffers)";
    return std::nullopt;
  }
  Hbm h;
  h.memref = v;
  int64_t offset = 0;
  if (type.getRank() == 1 && type.isDynamicDim(0) && type.getElementType().isF64() && v.isa<mlir::BlockArgument>()) {
    h.strides = {1};  // the runtime scalars: the runtime passes them as a contiguous f32 vector
    return h;
  }
  if (mlir::failed(mlir::getStridesAndOffset(type, h.strides, offset)) ||
      llvm::any_of(h.strides, [](int64_t s) { return mlir::ShapedType::isDynamic(s); })) {
    *why = "dynamic strides";
    return std::nullopt;
  }
  return h;
}

std::optional<Linear> Linearize(mlir::AffineExpr e, unsigned dims) {
  Linear l;
  l.coeff.assign(dims, 0);
  if (auto c = e.dyn_cast<mlir::AffineConstantExpr>()) {
    l.constant = c.getValue();
    return l;
  }
  if (auto d = e.dyn_cast<mlir::AffineDimExpr>()) {
    l.coeff[d.getPosition()] = 1;
    return l;
  }
  auto bin = e.dyn_cast<mlir::AffineBinaryOpExpr>();
  if (!bin) return std::nullopt;
  auto a = Linearize(bin.getLHS(), dims), b = Linearize(bin.getRHS(), dims);
  if (!a || !b) return std::nullopt;
  if (e.getKind() == mlir::AffineExprKind::Add) {
    a->constant += b->constant;
    for (unsigned i = 0; i < dims; ++i) a->coeff[i] += b->coeff[i];
    return a;
  }
  if (e.getKind() == mlir::AffineExprKind::Mul) {
    const bool a_const = llvm::all_of(a->coeff, [](int64_t c) { return c == 0; });
    const bool b_const = llvm::all_of(b->coeff, [](int64_t c) { return c == 0; });
    if (!a_const && !b_const) return std::nullopt;
    const Linear& k = a_const ? *a : *b;
    Linear r = a_const ? *b : *a;
    r.constant *= k.constant;
    for (int64_t& c : r.coeff) c *= k.constant;
    return r;
  }
  return std::nullopt;
}

std::optional<OperandAccess> AccessOf(Value memref, mlir::AffineMap map, std::string* why) {
  auto hbm = HbmOf(memref, why);
  if (!hbm) return std::nullopt;
  OperandAccess a;
  a.hbm = *hbm;
  a.base = hbm->offset;
  a.stride.assign(map.getNumDims(), 0);
  for (unsigned j = 0; j < map.getNumResults(); ++j) {
    auto lin = Linearize(map.getResult(j), map.getNumDims());
    if (!lin) {
      *why = "a non-linear indexing map";
      return std::nullopt;
    }
    a.base += hbm->strides[j] * lin->constant;
    for (unsigned d = 0; d < map.getNumDims(); ++d) a.stride[d] += hbm->strides[j] * lin->coeff[d];
  }
  return a;
}

void SetHbmWindow(mlir::Operation* dma, int64_t offset, llvm::ArrayRef<int64_t> sizes, llvm::ArrayRef<int64_t> strides) {
  mlir::Builder b(dma->getContext());
  dma->setAttr(kHbmOffsetAttr, b.getI64IntegerAttr(offset));
  dma->setAttr(kHbmSizesAttr, b.getDenseI64ArrayAttr(sizes));
  dma->setAttr(kHbmStridesAttr, b.getDenseI64ArrayAttr(strides));
}

void SetWindow(mlir::Operation* dma, const OperandAccess& a, const TileSpace& t) {
  mlir::Builder b(dma->getContext());
  int64_t offset = a.base;
  for (size_t d = 0; d < t.base.size(); ++d) offset += a.stride[d] * t.base[d];
  llvm::SmallVector<int64_t> sizes{t.partition.count}, strides{t.partition.dim < 0 ? 0 : a.stride[t.partition.dim] * t.partition.coeff};
  for (const Axis& ax : t.free) {
    sizes.push_back(ax.count);
    strides.push_back(a.stride[ax.dim] * ax.coeff);
  }
  if (t.free.empty()) {
    sizes.push_back(1);
    strides.push_back(1);
  }
  SetHbmWindow(dma, offset, sizes, strides);
}

// ---- the lowering of one function ----

LogicalResult Lowerer::Run() {
  llvm::SmallVector<mlir::Operation*> ops;
  for (mlir::Operation& op : f_.getBody().front()) ops.push_back(&op);
  FindHalfOperands(ops);
  // A matmul right after a zero fill of its output overwrites PSUM instead: no fill needed.
  for (mlir::Operation* op : ops) {
    if (!mlir::isa<mlir::linalg::MatmulOp, mlir::linalg::BatchMatmulOp>(op)) continue;
    auto dps = mlir::cast<mlir::DestinationStyleOpInterface>(op);
    if (mlir::linalg::FillOp fill = ZeroFillBefore(op, dps.getDpsInitOperand(0)->get())) {
      fresh_.insert(op);
      skipped_.insert(fill);
    }
  }
  for (mlir::Operation* op : ops) {
    if (skipped_.count(op)) {
      lowered_.insert(op);
      continue;
    }
    if (mlir::failed(LowerOne(op))) return failure();
  }
  for (mlir::Operation* op : ops) {
    if (lowered_.count(op)) op->erase();
  }
  return success();
}

int64_t Lowerer::SourceOp(mlir::Operation* op) {
  if (auto a = op->getAttrOfType<mlir::IntegerAttr>(kSourceOpAttr)) return a.getInt();
  return 0;
}

LogicalResult Lowerer::LowerOne(mlir::Operation* op) {
  // Allocations are HBM scratch; scalar loads and arith/math outside the generics are pure
  // and evaluated where a generic reads them (LowerGeneric's Get).
  if (mlir::isa<mlir::func::ReturnOp, mlir::memref::AllocOp, mlir::memref::DeallocOp, mlir::memref::LoadOp,
                mlir::memref::SubViewOp>(op) ||
      (op->getDialect() && (op->getDialect()->getNamespace() == "arith" || op->getDialect()->getNamespace() == "math"))) {
    return success();
  }
  b_.setInsertionPoint(op);
  loc_ = op->getLoc();
  source_op_ = SourceOp(op);
  LogicalResult r = failure();
  if (auto mm = mlir::dyn_cast<mlir::linalg::MatmulOp>(op)) {
    r = LowerMatmul(op, /*batched=*/false);
  } else if (mlir::isa<mlir::linalg::BatchMatmulOp>(op)) {
    r = LowerMatmul(op, /*batched=*/true);
  } else if (auto fill = mlir::dyn_cast<mlir::linalg::FillOp>(op)) {
    r = LowerFill(fill);
  } else if (auto copy = mlir::dyn_cast<mlir::memref::CopyOp>(op)) {
    r = LowerCopy(copy);
  } else if (auto g = mlir::dyn_cast<mlir::linalg::GenericOp>(op)) {
    r = LowerGeneric(g);
  } else if (op->getDialect() && op->getDialect()->getNamespace() == "trn") {
    return success();
  } else {
    return refuse(op) << "has no trn lowering";
  }
  if (mlir::succeeded(r)) lowered_.insert(op);
  return r;
}

Value Lowerer::Sbuf(int64_t partitions, llvm::ArrayRef<int64_t> free, mlir::Type element) {
  return Make<AllocOp>(SbufTileType::get(b_.getContext(), partitions, free, element)).getResult();
}
Value Lowerer::Psum(int64_t partitions, llvm::ArrayRef<int64_t> free) {
  return Make<AllocOp>(PsumTileType::get(b_.getContext(), partitions, free, b_.getF32Type())).getResult();
}

Value Lowerer::Load(const OperandAccess& a, const TileSpace& t, mlir::Type element) {
  Value tile = Sbuf(t.partition.count, t.FreeShape(), element);
  auto dma = Make<DmaCopyOp>(a.hbm.memref, tile);
  SetWindow(dma, a, t);
  return tile;
}
void Lowerer::Store(Value tile, const OperandAccess& a, const TileSpace& t) {
  auto dma = Make<DmaCopyOp>(tile, a.hbm.memref);
  SetWindow(dma, a, t);
}

mlir::Type Lowerer::ElementOf(Value memref) { return memref.getType().cast<mlir::MemRefType>().getElementType(); }
// Element types of HBM buffers the NeuronCore reads: f32, bf16, f16 (widened to f32 tiles),
// bool (one byte), i32 and i64 (carried as i32 on chip: DeviceType); f64 only for scratch
// buffers and the runtime-scalar argument (the runtime passes those as f32).
bool Lowerer::Supported(Value memref) {
  const mlir::Type t = ElementOf(memref);
  if (t.isF32() || t.isBF16() || t.isF16() || t.isInteger(1) || t.isInteger(32) || t.isInteger(64)) return true;
  if (!t.isF64()) return false;
  auto type = memref.getType().cast<mlir::MemRefType>();
  return memref.getDefiningOp<mlir::memref::AllocOp>() || (type.getRank() == 1 && type.isDynamicDim(0));
}

// ---- fill ----
LogicalResult Lowerer::LowerFill(mlir::linalg::FillOp fill) {
  Value out = fill.getDpsInitOperand(0)->get();
  std::optional<double> value = ConstantOf(fill.getDpsInputOperand(0)->get());
  if (!value) return refuse(fill) << "fills with a value only known at run time (no trn lowering yet)";
  auto type = out.getType().cast<mlir::MemRefType>();
  if (!Supported(out)) return refuse(fill) << "element type has no trn lowering";
  mlir::AffineMap id = mlir::AffineMap::getMultiDimIdentityMap(type.getRank(), b_.getContext());
  std::string why;
  auto acc = AccessOf(out, id, &why);
  if (!acc) return refuse(fill) << why;
  for (const TileSpace& t : Tiles(type.getShape(), {})) {
    Value tile = Sbuf(t.partition.count, t.FreeShape(), DeviceType(type.getElementType()));
    Make<MemsetOp>(tile, b_.getF64FloatAttr(*value));
    Store(tile, *acc, t);
  }
  return success();
}

// memref.copy (an insert_slice or a copy of a view, bufferized): through SBUF tiles, HBM to HBM
// not being a DMA here.
LogicalResult Lowerer::LowerCopy(mlir::memref::CopyOp copy) {
  Value src = copy.getSource(), dst = copy.getTarget();
  auto type = src.getType().cast<mlir::MemRefType>();
  if (!Supported(src) || !Supported(dst) || !type.hasStaticShape()) {
    return refuse(copy) << "copies a memref of an element type or shape that has no trn lowering";
  }
  mlir::AffineMap id = mlir::AffineMap::getMultiDimIdentityMap(type.getRank(), b_.getContext());
  std::string why;
  auto from = AccessOf(src, id, &why), to = from ? AccessOf(dst, id, &why) : std::nullopt;
  if (!to) return refuse(copy) << why;
  for (const TileSpace& t : Tiles(type.getShape(), {})) Store(Load(*from, t, DeviceType(type.getElementType())), *to, t);
  return success();
}

std::optional<double> Lowerer::ConstantOf(Value v) {
  auto c = v.getDefiningOp<mlir::arith::ConstantOp>();
  if (!c) return std::nullopt;
  if (auto f = c.getValue().dyn_cast<mlir::FloatAttr>()) return f.getValueAsDouble();
  if (auto i = c.getValue().dyn_cast<mlir::IntegerAttr>()) {
    return i.getType().isInteger(1) ? static_cast<double>(i.getValue().getBoolValue())
                                    : static_cast<double>(i.getValue().getSExtValue());
  }
  return std::nullopt;
}

// Tiles of an iteration space `ranges`; `reduce` marks dimensions that must stay whole in
// the free axes (reductions), every other dimension may be split. `one_free_axis`: outer free
// axes advance one index per tile, so a loop index is affine in (partition, free index) and
// one `iota` computes it (linalg.index).
std::vector<TileSpace> Lowerer::Tiles(llvm::ArrayRef<int64_t> ranges, llvm::ArrayRef<bool> reduce, bool one_free_axis) {
  const int rank = static_cast<int>(ranges.size());
  auto is_reduce = [&](int d) { return d < static_cast<int>(reduce.size()) && reduce[d]; };
  std::vector<TileSpace> tiles;
  if (rank == 0) {
    TileSpace t;
    t.partition = {-1, 0, 1};
    tiles.push_back(t);
    return tiles;
  }
  // The partition dimension: the parallel one with the most rows (up to 128), preferring an
  // outer one over the innermost (which stays a contiguous free axis), then the outermost.
  int pdim = -1;
  auto score = [&](int d) { return std::min<int64_t>(ranges[d], kMaxPartitions) * 2 + (d == rank - 1 ? 0 : 1); };
  for (int d = 0; d < rank; ++d) {
    if (!is_reduce(d) && (pdim < 0 || score(d) > score(pdim))) pdim = d;
  }
  const bool any_reduce = llvm::any_of(reduce, [](bool r) { return r; });
  llvm::SmallVector<Axis> axes;  // free axes, outermost first, before chunking
  int64_t p_count = 0, p_coeff = 1, split_q = 0;
  if (pdim < 0) {  // a full reduction: one partition
    p_count = 1;
  } else if (ranges[pdim] > kMaxPartitions && rank == 1) {
    // A 1-D space: fold it into [P, Q] with P the largest divisor <= 128.
    int64_t p = kMaxPartitions;
    while (ranges[0] % p != 0) --p;
    p_count = p;
    split_q = ranges[0] / p;
    p_coeff = split_q;
  } else {
    p_count = std::min<int64_t>(ranges[pdim], kMaxPartitions);
  }
  if (split_q > 1) axes.push_back({0, 1, split_q});
  for (int d = 0; d < rank; ++d) {
    if (d != pdim && ranges[d] > 1) axes.push_back({d, 1, ranges[d]});
  }
  // Chunk free axes (outer ones first) so a tile holds at most kMaxFreeElements per partition.
  // In a reduction, other parallel axes are iterated one index per tile (tensor_reduce reduces
  // every free axis); chunks of a reduction axis are combined through the output.
  llvm::SmallVector<int64_t> chunk(axes.size());
  int64_t inner = 1;
  for (int i = static_cast<int>(axes.size()) - 1; i >= 0; --i) {
    if ((any_reduce && !is_reduce(axes[i].dim)) || (one_free_axis && i + 1 < static_cast<int>(axes.size()))) {
      chunk[i] = 1;
    } else if (inner * axes[i].count <= kMaxFreeElements) {
      chunk[i] = axes[i].count;
    } else {
      chunk[i] = std::max<int64_t>(1, kMaxFreeElements / inner);
    }
    inner *= chunk[i];
  }
  // A DMA window has at most 4 free axes: past them (a full reduction of a 5-D tensor), the
  // outer ones advance one index per tile too.
  for (int i = 0, many = static_cast<int>(llvm::count_if(chunk, [](int64_t c) { return c > 1; }));
       many > kMaxFreeAxes && i < static_cast<int>(chunk.size()); ++i) {
    if (chunk[i] > 1) chunk[i] = 1, --many;
  }
  // Enumerate: partition chunks x free-axis chunks.
  const int64_t p_total = pdim < 0 ? 1 : (split_q > 1 ? p_count : ranges[pdim]);
  std::vector<int64_t> pos(axes.size(), 0);
  for (int64_t p0 = 0; p0 < p_total; p0 += p_count) {
    std::fill(pos.begin(), pos.end(), 0);
    while (true) {
      TileSpace t;
      t.base.assign(rank, 0);
      if (pdim >= 0) {
        t.partition = {pdim, p_coeff, std::min(p_count, p_total - p0)};
        t.base[pdim] += p0 * p_coeff;
      } else {
        t.partition = {-1, 0, 1};
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        t.base[axes[i].dim] += pos[i] * axes[i].coeff;
        const int64_t n = std::min(chunk[i], axes[i].count - pos[i]);
        if (n > 1) t.free.push_back({axes[i].dim, axes[i].coeff, n});
      }
      tiles.push_back(t);
      int i = static_cast<int>(axes.size()) - 1;
      for (; i >= 0; --i) {
        pos[i] += chunk[i];
        if (pos[i] < axes[i].count) break;
        pos[i] = 0;
      }
      if (i < 0) break;
    }
  }
  return tiles;
}

// ---- elementwise and reducing generics ----

// The element type a tile of memref element type `t` holds (the NeuronCore has no 64-bit
// types: f64 is held as f32, i64 as i32, as the Neuron compiler carries int64; bf16 and f16
// are computed in f32: the DMA widens them and rounds to nearest even when it stores).
mlir::Type Lowerer::DeviceType(mlir::Type t) {
  if (t.isF64() || t.isBF16() || t.isF16()) return mlir::Float32Type::get(t.getContext());
  if (t.isInteger(64) || t.isIndex()) return mlir::IntegerType::get(t.getContext(), 32);
  return t;
}

LogicalResult Lowerer::LowerGeneric(mlir::linalg::GenericOp g) {
  if (!g.hasBufferSemantics()) return g.emitOpError("must be bufferized before trn-lower-linalg");
  if (g.getLibraryCallAttr() && IsGather(g)) return LowerGather(g);
  if (g.getLibraryCallAttr() && IsConv(g)) return LowerConv(g);
  if (g.getLibraryCallAttr() && IsPool(g)) return LowerPool(g);
  if (g.getLibraryCallAttr()) {
    return refuse(g) << "is a runtime call (" << g.getLibraryCallAttr().getValue()
                                                << ": an ATen kernel), which has no trn lowering";
  }
  llvm::SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  if (llvm::any_of(ranges, [](int64_t r) { return mlir::ShapedType::isDynamic(r); })) {
    return g.emitOpError("has dynamic loop ranges");
  }
  if (llvm::any_of(ranges, [](int64_t r) { return r == 0; })) return success();  // nothing to do
  auto iters = g.getIteratorTypesArray();
  llvm::SmallVector<bool> reduce;
  bool any_reduce = false;
  for (auto it : iters) {
    reduce.push_back(it == mlir::utils::IteratorType::reduction);
    any_reduce |= reduce.back();
  }
  auto maps = g.getIndexingMapsArray();
  const unsigned n_in = g.getNumDpsInputs();
  std::vector<OperandAccess> access;
  for (mlir::OpOperand& operand : g->getOpOperands()) {
    std::string why;
    if (!Supported(operand.get())) {
      return refuse(g) << "operand " << operand.getOperandNumber() << " has element type " << ElementOf(operand.get())
                                       << ", which has no trn lowering";
    }
    auto a = AccessOf(operand.get(), maps[operand.getOperandNumber()], &why);
    if (!a) return refuse(g) << "operand " << operand.getOperandNumber() << ": " << why;
    access.push_back(*a);
  }
  mlir::Block& body = g.getRegion().front();
  auto yield = mlir::cast<mlir::linalg::YieldOp>(body.getTerminator());
  // A reduction must be `yield combine(f(inputs), acc)` for every output.
  llvm::SmallVector<std::string> combine(g.getNumDpsInits());
  llvm::SmallVector<Value> reduced(g.getNumDpsInits());
  llvm::SmallPtrSet<mlir::Operation*, 4> combiners;
  if (any_reduce) {
    for (unsigned o = 0; o < g.getNumDpsInits(); ++o) {
      Value acc = body.getArgument(n_in + o);
      std::string op;
      Value x;
      if (!MatchCombine(yield.getOperand(o), acc, &op, &x, &combiners)) {
        return refuse(g) << "reduction body is not `combine(f(inputs), accumulator)` with add, max or min";
      }
      combine[o] = op;
      reduced[o] = x;
    }
  }
  // The operand tiles of tile i + 1 are loaded before tile i is computed and stored: the DMA
  // queue runs in order, so this keeps the next loads from waiting behind this tile's store
  // (software pipelining; trn-allocate gives the two tiles different addresses).
  auto load_operands = [&](const TileSpace& t) {
    llvm::DenseMap<Value, Val> vals;
    for (unsigned i = 0; i < n_in; ++i) {
      if (body.getArgument(i).use_empty()) continue;
      vals[body.getArgument(i)] = Val::Tile(Load(access[i], t, DeviceType(ElementOf(g->getOperand(i)))));
    }
    for (unsigned o = 0; o < g.getNumDpsInits(); ++o) {
      Value arg = body.getArgument(n_in + o);
      if (!any_reduce && !arg.use_empty()) {
        vals[arg] = Val::Tile(Load(access[n_in + o], t, DeviceType(ElementOf(g->getOperand(n_in + o)))));
      }
    }
    return vals;
  };
  bool uses_index = false;
  body.walk([&](mlir::linalg::IndexOp) { uses_index = true; });
  const std::vector<TileSpace> tiles = Tiles(ranges, reduce, uses_index);
  llvm::DenseMap<Value, Val> next = load_operands(tiles.front());
  for (size_t ti = 0; ti < tiles.size(); ++ti) {
    const TileSpace& t = tiles[ti];
    llvm::DenseMap<Value, Val> vals = std::move(next);
    if (ti + 1 < tiles.size()) next = load_operands(tiles[ti + 1]);
    TileSpace out_tile = t;  // for reductions: the output window drops the reduced axes
    if (any_reduce) {
      out_tile.free.clear();
      for (int d = 0; d < static_cast<int>(ranges.size()); ++d) {
        if (reduce[d]) out_tile.base[d] = 0;
      }
    }
    for (mlir::Operation& op : body.without_terminator()) {
      if (combiners.count(&op)) continue;
      if (mlir::failed(LowerBodyOp(op, t, vals))) return failure();
    }
    for (unsigned o = 0; o < g.getNumDpsInits(); ++o) {
      const mlir::Type out_type = DeviceType(ElementOf(g->getOperand(n_in + o)));
      Value v = any_reduce ? reduced[o] : yield.getOperand(o);
      std::optional<Val> r = Get(v, t, vals);
      if (!r) return g.emitOpError("yields a value the lowering did not produce");
      if (any_reduce) {
        Value x = Materialize(*r, t, Kind::kTile);
        Value part = Sbuf(t.partition.count, {1}, out_type.isa<mlir::IntegerType>() ? out_type : b_.getF32Type());
        Make<TensorReduceOp>(x, part, b_.getStringAttr(combine[o]));
        Value init = Load(access[n_in + o], out_tile, out_type);
        Value sum = Sbuf(t.partition.count, {1}, out_type);
        Make<TensorTensorOp>(part, init, sum, b_.getStringAttr(combine[o]));
        Store(sum, access[n_in + o], out_tile);
        continue;
      }
      Value tile = Materialize(*r, t, Kind::kTile);
      if (TileElement(tile) != out_type && TileElement(tile) != ElementOf(g->getOperand(n_in + o))) {
        Value cast = Sbuf(t.partition.count, t.FreeShape(), out_type);
        Make<TensorCopyOp>(tile, cast);
        tile = cast;
      }
      Store(tile, access[n_in + o], t);
    }
  }
  return success();
}

mlir::Type Lowerer::TileElement(Value tile) {
  if (auto s = tile.getType().dyn_cast<SbufTileType>()) return s.getElementType();
  return tile.getType().cast<PsumTileType>().getElementType();
}

// A new tile of `kind` (a full tile or a column) and element type `element` (f32 by default).
Value Lowerer::NewTile(const TileSpace& t, Kind kind, mlir::Type element) {
  if (!element) element = b_.getF32Type();
  if (kind == Kind::kColumn) return Sbuf(t.partition.count, {1}, element);
  return Sbuf(t.partition.count, t.FreeShape(), element);
}

// `v` as a tile of `kind` (a constant is memset, a column broadcast along the free axes).
Value Lowerer::Materialize(const Val& v, const TileSpace& t, Kind kind) {
  if (v.kind() == kind || (v.kind() == Kind::kTile)) return v.tile;
  Value tile = NewTile(t, kind);
  if (v.kind() == Kind::kConst) {
    Make<MemsetOp>(tile, b_.getF64FloatAttr(*v.constant));
    return tile;
  }
  Value zero = NewTile(t, kind);
  Make<MemsetOp>(zero, b_.getF64FloatAttr(0.0));
  Make<TensorScalarOp>(zero, tile, b_.getStringAttr("add"), mlir::FloatAttr(), v.tile);
  return tile;
}

bool Lowerer::IsPredicate(const std::string& op) {
  return op.rfind("is_", 0) == 0 || op == "not_equal" || op == "logical_and" || op == "logical_or";
}
bool Lowerer::ScalarForm(const std::string& op) {  // ops tensor_scalar takes
  return op != "not_equal" && op != "logical_and" && op != "logical_or";
}

// x <op> s, with s a constant or a column; x a tile or a column. The result has element type
// `element` (f32 when null; i1 for predicates).
Value Lowerer::ScalarOp(const Val& x, const std::string& op, const Val& s, const TileSpace& t, mlir::Type element) {
  const Kind kind = x.kind();
  Value dst = NewTile(t, kind, IsPredicate(op) ? b_.getI1Type() : element);
  if (s.kind() == Kind::kConst) {
    Make<TensorScalarOp>(x.tile, dst, b_.getStringAttr(op), b_.getF32FloatAttr(static_cast<float>(*s.constant)), Value());
  } else {
    Make<TensorScalarOp>(x.tile, dst, b_.getStringAttr(op), mlir::FloatAttr(), s.tile);
  }
  return dst;
}
Value Lowerer::TensorOp(Value lhs, Value rhs, const std::string& op, const TileSpace& t, Kind kind, mlir::Type element) {
  Value dst = NewTile(t, kind, IsPredicate(op) ? b_.getI1Type() : element);
  Make<TensorTensorOp>(lhs, rhs, dst, b_.getStringAttr(op));
  return dst;
}
Value Lowerer::Act(const Val& x, const std::string& func, const TileSpace& t) {
  Value dst = NewTile(t, x.kind());
  Make<ActivationOp>(x.tile, dst, b_.getStringAttr(func), b_.getF32FloatAttr(1.0f), Value());
  return dst;
}
Lowerer::Val Lowerer::Wrap(Value tile, Kind kind) { return kind == Kind::kColumn ? Val::Column(tile) : Val::Tile(tile); }

double Lowerer::Fold(const std::string& op, double a, double b) {
  if (op == "add") return a + b;
  if (op == "subtract") return a - b;
  if (op == "multiply") return a * b;
  if (op == "divide") return a / b;
  if (op == "maximum") return std::max(a, b);
  if (op == "minimum") return std::min(a, b);
  if (op == "is_equal") return a == b;
  if (op == "not_equal") return a != b;
  if (op == "is_ge") return a >= b;
  if (op == "is_gt") return a > b;
  if (op == "is_le") return a <= b;
  if (op == "is_lt") return a < b;
  if (op == "logical_and") return (a != 0) && (b != 0);
  if (op == "logical_or") return (a != 0) || (b != 0);
  if (op == "bitwise_and") return static_cast<double>(static_cast<int64_t>(a) & static_cast<int64_t>(b));
  if (op == "bitwise_or") return static_cast<double>(static_cast<int64_t>(a) | static_cast<int64_t>(b));
  if (op == "bitwise_xor") return static_cast<double>(static_cast<int64_t>(a) ^ static_cast<int64_t>(b));
  if (op == "logical_shift_left" || op == "arith_shift_right") {  // as the ALU (runtime/neuroncore)
    const int64_t x = static_cast<int64_t>(a), n = static_cast<int64_t>(b);
    if (op == "arith_shift_right") return static_cast<double>(x >> (n < 0 || n > 31 ? 63 : n));
    return n < 0 || n > 31 ? 0.0 : static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(x) << n));
  }
  return std::pow(a, b);
}

// l <op> r on constants, columns and tiles. `swapped` is the op with its operands exchanged
// (empty: not expressible that way). `element`: the result's element type (f32 when null; an
// integer type for integer arithmetic, which the engines then compute exactly).
Lowerer::Val Lowerer::Binary(const std::string& op, const std::string& swapped, const Val& l, const Val& r, const TileSpace& t,
                             mlir::Type element) {
  if (l.kind() == Kind::kConst && r.kind() == Kind::kConst) return Val::Const(Fold(op, *l.constant, *r.constant));
  if (l.kind() < r.kind() && !swapped.empty()) return Binary(swapped, op, r, l, t, element);
  if (l.kind() >= r.kind()) {
    const Kind kind = l.kind();
    if (r.kind() != kind && ScalarForm(op)) return Wrap(ScalarOp(l, op, r, t, element), kind);
    return Wrap(TensorOp(l.tile, Materialize(r, t, kind), op, t, kind, element), kind);
  }
  const Kind kind = r.kind();  // l is a constant or column, r larger, no swapped form
  if (op == "subtract") {      // l - r = (r * -1) + l
    return Wrap(ScalarOp(Wrap(ScalarOp(r, "multiply", Val::Const(-1.0), t, element), kind), "add", l, t, element), kind);
  }
  if (op == "divide") {  // l / r = reciprocal(r) * l
    return Wrap(ScalarOp(Wrap(Act(r, "reciprocal", t), kind), "multiply", l, t), kind);
  }
  return Wrap(TensorOp(Materialize(l, t, kind), r.tile, op, t, kind, element), kind);
}

Lowerer::Val Lowerer::Abs(const Val& x, const TileSpace& t, mlir::Type element) {
  return Binary("maximum", "maximum", x, Binary("multiply", "multiply", x, Val::Const(-1.0), t, element), t, element);
}

// A comparison, exact for NaN: ordered predicates are false and unordered ones true when an
// operand is NaN (VectorE's comparisons are ordered, not_equal is unordered).
Lowerer::Val Lowerer::Compare(mlir::arith::CmpFPredicate p, const Val& a, const Val& b, const TileSpace& t) {
  using P = mlir::arith::CmpFPredicate;
  auto uno = [&]() {
    const Val na = Binary("not_equal", "not_equal", a, a, t);
    if (a.tile == b.tile && a.constant == b.constant) return na;
    return Binary("logical_or", "logical_or", na, Binary("not_equal", "not_equal", b, b, t), t);
  };
  auto ordered = [&](P q) -> Val {
    switch (q) {
      case P::OEQ: return Binary("is_equal", "is_equal", a, b, t);
      case P::OGT: return Binary("is_gt", "is_lt", a, b, t);
      case P::OGE: return Binary("is_ge", "is_le", a, b, t);
      case P::OLT: return Binary("is_lt", "is_gt", a, b, t);
      case P::OLE: return Binary("is_le", "is_ge", a, b, t);
      default: return Binary("logical_or", "logical_or", Binary("is_lt", "is_gt", a, b, t), Binary("is_gt", "is_lt", a, b, t), t);  // ONE
    }
  };
  switch (p) {
    case P::AlwaysFalse: return Val::Const(0);
    case P::AlwaysTrue: return Val::Const(1);
    case P::OEQ: case P::OGT: case P::OGE: case P::OLT: case P::OLE: case P::ONE: return ordered(p);
    case P::UNE: return Binary("not_equal", "not_equal", a, b, t);
    case P::UNO: return uno();
    case P::ORD: return Binary("logical_and", "logical_and", Binary("is_equal", "is_equal", a, a, t), Binary("is_equal", "is_equal", b, b, t), t);
    case P::UEQ: return Binary("logical_or", "logical_or", ordered(P::OEQ), uno(), t);
    case P::UGT: return Binary("logical_or", "logical_or", ordered(P::OGT), uno(), t);
    case P::UGE: return Binary("logical_or", "logical_or", ordered(P::OGE), uno(), t);
    case P::ULT: return Binary("logical_or", "logical_or", ordered(P::OLT), uno(), t);
    case P::ULE: return Binary("logical_or", "logical_or", ordered(P::OLE), uno(), t);
  }
  return Val::Const(0);
}

// select(c, a, b) with result element type `element`: a copy of b, then a predicated copy of a
// where c holds. (An operand's tile may hold another type: an integer tile read as a float
// after a free sitofp; the copies convert.)
Lowerer::Val Lowerer::Select(const Val& c, const Val& a, const Val& b, const TileSpace& t, mlir::Type element) {
  if (c.kind() == Kind::kConst) return *c.constant != 0 ? a : b;
  const Kind kind = std::max({c.kind(), a.kind(), b.kind()});
  Value dst = NewTile(t, kind, element);
  if (b.kind() == Kind::kConst) {
    Make<MemsetOp>(dst, b_.getF64FloatAttr(*b.constant));
  } else {
    Make<TensorCopyOp>(Materialize(b, t, kind), dst);  // (a cast when the types differ)
  }
  Value src = Materialize(a, t, kind);
  if (TileElement(src) != element) {
    Value cast = NewTile(t, kind, element);
    Make<TensorCopyOp>(src, cast);
    src = cast;
  }
  Value pred = c.kind() == kind ? c.tile : Materialize(c, t, kind);
  if (!TileElement(pred).isa<mlir::IntegerType>()) {  // a float condition: compare with 0
    pred = TensorOp(pred, Materialize(Val::Const(0), t, kind), "not_equal", t, kind);
  }
  Make<CopyPredicatedOp>(src, pred, dst);
  return Wrap(dst, kind);
}

// The value of `v` for tile `t`: computed in the body, or defined before the generic (a
// constant; a scalar loaded from an HBM buffer becomes a column; arith on those).
std::optional<Lowerer::Val> Lowerer::Get(Value v, const TileSpace& t, llvm::DenseMap<Value, Val>& vals) {
  if (auto it = vals.find(v); it != vals.end()) return it->second;
  if (auto c = ConstantOf(v)) return Val::Const(*c);
  mlir::Operation* def = v.getDefiningOp();
  if (!def) return std::nullopt;
  if (auto load = mlir::dyn_cast<mlir::memref::LoadOp>(def)) {
    std::string why;
    auto hbm = HbmOf(load.getMemref(), &why);
    if (!hbm) return std::nullopt;
    int64_t offset = hbm->offset;
    for (size_t i = 0; i < load.getIndices().size(); ++i) {
      auto idx = load.getIndices()[i].getDefiningOp<mlir::arith::ConstantIndexOp>();
      if (!idx) return std::nullopt;
      offset += idx.value() * hbm->strides[i];
    }
    Value col = Sbuf(t.partition.count, {1}, DeviceType(load.getType()));
    SetHbmWindow(Make<DmaCopyOp>(hbm->memref, col), offset, {t.partition.count, 1}, {0, 1});
    return vals[v] = Val::Column(col);
  }
  if (def->getNumResults() != 1 || !def->getDialect() ||
      (def->getDialect()->getNamespace() != "arith" && def->getDialect()->getNamespace() != "math")) {
    return std::nullopt;
  }
  for (Value operand : def->getOperands()) {
    if (!Get(operand, t, vals)) return std::nullopt;
  }
  if (mlir::failed(LowerBodyOp(*def, t, vals))) return std::nullopt;
  return vals[v];
}

}  // namespace lower_linalg_detail

namespace {

struct LowerLinalgToTrnPass : public mlir::PassWrapper<LowerLinalgToTrnPass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerLinalgToTrnPass)
  llvm::StringRef getArgument() const final { return "trn-lower-linalg"; }
  llvm::StringRef getDescription() const final {
    return "linalg on memrefs -> trn tiles: tiling, DMA windows, TensorE/VectorE/ScalarE instructions";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override { registry.insert<TrnDialect>(); }
  void runOnOperation() override {
    for (auto f : getOperation().getOps<mlir::func::FuncOp>()) {
      if (f.isExternal()) continue;
      lower_linalg_detail::Lowerer l(f);
      if (mlir::failed(l.Run())) return signalPassFailure();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> createLowerLinalgToTrnPass() { return std::make_unique<LowerLinalgToTrnPass>(); }

}  // namespace trn::ir
