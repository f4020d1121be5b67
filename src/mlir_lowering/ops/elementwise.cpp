// Elementwise ops: arithmetic, comparisons, logic, math functions, activations, casts/copies and
// fills. Each lowers to one linalg.generic over the destination's shape, which the host pipeline
// fuses with its neighbours. Numerics follow ATen's CPU kernels (formulas in the same order).
//
// Integer division and remainder are lowered on trn targets only (IntegerDivision): ATen raises
// on a zero divisor, and native host code would trap; on the host they run op by op.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "mlir_lowering/ops/op_helpers.h"

namespace trn::mlir_lowering {
namespace {

using Args = std::vector<Scalar>;
constexpr c10::ScalarType kAuto = c10::ScalarType::Undefined;

bool IsFloat(c10::ScalarType t) { return c10::isFloatingType(t); }

// Float ops on an integer destination (exp of an int tensor returns float, so the destination
// is float whenever these apply) are refused rather than guessed.
absl::Status FloatUnary(GroupLowering& g, const std::function<Scalar(ScalarBuilder&, const Scalar&)>& f) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || !IsFloat(dst.scalar_type())) {
    return absl::UnimplementedError("float op with a non-float result");
  }
  return PointwiseResult(g, {"self"}, kAuto, [&](ScalarBuilder& b, const Args& a) { return f(b, a[0]); });
}

Scalar C(ScalarBuilder& b, double v, c10::ScalarType t) { return b.Constant(v, t); }

// ---- arithmetic ---------------------------------------------------------------------------

absl::Status LowerAddSub(GroupLowering& g, bool subtract, bool reverse) {
  std::vector<absl::string_view> names = {"self", "other"};
  const bool alpha = HasArg(g, "alpha");
  if (alpha) {
    names.push_back("alpha");
  }
  return PointwiseResult(g, names, kAuto, [&](ScalarBuilder& b, const Args& a) {
    Scalar x = reverse ? a[1] : a[0];
    Scalar y = reverse ? a[0] : a[1];
    if (alpha) {
      y = b.Mul(a[2], y);  // ATen: self + alpha * other (alpha == 1 multiplies exactly)
    }
    return subtract ? b.Sub(x, y) : b.Add(x, y);
  });
}

absl::Status Add(GroupLowering& g, const runtime::OpRecord&) { return LowerAddSub(g, false, false); }
absl::Status Sub(GroupLowering& g, const runtime::OpRecord&) { return LowerAddSub(g, true, false); }
absl::Status Rsub(GroupLowering& g, const runtime::OpRecord&) { return LowerAddSub(g, true, true); }

absl::Status Mul(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(
      g, {"self", "other"}, kAuto, [](ScalarBuilder& b, const Args& a) { return b.Mul(a[0], a[1]); },
      HalfScalars::kOpmath);
}

// Integer quotient or remainder of self by other on a trn target (the NeuronCore divides
// without trapping): truncating (div trunc), floored (div floor, floor_divide), C's % (fmod) or
// Python's (remainder), as ATen's CPU kernels. A zero divisor is replaced by 1 in the body and
// fails the run through a device-side check with ATen's RuntimeError "ZeroDivisionError".
enum class IntDiv { kTrunc, kFloor, kFmod, kRemainder };
absl::Status IntegerDivision(GroupLowering& g, IntDiv mode) {
  at::Tensor dst = g.Destination(0);
  if (!g.target().is_trn() || !dst.defined() || !c10::isIntegralType(dst.scalar_type(), false)) {
    return absl::UnimplementedError("integer division (trn targets only)");
  }
  const c10::ScalarType t = dst.scalar_type();
  TRN_ASSIGN_OR_RETURN(Operand other, ArgOperand(g, "other"));
  View bad = g.Pointwise({other}, dst.sizes().vec(), c10::kBool, [&](ScalarBuilder& b, const Args& a) {
    return b.Cmp(Cmp::kEq, b.Cast(a[0], t), C(b, 0, t));
  });
  TRN_RETURN_IF_ERROR(g.Check(bad, "ZeroDivisionError", base::ErrorKind::kRuntime));
  return PointwiseResult(g, {"self", "other"}, kAuto, [&](ScalarBuilder& b, const Args& a) {
    const Scalar zero = C(b, 0, t);
    const Scalar d = b.Select(b.Cmp(Cmp::kEq, a[1], zero), C(b, 1, t), a[1]);
    const Scalar q = b.Div(a[0], d), r = b.Rem(a[0], d);  // truncating
    if (mode == IntDiv::kTrunc) return q;
    if (mode == IntDiv::kFmod) return r;
    // floored: one less where the remainder is non-zero and its sign differs from the divisor's
    const Scalar fix = b.And(b.Cmp(Cmp::kNe, r, zero), b.Xor(b.Cmp(Cmp::kLt, r, zero), b.Cmp(Cmp::kLt, d, zero)));
    if (mode == IntDiv::kFloor) return b.Select(fix, b.Sub(q, C(b, 1, t)), q);
    return b.Select(fix, b.Add(r, d), r);
  });
}

