// The boxed fallback that records every device op without a dedicated kernel.
//
// Thread-safe: may run on several threads at once (Python thread, autograd device thread); the
// stream serialises recording.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Allocator.h>

#include "runtime/block_cache.h"

namespace trn::trace {

void RecordingFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

c10::Allocator* DeviceAllocator();
// The device allocator's blocks and counters (thread-safe; torch_trn.memory_stats()).
runtime::BlockCache& DeviceMemory();
c10::DispatchKeySet DeviceKeySet();

}  // namespace trn::trace
