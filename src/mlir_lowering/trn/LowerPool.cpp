// trn-lower-linalg: 2-D pooling and 3-D max pooling, which the group lowering leaves as ATen
// runtime calls (trn.extern_op; sizes in trn.extern_lists, flags in trn.extern_ints,
// host_passes.h). On VectorE,
// channels on partitions, one block per output row (up to 2048 columns), one tile per kernel tap:
// the input window shifted by the tap and strided by the stride (LowerConv.cpp's ShiftedTile),
// padding filled by a memset before the DMA.
//  - max_pool2d_with_indices: per tap, where x > best or x is NaN (ATen's CPU rule, so the first
//    maximum wins and NaN propagates), copy_predicated takes x into best and the tap's flat input
//    index (a GpSimd iota) into the indices; padding reads -inf.
//  - max_pool2d_with_indices_backward: per output phase of the input (ih mod stride) and tap, the
//    grad_output of the window is taken where its index equals this input position
//    (is_equal + copy_predicated) and added: the scatter by index as compare/select.
//  - max_pool3d_with_indices and its backward: the same with one more tap loop, over the
//    kernel's depth: per output depth slice the window's input slices (the first one inside the
//    input starts the window), indices d * H * W + h * W + w; backward per input depth slice,
//    the depth taps that reach it from a grad_output slice.
//  - avg_pool2d: the taps' sum divided by ATen's divisor (count_include_pad, divisor_override),
//    constant over the columns between the edges, so each such segment is one block.
//  - avg_pool2d_backward: grad_output divided by the divisor (into HBM scratch), then spread:
//    per phase, the sum of the taps that reach the input position.
//  - adaptive_avg_pool2d (and its backward) when the output divides the input: avg pooling with
//    kernel = stride = input / output.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir_lowering/host_passes.h"
#include "mlir_lowering/trn/LowerLinalgImpl.h"
#include "mlir_lowering/trn/TrnRefuse.h"

namespace trn::ir::lower_linalg_detail {
namespace {

using ::trn::mlir_lowering::kExternIntsAttr;
using ::trn::mlir_lowering::kExternListsAttr;
using ::trn::mlir_lowering::kExternOpAttr;

constexpr int64_t kVectorFree = 2048;

// A (N, C, H, W) or unbatched (C, H, W) tensor; with `spatial` 3, (N, C, D, H, W) or (C, D, H, W).
Nchw Planes(Value v, mlir::Operation* call, int spatial, std::string* why, bool* ok) {
  auto h = HbmOf(v, why);
  if (!h) {
    *ok = false;
    return {};
  }
  const int64_t rank = v.getType().cast<mlir::MemRefType>().getRank();
  llvm::SmallVector<int64_t> perm = ExternPerm(call, v);
  if (rank == spatial + 2) return ShapeNchw(v, *h, perm);
  // Unbatched: c, [d,] h, w as (1, c, [d,] h, w).
  auto shape = v.getType().cast<mlir::MemRefType>().getShape();
  Nchw u;
  u.buffer = h->memref;
  u.offset = h->offset;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = perm.empty() ? i : perm[i];
    if (spatial == 3 && i == 1) {
      u.depth = shape[d];
      u.depth_stride = h->strides[d];
      continue;
    }
    const int slot = spatial == 3 && i > 1 ? i : i + 1;
    u.size[slot] = shape[d];
    u.stride[slot] = h->strides[d];
  }
  return u;
}

// Column segments of an output row with one divisor each (avg pooling); max pooling: one.
struct Segment {
  int64_t c0, cb;
  int64_t size, valid;  // window columns inside the padded input, and inside the input
};

void Window1(int64_t o, int64_t k, int64_t s, int64_t p, int64_t in, int64_t* size, int64_t* valid) {
  const int64_t start = o * s - p, end = std::min(start + k, in + p);
  *size = end - start;
  *valid = std::min(end, in) - std::max<int64_t>(start, 0);
}

std::vector<Segment> Segments(int64_t cols, int64_t k, int64_t s, int64_t p, int64_t in, bool split) {
  std::vector<Segment> out;
  for (int64_t c = 0; c < cols; ++c) {
    int64_t size = 0, valid = 0;
    if (split) Window1(c, k, s, p, in, &size, &valid);
    if (!out.empty() && out.back().size == size && out.back().valid == valid && out.back().cb < kVectorFree) {
      ++out.back().cb;
    } else {
      out.push_back({c, 1, size, valid});
    }
  }
  return out;
}

}  // namespace

