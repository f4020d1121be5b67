// Reductions: sum, mean, prod, amax/amin, max/min (all, with indices, elementwise), argmax/argmin,
// var/std (+ _mean), softmax, log_softmax, logsumexp, vector norms, all/any. Each lowers to
// linalg.generic reductions (GroupLowering::Reduce / ReduceMulti) plus pointwise maps. The losses
// are in losses.cpp (registered from here).
//
// Numerics follow ATen's CPU kernels: floating sums accumulate in f64 (see reduce_helpers.h);
// var/std are two-pass in f64 (ATen: Welford in double); softmax and log_softmax subtract the
// row max before exp, as ATen; max/min with indices return the first maximal index and
// propagate NaN (the first NaN wins), as ATen.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "mlir_lowering/ops/reduce_helpers.h"

namespace trn::mlir_lowering {
namespace {

using Args = std::vector<Scalar>;

struct Reduced {
  View self;
  std::vector<int64_t> dims;
  bool keepdim = false;
};

// self, dims (from `dim_name`; absent/None = all) and keepdim of the current op.
absl::StatusOr<Reduced> ReadReduced(GroupLowering& g, absl::string_view dim_name = "dim") {
  Reduced r;
  TRN_ASSIGN_OR_RETURN(r.self, TensorArg(g, "self"));
  TRN_ASSIGN_OR_RETURN(r.dims, DimsArg(g, dim_name, r.self.rank()));
  TRN_ASSIGN_OR_RETURN(r.keepdim, BoolArg(g, "keepdim", false));
  return r;
}

absl::StatusOr<at::Tensor> Dest(const GroupLowering& g, size_t ret = 0) {
  at::Tensor dst = g.Destination(ret);
  if (!dst.defined()) {
    return absl::UnimplementedError("no destination");
  }
  return dst;
}

// ---- sums -------------------------------------------------------------------------------------

absl::Status Sum(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  if (dst.scalar_type() == c10::kBool) {
    return absl::UnimplementedError("sum into bool");
  }
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  return g.WriteResult(0, SumOf(g, r.self, r.dims, r.keepdim, SumAccType(dst.scalar_type())));
}

// sum / N, rounded to `t` before the division (ATen: sum_out(...).div_(N)).
View MeanOf(GroupLowering& g, const View& in, const std::vector<int64_t>& dims, bool keepdim, c10::ScalarType t) {
  View s = SumOf(g, in, dims, keepdim, SumAccType(t));
  const double n = static_cast<double>(NumelOf(in.sizes, dims));
  return Map(g, {s}, s.sizes, t, [t, n](ScalarBuilder& b, const Args& a) {
    return b.Div(b.Cast(a[0], t), Const(b, n, t));
  });
}

absl::Status Mean(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  if (!IsFloatType(dst.scalar_type())) {
    return absl::UnimplementedError("mean of integers");
  }
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  return g.WriteResult(0, MeanOf(g, r.self, r.dims, r.keepdim, dst.scalar_type()));
}

absl::Status Prod(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  if (dst.scalar_type() == c10::kBool) {
    return absl::UnimplementedError("prod into bool");
  }
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  const c10::ScalarType acc = SumAccType(dst.scalar_type());
  if (g.target().is_trn()) {
    // tensor_reduce has no multiply: a product of at most kMaxTrnProd elements (deformable DETR's
    // spatial_shapes.prod(1): 2) is one pointwise op multiplying the slices in order.
    constexpr int64_t kMaxTrnProd = 16;
    const int64_t count = NumelOf(r.self.sizes, r.dims);
    if (count > kMaxTrnProd) {
      return absl::UnimplementedError(absl::StrCat("prod of ", count, " > ", kMaxTrnProd, " elements on trn"));
    }
    std::vector<int64_t> shape = r.self.sizes;
    for (int64_t d : r.dims) shape[d] = 1;
    std::vector<View> slices;
    for (int64_t k = 0; k < count; ++k) {  // the reduced elements in row-major order
      View s = r.self;
      for (int64_t i = static_cast<int64_t>(r.dims.size()) - 1, rest = k; i >= 0; --i) {
        const int64_t d = r.dims[i], at = rest % r.self.sizes[d];
        rest /= r.self.sizes[d];
        for (AffineTerm& t : s.map) {  // dim d fixed at `at`: its coefficient moves into the constant
          for (const auto& [dim, c] : t.coeffs) {
            if (dim == d) t.constant += c * at;
          }
          std::erase_if(t.coeffs, [d](const std::pair<int, int64_t>& e) { return e.first == d; });
        }
        s.sizes[d] = 1;
      }
      slices.push_back(std::move(s));
    }
    View p = Map(g, slices, shape, acc, [acc](ScalarBuilder& b, const Args& a) {
      Scalar y = b.Cast(a[0], acc);
      for (size_t i = 1; i < a.size(); ++i) y = b.Mul(y, b.Cast(a[i], acc));
      return y;
    });
    return g.WriteResult(0, r.keepdim ? p : SqueezeDims(p, r.dims));
  }
  View p = g.Reduce(r.self, r.dims, r.keepdim, acc, 1,
                    [](ScalarBuilder& b, const Scalar& a, const Scalar& x) { return b.Mul(a, b.Cast(x, a.dtype)); });
  return g.WriteResult(0, p);
}

// ---- extrema ----------------------------------------------------------------------------------

View Extremum(GroupLowering& g, const View& in, const std::vector<int64_t>& dims, bool keepdim, bool max) {
  return g.Reduce(in, dims, keepdim, in.dtype, max ? Lowest(in.dtype) : Highest(in.dtype),
                  [max](ScalarBuilder& b, const Scalar& a, const Scalar& x) { return max ? b.Max(a, x) : b.Min(a, x); });
}

// The max over `dims` of a float `in` with its NaNs read as -inf, for softmax and logsumexp,
// where a NaN in a slice makes the slice's sum, and so every result of it, NaN anyway. A
// NaN-propagating max (Extremum) is a chain of compares LLVM cannot vectorise; this one is
// (log_softmax over gpt's logits ran 3x slower than ATen).
View MaxIgnoringNan(GroupLowering& g, const View& in, const std::vector<int64_t>& dims, bool keepdim) {
  const c10::ScalarType t = in.dtype;
  View numbers = Map(g, {in}, in.sizes, t, [t](ScalarBuilder& b, const Args& a) {
    return b.Select(b.IsNan(a[0]), b.Constant(Lowest(t), t), a[0]);
  });
  return g.Reduce(numbers, dims, keepdim, t, Lowest(t),
                  [](ScalarBuilder& b, const Scalar& a, const Scalar& x) { return b.MaxOfNumbers(a, x); });
}

absl::Status AmaxAmin(GroupLowering& g, bool max) {
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  if (dst.scalar_type() != r.self.dtype) {
    return absl::UnimplementedError("amax/amin with a different result dtype");
  }
  return g.WriteResult(0, Extremum(g, r.self, r.dims, r.keepdim, max));
}
absl::Status Amax(GroupLowering& g, const runtime::OpRecord&) { return AmaxAmin(g, true); }
absl::Status Amin(GroupLowering& g, const runtime::OpRecord&) { return AmaxAmin(g, false); }

// (value, index) of the first maximum (minimum) over `dims`, index in row-major order of the
// reduced dims; a NaN beats every number and the first NaN wins (ATen's CPU kernels). The combine
// does not depend on the visiting order.
std::vector<View> ValueAndIndex(GroupLowering& g, const View& in, const std::vector<int64_t>& dims, bool keepdim,
                                bool max) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * in.sizes[dims[i + 1]];
  }
  const c10::ScalarType t = in.dtype;
  // The index starts past the last one (so the first element is taken on a tie), at the count
  // of reduced elements rather than INT64_MAX: trn targets carry int64 as int32, where
  // INT64_MAX wraps to -1 (an all -inf slice then kept index -1).
  const int64_t past_last = std::max<int64_t>(NumelOf(in.sizes, dims), 1);
  auto linear_index = [&](ScalarBuilder& b) {
    Scalar i = b.Constant(0, c10::kLong);
    for (size_t k = 0; k < dims.size(); ++k) {
      i = b.Add(i, b.Mul(b.LoopIndex(dims[k]), b.Constant(strides[k], c10::kLong)));
    }
    return i;
  };
  if (g.target().is_trn()) {
    // Two reductions of the form VectorE's tensor_reduce runs (combine(f(x), acc)), where the
    // one pass below is a chain of selects on two accumulators: the extremum (NaN-propagating),
    // then the first index that holds it, the min over (i where x equals it, or both are NaN;
    // else the count).
    const View m = Extremum(g, in, dims, /*keepdim=*/true, max);
    const View hits = Map(g, {in, m}, in.sizes, c10::kLong, [&](ScalarBuilder& b, const Args& a) {
      Scalar hit = b.Cmp(Cmp::kEq, a[0], a[1]);
      if (IsFloatType(t)) hit = b.Or(hit, b.And(b.IsNan(a[0]), b.IsNan(a[1])));
      return b.Select(hit, linear_index(b), b.Constant(past_last, c10::kLong));
    });
    const View index = g.Reduce(hits, dims, keepdim, c10::kLong, past_last,
                                [](ScalarBuilder& b, const Scalar& a, const Scalar& x) { return b.Min(a, x); });
    return {keepdim ? m : SqueezeDims(m, dims), index};
  }
  const std::vector<std::pair<c10::ScalarType, c10::Scalar>> accs = {
      {t, max ? Lowest(t) : Highest(t)}, {c10::kLong, past_last}};
  return g.ReduceMulti(in, dims, keepdim, accs, [&](ScalarBuilder& b, const Args& acc, const Scalar& x) {
    const Scalar i = linear_index(b);
    const Scalar& a = acc[0];
    Scalar first = b.Cmp(Cmp::kLt, i, acc[1]);
    Scalar better = b.Cmp(max ? Cmp::kGt : Cmp::kLt, x, a);
    Scalar tie = b.And(b.Cmp(Cmp::kEq, x, a), first);
    Scalar take = b.Or(better, tie);
    if (IsFloatType(t)) {
      Scalar a_nan = b.IsNan(a);
      Scalar take_num = b.And(b.Not(a_nan), take);
      Scalar take_nan = b.And(b.IsNan(x), b.Or(b.Not(a_nan), first));
      take = b.Or(take_num, take_nan);
    }
    return Args{b.Select(take, x, a), b.Select(take, i, acc[1])};
  });
}

