// torch_trn._C, device memory: the allocator's counters and cache (torch_trn/memory.py wraps
// them and syncs first).
#include "python/bindings/bindings.h"
#include "python/bindings/edge.h"
#include "runtime/block_cache.h"
#include "trace/fallback.h"

namespace py = pybind11;

namespace trn::python {
namespace {

py::dict MemoryStats() {
  StateOrRaise();
  const runtime::BlockCache::Stats s = trace::DeviceMemory().stats();
  py::dict out;
  out["allocated_bytes"] = s.allocated;
  out["peak_allocated_bytes"] = s.peak_allocated;
  out["cached_bytes"] = s.cached;
  out["reserved_bytes"] = s.allocated + s.cached;
  out["allocations"] = s.allocations;
  out["cache_reuses"] = s.reuses;
  out["released_bytes"] = s.released;
  return out;
}

}  // namespace

void RegisterMemoryBindings(py::module& m) {
  m.def("memory_stats", &MemoryStats, "Counters of the device allocator (no sync).");
  m.def("empty_cache", [] { StateOrRaise(); return trace::DeviceMemory().Release(); },
        "Returns the cached free device blocks to the system; the bytes released (no sync).");
  m.def("reset_peak_memory_stats", [] { StateOrRaise(); trace::DeviceMemory().ResetPeak(); });
}

}  // namespace trn::python
