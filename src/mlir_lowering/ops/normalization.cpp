// Normalization: native_layer_norm (+ backward), batch norm in training mode
// (native_batch_norm, _native_batch_norm_legit[.no_stats], _native_batch_norm_legit_functional;
// the running statistics are updated in place, a GroupLowering::Write to those arguments) and
// native_batch_norm_backward (training and eval). Statistics are reductions with an f64
// accumulator (reduce_helpers.h); the per-element formulas and roundings are ATen's CPU
// kernels' (layer_norm_kernel.cpp, batch_norm_kernel.cpp).
//
// Eval-mode batch norm forward is not lowered: its save_mean/save_invstd results are empty
// tensors, which the group lowering refuses (Target::CanGroup), so it runs op by op.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "mlir_lowering/ops/reduce_helpers.h"

namespace trn::mlir_lowering {
namespace {

using Args = std::vector<Scalar>;
constexpr c10::ScalarType kD = c10::kDouble;

absl::StatusOr<std::optional<View>> OptionalTensor(GroupLowering& g, absl::string_view name) {
  if (!HasTensorArg(g, name)) {
    return std::optional<View>();
  }
  TRN_ASSIGN_OR_RETURN(View v, TensorArg(g, name));
  return std::optional<View>(std::move(v));
}

absl::StatusOr<std::vector<bool>> OutputMask(const GroupLowering& g) {
  TRN_ASSIGN_OR_RETURN(c10::IValue m, g.Arg("output_mask"));
  if (!m.isBoolList()) {
    return absl::UnimplementedError("output_mask is not a bool list");
  }
  std::vector<bool> mask;
  for (bool b : m.toBoolList()) {
    mask.push_back(b);
  }
  return mask;
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> r;
  for (int64_t i = begin; i < end; ++i) {
    r.push_back(i);
  }
  return r;
}

// Every dim of a rank-`rank` tensor but the channel dim 1.
std::vector<int64_t> AllButChannel(int64_t rank) {
  std::vector<int64_t> r = Range(0, rank);
  r.erase(r.begin() + 1);
  return r;
}

// x - mean over `dims`, squared, summed in f64 (keepdim); mean is f64 and broadcasts.
View CenteredSquares(GroupLowering& g, const View& x, const View& mean, const std::vector<int64_t>& dims) {
  View sq = Map(g, {x, mean}, x.sizes, kD, [](ScalarBuilder& b, const Args& a) {
    Scalar d = b.Sub(b.Cast(a[0], kD), a[1]);
    return b.Mul(d, d);
  });
  return SumOf(g, sq, dims, true, kD);
}

View DivBy(GroupLowering& g, const View& v, double n, c10::ScalarType t) {
  return Map(g, {v}, v.sizes, t, [n, t](ScalarBuilder& b, const Args& a) { return b.Div(b.Cast(a[0], t), Const(b, n, t)); });
}

// ---- layer norm -------------------------------------------------------------------------------

struct LayerNormArgs {
  View x;
  std::vector<int64_t> norm_dims, lead_dims;
  double n = 1;
  std::optional<View> weight, bias;  // placed over x's dims
  c10::ScalarType t = c10::kFloat;
};

absl::StatusOr<LayerNormArgs> ReadLayerNorm(GroupLowering& g, absl::string_view input) {
  LayerNormArgs l;
  TRN_ASSIGN_OR_RETURN(l.x, TensorArg(g, input));
  TRN_ASSIGN_OR_RETURN(c10::IValue shape, g.Arg("normalized_shape"));
  if (!shape.isIntList()) {
    return absl::UnimplementedError("normalized_shape");
  }
  const std::vector<int64_t> normalized = shape.toIntVector();
  const int64_t rank = l.x.rank(), k = static_cast<int64_t>(normalized.size());
  l.t = l.x.dtype;
  if (k > rank || !IsFloatType(l.t) ||
      !std::equal(normalized.begin(), normalized.end(), l.x.sizes.begin() + (rank - k))) {
    return absl::UnimplementedError("layer norm shapes");
  }
  l.norm_dims = Range(rank - k, rank);
  l.lead_dims = Range(0, rank - k);
  l.n = static_cast<double>(NumelOf(l.x.sizes, l.norm_dims));
  for (auto [name, slot] : {std::pair{"weight", &l.weight}, std::pair{"bias", &l.bias}}) {
    TRN_ASSIGN_OR_RETURN(*slot, OptionalTensor(g, name));
    if (slot->has_value()) {
      if ((*slot)->sizes != normalized || (*slot)->dtype != l.t) {
        return absl::UnimplementedError("layer norm weight/bias");
      }
      **slot = PlaceDims(**slot, rank, l.norm_dims);
    }
  }
  return l;
}

absl::Status NativeLayerNorm(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(LayerNormArgs l, ReadLayerNorm(g, "input"));
  TRN_ASSIGN_OR_RETURN(double eps, DoubleArg(g, "eps"));
  // Half inputs: the statistics stay f32 for y (ATen's opmath) and are rounded when written.
  const c10::ScalarType t = OpMath(l.t);
  View mean_d = DivBy(g, SumOf(g, l.x, l.norm_dims, true, kD), l.n, kD);
  View var_d = DivBy(g, CenteredSquares(g, l.x, mean_d, l.norm_dims), l.n, kD);
  View mean = Map(g, {mean_d}, mean_d.sizes, t, [](ScalarBuilder&, const Args& a) { return a[0]; });
  // rstd = 1 / sqrt(var + eps), in the dtype (ATen: opmath float).
  View rstd = Map(g, {var_d}, var_d.sizes, t, [t, eps](ScalarBuilder& b, const Args& a) {
    return b.Div(Const(b, 1, t), b.Math(MathFn::kSqrt, b.Add(b.Cast(a[0], t), Const(b, eps, t))));
  });
  std::vector<View> ins = {l.x, mean, rstd};
  if (l.weight) ins.push_back(*l.weight);
  if (l.bias) ins.push_back(*l.bias);
  const bool has_w = l.weight.has_value(), has_b = l.bias.has_value();
  // y = (x * rstd + (-mean * rstd)) * gamma + beta
  View y = Map(g, ins, l.x.sizes, l.t, [=](ScalarBuilder& b, const Args& a) {
    Scalar shift = b.Mul(b.Neg(a[1]), a[2]);
    Scalar v = b.Add(b.Mul(a[0], a[2]), shift);
    size_t i = 3;
    if (has_w) v = b.Mul(v, a[i++]);
    if (has_b) v = b.Add(v, a[i++]);
    return v;
  });
  for (size_t r = 1; r < 3; ++r) {
    at::Tensor d = g.Destination(r);
    if (d.defined() && d.sizes().vec() != mean.sizes) {
      return absl::UnimplementedError("layer norm statistics shape");
    }
  }
  TRN_RETURN_IF_ERROR(g.WriteResult(0, y));
  TRN_RETURN_IF_ERROR(g.WriteResult(1, mean));
  return g.WriteResult(2, rstd);
}

absl::Status NativeLayerNormBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(LayerNormArgs l, ReadLayerNorm(g, "input"));
  TRN_ASSIGN_OR_RETURN(View dy, TensorArg(g, "grad_out"));
  TRN_ASSIGN_OR_RETURN(View mean, TensorArg(g, "mean"));
  TRN_ASSIGN_OR_RETURN(View rstd, TensorArg(g, "rstd"));
  TRN_ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(g));
  const c10::ScalarType t = l.t;
  std::vector<int64_t> stat_shape = l.x.sizes;
  for (int64_t d : l.norm_dims) stat_shape[d] = 1;
  if (dy.sizes != l.x.sizes || dy.dtype != t || mean.sizes != stat_shape || rstd.sizes != stat_shape ||
      mean.dtype != t || rstd.dtype != t || mask.size() != 3) {
    return absl::UnimplementedError("layer norm backward shapes");
  }
  const bool has_w = l.weight.has_value();
  std::vector<View> dyg_ins = {dy};
  if (has_w) dyg_ins.push_back(*l.weight);
  auto times_gamma = [has_w](ScalarBuilder& b, const Args& a, const Scalar& v) { return has_w ? b.Mul(v, a.back()) : v; };
  if (mask[0]) {
    std::vector<View> ds_ins = {dy, l.x};
    if (has_w) ds_ins.push_back(*l.weight);
    View ds = SumOf(g, Map(g, ds_ins, l.x.sizes, t, [&](ScalarBuilder& b, const Args& a) {
                return times_gamma(b, a, b.Mul(a[0], a[1]));
              }), l.norm_dims, true, kD);
    View db = SumOf(g, Map(g, dyg_ins, l.x.sizes, t, [&](ScalarBuilder& b, const Args& a) {
                return times_gamma(b, a, a[0]);
              }), l.norm_dims, true, kD);
    std::vector<View> ins = {dy, l.x, mean, rstd, ds, db};
    if (has_w) ins.push_back(*l.weight);
    const double scale = 1.0 / l.n;
    View dx = Map(g, ins, l.x.sizes, t, [&](ScalarBuilder& b, const Args& a) {
      const Scalar &y = a[0], &x = a[1], &m = a[2], &rs = a[3];
      Scalar s_ds = b.Cast(a[4], t), s_db = b.Cast(a[5], t), sc = Const(b, scale, t);
      // b = (db * mean - ds) * a^3 * scale; c = -b * mean - db * a * scale
      Scalar bb = b.Mul(b.Mul(b.Mul(b.Mul(b.Sub(b.Mul(s_db, m), s_ds), rs), rs), rs), sc);
      Scalar cc = b.Sub(b.Mul(b.Neg(bb), m), b.Mul(b.Mul(s_db, rs), sc));
      Scalar first = times_gamma(b, a, b.Mul(rs, y));
      return b.Add(b.Add(first, b.Mul(bb, x)), cc);
    });
    TRN_RETURN_IF_ERROR(g.WriteResult(0, dx));
  }
  if (mask[1]) {
    // dgamma = sum over rows of dy * (x * rstd + (-rstd * mean))
    View prod = Map(g, {dy, l.x, mean, rstd}, l.x.sizes, t, [](ScalarBuilder& b, const Args& a) {
      return b.Mul(a[0], b.Add(b.Mul(a[1], a[3]), b.Mul(b.Neg(a[3]), a[2])));
    });
    TRN_RETURN_IF_ERROR(g.WriteResult(1, SqueezeDims(SumOf(g, prod, l.lead_dims, true, kD), l.lead_dims)));
  }
  if (mask[2]) {
    TRN_RETURN_IF_ERROR(g.WriteResult(2, SqueezeDims(SumOf(g, dy, l.lead_dims, true, kD), l.lead_dims)));
  }
  return absl::OkStatus();
}

