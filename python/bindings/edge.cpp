#include "python/bindings/edge.h"

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "base/knobs.h"
#include "base/op_error.h"

namespace py = pybind11;

namespace trn::python {

[[noreturn]] void Raise(const absl::Status& status) {
  const std::string msg(status.message());
  switch (base::KindOf(status)) {
    case base::ErrorKind::kIndex:
      throw py::index_error(msg);
    case base::ErrorKind::kValue:
      throw py::value_error(msg);
    case base::ErrorKind::kType:
      throw py::type_error(msg);
    case base::ErrorKind::kNotImplemented:
      PyErr_SetString(PyExc_NotImplementedError, msg.c_str());
      throw py::error_already_set();
    case base::ErrorKind::kDistBackend: {
      // torch.distributed.DistBackendError (a RuntimeError), as gloo raises for CPU tensors.
      py::object cls = py::module_::import("torch.distributed").attr("DistBackendError");
      PyErr_SetString(cls.ptr(), msg.c_str());
      throw py::error_already_set();
    }
    case base::ErrorKind::kLinAlg: {
      // The classes torch's own edge maps c10::LinAlgError / c10::OutOfMemoryError to (what
      // .cpu() raises for the same stored error, through trace::ThrowIfError).
      py::object cls = py::module_::import("torch.linalg").attr("LinAlgError");
      PyErr_SetString(cls.ptr(), msg.c_str());
      throw py::error_already_set();
    }
    case base::ErrorKind::kOutOfMemory: {
      py::object cls = py::module_::import("torch").attr("OutOfMemoryError");
      PyErr_SetString(cls.ptr(), msg.c_str());
      throw py::error_already_set();
    }
    case base::ErrorKind::kRuntime:
      break;  // (no default: a new kind must be mapped here, -Wswitch says so)
  }
  throw std::runtime_error(msg);
}

trace::DeviceState& StateOrRaise() {
  const auto& knobs = base::GetKnobs();
  if (!knobs.ok()) {
    Raise(knobs.status());
  }
  if (trace::InBadFork()) {
    Raise(trace::BadForkError());
  }
  return trace::State();
}

}  // namespace trn::python
