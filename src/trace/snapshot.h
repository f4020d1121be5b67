// Tensors the recorder creates: snapshots of device tensors for queued ops, Meta twins for
// shape inference, views sharing a base's storage, fresh device outputs.
//
// Thread-safe: pure functions over their arguments.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace trn::trace {
struct Geometry;
}

namespace trn::trace {

// A private TensorImpl over `t`'s storage with `t`'s current geometry (and conj/neg bits): later
// in-place metadata changes on `t` (squeeze_, as_strided_) do not reach the queued op. It is an
// inference tensor (no autograd keys, no version counter): only the executor reads it.
at::Tensor Snapshot(const at::Tensor& t);

// What a queued op keeps of an argument: snapshots of device tensors, private copies of host
// tensors (the user may overwrite them before the op runs), everything else as is.
c10::IValue PrivateArg(const c10::IValue& v);
// As PrivateArg, but host tensors of an optional-tensor list (advanced indexing's indices, which
// may be CPU tensors: trace/device_check.h) become fresh device tensors holding their values, so
// the op can join a compiled group (as CUDA's index kernels move CPU indices to the device).
c10::IValue PrivateIndexArg(const c10::IValue& v);

// A Meta tensor with `t`'s sizes, strides, offset and storage extent (so view outputs get
// absolute offsets into the same storage).
at::Tensor MetaTwin(const at::Tensor& t);

// A device tensor viewing `base`'s storage with geometry `g` (sizes, strides, offset, dtype).
at::Tensor MakeView(const at::Tensor& base, const Geometry& g);

// A freshly allocated device tensor with `g`'s sizes, strides and dtype.
at::Tensor FreshLike(const Geometry& g);

}  // namespace trn::trace
