// torch_trn._C, compile control: what was compiled and how long it took, which ops have a
// lowering, waiting for and stopping the background compilers, the MLIR JIT self-test.
#include <torch/csrc/autograd/python_variable.h>

#include <optional>
#include <vector>

#include "mlir_lowering/host_jit.h"
#include "mlir_lowering/target.h"
#include "python/bindings/bindings.h"
#include "python/bindings/edge.h"
#include "python/bindings/source_capture.h"
#include "trace/device_state.h"
#include "trace/graph_replay.h"

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

// A graph's inputs or outputs as IValues: tensors, ints, floats, bools and None; nullopt for
// anything else (that graph is not replayed).
std::optional<std::vector<c10::IValue>> ToIValues(const py::sequence& seq) {
  std::vector<c10::IValue> out;
  out.reserve(seq.size());
  for (const py::handle& h : seq) {
    PyObject* o = h.ptr();
    if (THPVariable_Check(o)) {
      out.emplace_back(THPVariable_Unpack(o));
    } else if (PyBool_Check(o)) {
      out.emplace_back(o == Py_True);
    } else if (PyLong_CheckExact(o)) {
      const int64_t v = PyLong_AsLongLong(o);
      if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return std::nullopt;
      }
      out.emplace_back(v);
    } else if (PyFloat_CheckExact(o)) {
      out.emplace_back(PyFloat_AsDouble(o));
    } else if (o == Py_None) {
      out.emplace_back();
    } else {
      return std::nullopt;
    }
  }
  return out;
}

py::object ToPython(const c10::IValue& v) {
  if (v.isTensor()) return py::reinterpret_steal<py::object>(THPVariable_Wrap(v.toTensor()));
  if (v.isBool()) return py::bool_(v.toBool());
  if (v.isInt()) return py::int_(v.toInt());
  if (v.isDouble()) return py::float_(v.toDouble());
  return py::none();  // (ToIValues admits nothing else)
}

// torch_trn._C.GraphReplayer: python/torch_trn/_dynamo_backend.py drives it.
void RegisterGraphReplayer(py::module& m) {
  py::class_<trace::GraphReplayer>(m, "GraphReplayer",
                                   "Records a torch.compile graph's device ops once per input signature and re-issues "
                                   "them on later calls (src/trace/graph_replay.h).")
      .def(py::init([] {
        StateOrRaise();
        return std::make_unique<trace::GraphReplayer>();
      }))
      .def("replay", [](trace::GraphReplayer& r, const py::sequence& inputs) -> py::object {
        std::optional<std::vector<c10::IValue>> in = ToIValues(inputs);
        if (!in.has_value()) return py::bool_(false);
        bool run_normally = false;
        std::optional<std::vector<c10::IValue>> out = r.Replay(*in, &run_normally);
        if (!out.has_value()) return py::bool_(!run_normally);
        py::list list(out->size());
        for (size_t i = 0; i < out->size(); ++i) list[i] = ToPython((*out)[i]);
        return list;
      }, "The graph's outputs (a list) re-issued for these inputs; else True (no template yet: capture "
         "this call) or False (run it normally: its capture was refused, or the inputs cannot be replayed).")
      .def("begin_capture", [](trace::GraphReplayer& r, const py::sequence& inputs) {
        std::optional<std::vector<c10::IValue>> in = ToIValues(inputs);
        if (in.has_value()) r.BeginCapture(*in);
      })
      .def("end_capture", [](trace::GraphReplayer& r, const py::sequence& inputs, const py::sequence& outputs) {
        std::optional<std::vector<c10::IValue>> in = ToIValues(inputs);
        std::optional<std::vector<c10::IValue>> out = ToIValues(outputs);
        if (!in.has_value() || !out.has_value()) {
          r.AbortCapture();
          return std::string("an input or output is not a tensor, int, float, bool or None");
        }
        absl::Status st = r.EndCapture(*in, *out);
        return st.ok() ? std::string() : std::string(st.message());
      }, "Ends this thread's capture: '' when a template was kept, else the refusal.")
      .def("abort_capture", &trace::GraphReplayer::AbortCapture);
}

}  // namespace

void RegisterCompileBindings(py::module& m) {
  m.def("compiled_keys", [] { return StateOrRaise().stream.compiler().CompiledKeys(); },
        "Hex keys of the groups compiled in this process, in compile order.");
  m.def("compile_millis", [] { return StateOrRaise().stream.compiler().CompileMillis(); },
        "Wall milliseconds of each group compile in this process (MLIR -> object -> loaded).");
  m.def("lowered_ops", [](const std::string& target) {
          absl::StatusOr<const mlir_lowering::Target*> t = mlir_lowering::Target::Named(target);
          if (!t.ok()) {
            throw py::value_error("lowered_ops: target must be 'host', 'trn2' or 'trn3', got '" + target + "'");
          }
          return (*t)->LoweredOps();
        }, py::arg("target") = "host",
        "ATen ops with a lowering for `target` (schema names; overloads and in-place forms count once). "
        "On trn2/trn3: the ops the NeuronCore pipeline runs (runtime calls of ATen kernels other than the "
        "matrix products run op by op on the host).");
  m.def("wait_for_compiles", [] { StateOrRaise().stream.WaitForCompiles(); },
        "adaptive mode: blocks until no background compile is queued or running.");
  m.def("shutdown_compiles", [] { StateOrRaise().stream.ShutdownCompiles(); },
        "Stops the background compilers (queued compiles are dropped). Called at exit.");
  m.def("mlir_selftest", &MlirSelfTest, "JIT-compiles and runs a small MLIR function in this process.");
  m.def("graph_replay_enabled", [] { return StateOrRaise().knobs.graph_replay; }, "NEURON_GRAPH_REPLAY.");
  RegisterGraphReplayer(m);
  m.def("_set_graph_lines", [](const std::string& file, const std::vector<std::tuple<int, std::string, int, std::string>>& lines) {
          std::vector<std::pair<int, base::SourceLocation>> mapped;
          for (const auto& [at, model_file, model_line, function] : lines) {
            base::SourceLocation loc;
            loc.file = model_file;
            loc.line = model_line;
            loc.function = function;
            mapped.emplace_back(at, std::move(loc));
          }
          SetGraphLines(file, mapped);
        }, py::arg("file"), py::arg("lines"),
        "A torch.compile graph's generated file: (line, model file, model line, function) per node line; ops "
        "recorded from it name the model's line.");
}

}  // namespace trn::python