// aten::max / aten::min: elementwise (other=), with indices (dim=), or over everything.
absl::Status MaxMin(GroupLowering& g, bool max) {
  if (HasArg(g, "other")) {
    return PointwiseResult(g, {"self", "other"}, c10::ScalarType::Undefined,
                           [max](ScalarBuilder& b, const Args& a) { return max ? b.Max(a[0], a[1]) : b.Min(a[0], a[1]); });
  }
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  TRN_ASSIGN_OR_RETURN(View self, TensorArg(g, "self"));
  if (dst.scalar_type() != self.dtype) {
    return absl::UnimplementedError("max/min with a different result dtype");
  }
  if (!HasArg(g, "dim")) {
    return g.WriteResult(0, Extremum(g, self, *ReduceDims(c10::IValue(), self.rank()), false, max));
  }
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  std::vector<View> vi = ValueAndIndex(g, r.self, r.dims, r.keepdim, max);
  TRN_RETURN_IF_ERROR(g.WriteResult(0, vi[0]));
  return g.WriteResult(1, vi[1]);
}
absl::Status Max(GroupLowering& g, const runtime::OpRecord&) { return MaxMin(g, true); }
absl::Status Min(GroupLowering& g, const runtime::OpRecord&) { return MaxMin(g, false); }

absl::Status ArgMaxMin(GroupLowering& g, bool max) {
  TRN_RETURN_IF_ERROR(Dest(g).status());
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  return g.WriteResult(0, ValueAndIndex(g, r.self, r.dims, r.keepdim, max)[1]);
}
absl::Status Argmax(GroupLowering& g, const runtime::OpRecord&) { return ArgMaxMin(g, true); }
absl::Status Argmin(GroupLowering& g, const runtime::OpRecord&) { return ArgMaxMin(g, false); }

