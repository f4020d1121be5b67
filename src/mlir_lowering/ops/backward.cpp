// Backward ops of activations and of softmax / log_softmax. Activation backwards are one
// linalg.generic each; the softmax backwards add a sum over `dim` (f64 accumulator, see
// reduce_helpers.h). Formulas are ATen's CPU kernels', in the same order. Loss backwards
// (nll_loss, mse_loss, smooth_l1, huber) are in losses.cpp.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "mlir_lowering/ops/reduce_helpers.h"

namespace trn::mlir_lowering {
namespace {

using Args = std::vector<Scalar>;

// grad_input = body(grad_output, <second>) elementwise, float results only.
absl::Status GradOf(GroupLowering& g, absl::string_view second,
                    const std::function<Scalar(ScalarBuilder&, const Scalar& dy, const Scalar& x)>& body) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || !IsFloatType(dst.scalar_type())) {
    return absl::UnimplementedError("backward with a non-float result");
  }
  return PointwiseResult(g, {"grad_output", second}, c10::ScalarType::Undefined,
                         [&](ScalarBuilder& b, const Args& a) { return body(b, a[0], a[1]); });
}

Scalar Sigmoid(ScalarBuilder& b, const Scalar& x) {
  Scalar one = Const(b, 1, x.dtype);
  return b.Div(one, b.Add(one, b.Math(MathFn::kExp, b.Neg(x))));
}

absl::Status ThresholdBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(c10::Scalar threshold, ScalarArg(g, "threshold"));
  return GradOf(g, "self", [&](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    return b.Select(b.Cmp(Cmp::kLe, x, b.Constant(threshold, x.dtype)), Const(b, 0, x.dtype), dy);
  });
}

absl::Status TanhBackward(GroupLowering& g, const runtime::OpRecord&) {
  return GradOf(g, "output", [](ScalarBuilder& b, const Scalar& dy, const Scalar& y) {
    return b.Mul(dy, b.Sub(Const(b, 1, y.dtype), b.Mul(y, y)));
  });
}

absl::Status SigmoidBackward(GroupLowering& g, const runtime::OpRecord&) {
  return GradOf(g, "output", [](ScalarBuilder& b, const Scalar& dy, const Scalar& y) {
    return b.Mul(b.Mul(dy, b.Sub(Const(b, 1, y.dtype), y)), y);
  });
}

absl::Status GeluBackward(GroupLowering& g, const runtime::OpRecord&) {
  std::string approximate = "none";
  if (HasArg(g, "approximate")) {
    TRN_ASSIGN_OR_RETURN(c10::IValue m, g.Arg("approximate"));
    approximate = m.toStringRef();
  }
  if (approximate != "none" && approximate != "tanh") {
    return absl::UnimplementedError("gelu approximation");
  }
  const bool tanh = approximate == "tanh";
  return GradOf(g, "self", [tanh](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    if (tanh) {
      const double kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa = 0.044715;
      Scalar x_sq = b.Mul(x, x);
      Scalar x_cube = b.Mul(x_sq, x);
      Scalar inner = b.Mul(Const(b, kBeta, t), b.Add(x, b.Mul(Const(b, kKappa, t), x_cube)));
      Scalar tanh_inner = b.Math(MathFn::kTanh, inner);
      Scalar left = b.Mul(Const(b, 0.5, t), x);
      Scalar right = b.Add(Const(b, 1, t), tanh_inner);
      Scalar left_derivative = b.Mul(Const(b, 0.5, t), right);
      Scalar tanh_derivative = b.Sub(Const(b, 1, t), b.Mul(tanh_inner, tanh_inner));
      Scalar inner_derivative = b.Mul(Const(b, kBeta, t), b.Add(Const(b, 1, t), b.Mul(Const(b, 3 * kKappa, t), x_sq)));
      Scalar right_derivative = b.Mul(b.Mul(left, tanh_derivative), inner_derivative);
      return b.Mul(dy, b.Add(left_derivative, right_derivative));
    }
    const double kBeta = M_2_SQRTPI * M_SQRT1_2 * 0.5;
    Scalar cdf = b.Mul(Const(b, 0.5, t), b.Add(Const(b, 1, t), b.Math(MathFn::kErf, b.Mul(x, Const(b, M_SQRT1_2, t)))));
    Scalar pdf = b.Mul(Const(b, kBeta, t), b.Math(MathFn::kExp, b.Mul(b.Mul(x, x), Const(b, -0.5, t))));
    return b.Mul(dy, b.Add(cdf, b.Mul(x, pdf)));
  });
}