// ---- batch norm -------------------------------------------------------------------------------

// A per-channel vector (C) as a view over a rank-`rank` input (N, C, ...).
View Channel(const View& v, int64_t rank) { return PlaceDims(v, rank, {1}); }

absl::Status BatchNormForward(GroupLowering& g, bool functional) {
  TRN_ASSIGN_OR_RETURN(View x, TensorArg(g, "input"));
  TRN_ASSIGN_OR_RETURN(bool training, BoolArg(g, "training", false));
  TRN_ASSIGN_OR_RETURN(double momentum, DoubleArg(g, "momentum"));
  TRN_ASSIGN_OR_RETURN(double eps, DoubleArg(g, "eps"));
  const int64_t rank = x.rank();
  const c10::ScalarType t = x.dtype;
  if (!training || rank < 2 || !IsFloatType(t)) {
    return absl::UnimplementedError("batch norm: eval mode, rank < 2 or integers");
  }
  const std::vector<int64_t> channels = {x.sizes[1]};
  std::optional<View> params[4];
  const char* names[4] = {"weight", "bias", "running_mean", "running_var"};
  for (int i = 0; i < 4; ++i) {
    TRN_ASSIGN_OR_RETURN(params[i], OptionalTensor(g, names[i]));
    if (params[i].has_value() && (params[i]->sizes != channels || params[i]->dtype != t)) {
      return absl::UnimplementedError("batch norm parameter shapes or dtypes");
    }
  }
  const std::vector<int64_t> dims = AllButChannel(rank);
  const double n = static_cast<double>(NumelOf(x.sizes, dims));
  View mean_d = DivBy(g, SumOf(g, x, dims, true, kD), n, kD);
  View var_sum = SqueezeDims(CenteredSquares(g, x, mean_d, dims), dims);
  // ATen stores mean and var_sum in the dtype, then: invstd = 1 / sqrt(var_sum / n + eps) in
  // double; running = momentum * stat + (1 - momentum) * running in double.
  View mean = Map(g, {SqueezeDims(mean_d, dims)}, channels, t, [](ScalarBuilder&, const Args& a) { return a[0]; });
  View vs = Map(g, {var_sum}, channels, t, [](ScalarBuilder&, const Args& a) { return a[0]; });
  View invstd = Map(g, {vs}, channels, t, [=](ScalarBuilder& b, const Args& a) {
    Scalar var = b.Cast(b.Div(a[0], Const(b, n, t)), kD);
    return b.Div(Const(b, 1, kD), b.Math(MathFn::kSqrt, b.Add(var, Const(b, eps, kD))));
  });
  std::vector<View> ins = {x, Channel(mean, rank), Channel(invstd, rank)};
  if (params[0]) ins.push_back(Channel(*params[0], rank));
  if (params[1]) ins.push_back(Channel(*params[1], rank));
  const bool has_w = params[0].has_value(), has_b = params[1].has_value();
  // alpha = invstd * w; beta = b - mean * alpha; y = x * alpha + beta
  View y = Map(g, ins, x.sizes, t, [=](ScalarBuilder& b, const Args& a) {
    size_t i = 3;
    Scalar alpha = has_w ? b.Mul(a[2], a[i++]) : a[2];
    Scalar beta = b.Neg(b.Mul(a[1], alpha));
    if (has_b) beta = b.Sub(a[i++], b.Mul(a[1], alpha));
    return b.Add(b.Mul(a[0], alpha), beta);
  });
  TRN_RETURN_IF_ERROR(g.WriteResult(0, y));
  TRN_RETURN_IF_ERROR(g.WriteResult(1, mean));
  TRN_RETURN_IF_ERROR(g.WriteResult(2, invstd));
  for (int i = 2; i < 4; ++i) {
    if (!params[i].has_value()) {
      continue;
    }
    const View& stat = i == 2 ? mean : vs;
    const double div = i == 2 ? 1 : n - 1;
    View updated = Map(g, {stat, *params[i]}, channels, t, [=](ScalarBuilder& b, const Args& a) {
      Scalar s = b.Cast(i == 2 ? a[0] : b.Div(a[0], Const(b, div, t)), kD);
      return b.Add(b.Mul(Const(b, momentum, kD), s), b.Mul(Const(b, 1 - momentum, kD), b.Cast(a[1], kD)));
    });
    if (functional) {
      TRN_RETURN_IF_ERROR(g.WriteResult(i + 1, updated));
    } else {
      TRN_ASSIGN_OR_RETURN(c10::IValue dst, g.Arg(names[i]));
      TRN_RETURN_IF_ERROR(g.Write(dst.toTensor(), updated));
    }
  }
  return absl::OkStatus();
}
absl::Status NativeBatchNorm(GroupLowering& g, const runtime::OpRecord&) { return BatchNormForward(g, false); }
absl::Status BatchNormFunctional(GroupLowering& g, const runtime::OpRecord&) { return BatchNormForward(g, true); }