absl::Status FloorDivide(GroupLowering& g, const runtime::OpRecord&) { return IntegerDivision(g, IntDiv::kFloor); }

absl::Status Div(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  std::string mode;
  if (HasArg(g, "rounding_mode")) {
    TRN_ASSIGN_OR_RETURN(c10::IValue m, g.Arg("rounding_mode"));
    if (!m.isNone()) mode = m.toStringRef();
  }
  if (dst.defined() && !IsFloat(dst.scalar_type()) && (mode == "trunc" || mode == "floor")) {
    return IntegerDivision(g, mode == "trunc" ? IntDiv::kTrunc : IntDiv::kFloor);
  }
  if (!dst.defined() || !IsFloat(dst.scalar_type())) {
    return absl::UnimplementedError("integer division");
  }
  return PointwiseResult(
      g, {"self", "other"}, kAuto,
      [&](ScalarBuilder& b, const Args& a) {
        Scalar q = b.Div(a[0], a[1]);
        if (mode == "trunc") {
          return b.Math(MathFn::kTrunc, q);
        }
        if (mode == "floor") {
          return b.Math(MathFn::kFloor, q);
        }
        return q;
      },
      mode.empty() ? HalfScalars::kOpmath : HalfScalars::kRound);
}

absl::Status FloatOnlyBinary(GroupLowering& g, const std::function<Scalar(ScalarBuilder&, const Args&)>& f) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || !IsFloat(dst.scalar_type())) {
    return absl::UnimplementedError("integer operands");
  }
  return PointwiseResult(g, {"self", "other"}, kAuto, f);
}

absl::Status Remainder(GroupLowering& g, const runtime::OpRecord&) {
  if (g.Destination(0).defined() && !IsFloat(g.Destination(0).scalar_type())) {
    return IntegerDivision(g, IntDiv::kRemainder);
  }
  return FloatOnlyBinary(g, [](ScalarBuilder& b, const Args& a) {
    Scalar r = b.Rem(a[0], a[1]);
    Scalar zero = C(b, 0, r.dtype);
    Scalar nonzero = b.Cmp(Cmp::kNe, r, zero);
    Scalar sign_differs = b.Xor(b.Cmp(Cmp::kLt, r, zero), b.Cmp(Cmp::kLt, a[1], zero));
    return b.Select(b.And(nonzero, sign_differs), b.Add(r, a[1]), r);
  });
}

absl::Status Fmod(GroupLowering& g, const runtime::OpRecord&) {
  if (g.Destination(0).defined() && !IsFloat(g.Destination(0).scalar_type())) return IntegerDivision(g, IntDiv::kFmod);
  return FloatOnlyBinary(g, [](ScalarBuilder& b, const Args& a) { return b.Rem(a[0], a[1]); });
}

absl::Status Atan2(GroupLowering& g, const runtime::OpRecord&) {
  return FloatOnlyBinary(g, [](ScalarBuilder& b, const Args& a) { return b.Math(MathFn2::kAtan2, a[0], a[1]); });
}

absl::Status Copysign(GroupLowering& g, const runtime::OpRecord&) {
  return FloatOnlyBinary(g, [](ScalarBuilder& b, const Args& a) { return b.Math(MathFn2::kCopySign, a[0], a[1]); });
}

absl::Status Pow(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || !IsFloat(dst.scalar_type())) {
    return absl::UnimplementedError("integer pow");
  }
  // A scalar exponent is a compile-time constant (in the key): the code depends on its value,
  // since ATen special-cases some exponents (same formulas, same rounding here).
  TRN_ASSIGN_OR_RETURN(c10::IValue e, g.Arg("exponent"));
  TRN_ASSIGN_OR_RETURN(c10::IValue s, g.Arg("self"));
  std::optional<double> exponent;
  if (e.isScalar()) {
    exponent = e.toScalar().toDouble();
  }
  TRN_ASSIGN_OR_RETURN(Operand self, g.ReadOperand(s));
  TRN_ASSIGN_OR_RETURN(Operand power, g.ReadOperand(e));
  const c10::ScalarType t = dst.scalar_type();
  View v = g.Pointwise({self, power}, dst.sizes().vec(), t, [&](ScalarBuilder& b, const Args& a) {
    Scalar x = b.Cast(a[0], t);
    if (exponent.has_value()) {
      const double p = *exponent;
      if (p == 1) return x;
      if (p == 2) return b.Mul(x, x);
      if (p == 3) return b.Mul(b.Mul(x, x), x);
      if (p == 0.5) return b.Math(MathFn::kSqrt, x);
      if (p == -0.5) return b.Div(C(b, 1, t), b.Math(MathFn::kSqrt, x));
      if (p == -1) return b.Div(C(b, 1, t), x);
      if (p == -2) return b.Div(C(b, 1, t), b.Mul(x, x));
    }
    return b.Math(MathFn2::kPowF, x, b.Cast(a[1], t));
  });
  return g.WriteResult(0, v);
}

