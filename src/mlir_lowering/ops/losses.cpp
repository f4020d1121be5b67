// Losses and their backward ops: nll_loss (and nll_loss2d) forward/backward, mse_loss,
// smooth_l1_loss, huber_loss. Formulas follow ATen's CPU kernels; reduced losses sum in f64
// (reduce_helpers.h).
//
// nll_loss gathers input[.., target, ..] with tensor.extract inside a linalg.generic body. The
// class index is clamped into [0, C) before the read, so no access is ever out of bounds. ATen
// raises IndexError on a target outside [0, C) that is not ignore_index; here a device-side
// check (GroupLowering::Check) counts such targets and the run fails with that IndexError,
// naming the op and its source line. On a trn target the forward picks input[.., target, ..]
// by comparing the class index with the target instead (NllPicked), which the NeuronCore runs.
#include <limits>

#include "absl/strings/str_cat.h"
#include "mlir_lowering/ops/reduce_helpers.h"

namespace trn::mlir_lowering {
namespace {

using Args = std::vector<Scalar>;
constexpr int64_t kNone = 0, kMean = 1, kSum = 2;  // at::Reduction

struct Nll {
  View self, target;
  std::optional<View> weight;
  int64_t reduction = kMean;
  int64_t ignore_index = -100;
  int64_t class_dim = 0;  // 0 for a 1-d input, else 1
  int64_t classes = 0;
  c10::ScalarType t = c10::kFloat;
};

absl::StatusOr<Nll> ReadNll(GroupLowering& g) {
  Nll n;
  TRN_ASSIGN_OR_RETURN(n.self, TensorArg(g, "self"));
  TRN_ASSIGN_OR_RETURN(n.target, TensorArg(g, "target"));
  if (HasTensorArg(g, "weight")) {
    TRN_ASSIGN_OR_RETURN(n.weight, TensorArg(g, "weight"));
  }
  TRN_ASSIGN_OR_RETURN(n.reduction, IntArg(g, "reduction"));
  TRN_ASSIGN_OR_RETURN(n.ignore_index, IntArg(g, "ignore_index"));
  n.t = n.self.dtype;
  n.class_dim = n.self.rank() == 1 ? 0 : 1;
  if (n.self.rank() < 1 || !IsFloatType(n.t) || n.reduction < kNone || n.reduction > kSum) {
    return absl::UnimplementedError("nll_loss arguments");
  }
  n.classes = n.self.sizes[n.class_dim];
  std::vector<int64_t> expect = n.self.sizes;
  expect.erase(expect.begin() + n.class_dim);
  if (n.target.sizes != expect || c10::isFloatingType(n.target.dtype) || n.target.dtype == c10::kBool ||
      (n.weight.has_value() && (n.weight->sizes != std::vector<int64_t>{n.classes} || n.weight->dtype != n.t))) {
    return absl::UnimplementedError("nll_loss shapes or dtypes");
  }
  return n;
}

// Per target element: (valid target, not ignored) masks and the clamped class index.
struct TargetInfo {
  Scalar index, valid, keep;
};
TargetInfo Classify(ScalarBuilder& b, const Nll& n, const Scalar& raw) {
  Scalar tg = b.Cast(raw, c10::kLong);
  Scalar valid = b.And(b.Cmp(Cmp::kGe, tg, b.Constant(0, c10::kLong)),
                       b.Cmp(Cmp::kLt, tg, b.Constant(n.classes, c10::kLong)));
  Scalar keep = b.Cmp(Cmp::kNe, tg, b.Constant(n.ignore_index, c10::kLong));
  return {b.Select(valid, tg, b.Constant(0, c10::kLong)), valid, keep};
}

// 0 where ignored or invalid (an invalid target fails the run: CheckTargets), else v.
Scalar MaskTarget(ScalarBuilder& b, const TargetInfo& ti, const Scalar& v) {
  return b.Select(b.And(ti.keep, ti.valid), v, Const(b, 0, v.dtype));
}

// Fails the run (IndexError) if a target that is not ignore_index lies outside [0, C).
absl::Status CheckTargets(GroupLowering& g, const Nll& n) {
  View bad = g.Pointwise({Operand::Of(n.target)}, n.target.sizes, c10::kBool, [&](ScalarBuilder& b, const Args& a) {
    TargetInfo ti = Classify(b, n, a[0]);
    return b.And(b.Not(ti.valid), ti.keep);
  });
  return g.Check(bad, "Target is out of bounds (a class index outside [0, C) that is not ignore_index).");
}

// Per target element: the loss -input[.., t, ..] * w[t] (want_weight: w[t]), masked.
View NllElements(GroupLowering& g, const Nll& n, IrValue xs, IrValue ws, bool want_weight) {
  return g.Pointwise({Operand::Of(n.target)}, n.target.sizes, n.t, [&](ScalarBuilder& b, const Args& a) {
    TargetInfo ti = Classify(b, n, a[0]);
    Scalar w = !n.weight.has_value() ? Const(b, 1, n.t) : b.Extract(ws, n.weight->dtype, {ti.index});
    if (want_weight) {
      return MaskTarget(b, ti, w);
    }
    Args idx;
    for (int64_t d = 0; d < n.target.rank(); ++d) {
      idx.push_back(b.LoopIndex(d));
    }
    idx.insert(idx.begin() + n.class_dim, ti.index);
    Scalar x = b.Extract(xs, n.self.dtype, idx);
    return MaskTarget(b, ti, b.Mul(b.Neg(x), w));
  });
}

// `v` (target-shaped, or the 1-D weight when `weight`) broadcast along the class dimension
// to the input's shape: a view, no copy.
View AlongClasses(const Nll& n, View v, bool weight) {
  for (AffineTerm& t : v.map) {
    for (auto& [d, c] : t.coeffs) {
      if (weight) {
        d = static_cast<int>(n.class_dim);
      } else if (d >= n.class_dim) {
        ++d;
      }
    }
  }
  v.sizes = n.self.sizes;
  return v;
}

// The NeuronCore cannot read at a data-dependent address inside a body: there, the element at
// the target's class is picked by comparing the class index (an iota) with the target and
// summing over the classes (the other terms are exact zeros, NaN in them included).
View NllPicked(GroupLowering& g, const Nll& n, bool want_weight) {
  std::vector<Operand> ins = {Operand::Of(AlongClasses(n, n.target, false))};
  if (!want_weight) ins.push_back(Operand::Of(n.self));
  if (n.weight.has_value()) ins.push_back(Operand::Of(AlongClasses(n, *n.weight, true)));
  View picked = g.Pointwise(ins, n.self.sizes, n.t, [&](ScalarBuilder& b, const Args& a) {
    TargetInfo ti = Classify(b, n, a[0]);
    Scalar w = n.weight.has_value() ? a.back() : Const(b, 1, n.t);
    Scalar v = want_weight ? w : b.Mul(b.Neg(a[1]), w);
    Scalar here = b.Cmp(Cmp::kEq, b.LoopIndex(n.class_dim), ti.index);
    return b.Select(here, MaskTarget(b, ti, v), Const(b, 0, n.t));
  });
  return SumOf(g, picked, {n.class_dim}, false, n.t);
}

absl::Status NllLossForward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(Nll n, ReadNll(g));
  const at::Tensor out = g.Destination(0), total = g.Destination(1);
  if (!out.defined() || !total.defined()) {
    return absl::UnimplementedError("nll_loss without outputs");
  }
  TRN_RETURN_IF_ERROR(CheckTargets(g, n));
  const bool trn = g.target().is_trn();
  const IrValue xs = trn ? IrValue() : g.Materialize(n.self);
  const IrValue ws = !trn && n.weight.has_value() ? g.Materialize(*n.weight) : IrValue();
  View loss = trn ? NllPicked(g, n, false) : NllElements(g, n, xs, ws, false);
  if (n.reduction == kNone && n.self.rank() >= 2) {
    TRN_RETURN_IF_ERROR(g.WriteResult(0, loss));
    return g.WriteResult(1, g.Pointwise({Operand::Const(0, c10::kLong)}, {}, n.t,
                                        [](ScalarBuilder&, const Args& a) { return a[0]; }));
  }
  const std::vector<int64_t> all = *ReduceDims(c10::IValue(), loss.rank());
  View w = trn && n.weight.has_value() ? NllPicked(g, n, true) : NllElements(g, n, xs, ws, true);
  View sum = SumOf(g, loss, all, false, c10::kDouble);
  View tw = SumOf(g, w, all, false, c10::kDouble);
  const c10::ScalarType t = n.t;
  if (n.reduction == kMean) {
    sum = Map(g, {sum, tw}, {}, t, [t](ScalarBuilder& b, const Args& a) { return b.Div(b.Cast(a[0], t), b.Cast(a[1], t)); });
  }
  TRN_RETURN_IF_ERROR(g.WriteResult(0, sum));
  return g.WriteResult(1, tw);
}

absl::Status NllLossBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(Nll n, ReadNll(g));
  TRN_RETURN_IF_ERROR(CheckTargets(g, n));
  TRN_ASSIGN_OR_RETURN(View go, TensorArg(g, "grad_output"));
  TRN_ASSIGN_OR_RETURN(View tw, TensorArg(g, "total_weight"));
  const int64_t rank = n.self.rank();
  std::vector<int64_t> other_dims;  // the self dims the target's dims map to
  for (int64_t d = 0; d < rank; ++d) {
    if (d != n.class_dim) {
      other_dims.push_back(d);
    }
  }
  const bool per_element = n.reduction == kNone && rank >= 2;
  if ((per_element ? go.sizes != n.target.sizes : go.rank() != 0) || tw.rank() != 0) {
    return absl::UnimplementedError("nll_loss_backward shapes");
  }
  std::vector<Operand> ins = {Operand::Of(PlaceDims(n.target, rank, other_dims)),
                              Operand::Of(per_element ? PlaceDims(go, rank, other_dims) : PlaceDims(go, rank, {})),
                              Operand::Of(PlaceDims(tw, rank, {}))};
  if (n.weight.has_value()) {
    ins.push_back(Operand::Of(PlaceDims(*n.weight, rank, {n.class_dim})));
  }
  const c10::ScalarType t = n.t;
  const bool mean = n.reduction == kMean && !per_element;
  View gi = g.Pointwise(ins, n.self.sizes, t, [&](ScalarBuilder& b, const Args& a) {
    TargetInfo ti = Classify(b, n, a[0]);
    Scalar gout = b.Cast(a[1], t);
    Scalar grad = b.Neg(mean ? b.Div(gout, b.Cast(a[2], t)) : gout);
    Scalar v = n.weight.has_value() ? b.Mul(b.Cast(a[3], t), grad) : grad;
    Scalar hit = b.Cmp(Cmp::kEq, b.LoopIndex(n.class_dim), ti.index);
    return MaskTarget(b, ti, b.Select(hit, v, Const(b, 0, t)));
  });
  return g.WriteResult(0, gi);
}

