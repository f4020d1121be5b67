#include "trace/graph_replay.h"

#include <ATen/core/List.h>
#include <c10/core/TensorImpl.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "runtime/host_view.h"
#include "base/profiler.h"
#include "runtime/schema_util.h"
#include "trace/device_state.h"
#include "trace/fallback.h"

namespace trn::trace {

namespace {

// A tensor of a record or of the graph's outputs: its storage slot and geometry (slot -1: an
// undefined tensor, or None in an optional-tensor list).
struct TensorRef {
  int32_t slot = -1;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  c10::ScalarType dtype = c10::kFloat;
  bool conj = false;
  bool neg = false;
};

struct ValueT {
  enum class Kind { kConst, kTensor, kTensorList, kOptTensorList, kInput } kind = Kind::kConst;
  c10::IValue constant;           // kConst
  std::vector<TensorRef> tensors;  // kTensor (one), kTensorList, kOptTensorList
  int input = -1;                  // kInput: the graph output is input `input` itself
};

struct RecordT {
  explicit RecordT(c10::OperatorHandle op_in) : op(std::move(op_in)) {}
  c10::OperatorHandle op;
  std::vector<ValueT> args;
  std::vector<ValueT> outputs;
  base::SourceId source = base::kNoSource;
};

struct Slot {
  enum class Kind { kInput, kFresh, kConst } kind = Kind::kFresh;
  int input = -1;          // kInput
  size_t nbytes = 0;       // kFresh
  c10::Storage constant;  // kConst
};

}  // namespace

struct GraphTemplate {
  std::vector<Slot> slots;
  std::vector<RecordT> records;
  std::vector<ValueT> outputs;
  std::vector<int> written_inputs;  // inputs an op writes in place: their versions are bumped
  // Per record: the fresh slots it is the last to reference (and no graph output does). A
  // replay drops its own handle on such a storage once the record is appended, as the graph's
  // code drops an intermediate after its last use: a flush inside the replay then counts the
  // same references as it did in the capture (so it decides the same group outputs and keys).
  std::vector<std::vector<int32_t>> release_after;
};

// The capture of one thread (see graph_replay.h).
class GraphCapture {
 public:
  explicit GraphCapture(const std::vector<c10::IValue>& inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].isTensor() || !inputs[i].toTensor().defined()) continue;
      const at::Tensor& t = inputs[i].toTensor();
      input_impls_.emplace(t.unsafeGetTensorImpl(), static_cast<int>(i));
      if (!runtime::IsDeviceTensor(t)) continue;
      auto [it, added] = slot_of_.emplace(t.storage().unsafeGetStorageImpl(), 0);
      if (added) {
        it->second = static_cast<int>(tmpl_.slots.size());
        Slot s;
        s.kind = Slot::Kind::kInput;
        s.input = static_cast<int>(i);
        tmpl_.slots.push_back(std::move(s));
        keep_.push_back(t.storage().getWeakStorageImpl());
      }
    }
  }

  void Refuse(std::string reason) {
    if (refusal_.empty()) refusal_ = std::move(reason);
  }
  const std::string& refusal() const { return refusal_; }
  void NoteAllocation(const void* data) { allocated_.insert(data); }
  // A resize of a storage made during the graph replays (its slot gets the final size); of any
  // other storage it does not.
  void NoteResize(const c10::Storage& s) {
    if (s.nbytes() != 0 && !allocated_.contains(s.data())) Refuse("resize_ of a tensor the graph did not make");
  }

  void NoteRecord(const runtime::OpRecord& r) {
    if (!refusal_.empty()) return;
    RecordT t(r.op);
    const c10::FunctionSchema& schema = r.op.schema();
    t.args.reserve(r.args.size());
    for (size_t j = 0; j < r.args.size(); ++j) {
      t.args.push_back(Describe(r.args[j], runtime::OpName(r.op)));
      if (runtime::WritesArg(schema, static_cast<int>(j))) NoteWritten(t.args.back());
    }
    for (const c10::IValue& o : r.outputs) t.outputs.push_back(Describe(o, runtime::OpName(r.op)));
    t.source = r.source;
    tmpl_.records.push_back(std::move(t));
  }

  // The template, once the graph returned `outputs`; null with refusal() set when refused.
  std::shared_ptr<const GraphTemplate> Finish(const std::vector<c10::IValue>& outputs) {
    for (const c10::IValue& o : outputs) {
      if (o.isTensor() && o.toTensor().defined()) {
        auto it = input_impls_.find(o.toTensor().unsafeGetTensorImpl());
        if (it != input_impls_.end()) {
          ValueT v;
          v.kind = ValueT::Kind::kInput;
          v.input = it->second;
          tmpl_.outputs.push_back(std::move(v));
          continue;
        }
      }
      if (o.isTensor() && o.toTensor().defined() && !runtime::IsDeviceTensor(o.toTensor())) {
        Refuse("a host tensor output (a replay would return the same object every call)");
      }
      tmpl_.outputs.push_back(Describe(o, "the graph's outputs"));
    }
    if (!refusal_.empty()) return nullptr;
    constexpr size_t kKept = ~size_t{0};
    std::vector<size_t> last(tmpl_.slots.size(), kKept);
    auto note = [&](const ValueT& v, size_t at) {
      for (const TensorRef& r : v.tensors) {
        if (r.slot >= 0) last[r.slot] = at;
      }
    };
    for (size_t i = 0; i < tmpl_.records.size(); ++i) {
      for (const ValueT& v : tmpl_.records[i].args) note(v, i);
      for (const ValueT& v : tmpl_.records[i].outputs) note(v, i);
    }
    for (const ValueT& v : tmpl_.outputs) {
      for (const TensorRef& r : v.tensors) {
        if (r.slot >= 0) last[r.slot] = kKept;
      }
    }
    tmpl_.release_after.resize(tmpl_.records.size());
    for (size_t slot = 0; slot < last.size(); ++slot) {
      if (tmpl_.slots[slot].kind == Slot::Kind::kFresh && last[slot] != kKept) {
        tmpl_.release_after[last[slot]].push_back(static_cast<int32_t>(slot));
      }
    }
    return std::make_shared<GraphTemplate>(std::move(tmpl_));
  }

 private:
  TensorRef Ref(const at::Tensor& t) {
    TensorRef r;
    if (!t.defined()) return r;
    c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
    auto [it, added] = slot_of_.emplace(s, 0);
    if (added) {
      it->second = static_cast<int>(tmpl_.slots.size());
      Slot slot;
      const void* data = t.storage().data();
      if (t.storage().nbytes() == 0 || allocated_.contains(data)) {
        slot.kind = Slot::Kind::kFresh;  // made during the graph: a new storage per replay
      } else {
        slot.kind = Slot::Kind::kConst;  // made before: a constant the graph reads
        slot.constant = t.storage();
      }
      tmpl_.slots.push_back(std::move(slot));
      // A weak reference: the StorageImpl's address is not reused while the capture lasts, and
      // its use count (which a flush inside the capture reads) stays the program's.
      keep_.push_back(t.storage().getWeakStorageImpl());
    }
    r.slot = it->second;
    Slot& slot = tmpl_.slots[r.slot];
    if (slot.kind == Slot::Kind::kFresh) {  // (resized out= results grow: keep the largest size)
      slot.nbytes = std::max(slot.nbytes, t.storage().nbytes());
    }
    r.sizes = t.sizes().vec();
    r.strides = t.strides().vec();
    r.offset = t.storage_offset();
    r.dtype = t.scalar_type();
    r.conj = t.is_conj();
    r.neg = t.is_neg();
    return r;
  }

  ValueT Describe(const c10::IValue& v, const std::string& where) {
    ValueT out;
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined() && !runtime::IsDeviceTensor(t)) {
        out.constant = v;  // a private host copy or a wrapped number: the same every call
        return out;
      }
      out.kind = ValueT::Kind::kTensor;
      out.tensors.push_back(Ref(t));
      return out;
    }
    if (v.isTensorList()) {
      out.kind = ValueT::Kind::kTensorList;
      for (const at::Tensor& t : v.toTensorList()) {
        if (t.defined() && !runtime::IsDeviceTensor(t)) Refuse(absl::StrCat("a host tensor in a tensor list of ", where));
        out.tensors.push_back(Ref(t));
      }
      return out;
    }
    if (v.isList() && v.toListRef().size() > 0 && (v.toListRef()[0].isTensor() || v.toListRef()[0].isNone())) {
      out.kind = ValueT::Kind::kOptTensorList;
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isNone()) {
          out.tensors.emplace_back();
        } else if (e.isTensor() && (!e.toTensor().defined() || runtime::IsDeviceTensor(e.toTensor()))) {
          out.tensors.push_back(Ref(e.toTensor()));
        } else {
          Refuse(absl::StrCat("an argument of ", where, " is a list of ", e.tagKind()));
          return out;
        }
      }
      return out;
    }
    bool has_tensor = false;
    runtime::ForEachTensor(v, [&](const at::Tensor&) { has_tensor = true; });
    if (has_tensor) Refuse(absl::StrCat("an argument of ", where, " is a ", v.tagKind(), " holding tensors"));
    out.constant = v;
    return out;
  }

  void NoteWritten(const ValueT& v) {
    for (const TensorRef& r : v.tensors) {
      if (r.slot >= 0 && tmpl_.slots[r.slot].kind == Slot::Kind::kInput) {
        tmpl_.written_inputs.push_back(tmpl_.slots[r.slot].input);
      }
    }
  }

  GraphTemplate tmpl_;
  std::string refusal_;
  absl::flat_hash_set<const void*> allocated_;
  absl::flat_hash_map<const c10::StorageImpl*, int> slot_of_;
  absl::flat_hash_map<const c10::TensorImpl*, int> input_impls_;
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> keep_;
};