// ---- variance ---------------------------------------------------------------------------------

absl::StatusOr<double> Correction(const GroupLowering& g) {
  if (HasArg(g, "correction")) {
    TRN_ASSIGN_OR_RETURN(c10::Scalar c, ScalarArg(g, "correction"));
    return c.toDouble();
  }
  TRN_ASSIGN_OR_RETURN(bool unbiased, BoolArg(g, "unbiased", true));
  return unbiased ? 1.0 : 0.0;
}

// var (or std) to return 0, and the mean to return 1 when `with_mean`. Two passes in f64.
absl::Status VarStd(GroupLowering& g, bool take_sqrt, bool with_mean) {
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  if (!IsFloatType(r.self.dtype) || !IsFloatType(dst.scalar_type())) {
    return absl::UnimplementedError("var/std of integers");
  }
  TRN_ASSIGN_OR_RETURN(double correction, Correction(g));
  const c10::ScalarType d = c10::kDouble;
  const double n = static_cast<double>(NumelOf(r.self.sizes, r.dims));
  const double divisor = std::max(0.0, n - correction);
  View sum = SumOf(g, r.self, r.dims, true, d);
  View mean = Map(g, {sum}, sum.sizes, d, [n](ScalarBuilder& b, const Args& a) { return b.Div(a[0], Const(b, n, a[0].dtype)); });
  View sq = Map(g, {r.self, mean}, r.self.sizes, d, [](ScalarBuilder& b, const Args& a) {
    Scalar diff = b.Sub(b.Cast(a[0], c10::kDouble), a[1]);
    return b.Mul(diff, diff);
  });
  View m2 = SumOf(g, sq, r.dims, true, d);
  View var = Map(g, {m2}, m2.sizes, d, [=](ScalarBuilder& b, const Args& a) {
    Scalar v = b.Div(a[0], Const(b, divisor, d));
    return take_sqrt ? b.Math(MathFn::kSqrt, v) : v;
  });
  if (!r.keepdim) {
    var = SqueezeDims(var, r.dims);
    mean = SqueezeDims(mean, r.dims);
  }
  TRN_RETURN_IF_ERROR(g.WriteResult(0, var));
  return with_mean ? g.WriteResult(1, mean) : absl::OkStatus();
}
absl::Status Var(GroupLowering& g, const runtime::OpRecord&) { return VarStd(g, false, false); }
absl::Status Std(GroupLowering& g, const runtime::OpRecord&) { return VarStd(g, true, false); }
absl::Status VarMean(GroupLowering& g, const runtime::OpRecord&) { return VarStd(g, false, true); }
absl::Status StdMean(GroupLowering& g, const runtime::OpRecord&) { return VarStd(g, true, true); }

