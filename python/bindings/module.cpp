// torch_trn._C: the pybind11 edge. absl::Status turns into Python exceptions here and only here
// (edge.cpp); the functions are grouped by area (bindings.h).
//
// Thread-safety: every function may be called from any Python thread; waits release the GIL.
#include <pybind11/pybind11.h>

#include "python/bindings/bindings.h"

PYBIND11_MODULE(_C, m) {
  using namespace trn::python;
  m.doc() = "torch_trn native extension (use the torch_trn package, not this module)";
  RegisterDeviceBindings(m);
  RegisterDebugBindings(m);
  RegisterMemoryBindings(m);
  RegisterCompileBindings(m);
  RegisterCacheBindings(m);
}