namespace {

thread_local GraphCapture* t_capture = nullptr;

// The inputs' signature (graph_replay.h); false when an input cannot be replayed.
bool Signature(const std::vector<c10::IValue>& inputs, std::string* out) {
  out->clear();
  absl::flat_hash_map<const c10::StorageImpl*, int32_t> first;
  auto put = [out](const auto& x) { out->append(reinterpret_cast<const char*>(&x), sizeof(x)); };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const c10::IValue& v = inputs[i];
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (!t.defined()) {
        out->push_back('u');
        continue;
      }
      if (!runtime::IsDeviceTensor(t) || t.layout() != c10::kStrided) return false;
      out->push_back('t');
      put(static_cast<int8_t>(t.scalar_type()));
      put(static_cast<int8_t>(t.is_conj() * 2 + t.is_neg()));
      put(static_cast<int32_t>(t.dim()));
      for (int64_t s : t.sizes()) put(s);
      for (int64_t s : t.strides()) put(s);
      put(t.storage_offset());
      auto [it, added] = first.emplace(t.storage().unsafeGetStorageImpl(), static_cast<int32_t>(i));
      put(added ? int32_t{-1} : it->second);
    } else if (v.isInt()) {
      out->push_back('i');
      put(v.toInt());
    } else if (v.isDouble()) {
      out->push_back('d');
      put(v.toDouble());
    } else if (v.isBool()) {
      out->push_back(v.toBool() ? 'B' : 'b');
    } else if (v.isNone()) {
      out->push_back('n');
    } else {
      return false;  // SymInts (dynamic shapes), generators, ...: run normally
    }
  }
  return true;
}

