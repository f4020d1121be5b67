// torch_trn._C, stats and debugging: counters, the ops that ran and the one running, the knob
// table, op traces and profiles (torch_trn/debug.py wraps them).
#include <string>

#include <torch/csrc/autograd/python_variable.h>

#include "python/bindings/bindings.h"
#include "python/bindings/edge.h"
#include "runtime/device_model.h"
#include "base/knobs.h"
#include "runtime/op_trace.h"
#include "base/profiler.h"
#include "base/source_table.h"
#include "trace/cpp_meta.h"
#include "trace/device_state.h"

namespace py = pybind11;

namespace trn::python {
namespace {

py::dict OpDict(const runtime::ExecutedOp& op) {
  base::SourceLocation loc = base::GlobalSourceTable().Lookup(op.source);
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

py::dict Stats() {
  trace::DeviceState& state = StateOrRaise();
  state.stream.WaitForFlushed();  // (every flushed op counted: no dependence on the executor's progress)
  base::StatsSnapshot s = state.stats.Snapshot();
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
  out["kernel_stragglers"] = s.kernel_stragglers;
  out["kernels_run_alone"] = s.kernels_run_alone;
  out["storages_released_early"] = s.storages_released_early;
  out["bytes_released_early"] = s.bytes_released_early;
  out["compiles"] = s.compiles;
  out["compile_ms"] = s.compile_ms;
  out["compile_cache_hits"] = s.compile_cache_hits;
  out["lowerings_emitted"] = s.lowerings_emitted;
  out["plan_cache_hits"] = s.plan_cache_hits;
  out["graph_replays"] = s.graph_replays;
  out["graph_replay_ops"] = s.graph_replay_ops;
  out["graph_captures_refused"] = s.graph_captures_refused;
  out["plan_cache_misses"] = s.plan_cache_misses;
  py::dict host_time;
  for (int i = 0; i < static_cast<int>(base::HostTime::kCount); ++i) {
    py::dict t;
    t["ns"] = s.host_ns[i];
    t["ops"] = s.host_ops[i];
    host_time[base::HostTimeName(static_cast<base::HostTime>(i))] = t;
  }
  out["host_time"] = host_time;
  out["tier_ups"] = s.tier_ups;
  out["ops_awaiting_compile"] = s.ops_awaiting_compile;
  out["groups_awaiting_compile"] = s.groups_awaiting_compile;
  out["compile_queue_full"] = s.compile_queue_full;
  out["groups_run_instant"] = s.groups_run_instant;
  out["ops_run_instant"] = s.ops_run_instant;
  out["ops_chained_instant"] = s.ops_chained_instant;
  out["instant_programs"] = s.instant_programs;
  out["instant_build_ns"] = s.instant_build_ns;
  out["shape_variants_refused"] = s.shape_variants_refused;
  out["reads_before_last_flush"] = s.reads_before_last_flush;
  out["group_growth"] = s.group_growth;
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
    dev["trn_internal_failures"] = state.stream.compiler().trn_internal_failures();
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
  for (const base::KnobSpec& k : base::KnobSpecs()) {
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
    d["compiled_median_ns"] = r.compiled_median_ns;
    d["op_by_op_median_ns"] = r.op_by_op_median_ns;
    d["instant_runs"] = r.instant_runs;
    d["instant_median_ns"] = r.instant_median_ns;
    d["instant_op_by_op_median_ns"] = r.instant_op_by_op_median_ns;
    d["instant_ratio_median"] = r.instant_ratio_median;
    rows.append(d);
  }
  return rows;
}

}  // namespace

void RegisterDebugBindings(py::module& m) {
  m.def("stats", &Stats);
  m.def("reset_stats", [] {
    StateOrRaise().stats.Reset();
    if (runtime::DeviceModel* device = runtime::DeviceModel::Get(); device != nullptr) device->Reset();
  });
  m.def("group_bench", &GroupBenchTable,
        "NEURON_BENCH_GROUPS=1: per compiled group, its time compiled and op by op (no sync).");
  m.def("last_ops", &LastOps, py::arg("n") = 10);
  m.def("current_op", &CurrentOp);
  m.def("knobs", &KnobTable);
  m.def("source_count", [] { return base::GlobalSourceTable().size(); });
  m.def("cpp_meta_ops", &trace::CppMetaOps,
        "Operators whose output geometry comes from PyTorch's C++ Meta functions (no Python).");
  m.def("optrace_start", [](bool geometry) {
    absl::Status status = runtime::optrace::Start(geometry);
    if (!status.ok()) Raise(status);
  }, py::arg("geometry") = false);
  m.def("optrace_stop", [] { return runtime::optrace::Stop(); });
  m.def("optrace_storage_id", [](const py::object& t) -> int64_t {
          return THPVariable_Check(t.ptr()) ? runtime::optrace::StorageId(THPVariable_Unpack(t.ptr())) : -1;
        },
        "The storage id of a device tensor in the active geometry trace, or -1.");
  m.def("profile_start", [] {
    trace::DeviceState& state = StateOrRaise();
    absl::Status status = base::profiler::Start(std::string(base::ModeName(state.knobs.mode)));
    if (!status.ok()) Raise(status);
  }, "Starts recording profile events (RuntimeError if a profile is active).");
  m.def("profile_stop", [](const std::string& path) {
    absl::Status status;
    {
      py::gil_scoped_release no_gil;
      status = base::profiler::StopAndWrite(path);
    }
    if (!status.ok()) Raise(status);
  }, py::arg("path"), "Stops the active profile and writes its Chrome trace-event JSON to path.");
  m.def("profile_active", [] { return base::profiler::Active(); });
}

}  // namespace trn::python
