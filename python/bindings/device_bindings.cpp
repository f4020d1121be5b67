// torch_trn._C, device and stream: starting the device, syncing, the mode, the generator.
#include <string>
#include <vector>

#include <torch/csrc/Generator.h>

#include "absl/synchronization/mutex.h"
#include "python/bindings/bindings.h"
#include "python/bindings/edge.h"
#include "python/bindings/source_capture.h"
#include "base/blocking.h"
#include "base/knobs.h"
#include "trace/autograd_barrier.h"
#include "trace/device_state.h"

namespace py = pybind11;

namespace trn::python {
namespace {

void ReleaseGil(void** state) {
  if (Py_IsInitialized() && PyGILState_Check()) {
    *state = PyEval_SaveThread();
  }
}

void RestoreGil(void** state) {
  if (*state != nullptr) {
    PyEval_RestoreThread(static_cast<PyThreadState*>(*state));
    *state = nullptr;
  }
}

void Init(const std::vector<std::string>& library_prefixes) {
  // Our lock order is fixed and documented (docs/architecture.md); abseil's runtime deadlock
  // detection would otherwise build a lock graph on every acquisition of the hot-path mutexes.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  SetLibraryPrefixes(library_prefixes);
  trace::SetSourceHook(&CaptureSource);
  base::SetBlockingHooks(&ReleaseGil, &RestoreGil);
  trace::DeviceState& state = StateOrRaise();
  (void)state;
}

void AutogradBarrier() {
  absl::Status status;
  {
    py::gil_scoped_release no_gil;  // PyTorch's engine refuses to run with the GIL held
    status = trace::RunDeviceAutogradBarrier();
  }
  if (!status.ok()) {
    Raise(status);
  }
}

void Sync() {
  absl::Status status;
  {
    py::gil_scoped_release no_gil;
    status = StateOrRaise().stream.Sync("user");
  }
  if (!status.ok()) {
    Raise(status);
  }
}

}  // namespace

void RegisterDeviceBindings(py::module& m) {
  m.def("_init", &Init, py::arg("library_prefixes"),
        "Installs source capture and reads the knobs (ValueError on a bad NEURON_* value).");
  m.def("_is_in_bad_fork", &trace::InBadFork,
        "Whether this process was forked after its parent started the device (device use raises here).");
  m.def("sync", &Sync, "Runs every recorded op; raises the first stored error.");
  m.def("autograd_barrier", &AutogradBarrier,
        "Runs a tiny backward pass on the device; returns once the autograd thread has run it, "
        "so every earlier backward pass has been released. Records ops; sync afterwards.");
  m.def("mode", [] { return std::string(base::ModeName(StateOrRaise().knobs.mode)); });
  m.def("launch_blocking", [] { return StateOrRaise().knobs.launch_blocking; });
  m.def("pending", [] { return StateOrRaise().stream.executor().Pending(); });
  m.def("default_generator", [] {
    return py::reinterpret_steal<py::object>(THPGenerator_Wrap(trace::DeviceGenerator()));
  }, "The device's default torch.Generator (random ops on the device draw from it in stream order).");
}

}  // namespace trn::python
