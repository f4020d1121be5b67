#include "runtime/host_view.h"

#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>

namespace trn::runtime {

at::Tensor HostAlias(const at::Tensor& t) {
  const c10::Storage& storage = t.storage();
  auto options = t.options().device(c10::kCPU).requires_grad(false);
  void* base = storage.mutable_data();
  at::Tensor alias;
  if (base == nullptr) {
    alias = at::empty_strided(t.sizes(), t.strides(), options);
  } else {
    char* data = static_cast<char*>(base) + t.storage_offset() * t.itemsize();
    alias = at::from_blob(data, t.sizes(), t.strides(), [](void*) {}, options);
  }
  if (t.is_conj()) {
    alias._set_conj(true);
  }
  if (t.is_neg()) {
    alias._set_neg(true);
  }
  return alias;
}

c10::IValue ToHostArg(const c10::IValue& v) {
  if (v.isDevice() && v.toDevice().type() == c10::DeviceType::PrivateUse1) {
    return c10::Device(c10::kCPU);
  }
  return MapTensors(v, [](const at::Tensor& t) { return IsDeviceTensor(t) ? HostAlias(t) : t; });
}

}  // namespace trn::runtime
