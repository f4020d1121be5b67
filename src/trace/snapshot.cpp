#include "trace/snapshot.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/strides.h>

#include "runtime/host_view.h"
#include "trace/fallback.h"
#include "trace/graph_replay.h"
#include "trace/meta_cache.h"

namespace trn::trace {

namespace {
at::Tensor ViewOf(const at::Tensor& base, c10::IntArrayRef sizes, c10::IntArrayRef strides, int64_t offset,
                  caffe2::TypeMeta dtype, c10::DispatchKeySet keys) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(base.storage()), keys, dtype);
  impl->set_sizes_and_strides(sizes, strides, offset);
  return at::Tensor(std::move(impl));
}
}  // namespace

at::Tensor MakeView(const at::Tensor& base, const Geometry& g) {
  return ViewOf(base, g.sizes, g.strides, g.offset, c10::scalarTypeToTypeMeta(g.dtype), base.key_set());
}

at::Tensor Snapshot(const at::Tensor& t) {
  if (!t.defined() || !runtime::IsDeviceTensor(t)) {
    return t;
  }
  // Without autograd's keys the snapshot is an inference tensor: its TensorImpl allocates no
  // version counter (one allocation less per argument of every recorded op). Only the executor
  // reads it, never autograd.
  at::Tensor s = ViewOf(t, t.sizes(), t.strides(), t.storage_offset(), t.dtype(),
                        t.key_set() - c10::autograd_dispatch_keyset_with_ADInplaceOrView);
  runtime::CopyMathBits(t, s);
  return s;
}

c10::IValue PrivateArg(const c10::IValue& v) {
  return runtime::MapTensors(v, [](const at::Tensor& t) -> at::Tensor {
    if (!t.defined() || runtime::IsDeviceTensor(t)) {
      return Snapshot(t);
    }
    if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
      return t;  // a Python scalar wrapped by the arg parser: nobody else holds it
    }
    at::Tensor copy = t.clone();
    return copy;
  });
}

c10::IValue PrivateIndexArg(const c10::IValue& v) {
  if (!v.isOptionalTensorList()) return PrivateArg(v);
  bool host = false;
  runtime::ForEachTensor(v, [&](const at::Tensor& t) { host = host || (t.defined() && !runtime::IsDeviceTensor(t)); });
  if (!host) return PrivateArg(v);
  // A fresh device buffer nothing else references: filled now (as a host -> device copy of a
  // fresh tensor is), so a replay of a captured graph would not refill it.
  CaptureRefuse("a host index tensor (copied to the device when recorded)");
  return runtime::MapTensors(v, [](const at::Tensor& t) -> at::Tensor {
    if (!t.defined() || runtime::IsDeviceTensor(t)) return Snapshot(t);
    Geometry g;
    g.defined = true;
    g.sizes = t.sizes().vec();
    const c10::DimVector strides = c10::contiguous_strides(t.sizes());
    g.strides.assign(strides.begin(), strides.end());
    g.dtype = t.scalar_type();
    at::Tensor d = FreshLike(g);
    runtime::HostAlias(d).copy_(t);
    return Snapshot(d);
  });
}

at::Tensor MetaTwin(const at::Tensor& t) {
  const int64_t extent = t.itemsize() == 0 ? 0 : static_cast<int64_t>(t.storage().nbytes() / t.itemsize());
  at::Tensor base = at::empty({extent}, t.options().device(c10::kMeta).requires_grad(false));
  return base.as_strided(t.sizes(), t.strides(), t.storage_offset());
}

at::Tensor FreshLike(const Geometry& g) {
  return at::detail::empty_strided_generic(g.sizes, g.strides, DeviceAllocator(), DeviceKeySet(), g.dtype);
}

}  // namespace trn::trace