absl::Status SiluBackward(GroupLowering& g, const runtime::OpRecord&) {
  return GradOf(g, "self", [](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    Scalar s = Sigmoid(b, x);
    return b.Mul(b.Mul(dy, s), b.Add(Const(b, 1, t), b.Mul(x, b.Sub(Const(b, 1, t), s))));
  });
}

absl::Status MishBackward(GroupLowering& g, const runtime::OpRecord&) {
  return GradOf(g, "self", [](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    Scalar s = Sigmoid(b, x);
    Scalar ts = b.Math(MathFn::kTanh, b.Math(MathFn::kLog1p, b.Math(MathFn::kExp, x)));
    Scalar d = b.Sub(Const(b, 1, t), b.Mul(ts, ts));
    return b.Mul(dy, b.Add(ts, b.Mul(b.Mul(x, s), d)));
  });
}

absl::Status HardtanhBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(c10::Scalar lo, ScalarArg(g, "min_val"));
  TRN_ASSIGN_OR_RETURN(c10::Scalar hi, ScalarArg(g, "max_val"));
  return GradOf(g, "self", [&](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    Scalar out = b.Or(b.Cmp(Cmp::kLe, x, b.Constant(lo, x.dtype)), b.Cmp(Cmp::kGe, x, b.Constant(hi, x.dtype)));
    return b.Select(out, Const(b, 0, x.dtype), dy);
  });
}

absl::Status LeakyReluBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(c10::Scalar slope, ScalarArg(g, "negative_slope"));
  return GradOf(g, "self", [&](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    return b.Select(b.Cmp(Cmp::kGt, x, Const(b, 0, x.dtype)), dy, b.Mul(dy, b.Constant(slope, x.dtype)));
  });
}

// PReLU (`_prelu_kernel(self, weight)`, the weight already viewed to broadcast against self, as
// torch.prelu passes it): x > 0 ? x : w x, as ATen's CPU kernel (a NaN takes the second branch).
absl::Status Prelu(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || !IsFloatType(dst.scalar_type())) return absl::UnimplementedError("prelu of a non-float");
  return PointwiseResult(g, {"self", "weight"}, c10::ScalarType::Undefined, [](ScalarBuilder& b, const Args& a) {
    return b.Select(b.Cmp(Cmp::kGt, a[0], Const(b, 0, a[0].dtype)), a[0], b.Mul(a[1], a[0]));
  });
}

// `_prelu_kernel_backward(grad_output, self, weight) -> (grad_self, grad_weight)`, both of the
// broadcast shape (autograd sums grad_weight to the weight's shape): x > 0 ? g : w g, and
// x > 0 ? 0 : x g, as ATen's CPU kernel.
absl::Status PreluBackward(GroupLowering& g, const runtime::OpRecord&) {
  const at::Tensor dx = g.Destination(0), dw = g.Destination(1);
  if (!dx.defined() || !dw.defined() || !IsFloatType(dx.scalar_type()) || dw.scalar_type() != dx.scalar_type() ||
      dw.sizes() != dx.sizes()) {
    return absl::UnimplementedError("prelu backward without two float results of one shape");
  }
  std::vector<Operand> ins;
  for (absl::string_view n : {"grad_output", "self", "weight"}) {
    TRN_ASSIGN_OR_RETURN(Operand o, ArgOperand(g, n));
    ins.push_back(std::move(o));
  }
  const c10::ScalarType t = dx.scalar_type();
  auto grad = [&](bool of_weight) {
    return g.Pointwise(ins, dx.sizes().vec(), t, [t, of_weight](ScalarBuilder& b, const Args& a) {
      const Scalar dy = b.Cast(a[0], t), x = b.Cast(a[1], t), w = b.Cast(a[2], t);
      const Scalar positive = b.Cmp(Cmp::kGt, x, Const(b, 0, t));
      return of_weight ? b.Select(positive, Const(b, 0, t), b.Mul(x, dy)) : b.Select(positive, dy, b.Mul(w, dy));
    });
  };
  TRN_RETURN_IF_ERROR(g.WriteResult(0, grad(false)));
  return g.WriteResult(1, grad(true));
}

