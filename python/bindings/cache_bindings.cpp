// torch_trn._C, the compiled-group cache: its counters, settings and directory listing, and the
// bridge that lets the C++ distributed cache tier use torch.distributed's store from Python.
//
// Thread-safety: the bridge may be called from any C++ thread; it takes the GIL for each store
// call and refuses (an error status, never a crash) once the interpreter is finalizing.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "python/bindings/bindings.h"
#include "python/bindings/edge.h"
#include "python/bindings/source_capture.h"
#include "runtime/cache/disk_cache.h"
#include "runtime/cache/entry_format.h"
#include "runtime/cache/remote_tier.h"

namespace py = pybind11;

namespace trn::python {
namespace {

using runtime::cache::CacheCounters;

bool PythonUsable() { return Py_IsInitialized() && !_Py_IsFinalizing(); }

// torch_trn._dist_cache's adapter object (get / set / compare_set on torch.distributed's store).
class PyRemoteStore : public runtime::cache::RemoteStore {
 public:
  PyRemoteStore(py::object adapter, int rank) : adapter_(new py::object(std::move(adapter))), rank_(rank) {}
  ~PyRemoteStore() override {
    if (PythonUsable()) {
      py::gil_scoped_acquire gil;
      delete adapter_;
    }  // else: the interpreter is gone; leak the reference rather than touch it
  }
  int rank() const override { return rank_; }

  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override {
    return Call<std::optional<std::string>>("get", [&](py::object& a) -> std::optional<std::string> {
      py::object v = a.attr("get")(key);
      if (v.is_none()) return std::nullopt;
      return std::string(py::bytes(v));
    });
  }
  absl::Status Set(const std::string& key, const std::string& value) override {
    return Call<bool>("set", [&](py::object& a) {
             a.attr("set")(key, py::bytes(value));
             return true;
           })
        .status();
  }
  absl::StatusOr<std::string> CompareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) override {
    return Call<std::string>("compare_set", [&](py::object& a) {
      return std::string(py::bytes(a.attr("compare_set")(key, py::bytes(expected), py::bytes(desired))));
    });
  }
  absl::Status DeleteKey(const std::string& key) override {
    return Call<bool>("delete", [&](py::object& a) {
             a.attr("delete")(key);
             return true;
           })
        .status();
  }

 private:
  template <typename T, typename F>
  absl::StatusOr<T> Call(const char* what, F&& f) {
    if (!PythonUsable()) return absl::UnavailableError("the Python interpreter is shutting down");
    py::gil_scoped_acquire gil;
    try {
      return f(*adapter_);
    } catch (py::error_already_set& e) {
      return absl::UnavailableError(absl::StrCat("torch.distributed store ", what, ": ", e.what()));
    }
  }