at::Tensor OverStorage(const c10::Storage& storage, const TensorRef& r) {
  if (r.slot < 0) return at::Tensor();
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(storage), DeviceKeySet(),
                                                   c10::scalarTypeToTypeMeta(r.dtype));
  impl->set_sizes_and_strides(r.sizes, r.strides, r.offset);
  if (r.conj) impl->_set_conj(true);
  if (r.neg) impl->_set_neg(true);
  return at::Tensor(std::move(impl));
}

c10::IValue Value(const ValueT& v, const std::vector<c10::Storage>& st, const std::vector<c10::IValue>& inputs) {
  switch (v.kind) {
    case ValueT::Kind::kConst:
      return v.constant;
    case ValueT::Kind::kInput:
      return inputs[v.input];
    case ValueT::Kind::kTensor: {
      const TensorRef& r = v.tensors[0];
      return OverStorage(r.slot < 0 ? c10::Storage() : st[r.slot], r);
    }
    case ValueT::Kind::kTensorList: {
      c10::List<at::Tensor> list;
      list.reserve(v.tensors.size());
      for (const TensorRef& r : v.tensors) list.push_back(OverStorage(r.slot < 0 ? c10::Storage() : st[r.slot], r));
      return list;
    }
    case ValueT::Kind::kOptTensorList: {
      c10::List<std::optional<at::Tensor>> list;
      list.reserve(v.tensors.size());
      for (const TensorRef& r : v.tensors) {
        if (r.slot < 0) {
          list.push_back(std::nullopt);
        } else {
          list.push_back(OverStorage(st[r.slot], r));
        }
      }
      return list;
    }
  }
  return c10::IValue();
}

