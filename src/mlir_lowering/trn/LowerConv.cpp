// trn-lower-linalg: convolutions, which the group lowering leaves as ATen runtime calls
// (`aten::convolution`, `aten::convolution_backward`, recognised by trn.extern_op; their int and
// list arguments in trn.extern_ints / trn.extern_lists, host_passes.h). 1-D, 2-D and 3-D, any
// stride, padding, dilation and groups, regular and transposed. A transposed convolution is the
// grad input of the regular one (below); its grad input is the regular forward of grad_output,
// its grad weight the regular one with input and grad_output exchanged. A 1-D convolution is a
// 2-D one of height 1; a 3-D one has one more tap loop, over the kernel's depth: per output depth
// slice, a 2-D sum whose taps each read the input depth slice of their depth tap (ConvTap::x_shift),
// depth taps outside the input left out.
//
// Everything is a *sum of shifted products* (ConvSum, LowerLinalgImpl.h): per output channel
// tile and block of output positions, one TensorE matmul per kernel tap and input-channel tile,
// accumulating in one PSUM bank. The moving operand of a tap is the input window shifted by the
// tap and strided by the stride, loaded by one DMA; where the window leaves the input (padding),
// the tile is zeroed first and the DMA fills the part inside (a tile window). The stationary
// operand is the weight of that tap, [in channels, out channels], loaded once and kept.
//  - forward: taps (kh, kw) shift the input by kh d - p; the bias is added leaving PSUM.
//  - grad input (a transposed convolution): split by output phase (ih mod stride); in each phase
//    the taps whose offset has that phase are a stride-1 shifted sum over grad_output, with the
//    transposed weight as the stationary operand, stored with the stride. In depth, per input
//    slice, the depth taps that reach it from a grad_output slice.
//  - grad weight: per tap, matmuls contract over the positions the tap reads inside the input
//    (partitions = output positions of one row, <= 128; over images and output depth slices):
//    grad_output^T [pos, out ch] with the input [pos, in ch] into PSUM [out ch, in ch].
//  - grad bias: VectorE sums of grad_output per channel.
// Depthwise convolutions (groups == channels, one input and one output channel per group) run
// on VectorE instead, channels on partitions: per tap, the shifted tile times the tap's weight
// column (tensor_scalar) added to the accumulator; grad weight as multiply + tensor_reduce.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir_lowering/host_passes.h"
#include "mlir_lowering/trn/LowerLinalgImpl.h"
#include "mlir_lowering/trn/TrnRefuse.h"