  py::object* adapter_;  // deleted with the GIL held
  const int rank_;
};

std::shared_ptr<runtime::cache::RemoteStore> ProvideStore() {
  if (!PythonUsable()) return nullptr;
  py::gil_scoped_acquire gil;
  // Without torch.distributed loaded there is no process group: answer without importing
  // anything. (An import here can deadlock: a flush on the autograd thread during
  // `import torch_trn`'s warm-up backward would wait for the package the main thread is still
  // initialising. The tier asks again at later flushes.)
  PyObject* modules = PyImport_GetModuleDict();
  PyObject* package = modules == nullptr ? nullptr : PyDict_GetItemString(modules, "torch_trn");
  if (package == nullptr || PyDict_GetItemString(modules, "torch.distributed") == nullptr) {
    return nullptr;
  }
  try {
    py::object spec = py::reinterpret_borrow<py::object>(package).attr("__spec__");
    if (!spec.is_none() && py::bool_(py::getattr(spec, "_initializing", py::bool_(false)))) {
      return nullptr;  // torch_trn is still being imported
    }
    py::object adapter = py::module_::import("torch_trn._dist_cache").attr("store_for_cache")();
    if (adapter.is_none()) return nullptr;
    const int rank = adapter.attr("rank").cast<int>();
    return std::make_shared<PyRemoteStore>(std::move(adapter), rank);
  } catch (py::error_already_set& e) {
    PyErr_Clear();
    return nullptr;
  }
}

py::dict CacheStatsDict(trace::DeviceState& state) {
  const CacheCounters c = state.stream.cache_stats().Snapshot();
  scheduler::GroupCompiler& compiler = state.stream.compiler();
  py::dict memory;
  memory["hits"] = c.mem_hits;
  memory["misses"] = c.mem_misses;
  memory["entries"] = compiler.cache().size();
  memory["bytes"] = compiler.cache().bytes();
  memory["evictions"] = c.mem_evictions;
  py::dict disk;
  runtime::cache::DiskCache* d = compiler.disk();
  disk["enabled"] = d != nullptr;
  disk["dir"] = d != nullptr ? d->dir() : std::string();
  disk["readonly"] = d != nullptr && d->readonly();
  disk["hits"] = c.disk_hits;
  disk["misses"] = c.disk_misses;
  disk["writes"] = c.disk_writes;
  disk["write_errors"] = c.disk_write_errors;
  disk["bytes_read"] = c.disk_bytes_read;
  disk["bytes_written"] = c.disk_bytes_written;
  disk["evictions"] = c.disk_evictions;
  disk["rejected"] = c.disk_rejected;
  // The disk tier's plan entries (scheduler/plan_store.h): segments whose plans a flush loaded
  // (hits) or looked for in vain (misses), entries written, rejected by reason.
  py::dict plans;
  plans["hits"] = c.plan_hits;
  plans["misses"] = c.plan_misses;
  plans["writes"] = c.plan_writes;
  plans["write_errors"] = c.plan_write_errors;
  plans["bytes_read"] = c.plan_bytes_read;
  plans["bytes_written"] = c.plan_bytes_written;
  plans["rejected"] = c.plan_rejected;
  py::dict remote;
  runtime::cache::RemoteTier* r = compiler.remote();
  remote["enabled"] = r != nullptr;
  int rank = -1;
  if (r != nullptr) {
    py::gil_scoped_release no_gil;  // rank() may ask the provider, which takes the GIL itself
    rank = r->rank();
  }
  remote["rank"] = rank;
  remote["fetches"] = c.remote_fetches;
  remote["misses"] = c.remote_misses;
  remote["publishes"] = c.remote_publishes;
  remote["lease_claims"] = c.lease_claims;
  remote["lease_waits"] = c.lease_waits;
  remote["lease_takeovers"] = c.lease_takeovers;
  remote["failures_published"] = c.failures_published;
  remote["errors"] = c.remote_errors;
  py::dict out;
  out["memory"] = memory;
  out["disk"] = disk;
  out["plans"] = plans;
  out["remote"] = remote;
  out["compiles"] = c.compiles;
  out["compile_seconds"] = c.compile_seconds;
  out["miss_explanations"] = c.miss_explanations;
  // Bounded state (docs/memory.md): what the caps made the runtime forget so far.
  py::dict bounded;
  bounded["history_dropped"] = c.history_dropped;
  bounded["explainer_forgotten"] = c.explainer_forgotten;
  bounded["store_entries_deleted"] = c.store_entries_deleted;
  bounded["code_objects_kept"] = CodeObjectsKept();
  bounded["code_objects_released"] = CodeObjectsReleased();
  out["bounded"] = bounded;
  return out;
}

py::list Entries(const std::string& dir, bool verify) {
  const auto& knobs = base::GetKnobs();
  const int64_t uid = knobs.ok() ? knobs->test_cache_uid : -1;
  std::vector<runtime::cache::EntryInfo> entries;
  {
    py::gil_scoped_release no_gil;
    entries = runtime::cache::ListEntries(dir, verify, uid);
  }
  py::list out;
  for (const runtime::cache::EntryInfo& e : entries) {
    py::dict d;
    d["path"] = e.path;
    d["kind"] = e.kind;
    d["size"] = e.size;
    d["mtime"] = e.mtime;
    d["key"] = e.key;
    d["opt_level"] = e.kind == "entry" ? e.levels.opt : -1;
    d["codegen_level"] = e.kind == "entry" ? e.levels.codegen : -1;
    d["tier"] = e.tier;
    d["ops"] = -1;
    d["status"] = e.status;
    d["compiler_version"] = e.compiler_version;
    d["target"] = e.target;
    out.append(d);
  }
  return out;
}

}  // namespace

void RegisterCacheBindings(py::module& m) {
  runtime::cache::SetRemoteStoreProvider(&ProvideStore);
  m.def("cache_stats", [] { return CacheStatsDict(StateOrRaise()); },
        "Counters of the compiled-code caches (memory, disk, distributed) of this process.");
  m.def("_set_code_object_limit", &SetCodeObjectLimit, py::arg("limit"),
        "Tests: how many Python code objects source capture may keep referenced (default 16384).");
  m.def("reset_cache_stats", [] { StateOrRaise().stream.cache_stats().Reset(); });
  m.def("cache_info", [] {
    trace::DeviceState& s = StateOrRaise();
    scheduler::GroupCompiler& compiler = s.stream.compiler();
    py::dict d;
    d["dir"] = s.knobs.cache_dir;
    d["enabled"] = compiler.disk() != nullptr;
    d["readonly"] = s.knobs.cache_readonly;
    d["max_bytes"] = s.knobs.cache_disk_bytes;
    d["format_version"] = runtime::cache::kFormatVersion;
    d["compiler_version"] = compiler.identity().compiler_version;
    d["target"] = compiler.identity().target;
    return d;
  }, "The disk cache's settings and this build's entry identity.");
  m.def("cache_entries", &Entries, py::arg("dir"), py::arg("verify") = true,
        "Every file in a cache directory: entries (verified when asked), temp files, foreign files.");
  m.def("cache_clear", [](const std::string& dir) {
    py::gil_scoped_release no_gil;
    return runtime::cache::ClearEntries(dir);
  }, py::arg("dir"), "Removes every entry and temp file of a cache directory; returns how many.");
  m.def("cache_remove", [](const std::string& path) {
    if (::unlink(path.c_str()) != 0) {
      throw std::runtime_error(absl::StrCat("cannot remove ", path, ": ", std::strerror(errno)));
    }
  }, py::arg("path"), "Removes one cache entry file.");
}

}  // namespace trn::python