// ---- pointwise losses -------------------------------------------------------------------------

using LossFn = std::function<Scalar(ScalarBuilder&, const Scalar& x, const Scalar& y)>;

absl::Status PointwiseLoss(GroupLowering& g, const LossFn& f) {
  at::Tensor dst = g.Destination(0);
  TRN_ASSIGN_OR_RETURN(int64_t reduction, IntArg(g, "reduction"));
  if (!dst.defined() || !IsFloatType(dst.scalar_type())) {
    return absl::UnimplementedError("loss of integers");
  }
  const c10::ScalarType t = dst.scalar_type();
  if (reduction == kNone) {
    return PointwiseResult(g, {"self", "target"}, t, [&](ScalarBuilder& b, const Args& a) { return f(b, a[0], a[1]); });
  }
  TRN_ASSIGN_OR_RETURN(View x, TensorArg(g, "self"));
  TRN_ASSIGN_OR_RETURN(View y, TensorArg(g, "target"));
  if (x.sizes != y.sizes || reduction > kSum) {
    return absl::UnimplementedError("reduced loss of broadcast operands");
  }
  View l = Map(g, {x, y}, x.sizes, t, [&](ScalarBuilder& b, const Args& a) { return f(b, b.Cast(a[0], t), b.Cast(a[1], t)); });
  View s = SumOf(g, l, *ReduceDims(c10::IValue(), l.rank()), false, c10::kDouble);
  if (reduction == kMean) {
    const double n = static_cast<double>(NumelOf(x.sizes, *ReduceDims(c10::IValue(), x.rank())));
    s = Map(g, {s}, {}, t, [t, n](ScalarBuilder& b, const Args& a) { return b.Div(b.Cast(a[0], t), Const(b, n, t)); });
  }
  return g.WriteResult(0, s);
}