// ---- softmax family ---------------------------------------------------------------------------

// self, the softmax dim (as a dim list: empty for 0-dim tensors) and the float result dtype.
absl::StatusOr<Reduced> SoftmaxInput(GroupLowering& g, c10::ScalarType* t) {
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  TRN_ASSIGN_OR_RETURN(bool half_to_float, BoolArg(g, "half_to_float", false));
  Reduced r;
  TRN_ASSIGN_OR_RETURN(r.self, TensorArg(g, "self"));
  *t = dst.scalar_type();
  if (half_to_float || r.self.dtype != *t || !IsFloatType(*t)) {
    return absl::UnimplementedError("softmax with a dtype change or of integers");
  }
  TRN_ASSIGN_OR_RETURN(c10::IValue dim, g.Arg("dim"));
  TRN_ASSIGN_OR_RETURN(r.dims, ReduceDims(dim, r.self.rank()));
  r.keepdim = true;
  return r;
}

absl::Status Softmax(GroupLowering& g, bool log) {
  c10::ScalarType t = c10::kFloat;
  TRN_ASSIGN_OR_RETURN(Reduced r, SoftmaxInput(g, &t));
  View mx = MaxIgnoringNan(g, r.self, r.dims, true);
  const std::vector<int64_t>& shape = r.self.sizes;
  View e = Map(g, {r.self, mx}, shape, OpMath(t),
               [](ScalarBuilder& b, const Args& a) { return b.Math(MathFn::kExp, b.Sub(a[0], a[1])); });
  View s = SumOf(g, e, r.dims, true, SumAccType(t));
  View out = log ? Map(g, {r.self, mx, s}, shape, t,
                       [t](ScalarBuilder& b, const Args& a) {
                         return b.Sub(b.Sub(a[0], a[1]), b.Math(MathFn::kLog, b.Cast(a[2], t)));
                       })
                 : Map(g, {e, s}, shape, t,
                       [t](ScalarBuilder& b, const Args& a) { return b.Div(a[0], b.Cast(a[1], OpMath(t))); });
  return g.WriteResult(0, out);
}
absl::Status SoftmaxOp(GroupLowering& g, const runtime::OpRecord&) { return Softmax(g, false); }
absl::Status LogSoftmaxOp(GroupLowering& g, const runtime::OpRecord&) { return Softmax(g, true); }