absl::Status NativeBatchNormBackward(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(View dy, TensorArg(g, "grad_out"));
  TRN_ASSIGN_OR_RETURN(View x, TensorArg(g, "input"));
  TRN_ASSIGN_OR_RETURN(bool train, BoolArg(g, "train", false));
  TRN_ASSIGN_OR_RETURN(double eps, DoubleArg(g, "eps"));
  TRN_ASSIGN_OR_RETURN(std::vector<bool> mask, OutputMask(g));
  const int64_t rank = x.rank();
  const c10::ScalarType t = x.dtype;
  if (rank < 2 || !IsFloatType(t) || dy.sizes != x.sizes || dy.dtype != t || mask.size() != 3) {
    return absl::UnimplementedError("batch norm backward shapes");
  }
  const std::vector<int64_t> channels = {x.sizes[1]};
  std::optional<View> p[5];
  const char* names[5] = {"weight", "running_mean", "running_var", "save_mean", "save_invstd"};
  for (int i = 0; i < 5; ++i) {
    TRN_ASSIGN_OR_RETURN(p[i], OptionalTensor(g, names[i]));
    if (p[i].has_value() && (p[i]->sizes != channels || p[i]->dtype != t)) {
      return absl::UnimplementedError("batch norm backward parameter shapes");
    }
  }
  View mean, invstd;
  if (train) {
    if (!p[3] || !p[4]) return absl::UnimplementedError("training backward without saved statistics");
    mean = *p[3];
    invstd = *p[4];
  } else {
    if (!p[1] || !p[2]) return absl::UnimplementedError("eval backward without running statistics");
    mean = *p[1];
    invstd = Map(g, {*p[2]}, channels, t, [eps](ScalarBuilder& b, const Args& a) {
      return b.Div(Const(b, 1, kD), b.Math(MathFn::kSqrt, b.Add(b.Cast(a[0], kD), Const(b, eps, kD))));
    });
  }
  const std::vector<int64_t> dims = AllButChannel(rank);
  const double n = static_cast<double>(NumelOf(x.sizes, dims));
  View cm = Channel(mean, rank), ci = Channel(invstd, rank);
  View sum = Map(g, {SqueezeDims(SumOf(g, dy, dims, true, kD), dims)}, channels, t,
                 [](ScalarBuilder&, const Args& a) { return a[0]; });
  View dot = Map(g, {x, cm, dy}, x.sizes, t, [](ScalarBuilder& b, const Args& a) { return b.Mul(b.Sub(a[0], a[1]), a[2]); });
  View dotp = Map(g, {SqueezeDims(SumOf(g, dot, dims, true, kD), dims)}, channels, t,
                  [](ScalarBuilder&, const Args& a) { return a[0]; });
  const bool has_w = p[0].has_value();
  if (mask[0]) {
    std::vector<View> ins = {dy, x, cm, ci, Channel(sum, rank), Channel(dotp, rank)};
    if (has_w) ins.push_back(Channel(*p[0], rank));
    View dx = Map(g, ins, x.sizes, t, [=](ScalarBuilder& b, const Args& a) {
      Scalar w = has_w ? a[6] : Const(b, 1, t);
      if (!train) {
        return b.Mul(b.Mul(a[0], a[3]), w);
      }
      Scalar nn = Const(b, n, t);
      Scalar k = b.Div(b.Mul(b.Mul(a[5], a[3]), a[3]), nn);
      Scalar grad_mean = b.Div(a[4], nn);
      Scalar proj = b.Mul(b.Sub(a[1], a[2]), k);
      return b.Mul(b.Mul(b.Sub(b.Sub(a[0], grad_mean), proj), a[3]), w);
    });
    TRN_RETURN_IF_ERROR(g.WriteResult(0, dx));
  }
  if (mask[1]) {
    TRN_RETURN_IF_ERROR(g.WriteResult(1, Map(g, {dotp, invstd}, channels, t,
                                             [](ScalarBuilder& b, const Args& a) { return b.Mul(a[0], a[1]); })));
  }
  if (mask[2]) {
    TRN_RETURN_IF_ERROR(g.WriteResult(2, sum));
  }
  return absl::OkStatus();
}

}  // namespace

void PopulateNormalization(LoweringRegistry& r) {
  const std::string f = "normalization";
  r.Register("aten::native_layer_norm", f, NativeLayerNorm);
  r.Register("aten::native_layer_norm_backward", f, NativeLayerNormBackward);
  r.Register("aten::native_batch_norm", f, NativeBatchNorm);
  r.Register("aten::_native_batch_norm_legit", f, NativeBatchNorm);
  r.Register("aten::_native_batch_norm_legit_functional", f, BatchNormFunctional);
  r.Register("aten::native_batch_norm_backward", f, NativeBatchNormBackward);
}

}  // namespace trn::mlir_lowering