absl::Status Maximum(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self", "other"}, kAuto, [](ScalarBuilder& b, const Args& a) { return b.Max(a[0], a[1]); });
}
absl::Status Minimum(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self", "other"}, kAuto, [](ScalarBuilder& b, const Args& a) { return b.Min(a[0], a[1]); });
}
// fmax/fmin ignore NaN: exactly llvm.maxnum/minnum, which arith.maxf/minf lower to.
absl::Status Fmax(GroupLowering& g, const runtime::OpRecord&) {
  return FloatOnlyBinary(g, [](ScalarBuilder& b, const Args& a) { return b.Math(MathFn2::kMaxNum, a[0], a[1]); });
}
absl::Status Fmin(GroupLowering& g, const runtime::OpRecord&) {
  return FloatOnlyBinary(g, [](ScalarBuilder& b, const Args& a) { return b.Math(MathFn2::kMinNum, a[0], a[1]); });
}

absl::Status Lerp(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self", "end", "weight"}, kAuto, [](ScalarBuilder& b, const Args& a) {
    // ATen: |w| < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w)
    const Scalar& self = a[0];
    const Scalar& w = a[2];
    Scalar diff = b.Sub(a[1], self);
    Scalar small = b.Cmp(Cmp::kLt, b.Abs(w), C(b, 0.5, w.dtype));
    Scalar lo = b.Add(self, b.Mul(w, diff));
    Scalar hi = b.Sub(a[1], b.Mul(diff, b.Sub(C(b, 1, w.dtype), w)));
    return b.Select(small, lo, hi);
  });
}

absl::Status Addcmul(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self", "tensor1", "tensor2", "value"}, kAuto, [&](ScalarBuilder& b, const Args& a) {
    return b.Add(a[0], b.Mul(b.Mul(a[3], a[1]), a[2]));
  });
}

absl::Status Addcdiv(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || !IsFloat(dst.scalar_type())) {
    return absl::UnimplementedError("integer addcdiv");
  }
  return PointwiseResult(g, {"self", "tensor1", "tensor2", "value"}, kAuto, [&](ScalarBuilder& b, const Args& a) {
    return b.Add(a[0], b.Mul(a[3], b.Div(a[1], a[2])));
  });
}

// ---- comparisons and logic ----------------------------------------------------------------

absl::Status Compare(GroupLowering& g, Cmp pred) {
  c10::ScalarType compute = PromotedType(g, {"self", "other"});
  return PointwiseResult(g, {"self", "other"}, compute,
                         [pred](ScalarBuilder& b, const Args& a) { return b.Cmp(pred, a[0], a[1]); });
}
absl::Status Eq(GroupLowering& g, const runtime::OpRecord&) { return Compare(g, Cmp::kEq); }
absl::Status Ne(GroupLowering& g, const runtime::OpRecord&) { return Compare(g, Cmp::kNe); }
absl::Status Lt(GroupLowering& g, const runtime::OpRecord&) { return Compare(g, Cmp::kLt); }
absl::Status Le(GroupLowering& g, const runtime::OpRecord&) { return Compare(g, Cmp::kLe); }
absl::Status Gt(GroupLowering& g, const runtime::OpRecord&) { return Compare(g, Cmp::kGt); }
absl::Status Ge(GroupLowering& g, const runtime::OpRecord&) { return Compare(g, Cmp::kGe); }

absl::Status Logical(GroupLowering& g, int which) {
  return PointwiseResult(g, {"self", "other"}, c10::kBool, [which](ScalarBuilder& b, const Args& a) {
    return which == 0 ? b.And(a[0], a[1]) : which == 1 ? b.Or(a[0], a[1]) : b.Xor(a[0], a[1]);
  });
}
absl::Status LogicalAnd(GroupLowering& g, const runtime::OpRecord&) { return Logical(g, 0); }
absl::Status LogicalOr(GroupLowering& g, const runtime::OpRecord&) { return Logical(g, 1); }
absl::Status LogicalXor(GroupLowering& g, const runtime::OpRecord&) { return Logical(g, 2); }
absl::Status LogicalNot(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self"}, c10::kBool, [](ScalarBuilder& b, const Args& a) { return b.Not(a[0]); });
}

absl::Status Bitwise(GroupLowering& g, int which) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || IsFloat(dst.scalar_type())) {
    return absl::UnimplementedError("bitwise op on floats");
  }
  return PointwiseResult(g, {"self", "other"}, kAuto, [which](ScalarBuilder& b, const Args& a) {
    return which == 0 ? b.And(a[0], a[1]) : which == 1 ? b.Or(a[0], a[1]) : b.Xor(a[0], a[1]);
  });
}
absl::Status BitwiseAnd(GroupLowering& g, const runtime::OpRecord&) { return Bitwise(g, 0); }
absl::Status BitwiseOr(GroupLowering& g, const runtime::OpRecord&) { return Bitwise(g, 1); }
absl::Status BitwiseXor(GroupLowering& g, const runtime::OpRecord&) { return Bitwise(g, 2); }
absl::Status BitwiseNot(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || IsFloat(dst.scalar_type())) {
    return absl::UnimplementedError("bitwise not on floats");
  }
  return PointwiseResult(g, {"self"}, kAuto, [](ScalarBuilder& b, const Args& a) { return b.Not(a[0]); });
}