// ATen: m = amax(keepdim), m[|m| == inf] = 0, log(sum(exp(x - m))) + m.
absl::Status Logsumexp(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  const c10::ScalarType t = dst.scalar_type();
  if (r.self.dtype != t || !IsFloatType(t)) {
    return absl::UnimplementedError("logsumexp with a dtype change");
  }
  View mx = MaxIgnoringNan(g, r.self, r.dims, true);
  mx = Map(g, {mx}, mx.sizes, t, [t](ScalarBuilder& b, const Args& a) {
    Scalar inf = b.Cmp(Cmp::kEq, b.Abs(a[0]), Const(b, std::numeric_limits<double>::infinity(), t));
    return b.Select(inf, Const(b, 0, t), a[0]);
  });
  View e = Map(g, {r.self, mx}, r.self.sizes, OpMath(t),
               [](ScalarBuilder& b, const Args& a) { return b.Math(MathFn::kExp, b.Sub(a[0], a[1])); });
  View s = SumOf(g, e, r.dims, true, SumAccType(t));
  View out = Map(g, {s, mx}, s.sizes, t,
                 [t](ScalarBuilder& b, const Args& a) { return b.Add(b.Math(MathFn::kLog, b.Cast(a[0], t)), a[1]); });
  return g.WriteResult(0, r.keepdim ? out : SqueezeDims(out, r.dims));
}

// ---- norms and logical reductions -------------------------------------------------------------

// norm (p=) and linalg_vector_norm (ord=) for ord 0, 1, 2, inf, -inf.
absl::Status Norm(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  const c10::ScalarType t = dst.scalar_type();
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  if (!IsFloatType(t) || !IsFloatType(r.self.dtype)) {
    return absl::UnimplementedError("norm of integers");
  }
  double p = 2;
  for (absl::string_view name : {"p", "ord"}) {
    if (HasArg(g, name)) {
      TRN_ASSIGN_OR_RETURN(c10::Scalar s, ScalarArg(g, name));
      p = s.toDouble();
    }
  }
  // The input is cast to the result dtype first (ATen: dtype= converts the input).
  View x = Map(g, {r.self}, r.self.sizes, t, [](ScalarBuilder& b, const Args& a) { return b.Abs(a[0]); });
  const double inf = std::numeric_limits<double>::infinity();
  if (p == inf || p == -inf) {
    return g.WriteResult(0, Extremum(g, x, r.dims, r.keepdim, p > 0));
  }
  if (p == 0) {
    x = Map(g, {x}, x.sizes, t, [t](ScalarBuilder& b, const Args& a) {
      return b.Cast(b.Cmp(Cmp::kNe, a[0], Const(b, 0, t)), t);
    });
  } else if (p == 2) {
    x = Map(g, {x}, x.sizes, c10::kDouble, [](ScalarBuilder& b, const Args& a) {
      Scalar d = b.Cast(a[0], c10::kDouble);
      return b.Mul(d, d);
    });
  } else if (p != 1) {
    return absl::UnimplementedError("norm order other than 0, 1, 2, inf");
  }
  View s = SumOf(g, x, r.dims, r.keepdim, c10::kDouble);
  if (p == 2) {
    s = Map(g, {s}, s.sizes, c10::kDouble, [](ScalarBuilder& b, const Args& a) { return b.Math(MathFn::kSqrt, a[0]); });
  }
  return g.WriteResult(0, s);
}

