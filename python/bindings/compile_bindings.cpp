// torch_trn._C, compile control: what was compiled and how long it took, which ops have a
// lowering, waiting for and stopping the background compilers, the MLIR JIT self-test.
#include "mlir_lowering/host_jit.h"
#include "mlir_lowering/lowering_registry.h"
#include "python/bindings/bindings.h"
#include "python/bindings/edge.h"
#include "trace/device_state.h"

namespace py = pybind11;

namespace trn::python {
namespace {

py::dict MlirSelfTest() {
  absl::StatusOr<mlir_lowering::SelfTestResult> r;
  {
    py::gil_scoped_release no_gil;
    r = mlir_lowering::RunSelfTest();
  }
  if (!r.ok()) {
    Raise(r.status());
  }
  py::dict d;
  d["compile_ms_o0"] = r->compile_ms_o0;
  d["compile_ms_o3"] = r->compile_ms_o3;
  d["load_ms"] = r->load_ms;
  d["results_match"] = r->results_match;
  return d;
}

}  // namespace

void RegisterCompileBindings(py::module& m) {
  m.def("compiled_keys", [] { return StateOrRaise().stream.compiler().CompiledKeys(); },
        "Hex keys of the groups compiled in this process, in compile order.");
  m.def("compile_millis", [] { return StateOrRaise().stream.compiler().CompileMillis(); },
        "Wall milliseconds of each group compile in this process (MLIR -> object -> loaded).");
  m.def("lowered_ops", [](const std::string& target) {
          if (target != "host" && target != "trn2" && target != "trn3") {
            throw py::value_error("lowered_ops: target must be 'host', 'trn2' or 'trn3', got '" + target + "'");
          }
          return mlir_lowering::LoweringRegistry::Global().Names(target);
        }, py::arg("target") = "host",
        "ATen ops with a lowering for `target` (schema names; overloads and in-place forms count once). "
        "On trn2/trn3: the ops the NeuronCore pipeline runs (runtime calls of ATen kernels other than the "
        "matrix products run op by op on the host).");
  m.def("wait_for_compiles", [] { StateOrRaise().stream.WaitForCompiles(); },
        "adaptive mode: blocks until no background compile is queued or running.");
  m.def("shutdown_compiles", [] { StateOrRaise().stream.ShutdownCompiles(); },
        "Stops the background compilers (queued compiles are dropped). Called at exit.");
  m.def("mlir_selftest", &MlirSelfTest, "JIT-compiles and runs a small MLIR function in this process.");
}

}  // namespace trn::python