// bitwise_left_shift / bitwise_right_shift (and __lshift__ / __rshift__): as ATen's kernels, a
// shift count outside [0, bits of the dtype) shifts everything out (0, or the sign for a right
// shift of a signed dtype), where arith's shifts would be poison.
absl::Status Shift(GroupLowering& g, bool left) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || IsFloat(dst.scalar_type()) || dst.scalar_type() == c10::kBool) {
    return absl::UnimplementedError("shift of floats or booleans");
  }
  const int64_t bits = static_cast<int64_t>(c10::elementSize(dst.scalar_type())) * 8;
  const bool is_signed = c10::isSignedType(dst.scalar_type());
  return PointwiseResult(g, {"self", "other"}, kAuto, [=](ScalarBuilder& b, const Args& a) {
    const c10::ScalarType t = a[0].dtype;
    const Scalar out = b.Or(b.Cmp(Cmp::kLt, a[1], b.Constant(0, t)), b.Cmp(Cmp::kGe, a[1], b.Constant(bits, t)));
    const Scalar all = left || !is_signed ? b.Constant(0, t) : b.ShiftRight(a[0], b.Constant(bits - 1, t));
    return b.Select(out, all, left ? b.ShiftLeft(a[0], a[1]) : b.ShiftRight(a[0], a[1]));
  });
}
absl::Status LeftShift(GroupLowering& g, const runtime::OpRecord&) { return Shift(g, true); }
absl::Status RightShift(GroupLowering& g, const runtime::OpRecord&) { return Shift(g, false); }

// result = cond ? a : b, with cond read as bool and a, b cast to the destination's dtype.
absl::Status SelectOf(GroupLowering& g, absl::string_view cond, absl::string_view a, absl::string_view b) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined()) {
    return absl::UnimplementedError("no destination");
  }
  TRN_ASSIGN_OR_RETURN(Operand c, ArgOperand(g, cond));
  TRN_ASSIGN_OR_RETURN(Operand x, ArgOperand(g, a));
  TRN_ASSIGN_OR_RETURN(Operand y, ArgOperand(g, b));
  const c10::ScalarType t = dst.scalar_type();
  View v = g.Pointwise({c, x, y}, dst.sizes().vec(), t, [t](ScalarBuilder& sb, const Args& e) {
    return sb.Select(sb.Cast(e[0], c10::kBool), sb.Cast(e[1], t), sb.Cast(e[2], t));
  });
  return g.WriteResult(0, v);
}
absl::Status Where(GroupLowering& g, const runtime::OpRecord&) { return SelectOf(g, "condition", "self", "other"); }
absl::Status MaskedFill(GroupLowering& g, const runtime::OpRecord&) {
  // PyTorch refuses a non-bool mask when the kernel runs (its Meta kernel does not check): left
  // to the op-by-op path, which raises that error, instead of compiling a mask != 0 (fuzz finding).
  TRN_ASSIGN_OR_RETURN(Operand mask, ArgOperand(g, "mask"));
  if (mask.dtype != c10::kBool) {
    return absl::UnimplementedError("masked_fill with a non-bool mask");
  }
  return SelectOf(g, "mask", "value", "self");
}

// ---- clamps and activations ---------------------------------------------------------------

absl::Status ClampBetween(GroupLowering& g, absl::string_view lo, absl::string_view hi) {
  std::vector<absl::string_view> names = {"self"};
  const bool has_lo = !lo.empty() && HasArg(g, lo);
  const bool has_hi = !hi.empty() && HasArg(g, hi);
  if (has_lo) names.push_back(lo);
  if (has_hi) names.push_back(hi);
  return PointwiseResult(g, names, kAuto, [=](ScalarBuilder& b, const Args& a) {
    Scalar r = a[0];
    size_t i = 1;
    if (has_lo) r = b.Max(r, a[i++]);
    if (has_hi) r = b.Min(r, a[i++]);
    return r;
  });
}
absl::Status Clamp(GroupLowering& g, const runtime::OpRecord&) { return ClampBetween(g, "min", "max"); }
absl::Status ClampMin(GroupLowering& g, const runtime::OpRecord&) { return ClampBetween(g, "min", ""); }
absl::Status ClampMax(GroupLowering& g, const runtime::OpRecord&) { return ClampBetween(g, "", "max"); }
absl::Status Hardtanh(GroupLowering& g, const runtime::OpRecord&) { return ClampBetween(g, "min_val", "max_val"); }

absl::Status Relu(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self"}, kAuto, [](ScalarBuilder& b, const Args& a) { return b.Max(a[0], C(b, 0, a[0].dtype)); });
}

