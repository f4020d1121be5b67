#include "scheduler/plan_cache.h"

#include <xxhash.h>

#include <cstring>

#include "runtime/host_view.h"

namespace trn::scheduler {
namespace {

// What the hasher needs of an operator, computed once per operator and thread: the hash of its
// name (the text, so that every process hashes alike: plans are kept on disk, plan_store.h) and
// which arguments are Scalars (their values are runtime values, left out of the hash). Keyed by
// the schema's address (the dispatcher keeps schemas for the process's lifetime).
struct OpInfo {
  uint64_t name_hash = 0;
  std::vector<bool> scalar_arg;
};

const OpInfo& InfoOf(const c10::OperatorHandle& op) {
  thread_local absl::flat_hash_map<const c10::FunctionSchema*, OpInfo> memo;
  const c10::FunctionSchema& schema = op.schema();
  auto [it, inserted] = memo.try_emplace(&schema);
  if (inserted) {
    const c10::OperatorName& name = schema.operator_name();
    const std::string text = name.name + "." + name.overload_name;
    it->second.name_hash = XXH3_64bits(text.data(), text.size());
    for (const c10::Argument& a : schema.arguments()) {
      it->second.scalar_arg.push_back(a.type()->kind() == c10::TypeKind::NumberType);
    }
  }
  return it->second;
}

const std::vector<bool>& ScalarArgs(const c10::OperatorHandle& op) { return InfoOf(op).scalar_arg; }

// Tags of the hashed words: every value starts with one, so different shapes never collide.
enum Tag : uint64_t {
  kOp = 0x6f70000000000001ULL,
  kThreadChange,
  kUndefined,
  kDevice,
  kHost,
  kHostScalar,
  kDouble,
  kIntValue,
  kIntScalar,
  kBool,
  kNone,
  kString,
  kIntList,
  kDoubleList,
  kBoolList,
  kTensorList,
  kOptionalTensorList,
  kList,
  kDeviceValue,
  kGenerator,
  kOther,
  kOutputs,
  kEnd,
};

uint64_t DoubleBits(double d) {
  uint64_t b = 0;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// The element bytes of a host scalar tensor (zero-extended), or false when it has none.
bool HostScalarBits(const at::Tensor& t, uint64_t* bits) {
  if (!t.defined() || runtime::IsDeviceTensor(t) || t.dim() != 0 || t.itemsize() > 8 || !t.has_storage() ||
      t.data_ptr() == nullptr) {
    return false;
  }
  *bits = 0;
  std::memcpy(bits, t.data_ptr(), t.itemsize());
  return true;
}

}  // namespace

at::Tensor TensorAt(const std::vector<runtime::OpRecord>& ops, const TensorPos& p) {
  if (p.op >= ops.size()) return at::Tensor();
  const runtime::OpRecord& r = ops[p.op];
  const c10::IValue* v = p.value < r.args.size() ? &r.args[p.value]
                         : p.value - r.args.size() < r.outputs.size() ? &r.outputs[p.value - r.args.size()]
                                                                      : nullptr;
  if (v == nullptr) return at::Tensor();
  if (v->isTensor()) return p.elem == 0 ? v->toTensor() : at::Tensor();
  if (v->isTensorList()) {
    const auto list = v->toTensorList();
    return p.elem < list.size() ? list.get(p.elem) : at::Tensor();
  }
  if (v->isOptionalTensorList()) {  // the elem-th entry runtime::ForEachTensor visits (Nones not counted)
    uint16_t n = 0;
    for (const std::optional<at::Tensor> t : v->toOptionalTensorList()) {
      if (t.has_value() && n++ == p.elem) return *t;
    }
  }
  return at::Tensor();
}

GroupHasher::GroupHasher(const std::vector<runtime::OpRecord>& records, size_t begin)
    : records_(records), begin_(begin), next_(begin) {
  words_.reserve(64);
}

void GroupHasher::HashTensor(const at::Tensor& t, std::vector<uint64_t>* w) {
  if (!t.defined()) {
    w->push_back(kUndefined);
    return;
  }
  const bool device = runtime::IsDeviceTensor(t);
  if (device) {
    c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
    auto [it, inserted] = buffer_ids_.try_emplace(s, static_cast<int>(storages_.size()));
    if (inserted) {
      storages_.push_back(s);
    }
    w->push_back(kDevice);
    w->push_back(static_cast<uint64_t>(it->second));
    w->push_back(static_cast<uint64_t>(t.storage_offset()));
  } else {
    w->push_back(t.dim() == 0 ? kHostScalar : kHost);  // a host scalar's value: a guard or a runtime scalar
    w->push_back(t.unsafeGetTensorImpl()->is_wrapped_number());
  }
  w->push_back(static_cast<uint64_t>(t.scalar_type()) | (uint64_t{t.is_conj()} << 8) | (uint64_t{t.is_neg()} << 9) |
               (static_cast<uint64_t>(t.dim()) << 16));
  for (int64_t s : t.sizes()) w->push_back(static_cast<uint64_t>(s));
  for (int64_t s : t.strides()) w->push_back(static_cast<uint64_t>(s));
}

void GroupHasher::HashValue(const c10::IValue& v, bool scalar_arg, std::vector<uint64_t>* w) {
  if (v.isTensor()) {
    HashTensor(v.toTensor(), w);
  } else if (v.isNone()) {
    w->push_back(kNone);
  } else if (v.isDouble()) {
    w->push_back(kDouble);  // value: a guard or a runtime scalar
  } else if (v.isInt()) {
    if (scalar_arg) {
      w->push_back(kIntScalar);  // value: a guard or a runtime scalar
    } else {
      w->push_back(kIntValue);
      w->push_back(static_cast<uint64_t>(v.toInt()));
    }
  } else if (v.isBool()) {
    w->push_back(kBool);
    w->push_back(v.toBool());
  } else if (v.isString()) {
    w->push_back(kString);
    const std::string& s = v.toStringRef();
    w->push_back(XXH3_64bits(s.data(), s.size()));
    w->push_back(s.size());
  } else if (v.isIntList()) {
    w->push_back(kIntList);
    const auto list = v.toIntList();
    w->push_back(list.size());
    for (int64_t x : list) w->push_back(static_cast<uint64_t>(x));
  } else if (v.isDoubleList()) {
    w->push_back(kDoubleList);
    const auto list = v.toDoubleList();
    w->push_back(list.size());
    for (double x : list) w->push_back(DoubleBits(x));
  } else if (v.isBoolList()) {
    w->push_back(kBoolList);
    const auto list = v.toBoolList();
    w->push_back(list.size());
    for (bool x : list) w->push_back(x);
  } else if (v.isTensorList()) {
    w->push_back(kTensorList);
    const auto list = v.toTensorList();
    w->push_back(list.size());
    for (const at::Tensor& t : list) HashTensor(t, w);
  } else if (v.isOptionalTensorList()) {
    w->push_back(kOptionalTensorList);
    const auto list = v.toOptionalTensorList();
    w->push_back(list.size());
    for (std::optional<at::Tensor> t : list) {
      if (t.has_value()) {
        HashTensor(*t, w);
      } else {
        w->push_back(kNone);
      }
    }
  } else if (v.isList()) {
    w->push_back(kList);
    const auto list = v.toListRef();
    w->push_back(list.size());
    for (const c10::IValue& e : list) HashValue(e, false, w);
  } else if (v.isDevice()) {
    w->push_back(kDeviceValue);
    w->push_back(static_cast<uint64_t>(v.toDevice().type()) << 8 | static_cast<uint8_t>(v.toDevice().index()));
  } else if (v.isGenerator()) {
    w->push_back(kGenerator);
  } else {
    w->push_back(kOther);
    const std::string kind = v.tagKind();
    w->push_back(XXH3_64bits(kind.data(), kind.size()));
  }
}

Hash128 GroupHasher::Add() {
  const runtime::OpRecord& r = records_[next_];
  buffers_before_last_ = storages_.size();
  words_.clear();
  words_.push_back(prefix_.lo);
  words_.push_back(prefix_.hi);
  words_.push_back(kOp);
  const OpInfo& info = InfoOf(r.op);
  words_.push_back(info.name_hash);
  words_.push_back(r.cut_fp);
  if (next_ > begin_ && r.thread != records_[next_ - 1].thread) {
    words_.push_back(kThreadChange);
  }
  const std::vector<bool>& scalar = info.scalar_arg;
  words_.push_back(r.args.size());
  for (size_t j = 0; j < r.args.size(); ++j) {
    HashValue(r.args[j], j < scalar.size() && scalar[j], &words_);
  }
  words_.push_back(kOutputs);
  words_.push_back(r.outputs.size());
  for (const c10::IValue& o : r.outputs) {
    HashValue(o, false, &words_);
  }
  const XXH128_hash_t h = XXH3_128bits(words_.data(), words_.size() * sizeof(uint64_t));
  prefix_ = Hash128{h.low64, h.high64};
  ++next_;
  return prefix_;
}

Hash128 GroupHasher::End() const {
  const uint64_t w[3] = {prefix_.lo, prefix_.hi, kEnd};
  const XXH128_hash_t h = XXH3_128bits(w, sizeof w);
  return Hash128{h.low64, h.high64};
}

std::vector<Guard> GuardsOf(const std::vector<runtime::OpRecord>& records, size_t begin,
                            const std::vector<std::pair<int64_t, int64_t>>& args) {
  std::vector<Guard> guards;
  for (const auto& [op, arg] : args) {
    const size_t i = begin + static_cast<size_t>(op);
    if (i >= records.size() || static_cast<size_t>(arg) >= records[i].args.size()) continue;
    const runtime::OpRecord& r = records[i];
    const c10::IValue& v = r.args[static_cast<size_t>(arg)];
    const std::vector<bool>& scalar = ScalarArgs(r.op);
    Guard g{static_cast<uint32_t>(op), static_cast<uint16_t>(arg), 0, 0};
    if (v.isDouble()) {
      g.kind = 'd';
      g.bits = DoubleBits(v.toDouble());
    } else if (v.isInt() && static_cast<size_t>(arg) < scalar.size() && scalar[static_cast<size_t>(arg)]) {
      g.kind = 'i';
      g.bits = static_cast<uint64_t>(v.toInt());
    } else if (v.isTensor() && HostScalarBits(v.toTensor(), &g.bits)) {
      g.kind = 'h';
    } else {
      continue;  // hashed with the content
    }
    guards.push_back(g);
  }
  return guards;
}

bool GuardsHold(const GroupPlan& plan, const std::vector<runtime::OpRecord>& records, size_t begin) {
  for (const Guard& g : plan.guards) {
    const size_t i = begin + g.op;
    if (i >= records.size() || g.arg >= records[i].args.size()) return false;
    const c10::IValue& v = records[i].args[g.arg];
    uint64_t bits = 0;
    switch (g.kind) {
      case 'd':
        if (!v.isDouble() || DoubleBits(v.toDouble()) != g.bits) return false;
        break;
      case 'i':
        if (!v.isInt() || static_cast<uint64_t>(v.toInt()) != g.bits) return false;
        break;
      default:
        if (!v.isTensor() || !HostScalarBits(v.toTensor(), &bits) || bits != g.bits) return false;
        break;
    }
  }
  return true;
}

bool ReadParams(const GroupPlan& plan, const std::vector<runtime::OpRecord>& ops, size_t begin,
                std::vector<double>* params) {
  params->clear();
  params->reserve(plan.param_args.size());
  for (const auto& [op, arg] : plan.param_args) {
    const size_t i = begin + static_cast<size_t>(op);
    if (i >= ops.size() || static_cast<size_t>(arg) >= ops[i].args.size()) return false;
    const c10::IValue& v = ops[i].args[static_cast<size_t>(arg)];
    // As GroupLowering::ReadOperand: floats always, integers while exact in f64.
    c10::Scalar s;
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (!t.defined() || runtime::IsDeviceTensor(t) || t.dim() != 0) return false;
      s = t.item();
    } else if (v.isScalar()) {
      s = v.toScalar();
    } else {
      return false;
    }
    if (s.isBoolean() || s.isComplex()) return false;
    if (!s.isFloatingPoint() && std::abs(s.toLong()) >= (int64_t{1} << 53)) return false;
    params->push_back(s.toDouble());
  }
  return true;
}

const std::vector<std::shared_ptr<const GroupPlan>>* PlanCache::Find(const Hash128& h) const {
  auto it = entries_.find(h);
  return it == entries_.end() ? nullptr : &it->second;
}

void PlanCache::Insert(const Hash128& h, std::shared_ptr<const GroupPlan> plan) {
  if (plans_ >= max_plans_) {  // a program whose groups never repeat: start over
    entries_.clear();
    plans_ = 0;
    max_len_ = 0;
  }
  std::vector<std::shared_ptr<const GroupPlan>>& variants = entries_[h];
  constexpr size_t kMaxVariants = 8;  // guards or liveness that change every step: keep the newest
  if (variants.size() >= kMaxVariants) {
    variants.erase(variants.begin());
    --plans_;
  }
  max_len_ = std::max(max_len_, plan->len + 1);
  variants.push_back(std::move(plan));
  ++plans_;
}

}  // namespace trn::scheduler
