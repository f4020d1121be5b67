// torch_trn._C's cache functions (cache_stats, cache_info, cache_entries, ...) and the bridge
// that lets the C++ distributed cache tier use torch.distributed's store from Python.
//
// Thread-safety: the bridge may be called from any C++ thread; it takes the GIL for each store
// call and refuses (an error status, never a crash) once the interpreter is finalizing.
#pragma once

#include <pybind11/pybind11.h>

#include "trace/device_state.h"

namespace trn::python {

// `state` returns the device state or raises (bad knobs).
void RegisterCacheBindings(pybind11::module& m, trace::DeviceState& (*state)());

}  // namespace trn::python
