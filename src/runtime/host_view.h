// Host (CPU) views of device tensors. The device keeps its storage in host memory, so running an
// op "on the device" in eager mode means running ATen's CPU kernel on CPU tensors that alias the
// device storage with the same sizes, strides and offset.
//
// Thread-safe: pure functions; the caller guarantees nobody else writes the storage meanwhile.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace trn::runtime {

inline bool IsDeviceTensor(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

// A CPU tensor over `t`'s storage and geometry (conj/neg bits carried). The alias does not own
// the storage: keep `t` alive while it is used.
at::Tensor HostAlias(const at::Tensor& t);

// Gives `to` the conjugate/negative bits of `from` (lazy math views travel as bits).
void CopyMathBits(const at::Tensor& from, at::Tensor& to);

// Like HostAlias, but a kernel may resize it (out= kernels that resize their output on the way):
// growing moves the alias to fresh host memory and leaves the device storage alone, so the
// caller must copy the final value back when `ResizedAway` says the alias moved.
at::Tensor ResizableHostAlias(const at::Tensor& t);
bool ResizedAway(const at::Tensor& device, const at::Tensor& alias);

// Applies `fn` to every tensor inside `v` (tensor, tensor list, optional tensor list).
template <class Fn>
c10::IValue MapTensors(const c10::IValue& v, Fn&& fn) {
  if (v.isTensor()) {
    return fn(v.toTensor());
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    out.reserve(v.toTensorList().size());
    for (const at::Tensor& t : v.toTensorList()) {
      out.push_back(fn(t));
    }
    return out;
  }
  if (v.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> out;
    for (std::optional<at::Tensor> t : v.toOptionalTensorList()) {
      out.push_back(t.has_value() ? std::optional<at::Tensor>(fn(*t)) : std::nullopt);
    }
    return out;
  }
  return v;
}

// Visits every tensor inside `v` without building anything.
template <class Fn>
void ForEachTensor(const c10::IValue& v, Fn&& fn) {
  if (v.isTensor()) {
    fn(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) {
      fn(t);
    }
  } else if (v.isOptionalTensorList()) {
    for (std::optional<at::Tensor> t : v.toOptionalTensorList()) {
      if (t.has_value()) {
        fn(*t);
      }
    }
  }
}

// `v` with device tensors replaced by host aliases and the device replaced by CPU.
c10::IValue ToHostArg(const c10::IValue& v);

}  // namespace trn::runtime
