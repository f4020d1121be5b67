// Autocast on the neuron device: `torch.autocast("neuron", dtype=torch.bfloat16 | torch.float16)`.
//
// PyTorch registers an autocast policy for CPU, CUDA, XPU, MPS, ... but none for PrivateUse1, and
// no fallthrough either: inside an autocast region every op on a neuron tensor reached the
// AutocastPrivateUse1 key and failed ("Could not run 'aten::copy_' ... 'Autocastneuron'
// backend"). We register what torch registers for its other accelerators (CUDA, XPU): a
// fallthrough for ops without a policy and the op lists autocast_mode.h shares for backends
// (lower_precision_fp: matmuls, convolutions, linear, attention; fp32: pointwise transcendental
// ops, norms, losses, plus cross_entropy_loss as on CPU and XPU; fp32_set_opt_dtype: softmax, sums; fp32_append_dtype: norm; promote).
// The casts these wrappers issue (Tensor.to) and the ops they redispatch to are recorded like any
// op, so an autocast region is ordinary recorded bf16/fp16 ops plus casts.
//
// Thread-safety: static registrations only (run once at library load).
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace trn::trace {
namespace {

// The shared op lists of autocast_mode.h name ATen's types unqualified (torch expands them in
// namespace at::autocast).
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

// As on CUDA and XPU: binary_cross_entropy is unsafe in lower precision (PyTorch's message).
at::Tensor BinaryCrossEntropyBanned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                    int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TRN_AUTOCAST_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(TRN_AUTOCAST_LOWER_PRECISION_FP)
#undef TRN_AUTOCAST_LOWER_PRECISION_FP

#define TRN_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(TRN_AUTOCAST_FP32)
#undef TRN_AUTOCAST_FP32
  // Not in the shared list, but in CPU's and XPU's: cross_entropy decomposes into
  // log_softmax(x, dtype=x.dtype) + nll_loss, and the explicit dtype would keep the log-softmax
  // in bf16 (as on CUDA), which leaves the loss with ~11 significant bits.
  KERNEL_PRIVATEUSEONE(cross_entropy_loss, fp32)

#define TRN_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(TRN_AUTOCAST_FP32_SET_OPT_DTYPE)
#undef TRN_AUTOCAST_FP32_SET_OPT_DTYPE

  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)

#define TRN_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(TRN_AUTOCAST_PROMOTE)
#undef TRN_AUTOCAST_PROMOTE

  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(BinaryCrossEntropyBanned));
}

}  // namespace
}  // namespace trn::trace
