// Pooling windows. On the host target max_pool2d_with_indices, avg_pool2d and avg_pool2d's
// backward are loop nests of their own. ATen's CPU kernels, on the bench cnn's tensors and the
// executor's one thread: max pooling of [64, 8, 8, 8] 146 us (relu of it: 3 us; the loop nest:
// 18 us); avg pooling of [64, 16, 4, 4] 33 us forward, 45 us backward. The rest are runtime
// calls of ATen's kernels (GroupLowering::Extern): the other pooling ops (3-D max pooling and
// its backward among them: trn/LowerPool.cpp lowers those on a trn target); max pooling's
// backward (ATen scatters into zeros in 11 us there, a gather loop nest took 19 us); these three
// on a trn target (whose pipeline lowers the calls: trn/LowerPool.cpp) or with windows of more
// than 64 positions.
//
// Each loop nest is elementwise over its result with the window unrolled in its body and the
// input read by tensor.extract: padding, dilation and ceil_mode need no padded copy (a position
// outside the input is skipped; max pooling's windows entirely inside need no check), and the
// running values stay in registers. As a reduction over window loops max pooling went through
// the result buffer, which LLVM must assume aliases the input (129 us). Results are ATen's bit
// for bit (aten/src/ATen/native/cpu/MaxPoolKernel.cpp, AvgPoolKernel.cpp):
//  - max: the window is scanned row by row; an element replaces the running maximum when it is
//    the first in-bounds one, greater, or NaN (so the last NaN wins); its index is ih * W + iw
//    in its plane, and the value is the element at that index;
//  - avg: the in-bounds elements summed row by row in the dtype, divided by ATen's divisor
//    (divisor_override, or the window clipped to the padded input with count_include_pad, or to
//    the input without); the backward as a gather: grad_input[h, w] adds grad_output / divisor of
//    every window that summed (h, w), in ascending window order, as ATen adds them into zeros.
#include "absl/strings/str_cat.h"
#include "mlir_lowering/ops/reduce_helpers.h"