absl::Status AllAny(GroupLowering& g, bool all) {
  TRN_RETURN_IF_ERROR(Dest(g).status());
  TRN_ASSIGN_OR_RETURN(Reduced r, ReadReduced(g));
  View v = g.Reduce(r.self, r.dims, r.keepdim, c10::kBool, all,
                    [all](ScalarBuilder& b, const Scalar& a, const Scalar& x) {
                      Scalar xb = b.Cast(x, c10::kBool);
                      return all ? b.And(a, xb) : b.Or(a, xb);
                    });
  return g.WriteResult(0, v);
}
absl::Status All(GroupLowering& g, const runtime::OpRecord&) { return AllAny(g, true); }
absl::Status Any(GroupLowering& g, const runtime::OpRecord&) { return AllAny(g, false); }

// ---- scans ------------------------------------------------------------------------------------

// cumsum(self, dim, dtype=None). On the host a runtime call of ATen's kernel (linalg has no scan;
// the elementwise ops around it still fuse). On a trn target, where VectorE has no scan either, a
// masked reduction: out[.., i, ..] = sum over j <= i of x[.., j, ..], in an index space with one
// more dim (j, reduced): O(n^2) adds for a dim of n, so dims longer than kMaxTrnScan run op by op.
absl::Status Cumsum(GroupLowering& g, const runtime::OpRecord&) {
  if (!g.target().is_trn()) return g.Extern();
  constexpr int64_t kMaxTrnScan = 2048;
  TRN_ASSIGN_OR_RETURN(at::Tensor dst, Dest(g));
  TRN_ASSIGN_OR_RETURN(View self, TensorArg(g, "self"));
  TRN_ASSIGN_OR_RETURN(int64_t dim, IntArg(g, "dim"));
  const int64_t rank = self.rank();
  if (rank == 0) return absl::UnimplementedError("cumsum of a 0-dim tensor");
  if (dim < -rank || dim >= rank) return absl::UnimplementedError("cumsum dim out of range");
  if (dim < 0) dim += rank;
  const int64_t n = self.sizes[dim];
  if (n > kMaxTrnScan) {
    return absl::UnimplementedError(absl::StrCat("cumsum along a dim of ", n, " > ", kMaxTrnScan, " (O(n^2) on trn)"));
  }
  if (dst.scalar_type() == c10::kBool) return absl::UnimplementedError("cumsum into bool");
  const c10::ScalarType acc = SumAccType(dst.scalar_type());  // as sum's (f32 tiles on the core)
  // x read at j (the new last dim) and broadcast along i (dim `dim`, size 1 in the view).
  std::vector<int64_t> where(rank);
  for (int64_t k = 0; k < rank; ++k) where[k] = k == dim ? rank : k;
  const View x = PlaceDims(self, rank + 1, where);
  std::vector<int64_t> space = self.sizes;
  space.push_back(n);
  const View masked = Map(g, {x}, space, acc, [&](ScalarBuilder& b, const Args& a) {
    return b.Select(b.Cmp(Cmp::kLe, b.LoopIndex(rank), b.LoopIndex(dim)), b.Cast(a[0], acc), b.Constant(0, acc));
  });
  return g.WriteResult(0, SumOf(g, masked, {rank}, /*keepdim=*/false, acc));
}

}  // namespace

void PopulateReductions(LoweringRegistry& r) {
  const std::string f = "reduction";
  r.Register("aten::sum", f, Sum);
  r.Register("aten::mean", f, Mean);
  r.Register("aten::prod", f, Prod);
  r.Register("aten::amax", f, Amax);
  r.Register("aten::amin", f, Amin);
  r.Register("aten::max", f, Max);
  r.Register("aten::min", f, Min);
  r.Register("aten::argmax", f, Argmax);
  r.Register("aten::argmin", f, Argmin);
  r.Register("aten::cumsum", f, Cumsum, /*runtime_call=*/true);  // a call on the host; a masked sum on trn
  r.Register("aten::var", f, Var);
  r.Register("aten::std", f, Std);
  r.Register("aten::var_mean", f, VarMean);
  r.Register("aten::std_mean", f, StdMean);
  r.Register("aten::_softmax", f, SoftmaxOp);
  r.Register("aten::_log_softmax", f, LogSoftmaxOp);
  r.Register("aten::logsumexp", f, Logsumexp);
  r.Register("aten::norm", f, Norm);
  r.Register("aten::linalg_vector_norm", f, Norm);
  r.Register("aten::all", f, All);
  r.Register("aten::any", f, Any);
  RegisterLosses(r);
}

}  // namespace trn::mlir_lowering
