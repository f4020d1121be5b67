// torch_trn._C: the pybind11 edge. absl::Status turns into Python exceptions here and only here.
//
// Thread-safety: every function may be called from any Python thread; waits release the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include <torch/csrc/Generator.h>

#include "absl/synchronization/mutex.h"
#include "mlir_lowering/host_jit.h"
#include "python/bindings/cache_bindings.h"
#include "python/bindings/source_capture.h"
#include "runtime/profiler.h"
#include "runtime/blocking.h"
#include "mlir_lowering/lowering_registry.h"
#include "runtime/device_model.h"
#include "runtime/knobs.h"
#include "runtime/op_trace.h"
#include "runtime/op_error.h"
#include "trace/autograd_barrier.h"
#include "trace/cpp_meta.h"
#include "trace/device_state.h"
#include "trace/fallback.h"

namespace py = pybind11;

namespace trn::python {
namespace {

[[noreturn]] void Raise(const absl::Status& status) {
  const std::string msg(status.message());
  switch (runtime::KindOf(status)) {
    case runtime::ErrorKind::kIndex:
      throw py::index_error(msg);
    case runtime::ErrorKind::kValue:
      throw py::value_error(msg);
    case runtime::ErrorKind::kType:
      throw py::type_error(msg);
    case runtime::ErrorKind::kNotImplemented:
      PyErr_SetString(PyExc_NotImplementedError, msg.c_str());
      throw py::error_already_set();
    case runtime::ErrorKind::kDistBackend: {
      // torch.distributed.DistBackendError (a RuntimeError), as gloo raises for CPU tensors.
      py::object cls = py::module_::import("torch.distributed").attr("DistBackendError");
      PyErr_SetString(cls.ptr(), msg.c_str());
      throw py::error_already_set();
    }
    case runtime::ErrorKind::kLinAlg: {
      // The classes torch's own edge maps c10::LinAlgError / c10::OutOfMemoryError to (what
      // .cpu() raises for the same stored error, through trace::ThrowIfError).
      py::object cls = py::module_::import("torch.linalg").attr("LinAlgError");
      PyErr_SetString(cls.ptr(), msg.c_str());
      throw py::error_already_set();
    }
    case runtime::ErrorKind::kOutOfMemory: {
      py::object cls = py::module_::import("torch").attr("OutOfMemoryError");
      PyErr_SetString(cls.ptr(), msg.c_str());
      throw py::error_already_set();
    }
    case runtime::ErrorKind::kRuntime:
      break;  // (no default: a new kind must be mapped here, -Wswitch says so)
  }
  throw std::runtime_error(msg);
}

trace::DeviceState& StateOrRaise() {
  const auto& knobs = runtime::GetKnobs();
  if (!knobs.ok()) {
    Raise(knobs.status());
  }
  if (trace::InBadFork()) {
    Raise(trace::BadForkError());
  }
  return trace::State();
}

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

py::dict OpDict(const runtime::ExecutedOp& op) {
  runtime::SourceLocation loc = runtime::GlobalSourceTable().Lookup(op.source);
  py::dict d;
  d["op"] = op.op();
  d["file"] = loc.file.empty() ? py::object(py::none()) : py::object(py::str(loc.file));
  d["line"] = loc.line;
  d["function"] = loc.function;
  d["seq"] = op.seq;
  d["failed"] = op.failed;
  d["group"] = op.group_key.empty() ? py::object(py::none()) : py::object(py::str(op.group_key));
  d["group_ops"] = op.group_ops;
  d["compiled"] = op.compiled;
  return d;
}

void Init(const std::vector<std::string>& library_prefixes) {
  // Our lock order is fixed and documented (docs/architecture.md); abseil's runtime deadlock
  // detection would otherwise build a lock graph on every acquisition of the hot-path mutexes.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  SetLibraryPrefixes(library_prefixes);
  trace::SetSourceHook(&CaptureSource);
  runtime::SetBlockingHooks(&ReleaseGil, &RestoreGil);
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

py::dict Stats() {
  trace::DeviceState& state = StateOrRaise();
  runtime::StatsSnapshot s = state.stats.Snapshot();
  py::dict out;
  out["meta_cache_hits"] = state.meta_cache.hits();
  out["meta_cache_misses"] = state.meta_cache.misses();
  out["meta_kernels_cpp"] = trace::CppMetaCalls();
  out["ops_recorded"] = s.ops_recorded;
  out["ops_executed"] = s.ops_executed;
  out["views"] = s.views;
  py::dict fallbacks;
  int64_t total = 0;
  for (const auto& [key, count] : s.host_fallbacks) {
    py::dict by_reason = fallbacks.contains(key.first) ? py::dict(fallbacks[py::str(key.first)]) : py::dict();
    by_reason[py::str(key.second)] = count;
    fallbacks[py::str(key.first)] = by_reason;
    total += count;
  }
  out["host_fallbacks"] = fallbacks;
  py::dict fallback_lines;
  for (const auto& [op, lines] : s.host_fallback_lines) fallback_lines[py::str(op)] = lines;
  out["host_fallback_lines"] = fallback_lines;
  out["host_fallback_total"] = total;
  py::dict syncs;
  int64_t sync_total = 0;
  for (const auto& [reason, count] : s.syncs) {
    syncs[py::str(reason)] = count;
    sync_total += count;
  }
  out["syncs"] = syncs;
  out["sync_total"] = sync_total;
  out["groups_run_compiled"] = s.groups_run_compiled;
  out["ops_run_compiled"] = s.ops_run_compiled;
  out["compiled_bytes_written"] = s.compiled_bytes_written;
  out["temporaries_elided"] = s.temporaries_elided;
  out["loops_split"] = s.loops_split;
  out["storages_released_early"] = s.storages_released_early;
  out["bytes_released_early"] = s.bytes_released_early;
  out["compiles"] = s.compiles;
  out["compile_ms"] = s.compile_ms;
  out["compile_cache_hits"] = s.compile_cache_hits;
  out["lowerings_emitted"] = s.lowerings_emitted;
  out["plan_cache_hits"] = s.plan_cache_hits;
  out["plan_cache_misses"] = s.plan_cache_misses;
  py::dict host_time;
  for (int i = 0; i < static_cast<int>(runtime::HostTime::kCount); ++i) {
    py::dict t;
    t["ns"] = s.host_ns[i];
    t["ops"] = s.host_ops[i];
    host_time[runtime::HostTimeName(static_cast<runtime::HostTime>(i))] = t;
  }
  out["host_time"] = host_time;
  out["tier_ups"] = s.tier_ups;
  out["ops_awaiting_compile"] = s.ops_awaiting_compile;
  out["groups_awaiting_compile"] = s.groups_awaiting_compile;
  out["compile_queue_full"] = s.compile_queue_full;
  out["shape_variants_refused"] = s.shape_variants_refused;
  out["compile_cache_entries"] = state.stream.compiler().cache().size();
  py::dict unlowered, failures;
  for (const auto& [op, count] : s.unlowered_ops) {
    unlowered[py::str(op)] = count;
  }
  for (const auto& [reason, count] : s.compile_failures) {
    failures[py::str(reason)] = count;
  }
  out["unlowered_ops"] = unlowered;
  out["compile_failures"] = failures;
  py::dict collectives;
  for (const auto& [name, c] : s.collectives) {
    py::dict d;
    d["count"] = c.count;
    d["seconds"] = static_cast<double>(c.ns) * 1e-9;
    d["bytes"] = c.bytes;
    collectives[py::str(name)] = d;
  }
  out["collectives"] = collectives;
  out["target"] = state.knobs.target;
  if (runtime::DeviceModel* device = runtime::DeviceModel::Get(); device != nullptr) {
    const runtime::DeviceSnapshot d = device->Snapshot();
    py::dict dev, engines;
    dev["target"] = d.target;
    dev["modeled_ns"] = d.modeled_ns;
    for (int e = 0; e < runtime::neuroncore::kEngines; ++e) {
      engines[py::str(runtime::neuroncore::EngineName(static_cast<runtime::neuroncore::Engine>(e)))] = d.engine_busy_ns[e];
    }
    dev["engine_busy_ns"] = engines;
    dev["instructions"] = d.instructions;
    dev["dma_bytes"] = d.dma_bytes;
    dev["matmul_flops"] = d.matmul_flops;
    dev["groups_on_device"] = d.groups_on_device;
    dev["ops_on_device"] = d.ops_on_device;
    dev["groups_on_host"] = d.groups_on_host;
    dev["ops_on_host"] = d.ops_on_host;
    dev["host_transfer_bytes"] = d.host_transfer_bytes;
    dev["host_transfer_ns"] = d.host_transfer_ns;
    py::dict fallbacks;
    for (const auto& [reason, count] : state.stream.compiler().trn_fallbacks()) fallbacks[py::str(reason)] = count;
    dev["host_group_reasons"] = fallbacks;
    py::dict by_name;
    for (const auto& [name, count] : d.ops_by_name) by_name[py::str(name)] = count;
    dev["ops_by_name"] = by_name;
    out["device"] = dev;
  }
  return out;
}

py::list LastOps(size_t n) {
  py::list out;
  for (const runtime::ExecutedOp& op : StateOrRaise().stream.executor().LastOps(n)) {
    out.append(OpDict(op));
  }
  return out;
}

py::object CurrentOp() {
  auto op = StateOrRaise().stream.executor().CurrentOp();
  return op.has_value() ? py::object(OpDict(*op)) : py::object(py::none());
}

py::list KnobTable() {
  py::list out;
  for (const runtime::KnobSpec& k : runtime::KnobSpecs()) {
    py::dict d;
    d["name"] = k.name;
    d["default"] = k.default_value;
    d["allowed"] = k.allowed;
    d["help"] = k.help;
    out.append(d);
  }
  return out;
}

py::list GroupBenchTable() {
  py::list rows;
  for (const runtime::GroupBenchRow& r : StateOrRaise().stream.executor().GroupBenchRows()) {
    py::dict d;
    d["key"] = r.key;
    d["ops"] = r.ops;
    d["num_ops"] = r.num_ops;
    d["runs"] = r.runs;
    d["compiled_ns"] = r.compiled_ns;
    d["op_by_op_ns"] = r.op_by_op_ns;
    rows.append(d);
  }
  return rows;
}

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
}  // namespace trn::python

PYBIND11_MODULE(_C, m) {
  using namespace trn::python;
  m.doc() = "torch_trn native extension (use the torch_trn package, not this module)";
  m.def("_init", &Init, py::arg("library_prefixes"),
        "Installs source capture and reads the knobs (ValueError on a bad NEURON_* value).");
  m.def("_is_in_bad_fork", &trn::trace::InBadFork,
        "Whether this process was forked after its parent started the device (device use raises here).");
  m.def("sync", &Sync, "Runs every recorded op; raises the first stored error.");
  m.def("autograd_barrier", &AutogradBarrier,
        "Runs a tiny backward pass on the device; returns once the autograd thread has run it, "
        "so every earlier backward pass has been released. Records ops; sync afterwards.");
  m.def("mode", [] { return std::string(trn::runtime::ModeName(StateOrRaise().knobs.mode)); });
  m.def("launch_blocking", [] { return StateOrRaise().knobs.launch_blocking; });
  m.def("stats", &Stats);
  m.def("group_bench", &GroupBenchTable,
        "NEURON_BENCH_GROUPS=1: per compiled group, its time compiled and op by op (no sync).");
  m.def("reset_stats", [] {
    StateOrRaise().stats.Reset();
    if (trn::runtime::DeviceModel* device = trn::runtime::DeviceModel::Get(); device != nullptr) device->Reset();
  });
  m.def("pending", [] { return StateOrRaise().stream.executor().Pending(); });
  m.def("last_ops", &LastOps, py::arg("n") = 10);
  m.def("current_op", &CurrentOp);
  m.def("knobs", &KnobTable);
  m.def("source_count", [] { return trn::runtime::GlobalSourceTable().size(); });
  m.def("default_generator", [] {
    return py::reinterpret_steal<py::object>(THPGenerator_Wrap(trn::trace::DeviceGenerator()));
  }, "The device's default torch.Generator (random ops on the device draw from it in stream order).");
  m.def("compiled_keys", [] { return StateOrRaise().stream.compiler().CompiledKeys(); },
        "Hex keys of the groups compiled in this process, in compile order.");
  m.def("compile_millis", [] { return StateOrRaise().stream.compiler().CompileMillis(); },
        "Wall milliseconds of each group compile in this process (MLIR -> object -> loaded).");
  m.def("cpp_meta_ops", &trn::trace::CppMetaOps,
        "Operators whose output geometry comes from PyTorch's C++ Meta functions (no Python).");
  m.def("lowered_ops", [](const std::string& target) {
          if (target != "host" && target != "trn2" && target != "trn3") {
            throw py::value_error("lowered_ops: target must be 'host', 'trn2' or 'trn3', got '" + target + "'");
          }
          return trn::mlir_lowering::LoweringRegistry::Global().Names(target);
        }, py::arg("target") = "host",
        "ATen ops with a lowering for `target` (schema names; overloads and in-place forms count once). "
        "On trn2/trn3: the ops the NeuronCore pipeline runs (runtime calls of ATen kernels other than the "
        "matrix products run op by op on the host).");
  m.def("wait_for_compiles", [] { StateOrRaise().stream.WaitForCompiles(); },
        "adaptive mode: blocks until no background compile is queued or running.");
  m.def("shutdown_compiles", [] { StateOrRaise().stream.ShutdownCompiles(); },
        "Stops the background compilers (queued compiles are dropped). Called at exit.");
  m.def("optrace_start", [] {
    absl::Status status = trn::runtime::optrace::Start();
    if (!status.ok()) Raise(status);
  });
  m.def("optrace_stop", [] { return trn::runtime::optrace::Stop(); });
  m.def("profile_start", [] {
    trn::trace::DeviceState& state = StateOrRaise();
    absl::Status status = trn::runtime::profiler::Start(std::string(trn::runtime::ModeName(state.knobs.mode)));
    if (!status.ok()) Raise(status);
  }, "Starts recording profile events (RuntimeError if a profile is active).");
  m.def("profile_stop", [](const std::string& path) {
    absl::Status status;
    {
      py::gil_scoped_release no_gil;
      status = trn::runtime::profiler::StopAndWrite(path);
    }
    if (!status.ok()) Raise(status);
  }, py::arg("path"), "Stops the active profile and writes its Chrome trace-event JSON to path.");
  m.def("profile_active", [] { return trn::runtime::profiler::Active(); });
  m.def("memory_stats", &MemoryStats, "Counters of the device allocator (no sync).");
  m.def("empty_cache", [] { StateOrRaise(); return trn::trace::DeviceMemory().Release(); },
        "Returns the cached free device blocks to the system; the bytes released (no sync).");
  m.def("reset_peak_memory_stats", [] { StateOrRaise(); trn::trace::DeviceMemory().ResetPeak(); });
  m.def("mlir_selftest", &MlirSelfTest, "JIT-compiles and runs a small MLIR function in this process.");
  RegisterCacheBindings(m, &StateOrRaise);
}