absl::Status MseLoss(GroupLowering& g, const runtime::OpRecord&) {
  return PointwiseLoss(g, [](ScalarBuilder& b, const Scalar& x, const Scalar& y) {
    Scalar d = b.Sub(x, y);
    return b.Mul(d, d);
  });
}

absl::Status SmoothL1Loss(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(double beta, DoubleArg(g, "beta"));
  return PointwiseLoss(g, [beta](ScalarBuilder& b, const Scalar& x, const Scalar& y) {
    const c10::ScalarType t = x.dtype;
    Scalar z = b.Abs(b.Sub(x, y));
    Scalar be = Const(b, beta, t), half = Const(b, 0.5, t);
    // z < beta ? 0.5 * z * z / beta : z - 0.5 * beta
    Scalar quad = b.Div(b.Mul(b.Mul(half, z), z), be);
    return b.Select(b.Cmp(Cmp::kLt, z, be), quad, b.Sub(z, b.Mul(half, be)));
  });
}

absl::Status HuberLoss(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(double delta, DoubleArg(g, "delta"));
  return PointwiseLoss(g, [delta](ScalarBuilder& b, const Scalar& x, const Scalar& y) {
    const c10::ScalarType t = x.dtype;
    Scalar z = b.Abs(b.Sub(x, y));
    Scalar de = Const(b, delta, t), half = Const(b, 0.5, t);
    // z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta)
    Scalar quad = b.Mul(b.Mul(half, z), z);
    return b.Select(b.Cmp(Cmp::kLt, z, de), quad, b.Mul(de, b.Sub(z, b.Mul(half, de))));
  });
}

