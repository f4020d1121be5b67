#include "trace/autograd_barrier.h"

#include <exception>
#include <string>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/autograd.h>

namespace trn::trace {

absl::Status RunDeviceAutogradBarrier() {
  try {
    // The caller may have turned grad mode off (torch.no_grad at exit); the barrier needs it on.
    c10::InferenceMode no_inference(false);
    c10::AutoGradMode grad_on(true);
    const at::TensorOptions options = at::TensorOptions().device(c10::DeviceType::PrivateUse1, 0);
    at::Tensor x = at::ones({1}, options).requires_grad_(true);
    at::Tensor loss = x.mul(2).sum();
    // Python-free tensors and no stashed Python context: freeing this pass needs no GIL.
    torch::autograd::backward({loss});
  } catch (const c10::Error& e) {
    return absl::InternalError(std::string("backward pass on the neuron device failed: ") +
                               e.what_without_backtrace());
  } catch (const std::exception& e) {
    return absl::InternalError(std::string("backward pass on the neuron device failed: ") + e.what());
  }
  return absl::OkStatus();
}

}  // namespace trn::trace