std::vector<c10::IValue> Run(const GraphTemplate& t, const std::vector<c10::IValue>& inputs) {
  DeviceState& state = State();
  const int64_t begin_ns = base::MonotonicNs();
  std::vector<c10::Storage> st;
  st.reserve(t.slots.size());
  for (const Slot& s : t.slots) {
    switch (s.kind) {
      case Slot::Kind::kInput:
        st.push_back(inputs[s.input].toTensor().storage());
        break;
      case Slot::Kind::kFresh:
        st.emplace_back(c10::Storage::use_byte_size_t(), s.nbytes, DeviceAllocator(), /*resizable=*/true);
        break;
      case Slot::Kind::kConst:
        st.push_back(s.constant);
        break;
    }
  }
  const int64_t flush_ns_before = scheduler::FlushNsOnThisThread();
  for (size_t i = 0; i < t.records.size(); ++i) {
    const RecordT& r = t.records[i];
    std::vector<c10::IValue> args;
    args.reserve(r.args.size());
    for (const ValueT& a : r.args) args.push_back(Value(a, st, inputs));
    runtime::OpRecord record(r.op, std::move(args));
    record.outputs.reserve(r.outputs.size());
    for (const ValueT& o : r.outputs) record.outputs.push_back(Value(o, st, inputs));
    record.source = r.source;
    AppendRecord(state, std::move(record), base::profiler::NowUs());
    for (int32_t slot : t.release_after[i]) st[slot] = c10::Storage();
  }
  for (int k : t.written_inputs) inputs[k].toTensor().unsafeGetTensorImpl()->bump_version();
  std::vector<c10::IValue> outputs;
  outputs.reserve(t.outputs.size());
  for (const ValueT& o : t.outputs) outputs.push_back(Value(o, st, inputs));
  const int64_t n = static_cast<int64_t>(t.records.size());
  state.stats.CountGraphReplay(n);
  state.stats.AddTime(base::HostTime::kRecord,
                      base::MonotonicNs() - begin_ns - (scheduler::FlushNsOnThisThread() - flush_ns_before), n);
  return outputs;
}

}  // namespace

GraphReplayer::GraphReplayer() = default;
GraphReplayer::~GraphReplayer() = default;

std::optional<std::vector<c10::IValue>> GraphReplayer::Replay(const std::vector<c10::IValue>& inputs,
                                                              bool* run_normally) {
  thread_local std::string sig;
  *run_normally = !Signature(inputs, &sig);
  if (*run_normally) return std::nullopt;
  std::shared_ptr<const GraphTemplate> t;
  {
    absl::MutexLock lock(&mu_);
    auto it = templates_.find(sig);
    if (it == templates_.end()) {
      *run_normally = refused_.contains(sig);
      return std::nullopt;
    }
    t = it->second;
  }
  return Run(*t, inputs);
}

void GraphReplayer::BeginCapture(const std::vector<c10::IValue>& inputs) {
  delete t_capture;  // (a capture left by a graph that raised past AbortCapture)
  t_capture = new GraphCapture(inputs);
}

void GraphReplayer::AbortCapture() {
  delete t_capture;
  t_capture = nullptr;
}

absl::Status GraphReplayer::EndCapture(const std::vector<c10::IValue>& inputs,
                                       const std::vector<c10::IValue>& outputs) {
  std::unique_ptr<GraphCapture> capture(t_capture);
  t_capture = nullptr;
  std::string sig;
  if (capture == nullptr) return absl::FailedPreconditionError("graph replay: no capture is active on this thread");
  if (!Signature(inputs, &sig)) return absl::FailedPreconditionError("graph replay: the inputs cannot be replayed");
  std::shared_ptr<const GraphTemplate> t = capture->Finish(outputs);
  absl::MutexLock lock(&mu_);
  if (t == nullptr) {
    refused_.emplace(sig, capture->refusal());
    State().stats.CountGraphCaptureRefused();
    return absl::FailedPreconditionError(absl::StrCat("graph replay refused: ", capture->refusal()));
  }
  templates_.emplace(sig, std::move(t));
  return absl::OkStatus();
}

void CaptureNoteRecord(const runtime::OpRecord& record) {
  if (t_capture != nullptr) t_capture->NoteRecord(record);
}
void CaptureNoteAllocation(const void* data) {
  if (t_capture != nullptr) t_capture->NoteAllocation(data);
}
void CaptureNoteResize(const c10::Storage& storage) {
  if (t_capture != nullptr) t_capture->NoteResize(storage);
}
void CaptureRefuse(const char* reason) {
  if (t_capture != nullptr) t_capture->Refuse(reason);
}
bool CaptureActive() { return t_capture != nullptr; }

}  // namespace trn::trace
