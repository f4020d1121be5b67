// The areas of torch_trn._C: each Register* adds its functions to the module (module.cpp calls
// them all). The Python names are the module's API; python/torch_trn wraps them.
//
// Thread-safety: every registered function may be called from any Python thread; waits release
// the GIL.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every binding unit: pybind11's casters must agree across them

namespace trn::python {

// _init, _is_in_bad_fork, sync, autograd_barrier, mode, launch_blocking, pending,
// default_generator (device_bindings.cpp).
void RegisterDeviceBindings(pybind11::module& m);
// stats, reset_stats, last_ops, current_op, group_bench, knobs, source_count, cpp_meta_ops,
// optrace_start/stop, profile_start/stop/active (debug_bindings.cpp).
void RegisterDebugBindings(pybind11::module& m);
// memory_stats, empty_cache, reset_peak_memory_stats (memory_bindings.cpp).
void RegisterMemoryBindings(pybind11::module& m);
// compiled_keys, compile_millis, lowered_ops, wait_for_compiles, shutdown_compiles,
// mlir_selftest, graph_replay_enabled, GraphReplayer (compile_bindings.cpp).
void RegisterCompileBindings(pybind11::module& m);
// cache_stats, reset_cache_stats, cache_info, cache_entries, cache_clear, cache_remove, and the
// bridge that lets the C++ distributed cache tier use torch.distributed's store from Python
// (cache_bindings.cpp; the bridge takes the GIL for each store call and refuses, with an error
// status, once the interpreter is finalizing).
void RegisterCacheBindings(pybind11::module& m);

}  // namespace trn::python
