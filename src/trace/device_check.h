// The device check of the recording fallback: a non-scalar host tensor next to device tensors is
// refused as CUDA refuses it ("Expected all tensors to be on the same device ..."), instead of
// the op silently running on the host.
//
// Thread-safe: a pure function of its arguments (the allow-list is a constant).
#pragma once

#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

#include "absl/status/status.h"

namespace trn::trace {

// OK when every defined tensor in `args` is a device tensor, a 0-dim host tensor (a Python
// scalar wrapped by the argument parser, as CUDA allows) or an argument the op takes on the host
// by design (the allow-list in device_check.cpp: copies, CPU indices, lengths, set_). Otherwise
// an error status of class RuntimeError naming the argument, both devices and the op.
absl::Status CheckSameDevice(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args);

}  // namespace trn::trace
