// Pooling windows. On the host target max_pool2d_with_indices is a loop nest of its own: ATen's
// CPU kernel took 146 us for a [64, 8, 8, 8] input on one thread (relu over the same tensor: 3
// us), the loop nest below 18 us. The other pooling ops, max pooling's backward (ATen scatters
// into zeros in 11 us there; a gather over the input as a loop nest took 19 us), and max pooling
// itself on a trn target (whose pipeline lowers the call: trn/LowerPool.cpp) or with windows of
// more than 64 positions, are runtime calls of ATen's CPU kernels (GroupLowering::Extern).
//
// The loop nest is elementwise over the result with the window unrolled in its body and the
// input read by tensor.extract: padding, dilation and ceil_mode need no padded copy (a position
// outside the input is skipped; windows entirely inside need no check at all), and the running
// maximum stays in registers. As a reduction over window loops it went through the result
// buffer, which LLVM must assume aliases the input (129 us). Results are ATen's bit for bit
// (aten/src/ATen/native/cpu/MaxPoolKernel.cpp): the window is scanned row by row; an element
// replaces the running maximum when it is the first in-bounds one, greater, or NaN (so the last
// NaN wins); its index is ih * W + iw in its plane, and the value is the element at that index.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
};

// An int[2] argument (one value stands for both); `empty` when the list is empty (stride=[]).
std::optional<std::pair<int64_t, int64_t>> Pair(const GroupLowering& g, absl::string_view name,
                                                std::optional<std::pair<int64_t, int64_t>> empty) {
  absl::StatusOr<c10::IValue> v = g.Arg(name);
  if (!v.ok() || !v->isIntList()) return std::nullopt;
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

// `tensor.extract %tensor[lead loop indices..., i, j]` of a whole tensor `type` (i, j: i64).
Scalar ExtractAt(ScalarBuilder& b, const std::string& tensor, const std::vector<int64_t>& sizes,
                 c10::ScalarType dtype, size_t lead, const Scalar& i, const Scalar& j) {
  std::vector<std::string> ix;
  for (size_t d = 0; d < lead; ++d) {
    ix.push_back(b.Raw(absl::StrCat("arith.index_cast ", b.LoopIndex(static_cast<int64_t>(d)).ssa, " : i64 to index"),
                       c10::kLong).ssa);
  }
  for (const Scalar* s : {&i, &j}) {
    ix.push_back(b.Raw(absl::StrCat("arith.index_cast ", s->ssa, " : i64 to index"), c10::kLong).ssa);
  }
  const Scalar stored = b.Raw(absl::StrCat("tensor.extract ", tensor, "[", absl::StrJoin(ix, ", "), "] : ",
                                          TensorType(sizes, dtype)),
                             dtype);
  return b.Load(stored.ssa, dtype);
}

Scalar I64(ScalarBuilder& b, int64_t v) { return b.Constant(v, c10::kLong); }

// lo <= x < hi, for i64 scalars.
Scalar InRange(ScalarBuilder& b, const Scalar& x, int64_t lo, int64_t hi) {
  return b.And(b.Cmp(Cmp::kGe, x, I64(b, lo)), b.Cmp(Cmp::kLt, x, I64(b, hi)));
}

// Windows of more positions than this stay runtime calls (the loop bodies below unroll them).
constexpr int64_t kMaxUnrolled = 64;

// max_pool2d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False)
// -> (values, indices), and its .out form.
absl::Status MaxPool2d(GroupLowering& g, const runtime::OpRecord&) {
  if (GroupLowering::TrnTarget()) return g.Extern();
  TRN_ASSIGN_OR_RETURN(View in, TensorArg(g, "self"));
  const at::Tensor values = g.Destination(0), indices = g.Destination(1);
  if (!values.defined() || !indices.defined() || values.dim() != in.rank() || indices.scalar_type() != c10::kLong ||
      values.scalar_type() != in.dtype) {
    return g.Extern();
  }
  std::optional<Window> w = ReadWindow(g, in, values.size(-2), values.size(-1));
  if (!w || w->kh * w->kw > kMaxUnrolled) return g.Extern();
  const Window win = *w;
  const std::string x = g.Materialize(in);
  const std::vector<int64_t> in_sizes = in.sizes;
  const c10::ScalarType t = in.dtype;
  const size_t lead = win.lead.size();
  std::vector<int64_t> out_shape = win.lead;
  out_shape.push_back(win.oh);
  out_shape.push_back(win.ow);
  // Windows entirely inside the input (no padding, none past the edge).
  const bool inside = win.ph == 0 && win.pw == 0 && (win.oh - 1) * win.sh + (win.kh - 1) * win.dh < win.h &&
                      (win.ow - 1) * win.sw + (win.kw - 1) * win.dw < win.w;
  // The index: one pass over the window, unrolled, the running maximum in registers.
  View index = g.Pointwise({}, out_shape, c10::kLong, [&](ScalarBuilder& b, const Args&) {
    const auto l = static_cast<int64_t>(lead);
    Scalar ih0 = b.Sub(b.Mul(b.LoopIndex(l), I64(b, win.sh)), I64(b, win.ph));
    Scalar iw0 = b.Sub(b.Mul(b.LoopIndex(l + 1), I64(b, win.sw)), I64(b, win.pw));
    Scalar best = b.Constant(Lowest(t), t), at = I64(b, -1);
    for (int64_t kh = 0; kh < win.kh; ++kh) {
      for (int64_t kw = 0; kw < win.kw; ++kw) {
        Scalar ih = b.Add(ih0, I64(b, kh * win.dh)), iw = b.Add(iw0, I64(b, kw * win.dw));
        Scalar index = b.Add(b.Mul(ih, I64(b, win.w)), iw);
        if (inside) {  // every position is in the input: no bounds checks, the first one is taken
          Scalar v = ExtractAt(b, x, in_sizes, t, lead, ih, iw);
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
        Scalar valid = b.And(InRange(b, ih, 0, win.h), InRange(b, iw, 0, win.w));
        Scalar v = ExtractAt(b, x, in_sizes, t, lead, b.Select(valid, ih, I64(b, 0)), b.Select(valid, iw, I64(b, 0)));
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
    return ExtractAt(b, x, in_sizes, t, lead, b.Div(a[0], I64(b, win.w)), b.Rem(a[0], I64(b, win.w)));
  });
  TRN_RETURN_IF_ERROR(g.WriteResult(0, value));
  return g.WriteResult(1, index);
}

}  // namespace

void PopulatePooling(LoweringRegistry& r) {
  r.Register("aten::max_pool2d_with_indices", "pooling", MaxPool2d, /*runtime_call=*/true);
  for (const char* name : {"aten::max_pool2d_with_indices_backward", "aten::avg_pool2d", "aten::avg_pool2d_backward", "aten::adaptive_avg_pool2d",
                           "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d_backward",
                           "aten::max_pool3d_with_indices", "aten::avg_pool3d", "aten::upsample_nearest2d",
                           "aten::upsample_bilinear2d"}) {
    r.Register(name, "pooling", ViaRuntime, /*runtime_call=*/true);
  }
}

}  // namespace trn::mlir_lowering
