#include "trace/meta_cache.h"

#include <cstring>

#include "absl/strings/match.h"

#include "runtime/host_view.h"
#include "trace/cpp_meta.h"
#include "trace/snapshot.h"

namespace trn::trace {
namespace {

template <class T>
void Put(std::string* key, const T& v) {
  key->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void PutInts(std::string* key, c10::IntArrayRef v) {
  Put(key, v.size());
  key->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
}

// Ops whose Meta outcome cannot depend on the values of their floating-point scalars: pointwise
// ops (the result has the broadcast geometry; a scalar's kind, kept in the key, may promote the
// dtype, its value cannot) and the _foreach_ ops (one pointwise op per list element). For these
// the key leaves out double and complex values and host scalars' contents, so AdamW's
// step-dependent `lr / bias_correction` does not miss every step. Integer values stay in: an
// integer exponent's sign decides whether pow() raises.
bool ValueFree(const c10::OperatorHandle& op) {
  thread_local absl::flat_hash_map<const c10::FunctionSchema*, bool> memo;
  const c10::FunctionSchema& schema = op.schema();
  auto [it, inserted] = memo.try_emplace(&schema, false);
  if (inserted) {
    it->second = op.hasTag(at::Tag::pointwise) || absl::StartsWith(schema.name(), "aten::_foreach_");
  }
  return it->second;
}

void PutTensor(std::string* key, const at::Tensor& t, bool value_free) {
  if (!t.defined()) {
    key->push_back('u');
    return;
  }
  const bool host = !runtime::IsDeviceTensor(t);
  key->push_back(host ? 'h' : 'd');
  Put(key, static_cast<int8_t>(t.scalar_type()));
  PutInts(key, t.sizes());
  PutInts(key, t.strides());
  Put(key, t.storage_offset());
  Put(key, t.storage().nbytes());
  Put(key, static_cast<uint8_t>(t.is_conj() | (t.is_neg() << 1) |
                                (t.unsafeGetTensorImpl()->is_wrapped_number() << 2)));
  if (host && t.dim() == 0 && t.data_ptr() != nullptr && !(value_free && t.is_floating_point())) {
    // Host scalars stay host tensors during Meta inference; key on their value too.
    key->append(static_cast<const char*>(t.data_ptr()), t.itemsize());
  }
}

bool PutValue(std::string* key, const c10::IValue& v, bool value_free) {
  if (v.isTensor()) {
    PutTensor(key, v.toTensor(), value_free);
  } else if (v.isNone()) {
    key->push_back('n');
  } else if (v.isInt()) {
    key->push_back('i');
    Put(key, v.toInt());
  } else if (v.isDouble()) {
    key->push_back('f');
    if (!value_free) Put(key, v.toDouble());
  } else if (v.isBool()) {
    key->push_back('b');
    Put(key, v.toBool());
  } else if (v.isComplexDouble()) {
    key->push_back('c');
    if (!value_free) Put(key, v.toComplexDouble());
  } else if (v.isSymInt()) {
    auto i = v.toSymInt().maybe_as_int();
    if (!i.has_value()) {
      return false;
    }
    key->push_back('i');
    Put(key, *i);
  } else if (v.isString()) {
    key->push_back('s');
    const std::string& s = v.toStringRef();
    Put(key, s.size());
    key->append(s);
  } else if (v.isIntList()) {
    key->push_back('I');
    PutInts(key, v.toIntVector());
  } else if (v.isDoubleList()) {
    key->push_back('F');
    if (value_free) {
      Put(key, v.toDoubleVector().size());
    } else {
      for (double d : v.toDoubleVector()) {
        Put(key, d);
      }
    }
    key->push_back(';');
  } else if (v.isBoolList()) {
    key->push_back('B');
    for (bool b : v.toBoolList()) {
      Put(key, b);
    }
    key->push_back(';');
  } else if (v.isTensorList() || v.isOptionalTensorList()) {
    key->push_back('L');
    bool ok = true;
    runtime::ForEachTensor(v, [&](const at::Tensor& t) { PutTensor(key, t, value_free); });
    key->push_back(';');
    if (v.isOptionalTensorList()) {
      // None entries matter (index() with None means "full slice"): record the pattern.
      for (std::optional<at::Tensor> t : v.toOptionalTensorList()) {
        key->push_back(t.has_value() ? '1' : '0');
      }
    }
    return ok;
  } else if (v.isDevice()) {
    key->push_back('D');
    Put(key, static_cast<int8_t>(v.toDevice().type()));
  } else if (v.isGenerator()) {
    key->push_back('g');  // shapes never depend on the generator
  } else if (v.isList()) {  // Scalar[] (the _foreach_ ops' ScalarList), SymInt[], ...
    key->push_back('[');
    for (const c10::IValue& e : v.toListRef()) {
      if (!PutValue(key, e, value_free)) {
        return false;
      }
    }
    key->push_back(']');
  } else {
    return false;  // tuples, objects, symbolic ints: not keyed
  }
  return true;
}

}  // namespace

Geometry Geometry::Of(const at::Tensor& t) {
  Geometry g;
  g.defined = t.defined();
  if (g.defined) {
    g.sizes = t.sizes().vec();
    g.strides = t.strides().vec();
    g.offset = t.storage_offset();
    g.dtype = t.scalar_type();
  }
  return g;
}

MetaOutcome InferWithMeta(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
  MetaOutcome out;
  torch::jit::Stack stack;
  stack.reserve(args.size());
  for (const c10::IValue& a : args) {
    if (a.isDevice() && a.toDevice().type() == c10::DeviceType::PrivateUse1) {
      stack.emplace_back(c10::Device(c10::kMeta));
      continue;
    }
    // Host scalars (0-dim CPU tensors, e.g. Python numbers wrapped by the arg parser) stay on the
    // host: kernels accept them next to any device, and Python meta kernels unwrap them.
    stack.push_back(runtime::MapTensors(a, [](const at::Tensor& t) {
      const bool host_scalar = t.defined() && t.device().is_cpu() && t.dim() == 0;
      return t.defined() && !host_scalar ? MetaTwin(t) : t;
    }));
  }
  std::vector<c10::IValue> twins = stack;  // in-place ops restride these
  try {
    // PyTorch's C++ structured Meta function where cpp_meta.h has it (no Python), else the
    // dispatcher's Meta kernel (in torch 2.14 mostly Python).
    if (const c10::KernelFunction* cpp = CppMetaKernel(op, args)) {
      cpp->callBoxed(op, c10::DispatchKeySet(c10::DispatchKey::Meta), &stack);
    } else {
      op.callBoxed(&stack);
    }
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    out.fallback_reason = msg.find("Meta") != std::string::npos ? "no Meta kernel" : "Meta kernel raised";
    return out;
  }
  for (const c10::IValue& r : stack) {
    ValueGeometry vg;
    if (r.isTensor()) {
      vg.kind = ValueGeometry::Kind::kTensor;
      vg.tensors.push_back(Geometry::Of(r.toTensor()));
    } else if (r.isTensorList()) {
      vg.kind = ValueGeometry::Kind::kList;
      for (const at::Tensor& t : r.toTensorList()) {
        vg.tensors.push_back(Geometry::Of(t));
      }
    } else if (!r.isNone()) {
      out.fallback_reason = "returns a host value";
      out.returns.clear();
      return out;
    }
    out.returns.push_back(std::move(vg));
  }
  const auto& schema = op.schema();
  out.written.resize(args.size());
  for (size_t j = 0; j < args.size() && j < schema.arguments().size(); ++j) {
    const c10::AliasInfo* a = schema.arguments()[j].alias_info();
    if (a != nullptr && a->isWrite() && twins[j].isTensor()) {
      out.written[j] = Geometry::Of(twins[j].toTensor());
    }
  }
  return out;
}

bool MetaCache::KeyInto(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, std::string* key) {
  key->clear();
  Put(key, &op.schema());  // operator definitions live as long as the process
  const bool value_free = ValueFree(op);
  for (const c10::IValue& a : args) {
    if (!PutValue(key, a, value_free)) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> MetaCache::Key(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
  std::string key;
  key.reserve(128);
  if (!KeyInto(op, args, &key)) {
    return std::nullopt;
  }
  return key;
}

std::shared_ptr<const MetaOutcome> MetaCache::Find(absl::string_view key) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return it->second;
}

void MetaCache::Insert(std::string key, std::shared_ptr<const MetaOutcome> outcome) {
  absl::MutexLock lock(&mu_);
  if (entries_.size() >= capacity_) {
    entries_.clear();  // a workload with this many distinct shapes: start over
  }
  entries_.emplace(std::move(key), std::move(outcome));
}

int64_t MetaCache::hits() const {
  absl::MutexLock lock(&mu_);
  return hits_;
}

int64_t MetaCache::misses() const {
  absl::MutexLock lock(&mu_);
  return misses_;
}

}  // namespace trn::trace