Scalar Sigmoid(ScalarBuilder& b, const Scalar& x) {
  Scalar one = C(b, 1, x.dtype);
  return b.Div(one, b.Add(one, b.Math(MathFn::kExp, b.Neg(x))));
}

absl::Status SigmoidOp(GroupLowering& g, const runtime::OpRecord&) { return FloatUnary(g, Sigmoid); }
absl::Status Silu(GroupLowering& g, const runtime::OpRecord&) {
  return FloatUnary(g, [](ScalarBuilder& b, const Scalar& x) {
    Scalar one = C(b, 1, x.dtype);
    return b.Div(x, b.Add(one, b.Math(MathFn::kExp, b.Neg(x))));
  });
}

absl::Status Gelu(GroupLowering& g, const runtime::OpRecord&) {
  std::string approximate = "none";
  if (HasArg(g, "approximate")) {
    TRN_ASSIGN_OR_RETURN(c10::IValue m, g.Arg("approximate"));
    approximate = m.toStringRef();
  }
  const bool tanh = approximate == "tanh";
  return FloatUnary(g, [tanh](ScalarBuilder& b, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    if (tanh) {
      // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
      Scalar inner = b.Mul(C(b, M_SQRT2 * M_2_SQRTPI * 0.5, t), b.Add(x, b.Mul(C(b, 0.044715, t), b.Mul(b.Mul(x, x), x))));
      return b.Mul(b.Mul(C(b, 0.5, t), x), b.Add(C(b, 1, t), b.Math(MathFn::kTanh, inner)));
    }
    // x * 0.5 * (1 + erf(x / sqrt(2)))
    Scalar e = b.Math(MathFn::kErf, b.Mul(x, C(b, M_SQRT1_2, t)));
    return b.Mul(b.Mul(x, C(b, 0.5, t)), b.Add(C(b, 1, t), e));
  });
}

absl::Status LeakyRelu(GroupLowering& g, const runtime::OpRecord&) {
  c10::Scalar slope = 0.01;
  if (HasArg(g, "negative_slope")) {
    TRN_ASSIGN_OR_RETURN(slope, ScalarArg(g, "negative_slope"));
  }
  return FloatUnary(g, [slope](ScalarBuilder& b, const Scalar& x) {
    Scalar pos = b.Cmp(Cmp::kGt, x, C(b, 0, x.dtype));
    return b.Select(pos, x, b.Mul(x, b.Constant(slope, x.dtype)));
  });
}

absl::Status Elu(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(c10::Scalar alpha, ScalarArg(g, "alpha"));
  TRN_ASSIGN_OR_RETURN(c10::Scalar scale, ScalarArg(g, "scale"));
  TRN_ASSIGN_OR_RETURN(c10::Scalar input_scale, ScalarArg(g, "input_scale"));
  return FloatUnary(g, [=](ScalarBuilder& b, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    Scalar pos = b.Cmp(Cmp::kGt, x, C(b, 0, t));
    Scalar neg = b.Mul(b.Mul(b.Math(MathFn::kExpm1, b.Mul(x, b.Constant(input_scale, t))), b.Constant(alpha, t)),
                       b.Constant(scale, t));
    return b.Select(pos, b.Mul(x, b.Constant(scale, t)), neg);
  });
}

absl::Status Hardsigmoid(GroupLowering& g, const runtime::OpRecord&) {
  return FloatUnary(g, [](ScalarBuilder& b, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    Scalar r = b.Min(b.Max(b.Add(x, C(b, 3, t)), C(b, 0, t)), C(b, 6, t));
    return b.Div(r, C(b, 6, t));
  });
}

absl::Status Hardswish(GroupLowering& g, const runtime::OpRecord&) {
  return FloatUnary(g, [](ScalarBuilder& b, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    Scalar r = b.Min(b.Max(b.Add(x, C(b, 3, t)), C(b, 0, t)), C(b, 6, t));
    return b.Div(b.Mul(x, r), C(b, 6, t));
  });
}

absl::Status Softplus(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(c10::Scalar beta, ScalarArg(g, "beta"));
  TRN_ASSIGN_OR_RETURN(c10::Scalar threshold, ScalarArg(g, "threshold"));
  return FloatUnary(g, [=](ScalarBuilder& b, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    Scalar bx = b.Mul(x, b.Constant(beta, t));
    Scalar soft = b.Div(b.Math(MathFn::kLog1p, b.Math(MathFn::kExp, bx)), b.Constant(beta, t));
    return b.Select(b.Cmp(Cmp::kGt, bx, b.Constant(threshold, t)), x, soft);
  });
}

absl::Status Mish(GroupLowering& g, const runtime::OpRecord&) {
  return FloatUnary(g, [](ScalarBuilder& b, const Scalar& x) {
    return b.Mul(x, b.Math(MathFn::kTanh, b.Math(MathFn::kLog1p, b.Math(MathFn::kExp, x))));
  });
}

