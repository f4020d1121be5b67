#include "scheduler/cut_policy.h"

#include <xxhash.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace trn::scheduler {
namespace {

// Folds `v` into `h` (splitmix64's finaliser: every input bit moves every output bit).
void Mix(uint64_t* h, int64_t v) {
  uint64_t z = *h ^ (static_cast<uint64_t>(v) + 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  *h = z ^ (z >> 31);
}

// What a fingerprint needs of an operator, computed once per operator and thread: the hash of
// its name (the text, so that every process cuts alike) and which arguments are Scalars.
struct OpInfo {
  uint64_t name_hash = 0;
  std::vector<bool> scalar_arg;
};

const OpInfo& InfoOf(const c10::OperatorHandle& op) {
  // Keyed by the schema's address (the dispatcher keeps it for the process's lifetime); looked
  // up, never iterated.
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

// A non-tensor argument whose value is not structure: its kind only.
int64_t KindOf(const c10::IValue& v) {
  if (v.isNone()) return 1;
  if (v.isDouble()) return 2;
  if (v.isInt()) return 3;
  if (v.isBool()) return 4;
  if (v.isTensorList()) return 5;
  if (v.isList()) return 6;
  if (v.isString()) return 7;
  return 8;
}

}  // namespace

uint64_t CutFingerprint(const runtime::OpRecord& record) {
  const OpInfo& info = InfoOf(record.op);
  uint64_t state = info.name_hash;
  for (size_t i = 0; i < record.args.size(); ++i) {
    const c10::IValue& arg = record.args[i];
    if (i < info.scalar_arg.size() && info.scalar_arg[i]) {
      // A Scalar is a runtime value (alpha, a learning rate that changes every step): its kind.
      Mix(&state, KindOf(arg));
    } else if (arg.isTensor()) {
      const at::Tensor& t = arg.toTensor();
      if (!t.defined()) {
        Mix(&state, -1);
        continue;
      }
      Mix(&state, static_cast<int64_t>(t.scalar_type()));
      Mix(&state, t.dim());
      for (int64_t s : t.sizes()) Mix(&state, s);
    } else if (arg.isInt()) {  // dims, sizes, flags: structure, the same every step
      Mix(&state, arg.toInt());
    } else if (arg.isBool()) {
      Mix(&state, arg.toBool() ? 1 : 0);
    } else if (arg.isIntList()) {
      for (int64_t v : arg.toIntList()) Mix(&state, v);
    } else {  // doubles (eps, a momentum), tensor lists, None: the kind
      Mix(&state, KindOf(arg));
    }
  }
  return state;
}

CutPolicy CutPolicy::UpTo(int64_t max_ops) {
  CutPolicy p;
  p.max_ops = std::max<int64_t>(1, max_ops);
  p.min_ops = std::max<int64_t>(1, p.max_ops / 2);
  uint64_t period = 1;  // the largest power of two <= max_ops / 8
  while (period * 2 <= static_cast<uint64_t>(std::max<int64_t>(1, p.max_ops / 8))) period *= 2;
  p.mask = period - 1;
  return p;
}

}  // namespace trn::scheduler
