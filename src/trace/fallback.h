// The boxed fallback that records every device op without a dedicated kernel.
//
// Thread-safe: may run on several threads at once (Python thread, autograd device thread); the
// stream serialises recording.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Allocator.h>

namespace trn::trace {

void RecordingFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

c10::Allocator* DeviceAllocator();
c10::DispatchKeySet DeviceKeySet();

}  // namespace trn::trace