namespace trn::mlir_lowering {
namespace {

using Args = std::vector<Scalar>;

absl::Status ViaRuntime(GroupLowering& g, const runtime::OpRecord&) { return g.Extern(); }

// Window geometry of a 2-D pooling op over an input [lead..., H, W] (lead: C or N, C).
struct Window {
  int64_t kh = 0, kw = 0, sh = 0, sw = 0, ph = 0, pw = 0, dh = 0, dw = 0;
  int64_t h = 0, w = 0, oh = 0, ow = 0;
  std::vector<int64_t> lead;
  std::vector<int64_t> OutShape() const {
    std::vector<int64_t> s = lead;
    s.push_back(oh);
    s.push_back(ow);
    return s;
  }
};

// An int[2] argument (one value stands for both); `empty` when the list is empty (stride=[]).
std::optional<std::pair<int64_t, int64_t>> Pair(const GroupLowering& g, absl::string_view name,
                                                std::optional<std::pair<int64_t, int64_t>> empty) {
  absl::StatusOr<c10::IValue> v = g.Arg(name);
  if (!v.ok()) return empty;  // not an argument of this op (avg pooling has no dilation)
  if (!v->isIntList()) return std::nullopt;
  const std::vector<int64_t> l = v->toIntVector();
  if (l.empty()) return empty;
  if (l.size() == 1) return std::pair{l[0], l[0]};
  if (l.size() == 2) return std::pair{l[0], l[1]};
  return std::nullopt;
}

// The window of the current op over `input` with output plane [oh, ow]; nullopt for what the
// loop nests below do not handle (the op then runs as a runtime call).
std::optional<Window> ReadWindow(const GroupLowering& g, const View& input, int64_t oh, int64_t ow) {
  auto k = Pair(g, "kernel_size", std::nullopt);
  if (!k) return std::nullopt;
  auto s = Pair(g, "stride", k);
  auto p = Pair(g, "padding", std::pair<int64_t, int64_t>{0, 0});
  auto d = Pair(g, "dilation", std::pair<int64_t, int64_t>{1, 1});
  if (!s || !p || !d || (input.rank() != 3 && input.rank() != 4)) return std::nullopt;
  Window win{k->first, k->second, s->first, s->second, p->first, p->second, d->first, d->second};
  win.h = input.sizes[input.rank() - 2];
  win.w = input.sizes[input.rank() - 1];
  win.oh = oh;
  win.ow = ow;
  win.lead.assign(input.sizes.begin(), input.sizes.end() - 2);
  if (win.kh <= 0 || win.kw <= 0 || win.sh <= 0 || win.sw <= 0 || win.ph < 0 || win.pw < 0 || win.dh <= 0 ||
      win.dw <= 0 || win.h <= 0 || win.w <= 0 || oh <= 0 || ow <= 0 || !IsFloatType(input.dtype) ||
      IsHalf(input.dtype)) {
    return std::nullopt;
  }
  return win;
}

// A whole tensor [lead..., H, W] read element by element in a loop nest whose first loops run
// over its lead dims (the pooling ops' outputs and inputs share them).
struct Planes {
  Planes(GroupLowering& g, const View& v)
      : tensor(g.Materialize(v)), sizes(v.sizes), dtype(v.dtype), lead(v.sizes.size() - 2) {}
  IrValue tensor;
  std::vector<int64_t> sizes;
  c10::ScalarType dtype;
  size_t lead;
};

// Element [lead loop indices..., i, j] of `p` (i, j: i64 scalars).
Scalar ExtractAt(ScalarBuilder& b, const Planes& p, const Scalar& i, const Scalar& j) {
  std::vector<Scalar> idx;
  for (size_t d = 0; d < p.lead; ++d) idx.push_back(b.LoopIndex(static_cast<int64_t>(d)));
  idx.push_back(i);
  idx.push_back(j);
  return b.Extract(p.tensor, p.dtype, idx);
}

Scalar I64(ScalarBuilder& b, int64_t v) { return b.Constant(v, c10::kLong); }

// lo <= x < hi, for i64 scalars.
Scalar InRange(ScalarBuilder& b, const Scalar& x, int64_t lo, int64_t hi) {
  return b.And(b.Cmp(Cmp::kGe, x, I64(b, lo)), b.Cmp(Cmp::kLt, x, I64(b, hi)));
}

// Whether (ih, iw) is inside the [h, w] planes of `p`, and its element there (the element at
// (0, 0) of the plane when outside: every read stays in bounds).
std::pair<Scalar, Scalar> ReadInside(ScalarBuilder& b, const Planes& p, const Scalar& ih, const Scalar& iw) {
  const int64_t h = p.sizes[p.sizes.size() - 2], w = p.sizes[p.sizes.size() - 1];
  Scalar valid = b.And(InRange(b, ih, 0, h), InRange(b, iw, 0, w));
  Scalar v = ExtractAt(b, p, b.Select(valid, ih, I64(b, 0)), b.Select(valid, iw, I64(b, 0)));
  return {valid, v};
}

// Windows of more positions than this stay runtime calls (the loop bodies below unroll them).
constexpr int64_t kMaxUnrolled = 64;

// ReadWindow for the forward ops, whose loop nests unroll the window: nullopt past kMaxUnrolled
// positions.
std::optional<Window> UnrolledWindow(const GroupLowering& g, const View& input, int64_t oh, int64_t ow) {
  std::optional<Window> w = ReadWindow(g, input, oh, ow);
  if (!w || w->kh * w->kw > kMaxUnrolled) return std::nullopt;
  return w;
}

// max_pool2d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)
// -> (values, indices), and its .out form.
absl::Status MaxPool2d(GroupLowering& g, const runtime::OpRecord&) {
  if (g.target().is_trn()) return g.Extern();
  TRN_ASSIGN_OR_RETURN(View in, TensorArg(g, "self"));
  const at::Tensor values = g.Destination(0), indices = g.Destination(1);
  if (!values.defined() || !indices.defined() || values.dim() != in.rank() || indices.scalar_type() != c10::kLong ||
      values.scalar_type() != in.dtype) {
    return g.Extern();
  }
  std::optional<Window> w = UnrolledWindow(g, in, values.size(-2), values.size(-1));
  if (!w) return g.Extern();
  const Window win = *w;
  const Planes x(g, in);
  const c10::ScalarType t = x.dtype;
  const std::vector<int64_t> out_shape = win.OutShape();
  // Windows entirely inside the input (no padding, none past the edge).
  const bool inside = win.ph == 0 && win.pw == 0 && (win.oh - 1) * win.sh + (win.kh - 1) * win.dh < win.h &&
                      (win.ow - 1) * win.sw + (win.kw - 1) * win.dw < win.w;
  // The index: one pass over the window, unrolled, the running maximum in registers.
  View index = g.Pointwise({}, out_shape, c10::kLong, [&](ScalarBuilder& b, const Args&) {
    const auto l = static_cast<int64_t>(x.lead);
    Scalar ih0 = b.Sub(b.Mul(b.LoopIndex(l), I64(b, win.sh)), I64(b, win.ph));
    Scalar iw0 = b.Sub(b.Mul(b.LoopIndex(l + 1), I64(b, win.sw)), I64(b, win.pw));
    Scalar best = b.Constant(Lowest(t), t), at = I64(b, -1);
    for (int64_t kh = 0; kh < win.kh; ++kh) {
      for (int64_t kw = 0; kw < win.kw; ++kw) {
        Scalar ih = b.Add(ih0, I64(b, kh * win.dh)), iw = b.Add(iw0, I64(b, kw * win.dw));
        Scalar index = b.Add(b.Mul(ih, I64(b, win.w)), iw);
        if (inside) {  // every position is in the input: no bounds checks, the first one is taken
          Scalar v = ExtractAt(b, x, ih, iw);
          if (kh == 0 && kw == 0) {
            best = v;
            at = index;
            continue;
          }
          Scalar take = b.Or(b.Cmp(Cmp::kGt, v, best), b.IsNan(v));
          best = b.Select(take, v, best);
          at = b.Select(take, index, at);
          continue;
        }
        auto [valid, v] = ReadInside(b, x, ih, iw);
        Scalar first = b.Cmp(Cmp::kEq, at, I64(b, -1));
        Scalar take = b.And(valid, b.Or(first, b.Or(b.Cmp(Cmp::kGt, v, best), b.IsNan(v))));
        best = b.Select(take, v, best);
        at = b.Select(take, index, at);
      }
    }
    return at;
  });
  // The value: the element at the index (the running maximum is always the element it names).
  View value = g.Pointwise({Operand::Of(index)}, out_shape, t, [&](ScalarBuilder& b, const Args& a) {
    return ExtractAt(b, x, b.Div(a[0], I64(b, win.w)), b.Rem(a[0], I64(b, win.w)));
  });
  TRN_RETURN_IF_ERROR(g.WriteResult(0, value));
  return g.WriteResult(1, index);
}

// avg pooling's divisor and clipped window for the output position (oh, ow) (i64 scalars), as
// ATen's kernel computes them (AvgPoolKernel.cpp): the window clipped to the padded input gives
// the pool size, then to the input the summed positions [h0, h1) x [w0, w1).
struct AvgWindow {
  Scalar h0, h1, w0, w1, divisor;
};
AvgWindow AvgAt(ScalarBuilder& b, const Window& win, const Scalar& oh, const Scalar& ow, bool count_pad,
                std::optional<int64_t> divisor_override) {
  Scalar hs = b.Sub(b.Mul(oh, I64(b, win.sh)), I64(b, win.ph)), ws = b.Sub(b.Mul(ow, I64(b, win.sw)), I64(b, win.pw));
  Scalar he = b.Min(b.Add(hs, I64(b, win.kh)), I64(b, win.h + win.ph));
  Scalar we = b.Min(b.Add(ws, I64(b, win.kw)), I64(b, win.w + win.pw));
  Scalar pool = b.Mul(b.Sub(he, hs), b.Sub(we, ws));
  AvgWindow a{b.Max(hs, I64(b, 0)), b.Min(he, I64(b, win.h)), b.Max(ws, I64(b, 0)), b.Min(we, I64(b, win.w)), pool};
  if (divisor_override) {
    a.divisor = I64(b, *divisor_override);
  } else if (!count_pad) {
    a.divisor = b.Mul(b.Sub(a.h1, a.h0), b.Sub(a.w1, a.w0));
  }
  return a;
}

struct AvgArgs {
  bool count_pad = true;
  std::optional<int64_t> divisor_override;
};
std::optional<AvgArgs> ReadAvgArgs(const GroupLowering& g) {
  AvgArgs a;
  absl::StatusOr<c10::IValue> c = g.Arg("count_include_pad"), d = g.Arg("divisor_override");
  if (!c.ok() || !c->isBool() || !d.ok() || !(d->isNone() || d->isInt())) return std::nullopt;
  a.count_pad = c->toBool();
  if (d->isInt()) {
    if (d->toInt() == 0) return std::nullopt;  // ATen raises: a runtime call keeps its error
    a.divisor_override = d->toInt();
  }
  return a;
}

// avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True,
// divisor_override=None), and its .out form: per output, the window's in-bounds elements summed
// row by row in the dtype, divided by the divisor (0 for a window with none, as ATen).
absl::Status AvgPool2d(GroupLowering& g, const runtime::OpRecord&) {
  if (g.target().is_trn()) return g.Extern();
  TRN_ASSIGN_OR_RETURN(View in, TensorArg(g, "self"));
  const at::Tensor dst = g.Destination(0);
  std::optional<AvgArgs> avg = ReadAvgArgs(g);
  if (!dst.defined() || dst.dim() != in.rank() || dst.scalar_type() != in.dtype || !avg) return g.Extern();
  std::optional<Window> w = UnrolledWindow(g, in, dst.size(-2), dst.size(-1));
  if (!w) return g.Extern();
  const Window win = *w;
  const Planes x(g, in);
  const c10::ScalarType t = x.dtype;
  const std::vector<int64_t> out_shape = win.OutShape();
  View out = g.Pointwise({}, out_shape, t, [&](ScalarBuilder& b, const Args&) {
    const auto l = static_cast<int64_t>(x.lead);
    const AvgWindow a = AvgAt(b, win, b.LoopIndex(l), b.LoopIndex(l + 1), avg->count_pad, avg->divisor_override);
    Scalar sum = b.Constant(0, t);
    for (int64_t kh = 0; kh < win.kh; ++kh) {
      for (int64_t kw = 0; kw < win.kw; ++kw) {
        Scalar ih = b.Add(b.Sub(b.Mul(b.LoopIndex(l), I64(b, win.sh)), I64(b, win.ph)), I64(b, kh));
        Scalar iw = b.Add(b.Sub(b.Mul(b.LoopIndex(l + 1), I64(b, win.sw)), I64(b, win.pw)), I64(b, kw));
        auto [valid, v] = ReadInside(b, x, ih, iw);
        sum = b.Select(valid, b.Add(sum, v), sum);
      }
    }
    Scalar any = b.And(b.Cmp(Cmp::kLt, a.h0, a.h1), b.Cmp(Cmp::kLt, a.w0, a.w1));
    return b.Select(any, b.Div(sum, b.Cast(a.divisor, t)), b.Constant(0, t));
  });
  return g.WriteResult(0, out);
}

// avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override), and its .grad_input form, as a gather: grad_input[h, w]
// adds grad_output / divisor of every window whose summed positions hold (h, w), in ascending
// window order, as ATen's kernel adds them into zeros.
absl::Status AvgPool2dBackward(GroupLowering& g, const runtime::OpRecord&) {
  if (g.target().is_trn()) return g.Extern();
  TRN_ASSIGN_OR_RETURN(View self, TensorArg(g, "self"));
  TRN_ASSIGN_OR_RETURN(View grad, TensorArg(g, "grad_output"));
  const at::Tensor dst = g.Destination(0);
  std::optional<AvgArgs> avg = ReadAvgArgs(g);
  if (!dst.defined() || dst.sizes().vec() != self.sizes || dst.scalar_type() != self.dtype ||
      grad.dtype != self.dtype || grad.rank() != self.rank() || !avg) {
    return g.Extern();
  }
  std::optional<Window> w = ReadWindow(g, self, grad.sizes[grad.rank() - 2], grad.sizes[grad.rank() - 1]);
  if (!w || !std::equal(w->lead.begin(), w->lead.end(), grad.sizes.begin())) return g.Extern();
  // The windows that can hold input row h: oh in [floor((h + ph) / sh) - (rh - 1), floor((h + ph) / sh)].
  const int64_t rh = (w->kh - 1) / w->sh + 1, rw = (w->kw - 1) / w->sw + 1;
  if (rh * rw > kMaxUnrolled) return g.Extern();
  const Window win = *w;
  const Planes gy(g, grad);
  const c10::ScalarType t = self.dtype;
  View dx = g.Pointwise({}, self.sizes, t, [&](ScalarBuilder& b, const Args&) {
    const auto l = static_cast<int64_t>(gy.lead);
    Scalar h = b.LoopIndex(l), x = b.LoopIndex(l + 1);
    Scalar oh0 = b.Sub(b.Div(b.Add(h, I64(b, win.ph)), I64(b, win.sh)), I64(b, rh - 1));
    Scalar ow0 = b.Sub(b.Div(b.Add(x, I64(b, win.pw)), I64(b, win.sw)), I64(b, rw - 1));
    Scalar sum = b.Constant(0, t);
    for (int64_t r = 0; r < rh; ++r) {
      for (int64_t c = 0; c < rw; ++c) {
        Scalar oh = b.Add(oh0, I64(b, r)), ow = b.Add(ow0, I64(b, c));
        Scalar valid = b.And(InRange(b, oh, 0, win.oh), InRange(b, ow, 0, win.ow));
        Scalar ohc = b.Select(valid, oh, I64(b, 0)), owc = b.Select(valid, ow, I64(b, 0));
        const AvgWindow a = AvgAt(b, win, ohc, owc, avg->count_pad, avg->divisor_override);
        Scalar holds = b.And(b.And(b.Cmp(Cmp::kGe, h, a.h0), b.Cmp(Cmp::kLt, h, a.h1)),
                             b.And(b.Cmp(Cmp::kGe, x, a.w0), b.Cmp(Cmp::kLt, x, a.w1)));
        Scalar delta = b.Div(ExtractAt(b, gy, ohc, owc), b.Cast(a.divisor, t));
        sum = b.Select(b.And(valid, holds), b.Add(sum, delta), sum);
      }
    }
    return sum;
  });
  return g.WriteResult(0, dx);
}

}  // namespace

void PopulatePooling(LoweringRegistry& r) {
  r.Register("aten::max_pool2d_with_indices", "pooling", MaxPool2d, /*runtime_call=*/true);
  r.Register("aten::avg_pool2d", "pooling", AvgPool2d, /*runtime_call=*/true);
  r.Register("aten::avg_pool2d_backward", "pooling", AvgPool2dBackward, /*runtime_call=*/true);
  for (const char* name : {"aten::max_pool2d_with_indices_backward", "aten::adaptive_avg_pool2d",
                           "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d_backward",
                           "aten::max_pool3d_with_indices", "aten::max_pool3d_with_indices_backward", "aten::avg_pool3d",
                           "aten::upsample_nearest2d", "aten::upsample_bilinear2d"}) {
    r.Register(name, "pooling", ViaRuntime, /*runtime_call=*/true);
  }
}

}  // namespace trn::mlir_lowering