// The gradient scale of a loss backward: 1/numel(self) for mean, else 1 (times `factor`).
absl::StatusOr<double> LossNorm(GroupLowering& g, double factor) {
  TRN_ASSIGN_OR_RETURN(int64_t reduction, IntArg(g, "reduction"));
  TRN_ASSIGN_OR_RETURN(c10::IValue self, g.Arg("self"));
  if (!self.isTensor() || reduction < kNone || reduction > kSum) {
    return absl::UnimplementedError("loss backward arguments");
  }
  return reduction == kMean ? factor / static_cast<double>(self.toTensor().numel()) : factor;
}

absl::Status FloatBackward(GroupLowering& g, const std::vector<absl::string_view>& names, const BodyFn& body) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || !IsFloatType(dst.scalar_type())) {
    return absl::UnimplementedError("backward of integers");
  }
  return PointwiseResult(g, names, c10::ScalarType::Undefined, body);
}

// ATen: (self - target) * norm * grad_output, norm = 2 (/ numel for mean).
absl::Status MseLossBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(double norm, LossNorm(g, 2.0));
  return FloatBackward(g, {"grad_output", "self", "target"}, [norm](ScalarBuilder& b, const Args& a) {
    return b.Mul(b.Mul(b.Sub(a[1], a[2]), Const(b, norm, a[0].dtype)), a[0]);
  });
}

absl::Status SmoothL1LossBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(double norm, LossNorm(g, 1.0));
  TRN_ASSIGN_OR_RETURN(double beta, DoubleArg(g, "beta"));
  if (beta == 0) {
    return absl::UnimplementedError("smooth_l1 backward with beta 0 (l1 backward)");
  }
  return FloatBackward(g, {"grad_output", "self", "target"}, [=](ScalarBuilder& b, const Args& a) {
    const c10::ScalarType t = a[0].dtype;
    Scalar x = b.Sub(a[1], a[2]);
    Scalar nv = Const(b, norm, t), be = Const(b, beta, t);
    Scalar lo = b.Mul(b.Neg(nv), a[0]);
    Scalar hi = b.Mul(nv, a[0]);
    Scalar mid = b.Div(b.Mul(b.Mul(nv, x), a[0]), be);
    return b.Select(b.Cmp(Cmp::kLe, x, b.Neg(be)), lo, b.Select(b.Cmp(Cmp::kGe, x, be), hi, mid));
  });
}

absl::Status HuberLossBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(double norm, LossNorm(g, 1.0));
  TRN_ASSIGN_OR_RETURN(double delta, DoubleArg(g, "delta"));
  return FloatBackward(g, {"grad_output", "self", "target"}, [=](ScalarBuilder& b, const Args& a) {
    const c10::ScalarType t = a[0].dtype;
    Scalar x = b.Sub(a[1], a[2]);
    Scalar nv = Const(b, norm, t), de = Const(b, delta, t);
    Scalar lo = b.Mul(b.Mul(b.Neg(nv), a[0]), de);
    Scalar hi = b.Mul(b.Mul(nv, a[0]), de);
    Scalar mid = b.Mul(b.Mul(nv, x), a[0]);
    return b.Select(b.Cmp(Cmp::kLe, x, b.Neg(de)), lo, b.Select(b.Cmp(Cmp::kGe, x, de), hi, mid));
  });
}

}  // namespace

void RegisterLosses(LoweringRegistry& r) {
  r.Register("aten::nll_loss_forward", "reduction", NllLossForward);
  r.Register("aten::nll_loss2d_forward", "reduction", NllLossForward);
  r.Register("aten::mse_loss", "reduction", MseLoss);
  r.Register("aten::smooth_l1_loss", "reduction", SmoothL1Loss);
  r.Register("aten::huber_loss", "reduction", HuberLoss);
  r.Register("aten::nll_loss_backward", "backward", NllLossBackward);
  r.Register("aten::nll_loss2d_backward", "backward", NllLossBackward);
  r.Register("aten::mse_loss_backward", "backward", MseLossBackward);
  r.Register("aten::smooth_l1_loss_backward", "backward", SmoothL1LossBackward);
  r.Register("aten::huber_loss_backward", "backward", HuberLossBackward);
}

}  // namespace trn::mlir_lowering