absl::Status Threshold(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(c10::Scalar threshold, ScalarArg(g, "threshold"));
  TRN_ASSIGN_OR_RETURN(c10::Scalar value, ScalarArg(g, "value"));
  return PointwiseResult(g, {"self"}, kAuto, [=](ScalarBuilder& b, const Args& a) {
    const Scalar& x = a[0];
    return b.Select(b.Cmp(Cmp::kLe, x, b.Constant(threshold, x.dtype)), b.Constant(value, x.dtype), x);
  });
}

// ---- unary math -----------------------------------------------------------------------------

template <MathFn kOp>
absl::Status MathUnary(GroupLowering& g, const runtime::OpRecord&) {
  return FloatUnary(g, [](ScalarBuilder& b, const Scalar& x) { return b.Math(kOp, x); });
}
constexpr MathFn kExp = MathFn::kExp, kExp2 = MathFn::kExp2, kExpm1 = MathFn::kExpm1, kLog = MathFn::kLog,
                 kLog2 = MathFn::kLog2, kLog10 = MathFn::kLog10, kLog1p = MathFn::kLog1p, kSqrt = MathFn::kSqrt,
                 kSin = MathFn::kSin, kCos = MathFn::kCos, kTan = MathFn::kTan, kTanh = MathFn::kTanh,
                 kAtan = MathFn::kAtan, kErf = MathFn::kErf;

absl::Status Rsqrt(GroupLowering& g, const runtime::OpRecord&) {
  return FloatUnary(g, [](ScalarBuilder& b, const Scalar& x) { return b.Div(C(b, 1, x.dtype), b.Math(MathFn::kSqrt, x)); });
}
absl::Status Reciprocal(GroupLowering& g, const runtime::OpRecord&) {
  return FloatUnary(g, [](ScalarBuilder& b, const Scalar& x) { return b.Div(C(b, 1, x.dtype), x); });
}

// Rounding ops are the identity on integers.
absl::Status Rounding(GroupLowering& g, MathFn op) {
  return PointwiseResult(g, {"self"}, kAuto, [op](ScalarBuilder& b, const Args& a) {
    return IsFloat(a[0].dtype) ? b.Math(op, a[0]) : a[0];
  });
}
absl::Status Floor(GroupLowering& g, const runtime::OpRecord&) { return Rounding(g, MathFn::kFloor); }
absl::Status Ceil(GroupLowering& g, const runtime::OpRecord&) { return Rounding(g, MathFn::kCeil); }
absl::Status Trunc(GroupLowering& g, const runtime::OpRecord&) { return Rounding(g, MathFn::kTrunc); }
absl::Status Round(GroupLowering& g, const runtime::OpRecord&) {
  if (HasArg(g, "decimals")) {
    TRN_ASSIGN_OR_RETURN(c10::IValue d, g.Arg("decimals"));
    if (d.toInt() != 0) {
      return absl::UnimplementedError("round with decimals");
    }
  }
  return Rounding(g, MathFn::kRoundEven);
}
absl::Status Frac(GroupLowering& g, const runtime::OpRecord&) {
  return FloatUnary(g, [](ScalarBuilder& b, const Scalar& x) { return b.Sub(x, b.Math(MathFn::kTrunc, x)); });
}

absl::Status Neg(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self"}, kAuto, [](ScalarBuilder& b, const Args& a) { return b.Neg(a[0]); });
}
absl::Status Abs(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self"}, kAuto, [](ScalarBuilder& b, const Args& a) { return b.Abs(a[0]); });
}
absl::Status Sign(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self"}, kAuto, [](ScalarBuilder& b, const Args& a) {
    const Scalar& x = a[0];
    if (x.dtype == c10::kBool) {
      return x;
    }
    Scalar zero = C(b, 0, x.dtype);
    return b.Select(b.Cmp(Cmp::kGt, x, zero), C(b, 1, x.dtype),
                    b.Select(b.Cmp(Cmp::kLt, x, zero), C(b, -1, x.dtype), zero));
  });
}

absl::Status IsNan(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseResult(g, {"self"}, PromotedType(g, {"self"}), [](ScalarBuilder& b, const Args& a) { return b.IsNan(a[0]); });
}

absl::Status InfTest(GroupLowering& g, int which) {  // 0 isinf, 1 isposinf, 2 isneginf, 3 isfinite
  c10::ScalarType t = PromotedType(g, {"self"});
  return PointwiseResult(g, {"self"}, t, [which](ScalarBuilder& b, const Args& a) {
    const Scalar& x = a[0];
    if (!IsFloat(x.dtype)) {
      return b.Constant(which == 3, c10::kBool);
    }
    const double inf = std::numeric_limits<double>::infinity();
    switch (which) {
      case 0:
        return b.Cmp(Cmp::kEq, b.Abs(x), C(b, inf, x.dtype));
      case 1:
        return b.Cmp(Cmp::kEq, x, C(b, inf, x.dtype));
      case 2:
        return b.Cmp(Cmp::kEq, x, C(b, -inf, x.dtype));
      default:
        return b.Cmp(Cmp::kLt, b.Abs(x), C(b, inf, x.dtype));  // false for NaN and inf
    }
  });
}
absl::Status IsInf(GroupLowering& g, const runtime::OpRecord&) { return InfTest(g, 0); }
absl::Status IsPosInf(GroupLowering& g, const runtime::OpRecord&) { return InfTest(g, 1); }
absl::Status IsNegInf(GroupLowering& g, const runtime::OpRecord&) { return InfTest(g, 2); }
absl::Status IsFinite(GroupLowering& g, const runtime::OpRecord&) { return InfTest(g, 3); }