absl::Status EluBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(c10::Scalar alpha, ScalarArg(g, "alpha"));
  TRN_ASSIGN_OR_RETURN(c10::Scalar scale, ScalarArg(g, "scale"));
  TRN_ASSIGN_OR_RETURN(c10::Scalar input_scale, ScalarArg(g, "input_scale"));
  TRN_ASSIGN_OR_RETURN(bool is_result, BoolArg(g, "is_result", false));
  // negcoef = alpha * scale, poscoef = scale, negiptcoef = input_scale (ATen, in the dtype).
  return GradOf(g, "self_or_result", [&](ScalarBuilder& b, const Scalar& dy, const Scalar& v) {
    const c10::ScalarType t = v.dtype;
    Scalar negcoef = b.Mul(b.Constant(alpha, t), b.Constant(scale, t));
    Scalar poscoef = b.Constant(scale, t), negiptcoef = b.Constant(input_scale, t);
    Scalar neg = is_result ? b.Mul(b.Mul(dy, negiptcoef), b.Add(v, negcoef))
                           : b.Mul(b.Mul(b.Mul(dy, negiptcoef), negcoef), b.Math(MathFn::kExp, b.Mul(v, negiptcoef)));
    return b.Select(b.Cmp(Cmp::kLe, v, Const(b, 0, t)), neg, b.Mul(dy, poscoef));
  });
}

absl::Status SoftplusBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(c10::Scalar beta, ScalarArg(g, "beta"));
  TRN_ASSIGN_OR_RETURN(c10::Scalar threshold, ScalarArg(g, "threshold"));
  return GradOf(g, "self", [&](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    Scalar bx = b.Mul(x, b.Constant(beta, t));
    Scalar z = b.Math(MathFn::kExp, bx);
    Scalar soft = b.Div(b.Mul(dy, z), b.Add(z, Const(b, 1, t)));
    return b.Select(b.Cmp(Cmp::kGt, bx, b.Constant(threshold, t)), dy, soft);
  });
}

absl::Status HardsigmoidBackward(GroupLowering& g, const runtime::OpRecord&) {
  return GradOf(g, "self", [](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    Scalar in = b.And(b.Cmp(Cmp::kGt, x, Const(b, -3, t)), b.Cmp(Cmp::kLt, x, Const(b, 3, t)));
    const double one_sixth = t == c10::kDouble ? 1.0 / 6.0 : static_cast<double>(1.0f / 6.0f);
    return b.Select(in, b.Mul(dy, Const(b, one_sixth, t)), Const(b, 0, t));
  });
}

absl::Status HardswishBackward(GroupLowering& g, const runtime::OpRecord&) {
  return GradOf(g, "self", [](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    // x <= -3 ? 0 : (x < 3 ? dy * (x / 3 + 0.5) : dy)
    Scalar mid = b.Mul(dy, b.Add(b.Div(x, Const(b, 3, t)), Const(b, 0.5, t)));
    Scalar r = b.Select(b.Cmp(Cmp::kLt, x, Const(b, 3, t)), mid, dy);
    return b.Select(b.Cmp(Cmp::kLe, x, Const(b, -3, t)), Const(b, 0, t), r);
  });
}

// ATen: eps None: x < 0 || x > 1 ? NaN : (x == 0 || x == 1 ? dy * inf : dy / (x * (1 - x)));
// with eps: x < eps || x > 1 - eps ? 0 : dy / (x * (1 - x)).
absl::Status LogitBackward(GroupLowering& g, const runtime::OpRecord&) {
  std::optional<double> eps;
  if (HasArg(g, "eps")) {
    TRN_ASSIGN_OR_RETURN(eps, DoubleArg(g, "eps"));
  }
  return GradOf(g, "self", [&](ScalarBuilder& b, const Scalar& dy, const Scalar& x) {
    const c10::ScalarType t = x.dtype;
    Scalar one = Const(b, 1, t);
    Scalar grad = b.Div(dy, b.Mul(x, b.Sub(one, x)));
    if (eps.has_value()) {
      Scalar lo = Const(b, *eps, t), hi = b.Sub(one, lo);
      Scalar out = b.Or(b.Cmp(Cmp::kLt, x, lo), b.Cmp(Cmp::kGt, x, hi));
      return b.Select(out, Const(b, 0, t), grad);
    }
    Scalar zero = Const(b, 0, t);
    Scalar out = b.Or(b.Cmp(Cmp::kLt, x, zero), b.Cmp(Cmp::kGt, x, one));
    Scalar edge = b.Or(b.Cmp(Cmp::kEq, x, zero), b.Cmp(Cmp::kEq, x, one));
    Scalar r = b.Select(edge, b.Mul(dy, Const(b, std::numeric_limits<double>::infinity(), t)), grad);
    return b.Select(out, Const(b, std::numeric_limits<double>::quiet_NaN(), t), r);
  });
}

