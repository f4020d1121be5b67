#include "scheduler/group_key.h"

#include <xxhash.h>

#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "runtime/host_view.h"
#include "runtime/op_runner.h"

namespace trn::scheduler {
namespace {

// Bump when the lowering changes what a key's code computes (invalidates on-disk caches).
constexpr char kSalt[] = "torch-trn host group v1";

class KeyWriter {
 public:
  void Tag(char t) { out_.push_back(t); }
  void Int(int64_t v) { Bytes(&v, sizeof v); }
  void Double(double v) { Bytes(&v, sizeof v); }
  void Str(const std::string& s) {
    Int(static_cast<int64_t>(s.size()));
    out_ += s;
  }
  void Ints(c10::IntArrayRef v) {
    Int(static_cast<int64_t>(v.size()));
    for (int64_t x : v) Int(x);
  }
  void Geometry(const at::Tensor& t) {
    Int(static_cast<int64_t>(t.scalar_type()));
    Ints(t.sizes());
    Ints(t.strides());
    Int(t.storage_offset());
  }
  void Tensor(const at::Tensor& t) {
    if (!t.defined()) {
      Tag('U');
      return;
    }
    if (runtime::IsDeviceTensor(t)) {
      Tag('T');
      Int(BufferId(t));
      Geometry(t);
      return;
    }
    Tag('H');
    Geometry(t);
    if (t.numel() * t.itemsize() <= 64 && t.is_contiguous()) {
      Bytes(t.data_ptr(), t.numel() * t.itemsize());
    } else {
      Tag('?');  // never lowered (Target::CanGroup): only its shape matters here
    }
  }
  void Scalar(const c10::Scalar& s) {
    if (s.isFloatingPoint()) {
      Tag('f');
      Double(s.toDouble());
    } else if (s.isBoolean()) {
      Tag('b');
      Int(s.toBool());
    } else if (s.isComplex()) {
      Tag('c');
      Double(s.toComplexDouble().real());
      Double(s.toComplexDouble().imag());
    } else {
      Tag('i');
      Int(s.toLong());
    }
  }
  void Value(const c10::IValue& v) {
    if (v.isNone()) {
      Tag('N');
    } else if (v.isTensor()) {
      Tensor(v.toTensor());
    } else if (v.isScalar()) {
      Scalar(v.toScalar());
    } else if (v.isString()) {
      Tag('s');
      Str(v.toStringRef());
    } else if (v.isIntList()) {
      Tag('l');
      Ints(v.toIntVector());
    } else if (v.isList()) {
      Tag('L');
      auto list = v.toListRef();
      Int(static_cast<int64_t>(list.size()));
      for (const c10::IValue& e : list) Value(e);
    } else if (v.isDevice()) {
      Tag('D');
      Str(v.toDevice().str());
    } else {
      Tag('?');
      Str(v.tagKind());
    }
  }
  int64_t BufferId(const at::Tensor& t) {
    auto [it, inserted] = ids_.try_emplace(t.storage().unsafeGetStorageImpl(), static_cast<int64_t>(ids_.size()));
    return it->second;
  }
  std::string Take() { return std::move(out_); }

 private:
  void Bytes(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
  absl::flat_hash_map<const c10::StorageImpl*, int64_t> ids_;
};

}  // namespace

std::string GroupKey::Hex() const { return absl::StrFormat("%016x", hash); }

GroupKey GroupKeyOf(std::string material) {
  GroupKey key;
  key.material = std::move(material);
  key.hash = XXH3_64bits(key.material.data(), key.material.size());
  return key;
}

GroupKey MakeGroupKey(const std::vector<const runtime::OpRecord*>& ops, const std::vector<at::Tensor>& inputs,
                      const std::vector<runtime::OutputBuffer>& outputs,
                      const std::vector<std::pair<int64_t, int64_t>>& runtime_scalars) {
  KeyWriter w;
  w.Str(kSalt);
  size_t next_scalar = 0;  // runtime_scalars are in (op, arg) order
  for (size_t i = 0; i < ops.size(); ++i) {
    const runtime::OpRecord* op = ops[i];
    w.Tag('O');
    w.Str(runtime::OpName(op->op));
    for (size_t j = 0; j < op->args.size(); ++j) {
      bool runtime_scalar = false;
      for (size_t k = next_scalar; k < runtime_scalars.size(); ++k) {
        if (runtime_scalars[k] == std::make_pair(static_cast<int64_t>(i), static_cast<int64_t>(j))) {
          runtime_scalar = true;
          break;
        }
      }
      if (runtime_scalar) {
        w.Tag('P');  // a runtime scalar: float, value passed at run time
        continue;
      }
      w.Value(op->args[j]);
    }
    w.Tag('>');
    for (const c10::IValue& o : op->outputs) w.Value(o);
  }
  w.Tag('I');
  for (const at::Tensor& t : inputs) w.Tensor(t);
  w.Tag('R');
  for (const runtime::OutputBuffer& o : outputs) {
    w.Tensor(o.tensor);
    w.Int(o.staged);
  }
  return GroupKeyOf(w.Take());
}

}  // namespace trn::scheduler
