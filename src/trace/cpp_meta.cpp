#include "trace/cpp_meta.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/ops/_log_softmax_backward_data_meta_dispatch.h>
#include <ATen/ops/_log_softmax_meta_dispatch.h>
#include <ATen/ops/_softmax_backward_data_meta_dispatch.h>
#include <ATen/ops/_softmax_meta_dispatch.h>
#include <ATen/ops/add_meta_dispatch.h>
#include <ATen/ops/addcdiv_meta_dispatch.h>
#include <ATen/ops/addcmul_meta_dispatch.h>
#include <ATen/ops/addmm_meta_dispatch.h>
#include <ATen/ops/amax_meta_dispatch.h>
#include <ATen/ops/amin_meta_dispatch.h>
#include <ATen/ops/argmax_meta_dispatch.h>
#include <ATen/ops/avg_pool2d_backward_meta_dispatch.h>
#include <ATen/ops/avg_pool2d_meta_dispatch.h>
#include <ATen/ops/baddbmm_meta_dispatch.h>
#include <ATen/ops/bitwise_not_meta_dispatch.h>
#include <ATen/ops/bmm_meta_dispatch.h>
#include <ATen/ops/clamp_meta_dispatch.h>
#include <ATen/ops/clamp_min_meta_dispatch.h>
#include <ATen/ops/cos_meta_dispatch.h>
#include <ATen/ops/div_meta_dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq_meta_dispatch.h>
#include <ATen/ops/erf_meta_dispatch.h>
#include <ATen/ops/exp_meta_dispatch.h>
#include <ATen/ops/fill_meta_dispatch.h>
#include <ATen/ops/ge_meta_dispatch.h>
#include <ATen/ops/gelu_backward_meta_dispatch.h>
#include <ATen/ops/gelu_meta_dispatch.h>
#include <ATen/ops/gt_meta_dispatch.h>
#include <ATen/ops/le_meta_dispatch.h>
#include <ATen/ops/lerp_meta_dispatch.h>
#include <ATen/ops/log_meta_dispatch.h>
#include <ATen/ops/lt_meta_dispatch.h>
#include <ATen/ops/max_pool2d_with_indices_backward_meta_dispatch.h>
#include <ATen/ops/max_pool2d_with_indices_meta_dispatch.h>
#include <ATen/ops/maximum_meta_dispatch.h>
#include <ATen/ops/mean_meta_dispatch.h>
#include <ATen/ops/minimum_meta_dispatch.h>
#include <ATen/ops/mm_meta_dispatch.h>
#include <ATen/ops/mul_meta_dispatch.h>
#include <ATen/ops/ne_meta_dispatch.h>
#include <ATen/ops/neg_meta_dispatch.h>
#include <ATen/ops/nll_loss_backward_meta_dispatch.h>
#include <ATen/ops/nll_loss_forward_meta_dispatch.h>
#include <ATen/ops/pow_meta_dispatch.h>
#include <ATen/ops/reciprocal_meta_dispatch.h>
#include <ATen/ops/rsqrt_meta_dispatch.h>
#include <ATen/ops/sigmoid_backward_meta_dispatch.h>
#include <ATen/ops/sigmoid_meta_dispatch.h>
#include <ATen/ops/silu_backward_meta_dispatch.h>
#include <ATen/ops/silu_meta_dispatch.h>
#include <ATen/ops/sin_meta_dispatch.h>
#include <ATen/ops/sqrt_meta_dispatch.h>
#include <ATen/ops/sub_meta_dispatch.h>
#include <ATen/ops/sum_meta_dispatch.h>
#include <ATen/ops/tanh_backward_meta_dispatch.h>
#include <ATen/ops/tanh_meta_dispatch.h>
#include <ATen/ops/threshold_backward_meta_dispatch.h>
#include <ATen/ops/zero_meta_dispatch.h>
#include <c10/core/ScalarType.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace trn::trace {
namespace {

using T = at::Tensor;
using CT = const at::Tensor&;
using S = const at::Scalar&;
using OS = const std::optional<at::Scalar>&;
using OT = const std::optional<at::Tensor>&;
using IA = at::IntArrayRef;

using Accepts = bool (*)(const std::vector<c10::IValue>& args);

struct Entry {
  c10::KernelFunction kernel;
  Accepts accepts = nullptr;  // when set, the arguments it handles (others keep the dispatcher's kernel)
};

using Table = absl::flat_hash_map<std::string, Entry>;

template <class Sig>
void Add(Table* t, const char* name, Sig* fn, Accepts accepts = nullptr) {
  t->emplace(name, Entry{c10::KernelFunction::makeFromUnboxedRuntimeFunction(fn), accepts});
}

bool FirstIsFloating(const std::vector<c10::IValue>& args) {
  return !args.empty() && args[0].isTensor() && at::isFloatingType(args[0].toTensor().scalar_type());
}
bool Defined(const std::vector<c10::IValue>& args, size_t i) {
  return i < args.size() && args[i].isTensor() && args[i].toTensor().defined();
}
// A float32 contiguous device tensor; None or an undefined tensor when `optional`.
bool ContiguousFloat(const c10::IValue& v, bool optional) {
  if (v.isNone()) return optional;
  if (!v.isTensor()) return false;
  const at::Tensor& t = v.toTensor();
  if (!t.defined()) return optional;
  return t.scalar_type() == at::kFloat && t.is_contiguous() && !t.device().is_cpu();
}

// Batch norm has no structured Meta function, and its Python Meta kernel costs ~2 ms on its first
// call per geometry: ~8 ms of a small CNN's first step. On contiguous float32 tensors the CPU
// kernels the executor runs return contiguous results: the output (or grad_input) shaped like
// the input, and per-channel [C] statistics (or grad_weight / grad_bias, as output_mask asks).
// Eval mode's empty statistics are shape_rules.h's correction, as for the Python kernel. Anything
// else (channels_last, mixed or half dtypes, a parameter that is not [C], or [0] for eval mode's
// saved statistics) keeps the dispatcher's kernel, with its checks and errors.
bool ContiguousFloatBatchNorm(const std::vector<c10::IValue>& args, size_t tensors) {
  if (args.size() < tensors || !ContiguousFloat(args[0], false) || args[0].toTensor().dim() < 2) return false;
  const at::Tensor& first = args[0].toTensor();
  const int64_t channels = first.size(1);
  for (size_t i = 0; i < tensors; ++i) {
    if (!ContiguousFloat(args[i], true)) return false;
    if (!Defined(args, i)) continue;
    const at::Tensor& t = args[i].toTensor();
    const bool full = t.sizes() == first.sizes();
    const bool per_channel = t.dim() == 1 && t.size(0) == channels;
    const bool empty = t.dim() == 1 && t.size(0) == 0;  // eval mode's saved statistics
    if (!full && !per_channel && !empty) return false;
  }
  return true;
}
// native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
// Eval mode without running statistics keeps the dispatcher's kernel: nn.BatchNorm never calls it
// so, and torch 2.14's own CPU and Meta kernels crash on it (nothing to emulate).
bool AcceptsBatchNorm(const std::vector<c10::IValue>& args) {
  if (!ContiguousFloatBatchNorm(args, 5) || args.size() < 6 || !args[5].isBool()) return false;
  return args[5].toBool() || (Defined(args, 3) && Defined(args, 4));
}
// native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?, save_mean?,
// save_invstd?, train, eps, output_mask)
bool AcceptsBatchNormBackward(const std::vector<c10::IValue>& args) {
  return ContiguousFloatBatchNorm(args, 7) && Defined(args, 1) &&
         args[1].toTensor().sizes() == args[0].toTensor().sizes();
}
std::tuple<T, T, T> BatchNormMeta(CT input, OT, OT, OT, OT, bool, double, double) {
  const int64_t channels = input.size(1);
  return {at::empty(input.sizes(), input.options()), at::empty({channels}, input.options()),
          at::empty({channels}, input.options())};
}
std::tuple<T, T, T> BatchNormBackwardMeta(CT, CT input, OT, OT, OT, OT, OT, bool, double,
                                          std::array<bool, 3> output_mask) {
  const int64_t channels = input.size(1);
  return {output_mask[0] ? at::empty(input.sizes(), input.options()) : T(),
          output_mask[1] ? at::empty({channels}, input.options()) : T(),
          output_mask[2] ? at::empty({channels}, input.options()) : T()};
}

// Layer norm likewise (its Python Meta kernel's first call per geometry cost 0.35-1 ms: 3.5 ms of
// the demo transformer's first step, 7.7 ms of the bench gpt's). CPU's layer_norm_cpu and
// layer_norm_backward_cpu return contiguous results: the output and grad_input shaped like the
// input, mean and rstd of the input's leading dims with 1 for each normalized one, grad_weight
// and grad_bias like the weight and bias. Cases: contiguous float32 tensors, normalized_shape
// the input's trailing sizes, weight and bias (when defined) of normalized_shape, and
// output_mask asking grad_weight / grad_bias only of a defined weight / bias; the half dtypes
// keep the dispatcher's kernel (shape_rules.h corrects their statistics' dtype).
bool LayerNormShapes(const at::Tensor& input, const c10::IValue& normalized, const c10::IValue& weight,
                     const c10::IValue& bias) {
  if (!normalized.isIntList()) return false;
  const std::vector<int64_t> shape = normalized.toIntVector();
  if (shape.empty() || static_cast<int64_t>(shape.size()) > input.dim()) return false;
  if (input.sizes().slice(input.dim() - static_cast<int64_t>(shape.size())) != at::IntArrayRef(shape)) return false;
  for (const c10::IValue* p : {&weight, &bias}) {
    if (p->isTensor() && p->toTensor().defined() && p->toTensor().sizes() != at::IntArrayRef(shape)) return false;
  }
  return true;
}
// native_layer_norm(input, normalized_shape, weight?, bias?, eps)
bool AcceptsLayerNorm(const std::vector<c10::IValue>& args) {
  return args.size() == 5 && ContiguousFloat(args[0], false) && ContiguousFloat(args[2], true) &&
         ContiguousFloat(args[3], true) && LayerNormShapes(args[0].toTensor(), args[1], args[2], args[3]);
}
// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?, output_mask)
bool AcceptsLayerNormBackward(const std::vector<c10::IValue>& args) {
  if (args.size() != 8 || !ContiguousFloat(args[0], false) || !ContiguousFloat(args[1], false) ||
      !ContiguousFloat(args[3], false) || !ContiguousFloat(args[4], false) || !ContiguousFloat(args[5], true) ||
      !ContiguousFloat(args[6], true) || !args[7].isBoolList()) {
    return false;
  }
  if (args[0].toTensor().sizes() != args[1].toTensor().sizes()) return false;
  const c10::List<bool> mask = args[7].toBoolList();
  if (mask.size() != 3 || (mask[1] && !Defined(args, 5)) || (mask[2] && !Defined(args, 6))) return false;
  return LayerNormShapes(args[1].toTensor(), args[2], args[5], args[6]);
}
std::tuple<T, T, T> LayerNormMeta(CT input, IA normalized_shape, OT, OT, double) {
  std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().end());
  for (size_t i = stat_shape.size() - normalized_shape.size(); i < stat_shape.size(); ++i) stat_shape[i] = 1;
  return {at::empty(input.sizes(), input.options()), at::empty(stat_shape, input.options()),
          at::empty(stat_shape, input.options())};
}
std::tuple<T, T, T> LayerNormBackwardMeta(CT, CT input, IA, CT, CT, OT weight, OT bias,
                                          std::array<bool, 3> output_mask) {
  return {output_mask[0] ? at::empty(input.sizes(), input.options()) : T(),
          output_mask[1] ? at::empty(weight->sizes(), weight->options()) : T(),
          output_mask[2] ? at::empty(bias->sizes(), bias->options()) : T()};
}