absl::Status NanToNum(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || !IsFloat(dst.scalar_type())) {
    return absl::UnimplementedError("nan_to_num of integers");
  }
  const c10::ScalarType t = dst.scalar_type();
  const double big = t == c10::kDouble  ? std::numeric_limits<double>::max()
                     : t == c10::kHalf    ? static_cast<double>(std::numeric_limits<c10::Half>::max())
                     : t == c10::kBFloat16 ? static_cast<double>(std::numeric_limits<c10::BFloat16>::max())
                                           : std::numeric_limits<float>::max();
  auto value = [&](absl::string_view name, double fallback) -> double {
    absl::StatusOr<c10::IValue> v = g.Arg(name);
    return v.ok() && !v->isNone() ? v->toDouble() : fallback;
  };
  const double nan = value("nan", 0.0), posinf = value("posinf", big), neginf = value("neginf", -big);
  return FloatUnary(g, [=](ScalarBuilder& b, const Scalar& x) {
    const double inf = std::numeric_limits<double>::infinity();
    Scalar r = b.Select(b.IsNan(x), C(b, nan, t), x);
    r = b.Select(b.Cmp(Cmp::kEq, x, C(b, inf, t)), C(b, posinf, t), r);
    return b.Select(b.Cmp(Cmp::kEq, x, C(b, -inf, t)), C(b, neginf, t), r);
  });
}

// ---- copies and fills -----------------------------------------------------------------------

// copy_(self, src), clone(self), _to_copy(self, dtype...): the destination gets the source,
// broadcast and cast.
absl::Status CopyFrom(GroupLowering& g, absl::string_view src) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined()) {
    return absl::UnimplementedError("no destination");
  }
  TRN_ASSIGN_OR_RETURN(Operand s, ArgOperand(g, src));
  View v = g.Pointwise({s}, dst.sizes().vec(), dst.scalar_type(), [](ScalarBuilder&, const Args& a) { return a[0]; });
  return g.WriteResult(0, v);
}
absl::Status Copy(GroupLowering& g, const runtime::OpRecord&) { return CopyFrom(g, "src"); }
absl::Status Clone(GroupLowering& g, const runtime::OpRecord&) { return CopyFrom(g, "self"); }

absl::Status Fill(GroupLowering& g, const runtime::OpRecord&) { return CopyFrom(g, "value"); }
absl::Status Zero(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  View v = g.Pointwise({Operand::Const(0, c10::kLong)}, dst.sizes().vec(), dst.scalar_type(),
                       [](ScalarBuilder&, const Args& a) { return a[0]; });
  return g.WriteResult(0, v);
}

// ---- index-based masks ----------------------------------------------------------------------

absl::Status Triangle(GroupLowering& g, bool lower) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || dst.dim() < 2) {
    return absl::UnimplementedError("tril/triu needs 2 dims");
  }
  int64_t diagonal = 0;
  if (HasArg(g, "diagonal")) {
    TRN_ASSIGN_OR_RETURN(c10::IValue d, g.Arg("diagonal"));
    diagonal = d.toInt();
  }
  const int64_t rank = dst.dim();
  return PointwiseResult(g, {"self"}, kAuto, [=](ScalarBuilder& b, const Args& a) {
    Scalar row = b.LoopIndex(rank - 2);
    Scalar col = b.LoopIndex(rank - 1);
    // keep (tril): col - row <= diagonal; (triu): col - row >= diagonal
    Scalar delta = b.Sub(col, row);
    Scalar keep = b.Cmp(lower ? Cmp::kLe : Cmp::kGe, delta, b.Constant(diagonal, c10::kLong));
    return b.Select(keep, a[0], C(b, 0, a[0].dtype));
  });
}
absl::Status Tril(GroupLowering& g, const runtime::OpRecord&) { return Triangle(g, true); }
absl::Status Triu(GroupLowering& g, const runtime::OpRecord&) { return Triangle(g, false); }

}  // namespace

