#include "runtime/host_view.h"

#include <ATen/ops/empty_strided.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/CPUAllocator.h>

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
  CopyMathBits(t, alias);
  return alias;
}

void CopyMathBits(const at::Tensor& from, at::Tensor& to) {
  if (from.is_conj()) {
    to._set_conj(true);
  }
  if (from.is_neg()) {
    to._set_neg(true);
  }
}

at::Tensor ResizableHostAlias(const at::Tensor& t) {
  const c10::Storage& storage = t.storage();
  void* base = storage.mutable_data();
  if (base == nullptr || t.is_conj() || t.is_neg()) {
    return HostAlias(t);
  }
  // Borrowed memory (no-op deleter) in a resizable CPU storage: a resize allocates anew with the
  // CPU allocator and copies; our device memory is never freed or written by the resize itself.
  c10::Storage alias_storage(c10::Storage::use_byte_size_t(), storage.nbytes(),
                             c10::DataPtr(base, base, [](void*) {}, c10::Device(c10::kCPU)),
                             c10::GetCPUAllocator(), /*resizable=*/true);
  at::Tensor alias = at::empty({0}, t.options().device(c10::kCPU).requires_grad(false));
  alias.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(alias_storage));
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return alias;
}

bool ResizedAway(const at::Tensor& device, const at::Tensor& alias) {
  return alias.storage().data() != device.storage().data() || alias.sizes() != device.sizes() ||
         alias.strides() != device.strides() || alias.storage_offset() != device.storage_offset();
}

c10::IValue ToHostArg(const c10::IValue& v) {
  if (v.isDevice() && v.toDevice().type() == c10::DeviceType::PrivateUse1) {
    return c10::Device(c10::kCPU);
  }
  return MapTensors(v, [](const at::Tensor& t) { return IsDeviceTensor(t) ? HostAlias(t) : t; });
}

}  // namespace trn::runtime