// relu has no structured Meta function; on floating-point tensors its result is clamp_min(x, 0)'s
// (same dtype, TensorIterator layout). Other dtypes keep the dispatcher's kernel (and its errors).
T ReluMeta(CT self) { return at::meta::clamp_min(self, 0); }
T& ReluMetaInplace(T& self) { return at::meta::clamp_min_(self, 0); }

// Functional, out= and in-place forms of a structured op: "aten::<op><f>", "<op>.<out>", "<op>_<i>".
#define TRN_UNARY(op)                                                  \
  Add<T(CT)>(&t, "aten::" #op, &at::meta::op);                         \
  Add<T&(CT, T&)>(&t, "aten::" #op ".out", &at::meta::op##_outf);      \
  Add<T&(T&)>(&t, "aten::" #op "_", &at::meta::op##_)
#define TRN_BINARY(op, fn_overload, out_overload, inplace_overload)                            \
  Add<T(CT, CT)>(&t, "aten::" #op fn_overload, &at::meta::op);                                 \
  Add<T&(CT, CT, T&)>(&t, "aten::" #op out_overload, &at::meta::op##_outf);                    \
  Add<T&(T&, CT)>(&t, "aten::" #op "_" inplace_overload, &at::meta::op##_)
#define TRN_BINARY_ALPHA(op)                                                   \
  Add<T(CT, CT, S)>(&t, "aten::" #op ".Tensor", &at::meta::op);                \
  Add<T&(CT, CT, S, T&)>(&t, "aten::" #op ".out", &at::meta::op##_outf);       \
  Add<T&(T&, CT, S)>(&t, "aten::" #op "_.Tensor", &at::meta::op##_)
#define TRN_COMPARE(op)                                                      \
  TRN_BINARY(op, ".Tensor", ".Tensor_out", ".Tensor");                       \
  Add<T(CT, S)>(&t, "aten::" #op ".Scalar", &at::meta::op);                  \
  Add<T&(CT, S, T&)>(&t, "aten::" #op ".Scalar_out", &at::meta::op##_outf);  \
  Add<T&(T&, S)>(&t, "aten::" #op "_.Scalar", &at::meta::op##_)
#define TRN_BACKWARD(op)                                           \
  Add<T(CT, CT)>(&t, "aten::" #op, &at::meta::op);                 \
  Add<T&(CT, CT, T&)>(&t, "aten::" #op ".grad_input", &at::meta::op##_outf)
#define TRN_POINTWISE3(op)                                                  \
  Add<T(CT, CT, CT, S)>(&t, "aten::" #op, &at::meta::op);                   \
  Add<T&(CT, CT, CT, S, T&)>(&t, "aten::" #op ".out", &at::meta::op##_outf); \
  Add<T&(T&, CT, CT, S)>(&t, "aten::" #op "_", &at::meta::op##_)
#define TRN_MATMUL(op)                                            \
  Add<T(CT, CT)>(&t, "aten::" #op, &at::meta::op);                \
  Add<T&(CT, CT, T&)>(&t, "aten::" #op ".out", &at::meta::op##_outf)
#define TRN_ADDMATMUL(op)                                                     \
  Add<T(CT, CT, CT, S, S)>(&t, "aten::" #op, &at::meta::op);                  \
  Add<T&(CT, CT, CT, S, S, T&)>(&t, "aten::" #op ".out", &at::meta::op##_outf); \
  Add<T&(T&, CT, CT, S, S)>(&t, "aten::" #op "_", &at::meta::op##_)
#define TRN_AMAX(op)                                                  \
  Add<T(CT, IA, bool)>(&t, "aten::" #op, &at::meta::op);              \
  Add<T&(CT, IA, bool, T&)>(&t, "aten::" #op ".out", &at::meta::op##_outf)
#define TRN_SOFTMAX(op)                                                     \
  Add<T(CT, int64_t, bool)>(&t, "aten::" #op, &at::meta::op);               \
  Add<T&(CT, int64_t, bool, T&)>(&t, "aten::" #op ".out", &at::meta::op##_outf)
#define TRN_SOFTMAX_BACKWARD(op)                                                         \
  Add<T(CT, CT, int64_t, at::ScalarType)>(&t, "aten::" #op, &at::meta::op);              \
  Add<T&(CT, CT, int64_t, at::ScalarType, T&)>(&t, "aten::" #op ".out", &at::meta::op##_outf)

Table Build() {
  Table t;
  TRN_UNARY(neg);
  TRN_UNARY(exp);
  TRN_UNARY(log);
  TRN_UNARY(sqrt);
  TRN_UNARY(rsqrt);
  TRN_UNARY(reciprocal);
  TRN_UNARY(tanh);
  TRN_UNARY(sigmoid);
  TRN_UNARY(silu);
  TRN_UNARY(sin);
  TRN_UNARY(cos);
  TRN_UNARY(erf);
  TRN_UNARY(bitwise_not);
  Add<T(CT)>(&t, "aten::relu", &ReluMeta, &FirstIsFloating);
  Add<T&(T&)>(&t, "aten::relu_", &ReluMetaInplace, &FirstIsFloating);
  Add<T(CT, c10::string_view)>(&t, "aten::gelu", &at::meta::gelu);
  Add<T&(CT, c10::string_view, T&)>(&t, "aten::gelu.out", &at::meta::gelu_outf);
  Add<T&(T&, c10::string_view)>(&t, "aten::gelu_", &at::meta::gelu_);

  TRN_BINARY_ALPHA(add);
  TRN_BINARY_ALPHA(sub);
  TRN_BINARY(mul, ".Tensor", ".out", ".Tensor");
  TRN_BINARY(div, ".Tensor", ".out", ".Tensor");
  Add<T(CT, CT)>(&t, "aten::maximum", &at::meta::maximum);
  Add<T&(CT, CT, T&)>(&t, "aten::maximum.out", &at::meta::maximum_outf);
  Add<T(CT, CT)>(&t, "aten::minimum", &at::meta::minimum);
  Add<T&(CT, CT, T&)>(&t, "aten::minimum.out", &at::meta::minimum_outf);
  TRN_COMPARE(eq);
  TRN_COMPARE(ne);
  TRN_COMPARE(lt);
  TRN_COMPARE(le);
  TRN_COMPARE(gt);
  TRN_COMPARE(ge);
  Add<T(CT, S)>(&t, "aten::pow.Tensor_Scalar", &at::meta::pow);
  Add<T&(CT, S, T&)>(&t, "aten::pow.Tensor_Scalar_out", &at::meta::pow_outf);
  Add<T&(T&, S)>(&t, "aten::pow_.Scalar", &at::meta::pow_);
  Add<T(CT, CT)>(&t, "aten::pow.Tensor_Tensor", &at::meta::pow);
  Add<T&(CT, CT, T&)>(&t, "aten::pow.Tensor_Tensor_out", &at::meta::pow_outf);
  Add<T&(T&, CT)>(&t, "aten::pow_.Tensor", &at::meta::pow_);
  Add<T(CT, S)>(&t, "aten::clamp_min", &at::meta::clamp_min);
  Add<T&(CT, S, T&)>(&t, "aten::clamp_min.out", &at::meta::clamp_min_outf);
  Add<T&(T&, S)>(&t, "aten::clamp_min_", &at::meta::clamp_min_);
  Add<T(CT, OS, OS)>(&t, "aten::clamp", &at::meta::clamp);
  Add<T&(CT, OS, OS, T&)>(&t, "aten::clamp.out", &at::meta::clamp_outf);
  Add<T&(T&, OS, OS)>(&t, "aten::clamp_", &at::meta::clamp_);

  TRN_BACKWARD(tanh_backward);
  TRN_BACKWARD(sigmoid_backward);
  TRN_BACKWARD(silu_backward);
  Add<T(CT, CT, S)>(&t, "aten::threshold_backward", &at::meta::threshold_backward);
  Add<T&(CT, CT, S, T&)>(&t, "aten::threshold_backward.grad_input", &at::meta::threshold_backward_outf);
  Add<T(CT, CT, c10::string_view)>(&t, "aten::gelu_backward", &at::meta::gelu_backward);
  Add<T&(CT, CT, c10::string_view, T&)>(&t, "aten::gelu_backward.grad_input", &at::meta::gelu_backward_outf);

  TRN_POINTWISE3(addcmul);
  TRN_POINTWISE3(addcdiv);
  Add<T(CT, CT, S)>(&t, "aten::lerp.Scalar", &at::meta::lerp);
  Add<T&(CT, CT, S, T&)>(&t, "aten::lerp.Scalar_out", &at::meta::lerp_outf);
  Add<T&(T&, CT, S)>(&t, "aten::lerp_.Scalar", &at::meta::lerp_);
  Add<T&(T&, S)>(&t, "aten::fill_.Scalar", &at::meta::fill_);
  Add<T&(T&)>(&t, "aten::zero_", &at::meta::zero_);

  using Reduce = T(CT, at::OptionalIntArrayRef, bool, std::optional<at::ScalarType>);
  using ReduceOut = T&(CT, at::OptionalIntArrayRef, bool, std::optional<at::ScalarType>, T&);
  Add<Reduce>(&t, "aten::sum.dim_IntList", &at::meta::sum);
  Add<ReduceOut>(&t, "aten::sum.IntList_out", &at::meta::sum_outf);
  Add<Reduce>(&t, "aten::mean.dim", &at::meta::mean);
  Add<ReduceOut>(&t, "aten::mean.out", &at::meta::mean_outf);
  TRN_AMAX(amax);
  TRN_AMAX(amin);
  Add<T(CT, std::optional<int64_t>, bool)>(&t, "aten::argmax", &at::meta::argmax);
  Add<T&(CT, std::optional<int64_t>, bool, T&)>(&t, "aten::argmax.out", &at::meta::argmax_outf);
  TRN_SOFTMAX(_softmax);
  TRN_SOFTMAX(_log_softmax);
  TRN_SOFTMAX_BACKWARD(_softmax_backward_data);
  TRN_SOFTMAX_BACKWARD(_log_softmax_backward_data);

  TRN_MATMUL(mm);
  TRN_MATMUL(bmm);
  TRN_ADDMATMUL(addmm);
  TRN_ADDMATMUL(baddbmm);

  Add<std::tuple<T, T>(CT, CT, OT, int64_t, int64_t)>(&t, "aten::nll_loss_forward", &at::meta::nll_loss_forward);
  Add<std::tuple<T&, T&>(CT, CT, OT, int64_t, int64_t, T&, T&)>(&t, "aten::nll_loss_forward.output",
                                                                   &at::meta::nll_loss_forward_outf);
  Add<T(CT, CT, CT, OT, int64_t, int64_t, CT)>(&t, "aten::nll_loss_backward", &at::meta::nll_loss_backward);
  Add<T&(CT, CT, CT, OT, int64_t, int64_t, CT, T&)>(&t, "aten::nll_loss_backward.grad_input",
                                                    &at::meta::nll_loss_backward_outf);
  Add<std::tuple<T, T>(CT, IA, IA, IA, IA, bool)>(&t, "aten::max_pool2d_with_indices",
                                                  &at::meta::max_pool2d_with_indices);
  Add<std::tuple<T&, T&>(CT, IA, IA, IA, IA, bool, T&, T&)>(&t, "aten::max_pool2d_with_indices.out",
                                                            &at::meta::max_pool2d_with_indices_outf);
  Add<T(CT, CT, IA, IA, IA, IA, bool, CT)>(&t, "aten::max_pool2d_with_indices_backward",
                                           &at::meta::max_pool2d_with_indices_backward);
  Add<T&(CT, CT, IA, IA, IA, IA, bool, CT, T&)>(&t, "aten::max_pool2d_with_indices_backward.grad_input",
                                                &at::meta::max_pool2d_with_indices_backward_outf);
  Add<T(CT, IA, IA, IA, bool, bool, std::optional<int64_t>)>(&t, "aten::avg_pool2d", &at::meta::avg_pool2d);
  Add<T&(CT, IA, IA, IA, bool, bool, std::optional<int64_t>, T&)>(&t, "aten::avg_pool2d.out",
                                                                  &at::meta::avg_pool2d_outf);
  Add<T(CT, CT, IA, IA, IA, bool, bool, std::optional<int64_t>)>(&t, "aten::avg_pool2d_backward",
                                                                 &at::meta::avg_pool2d_backward);
  Add<T&(CT, CT, IA, IA, IA, bool, bool, std::optional<int64_t>, T&)>(
      &t, "aten::avg_pool2d_backward.grad_input", &at::meta::avg_pool2d_backward_outf);
  Add<std::tuple<T, T, T>(CT, OT, OT, OT, OT, bool, double, double)>(&t, "aten::native_batch_norm", &BatchNormMeta,
                                                                     &AcceptsBatchNorm);
  Add<std::tuple<T, T, T>(CT, CT, OT, OT, OT, OT, OT, bool, double, std::array<bool, 3>)>(
      &t, "aten::native_batch_norm_backward", &BatchNormBackwardMeta, &AcceptsBatchNormBackward);
  Add<std::tuple<T, T, T>(CT, IA, OT, OT, double)>(&t, "aten::native_layer_norm", &LayerNormMeta, &AcceptsLayerNorm);
  Add<std::tuple<T, T, T>(CT, CT, IA, CT, CT, OT, OT, std::array<bool, 3>)>(
      &t, "aten::native_layer_norm_backward", &LayerNormBackwardMeta, &AcceptsLayerNormBackward);
  return t;
}

#undef TRN_UNARY
#undef TRN_BINARY
#undef TRN_BINARY_ALPHA
#undef TRN_COMPARE
#undef TRN_BACKWARD
#undef TRN_POINTWISE3
#undef TRN_MATMUL
#undef TRN_ADDMATMUL
#undef TRN_AMAX
#undef TRN_SOFTMAX
#undef TRN_SOFTMAX_BACKWARD

std::atomic<int64_t> g_calls{0};

const Table& TheTable() {
  static const Table* table = new Table(Build());
  return *table;
}

}  // namespace

const c10::KernelFunction* CppMetaKernel(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
  const Table& table = TheTable();
  auto it = table.find(c10::toString(op.operator_name()));
  if (it == table.end()) return nullptr;
  if (it->second.accepts != nullptr && !it->second.accepts(args)) return nullptr;
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return &it->second.kernel;
}

int64_t CppMetaCalls() { return g_calls.load(std::memory_order_relaxed); }

std::vector<std::string> CppMetaOps() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : TheTable()) names.push_back(name);
  return names;
}

}  // namespace trn::trace