namespace trn::ir::lower_linalg_detail {
namespace {

using ::trn::mlir_lowering::kExternIntsAttr;
using ::trn::mlir_lowering::kExternListsAttr;
using ::trn::mlir_lowering::kExternOpAttr;
using ::trn::mlir_lowering::kExternPermsAttr;

// Free elements of one VectorE tile (as elementwise tiles: 8 KiB of fp32).
constexpr int64_t kVectorFree = 2048;
// Weight tiles kept in SBUF across output blocks, bytes per partition; beyond it they reload.
constexpr int64_t kWeightCacheBytes = 64 * 1024;

}  // namespace

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

std::pair<int64_t, int64_t> Valid(int64_t a, int64_t s, int64_t r0, int64_t n, int64_t limit) {
  const int64_t lo = std::max<int64_t>(0, CeilDiv(-a, s) - r0);
  const int64_t hi = std::min<int64_t>(n, FloorDiv(limit - 1 - a, s) - r0 + 1);
  return {lo, std::max(lo, hi)};
}

std::vector<Block> Blocks(int64_t rows, int64_t cols, int64_t limit) {
  std::vector<Block> out;
  if (cols <= limit) {
    const int64_t per = std::max<int64_t>(1, limit / cols);
    for (int64_t r0 = 0; r0 < rows; r0 += per) out.push_back({r0, std::min(per, rows - r0), 0, cols});
  } else {
    for (int64_t r0 = 0; r0 < rows; ++r0) {
      for (int64_t c0 = 0; c0 < cols; c0 += limit) out.push_back({r0, 1, c0, std::min(limit, cols - c0)});
    }
  }
  return out;
}

// `perm` (trn.extern_perms): the call sees the buffer with its dimensions reordered, logical
// dimension d being buffer dimension perm[d] (a channels-last view, say); empty: as it is.
Nchw ShapeNchw(Value memref, const Hbm& h, llvm::ArrayRef<int64_t> perm) {
  auto shape = memref.getType().cast<mlir::MemRefType>().getShape();
  Nchw r;
  r.buffer = h.memref;
  r.offset = h.offset;
  const int rank = static_cast<int>(shape.size());
  // Logical dimension j of (n, c, w), (n, c, h, w) or (n, c, d, h, w) into its slot.
  for (int j = 0, slot = 0; j < rank && slot < 4; ++j) {
    const int64_t d = perm.empty() ? j : perm[j];
    if (rank == 5 && j == 2) {
      r.depth = shape[d];
      r.depth_stride = h.strides[d];
      continue;
    }
    if (rank == 3 && slot == 2) ++slot;  // the missing h axis
    r.size[slot] = shape[d];
    r.stride[slot] = h.strides[d];
    ++slot;
  }
  return r;
}

llvm::SmallVector<int64_t> ExternPerm(mlir::Operation* call, Value v) {
  auto perms = call->getAttrOfType<mlir::ArrayAttr>(kExternPermsAttr);
  for (unsigned i = 2; perms && i < call->getNumOperands(); ++i) {
    if (call->getOperand(i) != v || perms.size() <= i - 2) continue;
    if (auto p = perms[i - 2].dyn_cast<mlir::DenseI64ArrayAttr>()) return llvm::SmallVector<int64_t>(p.asArrayRef());
  }
  return {};
}

bool Lowerer::IsConv(mlir::linalg::GenericOp g) {
  auto name = g->getAttrOfType<mlir::StringAttr>(kExternOpAttr);
  return name && (name.getValue() == "aten::convolution" || name.getValue() == "aten::convolution_backward");
}

namespace {
// The HBM side of a window's DMA: offset, then the partition axis and the window's own axes.
void SetWindowAttrs(mlir::Operation* dma, const Window& w) {
  llvm::SmallVector<int64_t> sizes{w.partitions}, strides{w.partition_stride};
  sizes.append(w.sizes.begin(), w.sizes.end());
  strides.append(w.strides.begin(), w.strides.end());
  SetHbmWindow(dma, w.offset, sizes, strides);
}
}  // namespace

Value Lowerer::LoadWindow(const Window& w, int64_t free, mlir::Type element) {
  Value tile = Sbuf(w.partitions, {free}, element);
  SetWindowAttrs(Make<DmaCopyOp>(w.memref, tile), w);
  return tile;
}

void Lowerer::StoreWindow(Value tile, const Window& w) { SetWindowAttrs(Make<DmaCopyOp>(tile, w.memref), w); }

// A weight tile [partitions, free] (one free axis) of `element` (f32 when null), loaded once per
// convolution while the cache holds kWeightCacheBytes per partition (then it starts over).
Value Lowerer::CachedWindow(const Window& w, int64_t free, mlir::Type element) {
  if (!element) element = b_.getF32Type();
  const auto key = std::make_tuple(reinterpret_cast<intptr_t>(w.memref.getAsOpaquePointer()), w.offset, w.partitions,
                                   w.partition_stride, free, w.strides.empty() ? 0 : w.strides[0]);
  if (auto it = conv_cache_.find(key); it != conv_cache_.end() && TileElement(it->second) == element) return it->second;
  const int64_t bytes = free * element.getIntOrFloatBitWidth() / 8;
  if (conv_cache_bytes_ + bytes > kWeightCacheBytes) {
    conv_cache_.clear();
    conv_cache_bytes_ = 0;
  }
  Value tile = LoadWindow(w, free, element);
  conv_cache_[key] = tile;
  conv_cache_bytes_ += bytes;
  return tile;
}

namespace {

// The element type of TensorE's operand tiles for buffers `a` and `b`: their own when both are
// bf16 or both f16 (bf16 / fp16 matmuls, a quarter of fp32's time; the products are exact in
// fp32 either way), else f32 (the DMA widens).
mlir::Type TensorEElement(Value a, Value b) {
  const mlir::Type ta = a.getType().cast<mlir::MemRefType>().getElementType();
  const mlir::Type tb = b.getType().cast<mlir::MemRefType>().getElementType();
  if (ta == tb && (ta.isBF16() || ta.isF16())) return ta;
  return mlir::Float32Type::get(a.getContext());
}

}  // namespace

// The moving tile of one tap: x[k0 + k, ah + sh (r0 + r), aw + sw (c0 + c)] (from x_offset +
// x_shift) for k < kb, r < rb, c < cb, `fill` outside x; nullptr when the whole block is outside.
Value Lowerer::ShiftedTile(const ConvSum& s, const ConvTap& tap, int64_t k0, int64_t kb, int64_t r0, int64_t rb,
                           int64_t c0, int64_t cb, double fill, mlir::Type element) {
  auto [rlo, rhi] = Valid(tap.ah, s.sh, r0, rb, s.x_rows);
  auto [clo, chi] = Valid(tap.aw, s.sw, c0, cb, s.x_cols);
  if (rlo >= rhi || clo >= chi) return Value();
  Value tile = Sbuf(kb, {rb * cb}, element ? element : b_.getF32Type());
  const bool partial = rlo > 0 || rhi < rb || clo > 0 || chi < cb;
  if (partial) Make<MemsetOp>(tile, b_.getF64FloatAttr(fill));
  auto dma = Make<DmaCopyOp>(s.x, tile);
  const int64_t offset = s.x_offset + tap.x_shift + k0 * s.x_channel + (tap.ah + s.sh * (r0 + rlo)) * s.x_row +
                         (tap.aw + s.sw * (c0 + clo)) * s.x_col;
  SetHbmWindow(dma, offset, {kb, rhi - rlo, chi - clo}, {s.x_channel, s.sh * s.x_row, s.sw * s.x_col});
  if (partial) {
    dma->setAttr(kTileOffsetAttr, b_.getI64IntegerAttr(rlo * cb + clo));
    dma->setAttr(kTileSizesAttr, b_.getDenseI64ArrayAttr({rhi - rlo, chi - clo}));
    dma->setAttr(kTileStridesAttr, b_.getDenseI64ArrayAttr({cb, 1}));
  }
  return tile;
}

void Lowerer::EmitConvSum(const ConvSum& s) {
  const mlir::Type f32 = b_.getF32Type();
  auto str = [&](const char* x) { return b_.getStringAttr(x); };
  for (int64_t m0 = 0; m0 < s.channels; m0 += kMaxPartitions) {
    const int64_t mb = std::min<int64_t>(kMaxPartitions, s.channels - m0);
    Value bias;
    if (s.bias) {
      bias = CachedWindow(Window{s.bias, s.bias_offset + m0 * s.bias_stride, mb, s.bias_stride, {1}, {1}}, 1);
    }
    for (const Block& bl : Blocks(s.rows, s.cols, s.depthwise ? kVectorFree : kMatmulMaxMovingFree)) {
      const int64_t n = bl.rb * bl.cb;
      Value out = Sbuf(mb, {n}, f32);
      bool first = true;
      if (s.depthwise) {
        // VectorE: out += column(w[m, tap]) * shifted x[m]
        for (const ConvTap& tap : s.taps) {
          Value x = ShiftedTile(s, tap, m0, mb, bl.r0, bl.rb, bl.c0, bl.cb);
          if (!x) continue;
          Value col = CachedWindow(Window{s.w, tap.w_offset + m0 * s.w_m_stride, mb, s.w_m_stride, {1}, {1}}, 1);
          if (first) {
            Make<TensorScalarOp>(x, out, str("multiply"), mlir::FloatAttr(), col);
            first = false;
            continue;
          }
          Value prod = Sbuf(mb, {n}, f32);
          Make<TensorScalarOp>(x, prod, str("multiply"), mlir::FloatAttr(), col);
          Make<TensorTensorOp>(out, prod, out, str("add"));
        }
        if (first) Make<MemsetOp>(out, b_.getF64FloatAttr(0.0));
        if (bias) Make<TensorScalarOp>(out, out, str("add"), mlir::FloatAttr(), bias);
      } else {
        // TensorE: PSUM[m, pos] += w[k, m]^T-tile x shifted x[k, pos], over taps and k tiles.
        Value acc = Psum(mb, {n});
        const mlir::Type te = TensorEElement(s.x, s.w);
        for (const ConvTap& tap : s.taps) {
          for (int64_t k0 = 0; k0 < s.in_channels; k0 += kMaxPartitions) {
            const int64_t kb = std::min<int64_t>(kMaxPartitions, s.in_channels - k0);
            Value x = ShiftedTile(s, tap, k0, kb, bl.r0, bl.rb, bl.c0, bl.cb, 0.0, te);
            if (!x) break;
            Value w = CachedWindow(
                Window{s.w, tap.w_offset + k0 * s.w_k_stride + m0 * s.w_m_stride, kb, s.w_k_stride, {mb}, {s.w_m_stride}},
                mb, te);
            auto mm = Make<MatmulOp>(w, x, acc);
            if (!first) mm.setAccumulateAttr(b_.getUnitAttr());
            first = false;
          }
        }
        if (first) {
          Make<MemsetOp>(out, b_.getF64FloatAttr(0.0));
          if (bias) Make<TensorScalarOp>(out, out, str("add"), mlir::FloatAttr(), bias);
        } else if (bias) {
          Make<TensorScalarOp>(acc, out, str("add"), mlir::FloatAttr(), bias);
        } else {
          Make<TensorCopyOp>(acc, out);
        }
      }
      StoreWindow(out, Window{s.y, s.y_offset + m0 * s.y_channel + bl.r0 * s.y_row + bl.c0 * s.y_col, mb, s.y_channel,
                              {bl.rb, bl.cb}, {s.y_row, s.y_col}});
    }
  }
}

// Operands of the calls: ctx, op index, the tensor reads in argument order, then the results.
//   convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups)
//     ints [transposed, groups], lists [stride, padding, dilation, output_padding]
//   convolution_backward(grad_output, input, weight, bias_sizes?, stride, padding, dilation,
//     transposed, output_padding, groups, output_mask) -> (grad_input?, grad_weight?, grad_bias?)
//     ints [transposed, groups], lists [bias_sizes, stride, padding, dilation, output_padding, output_mask]
LogicalResult Lowerer::LowerConv(mlir::linalg::GenericOp g) {
  const bool backward = g->getAttrOfType<mlir::StringAttr>(kExternOpAttr).getValue() == "aten::convolution_backward";
  // Each operand as the call sees it: its buffer, dimensions maybe permuted.
  auto shape = [&](Value v, const Hbm& h) { return ShapeNchw(v, h, ExternPerm(g, v)); };
  auto ints = g->getAttrOfType<mlir::DenseI64ArrayAttr>(kExternIntsAttr);
  auto lists = g->getAttrOfType<mlir::ArrayAttr>(kExternListsAttr);
  if (!ints || ints.size() != 2 || !lists || lists.size() != (backward ? 6u : 4u)) {
    return g.emitOpError("convolution call without its arguments (trn.extern_ints, trn.extern_lists)");
  }
  const bool transposed = ints[0] != 0;
  auto list = [&](int i) {
    auto a = lists[i].dyn_cast<mlir::DenseI64ArrayAttr>();
    return a ? llvm::SmallVector<int64_t>(a.asArrayRef()) : llvm::SmallVector<int64_t>();
  };
  const int l0 = backward ? 1 : 0;
  llvm::SmallVector<int64_t> stride = list(l0), padding = list(l0 + 1), dilation = list(l0 + 2);
  const int64_t groups = ints[1];
  // Tensors.
  const unsigned reads = backward ? 3 : static_cast<unsigned>(g->getNumOperands()) - 3;
  Value x = g->getOperand(backward ? 3 : 2), w = g->getOperand(backward ? 4 : 3);
  Value gout = backward ? g->getOperand(2) : Value(), bias = !backward && reads == 3 ? g->getOperand(4) : Value();
  llvm::SmallVector<Value> results(g->getOperands().begin() + 2 + reads, g->getOperands().end());
  for (Value v : g->getOperands().drop_front(2)) {
    auto t = v.getType().dyn_cast<mlir::MemRefType>();
    const mlir::Type e = t ? t.getElementType() : mlir::Type();
    if (!t || !t.hasStaticShape() || !(e.isF32() || e.isBF16() || e.isF16())) {  // halves: DMA widens, stores round
      return refuse(g) << "convolution operands must be f32, bf16 or f16 memrefs of static shape";
    }
  }
  const int64_t rank = x.getType().cast<mlir::MemRefType>().getRank();
  const int64_t spatial = rank - 2;
  if (rank < 3 || rank > 5 || static_cast<int64_t>(stride.size()) != spatial ||
      static_cast<int64_t>(padding.size()) != spatial || static_cast<int64_t>(dilation.size()) != spatial) {
    return refuse(g) << "convolution that is not 1-D, 2-D or 3-D (no trn lowering)";
  }
  // The depth axis of a 3-D convolution (stride sd, padding pd, dilation dd) is one more tap
  // loop around the 2-D sums: a tap reads one input depth slice (ConvTap::x_shift).
  int64_t sd = 1, pd = 0, dd = 1;
  if (spatial == 3) {
    sd = stride[0], pd = padding[0], dd = dilation[0];
    stride.erase(stride.begin()), padding.erase(padding.begin()), dilation.erase(dilation.begin());
  }
  if (spatial == 1) {  // as 2-D with a height of 1
    stride.insert(stride.begin(), 1);
    padding.insert(padding.begin(), 0);
    dilation.insert(dilation.begin(), 1);
  }
  std::string why;
  auto hx = HbmOf(x, &why), hw = hx ? HbmOf(w, &why) : std::nullopt;
  if (!hw) return refuse(g) << "convolution operand: " << why;
  const Nchw X = shape(x, *hx), W = shape(w, *hw);
  // The channels of the regular convolution this is (or whose transpose this is): c in, o out;
  // a transposed convolution's weight is (in = o, out / groups = c / groups, [kd,] kh, kw).
  const int64_t n = X.size[0], o = W.size[0], kd = W.depth, kh = W.size[2], kw = W.size[3];
  const int64_t c = transposed ? W.size[1] * groups : X.size[1];
  if (groups <= 0 || c % groups != 0 || o % groups != 0 || W.size[1] != c / groups || (transposed && X.size[1] != o)) {
    return g.emitOpError("convolution groups do not divide the channels");
  }
  const int64_t cg = c / groups, og = o / groups;
  const bool depthwise = cg == 1 && og == 1;
  conv_cache_.clear();
  conv_cache_bytes_ = 0;
  // The taps of output depth slice `od` of Y = conv(X, W): depth taps t whose input slice is
  // inside X, each with its kh x kw taps.
  auto taps_of = [&](int64_t base, const Nchw& X, int64_t od) {
    std::vector<ConvTap> taps;
    for (int64_t t = 0; t < kd; ++t) {
      const int64_t id = od * sd + t * dd - pd;
      if (id < 0 || id >= X.depth) continue;
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          taps.push_back({W.offset + base + t * W.depth_stride + i * W.stride[2] + j * W.stride[3],
                          i * dilation[0] - padding[0], j * dilation[1] - padding[1], id * X.depth_stride});
        }
      }
    }
    return taps;
  };
  // The regular convolution Y = conv(X, W) (+ bias per channel of Y).
  auto forward = [&](const Nchw& X, const Nchw& Y, const std::optional<Hbm>& hb) {
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t od = 0; od < Y.depth; ++od) {
        for (int64_t gi = 0; gi < (depthwise ? 1 : groups); ++gi) {
          ConvSum s;
          s.y = Y.buffer;
          s.y_offset = Y.offset + b * Y.stride[0] + od * Y.depth_stride + gi * og * Y.stride[1];
          s.y_channel = Y.stride[1], s.y_row = Y.stride[2], s.y_col = Y.stride[3];
          s.channels = depthwise ? o : og, s.rows = Y.size[2], s.cols = Y.size[3];
          s.x = X.buffer;
          s.x_offset = X.offset + b * X.stride[0] + gi * cg * X.stride[1];
          s.x_channel = X.stride[1], s.x_row = X.stride[2], s.x_col = X.stride[3];
          s.in_channels = depthwise ? c : cg, s.x_rows = X.size[2], s.x_cols = X.size[3];
          s.sh = stride[0], s.sw = stride[1];
          s.w = W.buffer;
          s.w_k_stride = W.stride[1], s.w_m_stride = W.stride[0];
          s.taps = taps_of(gi * og * W.stride[0], X, od);
          if (hb) s.bias = hb->memref, s.bias_offset = hb->offset + gi * og * hb->strides[0], s.bias_stride = hb->strides[0];
          s.depthwise = depthwise;
          EmitConvSum(s);
        }
      }
    }
  };
  // Its transpose I = conv^T(G, W) (grad input; a transposed convolution's forward, + bias per
  // channel of I). Phase (ph, pw): rows ph + stride t of I; tap i reads G's row
  // t + (ph + pad - i dil) / stride. Depth slice id of I: depth tap t reads G's slice
  // (id + pd - t dd) / sd where that divides.
  auto transpose = [&](const Nchw& G, const Nchw& I, const std::optional<Hbm>& hb) {
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t id = 0; id < I.depth; ++id) {
        for (int64_t gi = 0; gi < (depthwise ? 1 : groups); ++gi) {
          for (int64_t ph = 0; ph < std::min(stride[0], I.size[2]); ++ph) {
            for (int64_t pw = 0; pw < std::min(stride[1], I.size[3]); ++pw) {
              ConvSum s;
              s.y = I.buffer;
              s.y_offset = I.offset + b * I.stride[0] + id * I.depth_stride + gi * cg * I.stride[1] + ph * I.stride[2] +
                           pw * I.stride[3];
              s.y_channel = I.stride[1], s.y_row = stride[0] * I.stride[2], s.y_col = stride[1] * I.stride[3];
              s.channels = depthwise ? c : cg;
              s.rows = CeilDiv(I.size[2] - ph, stride[0]), s.cols = CeilDiv(I.size[3] - pw, stride[1]);
              s.x = G.buffer;
              s.x_offset = G.offset + b * G.stride[0] + gi * og * G.stride[1];
              s.x_channel = G.stride[1], s.x_row = G.stride[2], s.x_col = G.stride[3];
              s.in_channels = depthwise ? o : og, s.x_rows = G.size[2], s.x_cols = G.size[3];
              s.w = W.buffer;
              s.w_k_stride = W.stride[0], s.w_m_stride = depthwise ? W.stride[0] : W.stride[1];
              for (int64_t t = 0; t < kd; ++t) {
                const int64_t dt = id + pd - t * dd;
                if (dt < 0 || dt % sd != 0 || dt / sd >= G.depth) continue;
                for (int64_t i = 0; i < kh; ++i) {
                  const int64_t dh = ph + padding[0] - i * dilation[0];
                  if (((dh % stride[0]) + stride[0]) % stride[0] != 0) continue;
                  for (int64_t j = 0; j < kw; ++j) {
                    const int64_t dw = pw + padding[1] - j * dilation[1];
                    if (((dw % stride[1]) + stride[1]) % stride[1] != 0) continue;
                    s.taps.push_back({W.offset + gi * og * W.stride[0] + t * W.depth_stride + i * W.stride[2] + j * W.stride[3],
                                      dh / stride[0], dw / stride[1], dt / sd * G.depth_stride});
                  }
                }
              }
              if (hb) s.bias = hb->memref, s.bias_offset = hb->offset + gi * cg * hb->strides[0], s.bias_stride = hb->strides[0];
              s.depthwise = depthwise;
              EmitConvSum(s);
            }
          }
        }
      }
    }
  };
  if (!backward) {
    auto hy = HbmOf(results[0], &why);
    if (!hy) return refuse(g) << "convolution result: " << why;
    const Nchw Y = shape(results[0], *hy);
    std::optional<Hbm> hb = bias ? HbmOf(bias, &why) : std::nullopt;
    if (bias && !hb) return refuse(g) << "convolution bias: " << why;
    if (transposed) {
      transpose(X, Y, hb);
    } else {
      forward(X, Y, hb);
    }
    return success();
  }
  // Backward: which results exist (output_mask), in order.
  llvm::SmallVector<int64_t> mask = list(5);
  if (mask.size() != 3) return g.emitOpError("convolution_backward without its output mask");
  Value gin, gw, gb;
  size_t next = 0;
  for (int i = 0; i < 3; ++i) {
    if (!mask[i]) continue;
    if (next >= results.size()) return g.emitOpError("convolution_backward: fewer results than its output mask");
    (i == 0 ? gin : i == 1 ? gw : gb) = results[next++];
  }
  auto hg = HbmOf(gout, &why);
  if (!hg) return refuse(g) << "convolution grad_output: " << why;
  const Nchw G = shape(gout, *hg);
  if (gin) {  // a transposed convolution's grad input is the regular convolution of grad_output
    auto hi = HbmOf(gin, &why);
    if (!hi) return refuse(g) << "convolution grad_input: " << why;
    const Nchw I = shape(gin, *hi);
    if (transposed) {
      forward(G, I, std::nullopt);
    } else {
      transpose(G, I, std::nullopt);
    }
  }
  const mlir::Type f32 = b_.getF32Type();
  auto str = [&](const char* v) { return b_.getStringAttr(v); };
  // acc (+)= part, for sums over blocks.
  auto accumulate = [&](Value& acc, Value part, int64_t rows) {
    if (!acc) {
      acc = part;
      return;
    }
    Value sum = Sbuf(rows, {1}, f32);
    Make<TensorTensorOp>(acc, part, sum, str("add"));
    acc = sum;
  };
  auto zero_if_none = [&](Value& acc, int64_t rows, int64_t free) {
    if (acc) return;
    acc = Sbuf(rows, {free}, f32);
    Make<MemsetOp>(acc, b_.getF64FloatAttr(0.0));
  };
  const Nchw& this_g = G;
  const Nchw& this_x = X;
  if (gw) {
    auto hwg = HbmOf(gw, &why);
    if (!hwg) return refuse(g) << "convolution grad_weight: " << why;
    const Nchw D = shape(gw, *hwg);
    // dW[o, c] = sum over positions of (the regular convolution's) grad_output[o] x input[c]:
    // for a transposed convolution, its input x and grad_output swap those roles.
    const Nchw& G = transposed ? this_x : this_g;
    const Nchw& X = transposed ? this_g : this_x;
    const int64_t oh = G.size[2], ow = G.size[3];
    for (int64_t t = 0; t < kd; ++t) {
      // Output depth slices [dlo, dhi) whose depth tap t lies inside the input; the first
      // elements of image b's slice od of G and of the input slice it reads.
      const int64_t at = t * dd - pd;
      auto [dlo, dhi] = Valid(at, sd, 0, G.depth, X.depth);
      auto g_at = [&](int64_t b, int64_t od) { return G.offset + b * G.stride[0] + od * G.depth_stride; };
      auto x_at = [&](int64_t b, int64_t od) { return X.offset + b * X.stride[0] + (at + sd * od) * X.depth_stride; };
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          // Output positions whose tap (t, i, j) lies inside the input.
          const int64_t ah = i * dilation[0] - padding[0], aw = j * dilation[1] - padding[1];
          auto [rlo, rhi] = Valid(ah, stride[0], 0, oh, X.size[2]);
          auto [clo, chi] = Valid(aw, stride[1], 0, ow, X.size[3]);
          if (depthwise) {
            // VectorE: per channel, sum over positions of grad_output x shifted input.
            for (int64_t c0 = 0; c0 < c; c0 += kMaxPartitions) {
              const int64_t cb = std::min<int64_t>(kMaxPartitions, c - c0);
              Value acc;
              for (int64_t b = 0; b < n && rlo < rhi && clo < chi; ++b) {
                for (int64_t od = dlo; od < dhi; ++od) {
                  for (const Block& bl : Blocks(rhi - rlo, chi - clo, kVectorFree)) {
                    const int64_t r = rlo + bl.r0, col = clo + bl.c0;
                    Value go = LoadWindow(Window{G.buffer, g_at(b, od) + c0 * G.stride[1] + r * G.stride[2] + col * G.stride[3], cb,
                                                 G.stride[1], {bl.rb, bl.cb}, {G.stride[2], G.stride[3]}},
                                          bl.rb * bl.cb, f32);
                    Value in = LoadWindow(Window{X.buffer, x_at(b, od) + c0 * X.stride[1] + (ah + stride[0] * r) * X.stride[2] +
                                                               (aw + stride[1] * col) * X.stride[3],
                                                 cb, X.stride[1], {bl.rb, bl.cb}, {stride[0] * X.stride[2], stride[1] * X.stride[3]}},
                                          bl.rb * bl.cb, f32);
                    Value prod = Sbuf(cb, {bl.rb * bl.cb}, f32), part = Sbuf(cb, {1}, f32);
                    Make<TensorTensorOp>(go, in, prod, str("multiply"));
                    Make<TensorReduceOp>(prod, part, str("add"));
                    accumulate(acc, part, cb);
                  }
                }
              }
              zero_if_none(acc, cb, 1);
              StoreWindow(acc, Window{D.buffer, D.offset + c0 * D.stride[0] + t * D.depth_stride + i * D.stride[2] + j * D.stride[3],
                                      cb, D.stride[0], {1}, {1}});
            }
            continue;
          }
          // TensorE: PSUM[o, c] += grad_output[pos, o]^T-tile x input[pos, c], pos = one row's <= 128 columns.
          const mlir::Type te = TensorEElement(G.buffer, X.buffer);
          for (int64_t gi = 0; gi < groups; ++gi) {
            for (int64_t o0 = 0; o0 < og; o0 += kMaxPartitions) {
              const int64_t ob = std::min<int64_t>(kMaxPartitions, og - o0);
              for (int64_t c0 = 0; c0 < cg; c0 += kMatmulMaxMovingFree) {
                const int64_t cb = std::min<int64_t>(kMatmulMaxMovingFree, cg - c0);
                Value acc = Psum(ob, {cb});
                bool first = true;
                for (int64_t b = 0; b < n; ++b) {
                  for (int64_t od = dlo; od < dhi; ++od) {
                    for (int64_t r = rlo; r < rhi; ++r) {
                      for (int64_t q0 = clo; q0 < chi; q0 += kMaxPartitions) {
                        const int64_t qb = std::min<int64_t>(kMaxPartitions, chi - q0);
                        Value st = LoadWindow(Window{G.buffer, g_at(b, od) + (gi * og + o0) * G.stride[1] + r * G.stride[2] + q0 * G.stride[3],
                                                     qb, G.stride[3], {ob}, {G.stride[1]}},
                                              ob, te);
                        Value mv = LoadWindow(Window{X.buffer, x_at(b, od) + (gi * cg + c0) * X.stride[1] + (ah + stride[0] * r) * X.stride[2] +
                                                                   (aw + stride[1] * q0) * X.stride[3],
                                                     qb, stride[1] * X.stride[3], {cb}, {X.stride[1]}},
                                              cb, te);
                        auto mm = Make<MatmulOp>(st, mv, acc);
                        if (!first) mm.setAccumulateAttr(b_.getUnitAttr());
                        first = false;
                      }
                    }
                  }
                }
                Value out = Sbuf(ob, {cb}, f32);
                if (first) {
                  Make<MemsetOp>(out, b_.getF64FloatAttr(0.0));
                } else {
                  Make<TensorCopyOp>(acc, out);
                }
                StoreWindow(out, Window{D.buffer, D.offset + (gi * og + o0) * D.stride[0] + c0 * D.stride[1] + t * D.depth_stride +
                                                      i * D.stride[2] + j * D.stride[3],
                                        ob, D.stride[0], {cb}, {D.stride[1]}});
              }
            }
          }
        }
      }
    }
  }
  if (gb) {
    auto hb = HbmOf(gb, &why);
    if (!hb) return refuse(g) << "convolution grad_bias: " << why;
    for (int64_t o0 = 0; o0 < G.size[1]; o0 += kMaxPartitions) {
      const int64_t ob = std::min<int64_t>(kMaxPartitions, G.size[1] - o0);
      Value acc;
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t od = 0; od < G.depth; ++od) {
          for (const Block& bl : Blocks(G.size[2], G.size[3], kVectorFree)) {
            Value go = LoadWindow(Window{G.buffer, G.offset + b * G.stride[0] + od * G.depth_stride + o0 * G.stride[1] +
                                                       bl.r0 * G.stride[2] + bl.c0 * G.stride[3],
                                         ob, G.stride[1], {bl.rb, bl.cb}, {G.stride[2], G.stride[3]}},
                                  bl.rb * bl.cb, f32);
            Value part = Sbuf(ob, {1}, f32);
            Make<TensorReduceOp>(go, part, str("add"));
            accumulate(acc, part, ob);
          }
        }
      }
      zero_if_none(acc, ob, 1);
      StoreWindow(acc, Window{hb->memref, hb->offset + o0 * hb->strides[0], ob, hb->strides[0], {1}, {1}});
    }
  }
  return success();
}

}  // namespace trn::ir::lower_linalg_detail