// ---- softmax backwards ------------------------------------------------------------------------

// softmax: (dy - sum(dy * y)) * y; log_softmax: dy - exp(y) * sum(dy).
absl::Status SoftmaxBackward(GroupLowering& g, bool log) {
  at::Tensor dst = g.Destination(0);
  TRN_ASSIGN_OR_RETURN(View dy, TensorArg(g, "grad_output"));
  TRN_ASSIGN_OR_RETURN(View y, TensorArg(g, "output"));
  TRN_ASSIGN_OR_RETURN(c10::IValue input_dtype, g.Arg("input_dtype"));
  const c10::ScalarType t = dy.dtype;
  if (!dst.defined() || dst.scalar_type() != t || y.dtype != t || !IsFloatType(t) || dy.sizes != y.sizes ||
      !input_dtype.isInt() || input_dtype.toScalarType() != t) {
    return absl::UnimplementedError("softmax backward dtypes or shapes");
  }
  TRN_ASSIGN_OR_RETURN(c10::IValue dim, g.Arg("dim"));
  TRN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReduceDims(dim, dy.rank()));
  if (dim.isNone()) {
    return absl::UnimplementedError("softmax backward without dim");
  }
  const std::vector<int64_t>& shape = dy.sizes;
  View s = log ? SumOf(g, dy, dims, true, SumAccType(t))
               : SumOf(g, Map(g, {dy, y}, shape, t, [](ScalarBuilder& b, const Args& a) { return b.Mul(a[0], a[1]); }),
                       dims, true, SumAccType(t));
  View gi = Map(g, {dy, y, s}, shape, t, [log, t](ScalarBuilder& b, const Args& a) {
    Scalar sum = b.Cast(a[2], t);
    if (log) {
      return b.Sub(a[0], b.Mul(b.Math(MathFn::kExp, a[1]), sum));
    }
    return b.Mul(b.Sub(a[0], sum), a[1]);
  });
  return g.WriteResult(0, gi);
}
absl::Status SoftmaxBackwardData(GroupLowering& g, const runtime::OpRecord&) { return SoftmaxBackward(g, false); }
absl::Status LogSoftmaxBackwardData(GroupLowering& g, const runtime::OpRecord&) { return SoftmaxBackward(g, true); }

}  // namespace

void PopulateBackward(LoweringRegistry& r) {
  const std::string f = "backward";
  r.Register("aten::threshold_backward", f, ThresholdBackward);
  r.Register("aten::tanh_backward", f, TanhBackward);
  r.Register("aten::sigmoid_backward", f, SigmoidBackward);
  r.Register("aten::gelu_backward", f, GeluBackward);
  r.Register("aten::silu_backward", f, SiluBackward);
  r.Register("aten::mish_backward", f, MishBackward);
  r.Register("aten::hardtanh_backward", f, HardtanhBackward);
  r.Register("aten::leaky_relu_backward", f, LeakyReluBackward);
  r.Register("aten::elu_backward", f, EluBackward);
  r.Register("aten::_prelu_kernel", f, Prelu);
  r.Register("aten::_prelu_kernel_backward", f, PreluBackward);
  r.Register("aten::softplus_backward", f, SoftplusBackward);
  r.Register("aten::hardsigmoid_backward", f, HardsigmoidBackward);
  r.Register("aten::hardswish_backward", f, HardswishBackward);
  r.Register("aten::logit_backward", f, LogitBackward);
  r.Register("aten::_softmax_backward_data", f, SoftmaxBackwardData);
  r.Register("aten::_log_softmax_backward_data", f, LogSoftmaxBackwardData);
}

}  // namespace trn::mlir_lowering