void PopulateElementwise(LoweringRegistry& r) {
  const std::string f = "elementwise";
  r.Register("aten::add", f, Add);
  r.Register("aten::sub", f, Sub);
  r.Register("aten::rsub", f, Rsub);
  r.Register("aten::mul", f, Mul);
  r.Register("aten::div", f, Div);
  r.Register("aten::remainder", f, Remainder);
  r.Register("aten::fmod", f, Fmod);
  r.Register("aten::floor_divide", f, FloorDivide);
  r.Register("aten::atan2", f, Atan2);
  r.Register("aten::copysign", f, Copysign);
  r.Register("aten::pow", f, Pow);
  r.Register("aten::maximum", f, Maximum);
  r.Register("aten::minimum", f, Minimum);
  r.Register("aten::fmax", f, Fmax);
  r.Register("aten::fmin", f, Fmin);
  r.Register("aten::lerp", f, Lerp);
  r.Register("aten::addcmul", f, Addcmul);
  r.Register("aten::addcdiv", f, Addcdiv);
  r.Register("aten::eq", f, Eq);
  r.Register("aten::ne", f, Ne);
  r.Register("aten::lt", f, Lt);
  r.Register("aten::le", f, Le);
  r.Register("aten::gt", f, Gt);
  r.Register("aten::ge", f, Ge);
  r.Register("aten::logical_and", f, LogicalAnd);
  r.Register("aten::logical_or", f, LogicalOr);
  r.Register("aten::logical_xor", f, LogicalXor);
  r.Register("aten::logical_not", f, LogicalNot);
  r.Register("aten::bitwise_and", f, BitwiseAnd);
  r.Register("aten::bitwise_or", f, BitwiseOr);
  r.Register("aten::bitwise_xor", f, BitwiseXor);
  r.Register("aten::bitwise_not", f, BitwiseNot);
  r.Register("aten::bitwise_left_shift", f, LeftShift);
  r.Register("aten::bitwise_right_shift", f, RightShift);
  r.Register("aten::__lshift__", f, LeftShift);
  r.Register("aten::__rshift__", f, RightShift);
  r.Register("aten::where", f, Where);
  r.Register("aten::masked_fill", f, MaskedFill);
  r.Register("aten::clamp", f, Clamp);
  r.Register("aten::clamp_min", f, ClampMin);
  r.Register("aten::clamp_max", f, ClampMax);
  r.Register("aten::hardtanh", f, Hardtanh);
  r.Register("aten::relu", f, Relu);
  r.Register("aten::sigmoid", f, SigmoidOp);
  r.Register("aten::silu", f, Silu);
  r.Register("aten::gelu", f, Gelu);
  r.Register("aten::leaky_relu", f, LeakyRelu);
  r.Register("aten::elu", f, Elu);
  r.Register("aten::hardsigmoid", f, Hardsigmoid);
  r.Register("aten::hardswish", f, Hardswish);
  r.Register("aten::softplus", f, Softplus);
  r.Register("aten::mish", f, Mish);
  r.Register("aten::threshold", f, Threshold);
  r.Register("aten::exp", f, MathUnary<kExp>);
  r.Register("aten::exp2", f, MathUnary<kExp2>);
  r.Register("aten::expm1", f, MathUnary<kExpm1>);
  r.Register("aten::log", f, MathUnary<kLog>);
  r.Register("aten::log2", f, MathUnary<kLog2>);
  r.Register("aten::log10", f, MathUnary<kLog10>);
  r.Register("aten::log1p", f, MathUnary<kLog1p>);
  r.Register("aten::sqrt", f, MathUnary<kSqrt>);
  r.Register("aten::sin", f, MathUnary<kSin>);
  r.Register("aten::cos", f, MathUnary<kCos>);
  r.Register("aten::tan", f, MathUnary<kTan>);
  r.Register("aten::tanh", f, MathUnary<kTanh>);
  r.Register("aten::atan", f, MathUnary<kAtan>);
  r.Register("aten::erf", f, MathUnary<kErf>);
  r.Register("aten::rsqrt", f, Rsqrt);
  r.Register("aten::reciprocal", f, Reciprocal);
  r.Register("aten::floor", f, Floor);
  r.Register("aten::ceil", f, Ceil);
  r.Register("aten::trunc", f, Trunc);
  r.Register("aten::round", f, Round);
  r.Register("aten::frac", f, Frac);
  r.Register("aten::neg", f, Neg);
  r.Register("aten::abs", f, Abs);
  r.Register("aten::sign", f, Sign);
  r.Register("aten::sgn", f, Sign);
  r.Register("aten::isnan", f, IsNan);
  r.Register("aten::isinf", f, IsInf);
  r.Register("aten::isposinf", f, IsPosInf);
  r.Register("aten::isneginf", f, IsNegInf);
  r.Register("aten::isfinite", f, IsFinite);
  r.Register("aten::nan_to_num", f, NanToNum);
  r.Register("aten::copy", f, Copy);
  r.Register("aten::clone", f, Clone);
  r.Register("aten::_to_copy", f, Clone);
  r.Register("aten::fill", f, Fill);
  r.Register("aten::zero", f, Zero);
  r.Register("aten::tril", f, Tril);
  r.Register("aten::triu", f, Triu);
}

}  // namespace trn::mlir_lowering