bool Lowerer::IsPool(mlir::linalg::GenericOp g) {
  auto name = g->getAttrOfType<mlir::StringAttr>(kExternOpAttr);
  if (!name) return false;
  llvm::StringRef n = name.getValue();
  return n == "aten::max_pool2d_with_indices" || n == "aten::max_pool2d_with_indices_backward" ||
         n == "aten::max_pool3d_with_indices" || n == "aten::max_pool3d_with_indices_backward" ||
         n == "aten::avg_pool2d" || n == "aten::avg_pool2d_backward" || n == "aten::adaptive_avg_pool2d" ||
         n == "aten::_adaptive_avg_pool2d" || n == "aten::_adaptive_avg_pool2d_backward";
}

// Operands: ctx, op index, the tensor reads in argument order, then the results.
LogicalResult Lowerer::LowerPool(mlir::linalg::GenericOp g) {
  const std::string name = g->getAttrOfType<mlir::StringAttr>(kExternOpAttr).getValue().str();
  const bool max = name.find("max_pool") != std::string::npos;
  const bool adaptive = name.find("adaptive") != std::string::npos;
  const bool backward = name.find("backward") != std::string::npos;
  const int spatial = name.find("pool3d") != std::string::npos ? 3 : 2;  // 3-D: max pooling only
  auto ints = g->getAttrOfType<mlir::DenseI64ArrayAttr>(kExternIntsAttr);
  auto lists = g->getAttrOfType<mlir::ArrayAttr>(kExternListsAttr);
  auto list = [&](unsigned i) {
    auto a = lists && i < lists.size() ? lists[i].dyn_cast<mlir::DenseI64ArrayAttr>() : nullptr;
    return a ? llvm::SmallVector<int64_t>(a.asArrayRef()) : llvm::SmallVector<int64_t>();
  };
  for (Value v : g->getOperands().drop_front(2)) {
    auto t = v.getType().dyn_cast<mlir::MemRefType>();
    const mlir::Type e = t ? t.getElementType() : mlir::Type();
    if (!t || !t.hasStaticShape() || !(e.isF32() || e.isBF16() || e.isF16() || e.isInteger(64))) {
      return refuse(g) << "pooling operands must be f32, bf16 or f16 (indices i64) memrefs of static shape";
    }
  }
  // Tensors: max forward (self | out, indices); max backward (grad_output, self, indices |
  // grad_input); avg forward (self | out); avg / adaptive backward (grad_output, self | grad_input).
  const unsigned n_ops = g->getNumOperands();
  Value self = g->getOperand(backward ? 3 : 2);
  Value gout = backward ? g->getOperand(2) : Value();
  Value indices = max ? g->getOperand(backward ? 4 : n_ops - 1) : Value();
  Value result = g->getOperand(max && !backward ? n_ops - 2 : n_ops - 1);
  std::string why;
  bool ok = true;
  const Nchw X = Planes(self, g, spatial, &why, &ok);
  const Nchw Y = Planes(backward ? gout : result, g, spatial, &why, &ok);
  const Nchw R = Planes(result, g, spatial, &why, &ok);
  const Nchw I = max ? Planes(indices, g, spatial, &why, &ok) : Nchw{};
  if (!ok) return refuse(g) << "pooling operand: " << why;
  // Geometry: kernel, stride, padding, dilation per spatial axis (rows, columns), and of the
  // depth axis of 3-D pooling (one more tap loop outside; 1, 1, 0, 1 for 2-D).
  int64_t k[2], s[2], p[2] = {0, 0}, d[2] = {1, 1};
  int64_t kd = 1, sd = 1, pd = 0, dd = 1;
  bool include_pad = true;
  int64_t divisor = 0;
  if (adaptive) {
    for (int i = 0; i < 2; ++i) {
      if (Y.size[2 + i] <= 0 || X.size[2 + i] % Y.size[2 + i] != 0) {
        return refuse(g) << "adaptive pooling whose output does not divide the input (no trn lowering)";
      }
      k[i] = s[i] = X.size[2 + i] / Y.size[2 + i];
    }
  } else {
    llvm::SmallVector<int64_t> kl = list(0), sl = list(1), pl = list(2), dl = max ? list(3) : llvm::SmallVector<int64_t>{1};
    auto at = [](const llvm::SmallVector<int64_t>& l, int i, int64_t fallback) {
      return l.empty() ? fallback : l[std::min<size_t>(i, l.size() - 1)];
    };
    if (kl.empty()) return g.emitOpError("pooling call without its kernel size (trn.extern_lists)");
    const int lead = spatial - 2;  // 3-D lists start with the depth's entry
    for (int i = 0; i < 2; ++i) {
      k[i] = at(kl, lead + i, 1), s[i] = at(sl, lead + i, k[i]), p[i] = at(pl, lead + i, 0), d[i] = at(dl, lead + i, 1);
    }
    if (spatial == 3) kd = at(kl, 0, 1), sd = at(sl, 0, kd), pd = at(pl, 0, 0), dd = at(dl, 0, 1);
    if (!max) {  // ints: ceil_mode, count_include_pad[, divisor_override]
      if (!ints || ints.size() < 2) return g.emitOpError("avg_pool2d call without its flags (trn.extern_ints)");
      include_pad = ints[1] != 0;
      if (ints.size() > 2) divisor = ints[2];
    }
  }
  const mlir::Type f32 = b_.getF32Type(), i32 = b_.getI32Type(), i1 = b_.getI1Type();
  auto str = [&](const char* v) { return b_.getStringAttr(v); };
  const int64_t n = X.size[0], c = X.size[1], h = X.size[2], w = X.size[3];
  const int64_t oh = Y.size[2], ow = Y.size[3];
  auto div_of = [&](int64_t row, const Segment& seg) -> double {
    if (divisor != 0) return static_cast<double>(divisor);
    int64_t rsize = 0, rvalid = 0;
    Window1(row, k[0], s[0], p[0], h, &rsize, &rvalid);
    return static_cast<double>(include_pad ? rsize * seg.size : rvalid * seg.valid);
  };
  // The source geometry of shifted tiles over a (C, rows, cols) plane set of image b.
  auto source = [&](const Nchw& G, int64_t b, int64_t rows, int64_t cols, int64_t sh, int64_t sw) {
    ConvSum src;
    src.x = G.buffer;
    src.x_offset = G.offset + b * G.stride[0];
    src.x_channel = G.stride[1], src.x_row = G.stride[2], src.x_col = G.stride[3];
    src.x_rows = rows, src.x_cols = cols, src.sh = sh, src.sw = sw;
    return src;
  };
  auto add_into = [&](Value& acc, Value part, int64_t cb, int64_t len) {
    if (!acc) {
      acc = part;
      return;
    }
    Value sum = Sbuf(cb, {len}, f32);
    Make<TensorTensorOp>(acc, part, sum, str("add"));
    acc = sum;
  };
  // A tile of one output row's columns [col0, col0 + len) of channels [c0, c0 + cb).
  auto store = [&](Value tile, const Nchw& G, int64_t b, int64_t z, int64_t c0, int64_t cb, int64_t row, int64_t col0,
                   int64_t len) {
    StoreWindow(tile, Window{G.buffer, G.offset + b * G.stride[0] + z * G.depth_stride + c0 * G.stride[1] + row * G.stride[2] +
                                           col0 * G.stride[3],
                             cb, G.stride[1], {len}, {G.stride[3]}});
  };
  // Max pooling, output row r, columns of `seg`: per tap (i * kw + j), the runs [x0, x1) of the
  // segment's columns whose first tap inside the input it is, when the window's first tap (0, 0)
  // is outside there (where it is inside, the window starts with it).
  auto FirstInside = [&](int64_t r, const Segment& seg) {
    std::vector<std::vector<std::pair<int64_t, int64_t>>> runs(static_cast<size_t>(k[0] * k[1]));
    int64_t i0 = 0;
    while (i0 < k[0] && (r * s[0] + i0 * d[0] - p[0] < 0 || r * s[0] + i0 * d[0] - p[0] >= h)) ++i0;
    if (i0 == k[0]) return runs;
    for (int64_t f = 0; f < seg.cb; ++f) {
      const int64_t col = (seg.c0 + f) * s[1] - p[1];
      int64_t j0 = 0;
      while (j0 < k[1] && (col + j0 * d[1] < 0 || col + j0 * d[1] >= w)) ++j0;
      if (j0 == k[1] || (i0 == 0 && j0 == 0)) continue;
      auto& run = runs[i0 * k[1] + j0];
      if (!run.empty() && run.back().second == f) {
        ++run.back().second;
      } else {
        run.push_back({f, f + 1});
      }
    }
    return runs;
  };
  // Max pooling: take the tap's value `v` (and its index `ti`) where it beats the best so far
  // (or is NaN: NaN wins), or where `runs` force it (the first tap inside the input).
  auto take_where_better = [&](Value v, Value ti, Value acc, Value idx, int64_t cb, int64_t len,
                               const std::vector<std::pair<int64_t, int64_t>>& runs) {
    Value gt = Sbuf(cb, {len}, i1), nan = Sbuf(cb, {len}, i1), take = Sbuf(cb, {len}, i1);
    Make<TensorTensorOp>(v, acc, gt, str("is_gt"));
    Make<TensorTensorOp>(v, v, nan, str("not_equal"));
    Make<TensorTensorOp>(gt, nan, take, str("logical_or"));
    for (const auto& [x0, x1] : runs) {  // force the first inside
      Value f = Sbuf(cb, {len}, i32), ge = Sbuf(cb, {len}, i1), lt = Sbuf(cb, {len}, i1);
      Value in = Sbuf(cb, {len}, i1), forced = Sbuf(cb, {len}, i1);
      Make<IotaOp>(f, b_.getI64IntegerAttr(0), b_.getI64IntegerAttr(0), b_.getI64IntegerAttr(1));
      Make<TensorScalarOp>(f, ge, str("is_ge"), b_.getF32FloatAttr(static_cast<float>(x0)), Value());
      Make<TensorScalarOp>(f, lt, str("is_lt"), b_.getF32FloatAttr(static_cast<float>(x1)), Value());
      Make<TensorTensorOp>(ge, lt, in, str("logical_and"));
      Make<TensorTensorOp>(take, in, forced, str("logical_or"));
      take = forced;
    }
    Make<CopyPredicatedOp>(v, take, acc);
    Make<CopyPredicatedOp>(ti, take, idx);
  };
  // Max pooling, one output tile (channels [c0, c0 + cb), output row r, the columns of `seg`)
  // over the input depth `slices`: the maximum into `*best`, its flat input index into `*index`.
  // ATen starts each window at its first position inside the input (value -inf): a column whose
  // first tap is padding takes the first tap inside the input whatever its value (an all -inf
  // window then keeps that position's index). In depth, the window starts at its first slice
  // inside the input.
  auto max_window = [&](const ConvSum& src, const std::vector<int64_t>& slices, int64_t c0, int64_t cb, int64_t r,
                        const Segment& seg, Value* best, Value* index) {
    const double ninf = -std::numeric_limits<double>::infinity();
    const std::vector<std::vector<std::pair<int64_t, int64_t>>> firsts = FirstInside(r, seg);
    const std::vector<std::pair<int64_t, int64_t>> no_runs;
    Value acc, idx;
    for (size_t q = 0; q < slices.size(); ++q) {
      for (int64_t i = 0; i < k[0]; ++i) {
        for (int64_t j = 0; j < k[1]; ++j) {
          const ConvTap tap{0, i * d[0] - p[0], j * d[1] - p[1], slices[q] * X.depth_stride};
          Value v = ShiftedTile(src, tap, c0, cb, r, 1, seg.c0, seg.cb, ninf);
          const bool first = q == 0 && i == 0 && j == 0;
          if (!v && !first) continue;
          Value ti = Sbuf(cb, {seg.cb}, i32);
          Make<IotaOp>(ti, b_.getI64IntegerAttr((slices[q] * h + r * s[0] + tap.ah) * w + seg.c0 * s[1] + tap.aw),
                       b_.getI64IntegerAttr(0), b_.getI64IntegerAttr(s[1]));
          if (first) {  // best = the first tap (-inf outside), its index
            acc = v;
            if (!acc) {
              acc = Sbuf(cb, {seg.cb}, f32);
              Make<MemsetOp>(acc, b_.getF64FloatAttr(ninf));
            }
            idx = ti;
            continue;
          }
          take_where_better(v, ti, acc, idx, cb, seg.cb, q == 0 ? firsts[i * k[1] + j] : no_runs);
        }
      }
    }
    *best = acc;
    *index = idx;
  };
  // Average pooling, one output tile: the window's sum over its divisor.
  auto avg_window = [&](const ConvSum& src, int64_t c0, int64_t cb, int64_t r, const Segment& seg) {
    Value acc;
    for (int64_t i = 0; i < k[0]; ++i) {
      for (int64_t j = 0; j < k[1]; ++j) {
        Value v = ShiftedTile(src, ConvTap{0, i - p[0], j - p[1]}, c0, cb, r, 1, seg.c0, seg.cb);
        if (v) add_into(acc, v, cb, seg.cb);
      }
    }
    if (!acc) {
      acc = Sbuf(cb, {seg.cb}, f32);
      Make<MemsetOp>(acc, b_.getF64FloatAttr(0.0));
    }
    Value mean = Sbuf(cb, {seg.cb}, f32);
    Make<TensorScalarOp>(acc, mean, str("divide"), b_.getF32FloatAttr(static_cast<float>(div_of(r, seg))), Value());
    return mean;
  };
  if (!backward) {
    for (int64_t b = 0; b < n; ++b) {
      const ConvSum src = source(X, b, h, w, s[0], s[1]);
      for (int64_t od = 0; od < Y.depth; ++od) {
        // The input depth slices this output slice's window reads (3-D; 2-D: slice 0).
        std::vector<int64_t> slices;
        for (int64_t t = 0; t < kd; ++t) {
          const int64_t id = od * sd + t * dd - pd;
          if (id >= 0 && id < X.depth) slices.push_back(id);
        }
        if (slices.empty()) return refuse(g) << "pooling window without an input depth slice (no trn lowering)";
        for (int64_t c0 = 0; c0 < c; c0 += kMaxPartitions) {
          const int64_t cb = std::min<int64_t>(kMaxPartitions, c - c0);
          for (int64_t r = 0; r < oh; ++r) {
            for (const Segment& seg : Segments(ow, k[1], s[1], p[1], w, !max)) {
              Value acc;
              if (max) {
                Value idx;
                max_window(src, slices, c0, cb, r, seg, &acc, &idx);
                store(idx, I, b, od, c0, cb, r, seg.c0, seg.cb);
              } else {
                acc = avg_window(src, c0, cb, r, seg);
              }
              store(acc, R, b, od, c0, cb, r, seg.c0, seg.cb);
            }
          }
        }
      }
    }
    return success();
  }
  // Backward. Avg: grad_output / divisor into scratch first, which the spread then reads.
  Value spread = gout;
  Nchw S = Y;
  if (!max) {
    auto type = mlir::MemRefType::get({n * c * oh * ow}, f32);
    spread = b_.create<mlir::memref::AllocOp>(loc_, type).getResult();
    S = Nchw{{n, c, oh, ow}, {c * oh * ow, oh * ow, ow, 1}, spread, 0};
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t c0 = 0; c0 < c; c0 += kMaxPartitions) {
        const int64_t cb = std::min<int64_t>(kMaxPartitions, c - c0);
        for (int64_t r = 0; r < oh; ++r) {
          for (const Segment& seg : Segments(ow, k[1], s[1], p[1], w, true)) {
            Value t = LoadWindow(Window{Y.buffer, Y.offset + b * Y.stride[0] + c0 * Y.stride[1] + r * Y.stride[2] + seg.c0 * Y.stride[3],
                                        cb, Y.stride[1], {seg.cb}, {Y.stride[3]}},
                                 seg.cb, f32);
            Value q = Sbuf(cb, {seg.cb}, f32);
            Make<TensorScalarOp>(t, q, str("divide"), b_.getF32FloatAttr(static_cast<float>(div_of(r, seg))), Value());
            store(q, S, b, 0, c0, cb, r, seg.c0, seg.cb);
          }
        }
      }
    }
  }
  // Phase (ph, pw): input rows ph + stride t; tap i reaches it from output row t + (ph + pad - i dil) / stride.
  // Input depth slice z (3-D): depth tap t reaches it from output slice (z + pd - t dd) / sd where
  // that divides.
  for (int64_t b = 0; b < n; ++b) {
    const ConvSum src = source(S, b, oh, ow, 1, 1);
    const ConvSum isrc = max ? source(I, b, oh, ow, 1, 1) : ConvSum{};
    for (int64_t z = 0; z < R.depth; ++z) {
      for (int64_t ph = 0; ph < std::min(s[0], h); ++ph) {
        for (int64_t pw = 0; pw < std::min(s[1], w); ++pw) {
          std::vector<ConvTap> taps, itaps;  // in grad_output, in the indices
          for (int64_t t = 0; t < kd; ++t) {
            const int64_t dt = z + pd - t * dd;
            if (dt < 0 || dt % sd != 0 || dt / sd >= Y.depth) continue;
            for (int64_t i = 0; i < k[0]; ++i) {
              const int64_t dh = ph + p[0] - i * d[0];
              if (((dh % s[0]) + s[0]) % s[0] != 0) continue;
              for (int64_t j = 0; j < k[1]; ++j) {
                const int64_t dw = pw + p[1] - j * d[1];
                if (((dw % s[1]) + s[1]) % s[1] != 0) continue;
                taps.push_back({0, dh / s[0], dw / s[1], dt / sd * S.depth_stride});
                itaps.push_back({0, dh / s[0], dw / s[1], dt / sd * I.depth_stride});
              }
            }
          }
          const int64_t rows = CeilDiv(h - ph, s[0]), cols = CeilDiv(w - pw, s[1]);
          for (int64_t c0 = 0; c0 < c; c0 += kMaxPartitions) {
            const int64_t cb = std::min<int64_t>(kMaxPartitions, c - c0);
            for (const Block& bl : Blocks(rows, cols, kVectorFree)) {
              // Max: one row per block (the position's index is an iota along it).
              for (int64_t r = bl.r0; r < bl.r0 + bl.rb; r += max ? 1 : bl.rb) {
                const int64_t rb = max ? 1 : bl.rb, len = rb * bl.cb;
                Value acc, target;
                if (max) {
                  target = Sbuf(cb, {len}, i32);
                  Make<IotaOp>(target, b_.getI64IntegerAttr((z * h + ph + s[0] * r) * w + pw + s[1] * bl.c0),
                               b_.getI64IntegerAttr(0), b_.getI64IntegerAttr(s[1]));
                }
                for (size_t q = 0; q < taps.size(); ++q) {
                  Value v = ShiftedTile(src, taps[q], c0, cb, r, rb, bl.c0, bl.cb);
                  if (!v) continue;
                  if (max) {
                    Value at = ShiftedTile(isrc, itaps[q], c0, cb, r, rb, bl.c0, bl.cb, -1.0, i32);
                    Value eq = Sbuf(cb, {len}, i1), sel = Sbuf(cb, {len}, f32);
                    Make<TensorTensorOp>(at, target, eq, str("is_equal"));
                    Make<MemsetOp>(sel, b_.getF64FloatAttr(0.0));
                    Make<CopyPredicatedOp>(v, eq, sel);
                    v = sel;
                  }
                  add_into(acc, v, cb, len);
                }
                if (!acc) {
                  acc = Sbuf(cb, {len}, f32);
                  Make<MemsetOp>(acc, b_.getF64FloatAttr(0.0));
                }
                const Nchw& G = R;
                StoreWindow(acc, Window{G.buffer, G.offset + b * G.stride[0] + z * G.depth_stride + c0 * G.stride[1] +
                                                    (ph + s[0] * r) * G.stride[2] + (pw + s[1] * bl.c0) * G.stride[3],
                                        cb, G.stride[1], {rb, bl.cb}, {s[0] * G.stride[2], s[1] * G.stride[3]}});
              }
            }
          }
        }
      }
    }
  }
  return success();
}

}  // namespace trn::ir::lower_linalg_detail
