#include "python/bindings/source_capture.h"

#include <Python.h>
#include <frameobject.h>

#include <utility>

#include "absl/container/flat_hash_map.h"

namespace trn::python {
namespace {

// Guarded by the GIL (every access below holds it).
std::vector<std::string>* g_prefixes = new std::vector<std::string>();
// Code objects are kept alive (one reference each) so their addresses are never reused.
absl::flat_hash_map<PyCodeObject*, bool>* g_is_library = new absl::flat_hash_map<PyCodeObject*, bool>();
// Keyed by (code, last instruction offset): cheaper than computing the line number each time.
absl::flat_hash_map<std::pair<PyCodeObject*, int>, base::SourceId>* g_ids =
    new absl::flat_hash_map<std::pair<PyCodeObject*, int>, base::SourceId>();
// torch.compile graphs' generated files: line -> model location (SetGraphLines).
absl::flat_hash_map<std::string, absl::flat_hash_map<int, base::SourceLocation>>* g_graph_lines =
    new absl::flat_hash_map<std::string, absl::flat_hash_map<int, base::SourceLocation>>();
size_t g_code_limit = 16384;
int64_t g_code_released = 0;

// Drops every code reference and both memos (g_ids is keyed by the same code pointers).
void ReleaseCodeObjects() {
  for (auto& [code, library] : *g_is_library) Py_DECREF(code);
  g_code_released += static_cast<int64_t>(g_is_library->size());
  g_is_library->clear();
  g_ids->clear();
}

std::string AttrString(PyObject* obj, const char* name) {
  PyObject* v = PyObject_GetAttrString(obj, name);
  std::string out;
  if (v != nullptr && PyUnicode_Check(v)) {
    const char* s = PyUnicode_AsUTF8(v);
    out = s == nullptr ? "" : s;
  }
  Py_XDECREF(v);
  PyErr_Clear();
  return out;
}

bool IsLibrary(PyCodeObject* code) {
  auto it = g_is_library->find(code);
  if (it != g_is_library->end()) {
    return it->second;
  }
  const std::string file = AttrString(reinterpret_cast<PyObject*>(code), "co_filename");
  // "<string>"/"<stdin>" are user code (python -c, REPL); "<frozen importlib...>" is not.
  bool library = file.empty() || file.rfind("<frozen", 0) == 0;
  for (const std::string& p : *g_prefixes) {
    library = library || file.compare(0, p.size(), p) == 0;
  }
  if (g_is_library->size() >= g_code_limit) ReleaseCodeObjects();
  Py_INCREF(code);
  g_is_library->emplace(code, library);
  return library;
}

base::SourceId Intern(PyFrameObject* frame, PyCodeObject* code) {
  auto key = std::make_pair(code, PyFrame_GetLasti(frame));
  auto it = g_ids->find(key);
  if (it != g_ids->end()) {
    return it->second;
  }
  base::SourceLocation loc;
  loc.file = AttrString(reinterpret_cast<PyObject*>(code), "co_filename");
  loc.line = PyFrame_GetLineNumber(frame);
  loc.function = AttrString(reinterpret_cast<PyObject*>(code), "co_qualname");
  base::SourceId id = base::kNoSource;  // (a graph line without a model line: skipped)
  if (auto graph = g_graph_lines->find(loc.file); graph != g_graph_lines->end()) {
    if (auto it = graph->second.find(loc.line); it != graph->second.end()) {
      id = base::GlobalSourceTable().Intern(it->second);
    }
  } else {
    id = base::GlobalSourceTable().Intern(loc);
  }
  g_ids->emplace(key, id);  // `code` is already referenced by g_is_library
  return id;
}

}  // namespace

void SetLibraryPrefixes(std::vector<std::string> prefixes) { *g_prefixes = std::move(prefixes); }

void SetGraphLines(const std::string& file, const std::vector<std::pair<int, base::SourceLocation>>& lines) {
  auto& map = (*g_graph_lines)[file];
  for (const auto& [line, loc] : lines) map[line] = loc;
  g_ids->clear();  // (a memo entry may predate the mapping)
}

void SetCodeObjectLimit(size_t limit) {
  g_code_limit = limit < 1 ? 1 : limit;
  if (g_is_library->size() > g_code_limit) ReleaseCodeObjects();
}
size_t CodeObjectsKept() { return g_is_library->size(); }
int64_t CodeObjectsReleased() { return g_code_released; }

base::SourceId CaptureSource() {
  if (!Py_IsInitialized() || PyGILState_GetThisThreadState() == nullptr) {
    return base::kNoSource;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  base::SourceId id = base::kNoSource;
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    if (!IsLibrary(code)) {
      id = Intern(frame, code);
      if (id != base::kNoSource) {
        Py_DECREF(code);
        break;
      }
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  Py_XDECREF(frame);
  PyGILState_Release(gil);
  return id;
}

}  // namespace trn::python
