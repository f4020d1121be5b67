#include "runtime/op_trace.h"

#include <atomic>
#include <cstdint>
#include <vector>

#include <c10/util/intrusive_ptr.h>

#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "runtime/host_view.h"
#include "runtime/op_runner.h"
#include "base/source_table.h"

namespace trn::runtime::optrace {
namespace {

std::atomic<bool> g_enabled{false};

struct Trace {
  absl::Mutex mu;
  nlohmann::json ops ABSL_GUARDED_BY(mu) = nlohmann::json::array();
  bool geometry ABSL_GUARDED_BY(mu) = false;
  // Storage ids of a geometry trace. The weak references keep each StorageImpl's address from
  // being reused by a later storage while the trace lasts (its data may still be freed).
  absl::flat_hash_map<const c10::StorageImpl*, std::pair<int64_t, c10::weak_intrusive_ptr<c10::StorageImpl>>> storages
      ABSL_GUARDED_BY(mu);
};

Trace& T() {
  static auto* t = new Trace;  // never destroyed: the autograd thread may record during exit
  return *t;
}

// The storage id of device tensor `t` in a geometry trace, numbered on first sight.
int64_t IdOf(Trace& trace, const at::Tensor& t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(trace.mu) {
  c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
  auto it = trace.storages.find(impl);
  if (it == trace.storages.end()) {
    const auto id = static_cast<int64_t>(trace.storages.size());
    it = trace.storages.emplace(impl, std::make_pair(id, t.storage().getWeakStorageImpl())).first;
  }
  return it->second.first;
}

// `trace`: non-null in a geometry trace (its lock held), for the tensors' geometry and storage.
nlohmann::json Summary(const c10::IValue& v, Trace* trace) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return nullptr;
    nlohmann::json s = {{"shape", t.sizes().vec()}, {"dtype", std::string(c10::toString(t.scalar_type()))}};
    if (trace != nullptr) {
      s["strides"] = t.strides().vec();
      s["offset"] = t.storage_offset();
      if (IsDeviceTensor(t)) {
        s["device"] = "neuron";
        s["storage"] = IdOf(*trace, t);
        s["storage_bytes"] = t.storage().nbytes();
      } else {
        s["device"] = "cpu";
        if (t.numel() == 1 && t.device().is_cpu()) {
          const at::Tensor one = t.reshape({});
          if (t.is_complex()) s["value"] = nullptr;  // not replayed
          else if (t.scalar_type() == c10::kBool) s["value"] = one.item<bool>();
          else if (t.is_floating_point()) s["value"] = one.item<double>();
          else s["value"] = one.item<int64_t>();
        }
      }
      if (t.is_neg()) s["neg"] = true;
      if (t.is_conj()) s["conj"] = true;
    }
    return s;
  }
  if (v.isNone()) return nullptr;
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  if (v.isIntList()) return v.toIntVector();
  if (v.isList()) {
    nlohmann::json out = nlohmann::json::array();
    for (const c10::IValue& e : v.toListRef()) out.push_back(Summary(e, trace));
    return out;
  }
  if (v.isTuple()) {
    nlohmann::json out = nlohmann::json::array();
    for (const c10::IValue& e : v.toTupleRef().elements()) out.push_back(Summary(e, trace));
    return out;
  }
  if (v.isScalar()) return v.toScalar().toDouble();
  if (v.isDevice()) return v.toDevice().str();
  return v.tagKind();
}

}  // namespace

bool Enabled() { return g_enabled.load(std::memory_order_relaxed); }

absl::Status Start(bool geometry) {
  Trace& t = T();
  absl::MutexLock lock(&t.mu);
  if (g_enabled.load()) return absl::FailedPreconditionError("an op trace is already active (traces do not nest)");
  t.ops = nlohmann::json::array();
  t.geometry = geometry;
  t.storages.clear();
  g_enabled.store(true);
  return absl::OkStatus();
}

std::string Stop() {
  Trace& t = T();
  absl::MutexLock lock(&t.mu);
  g_enabled.store(false);
  std::string out = t.ops.dump();
  t.ops = nlohmann::json::array();
  t.storages.clear();
  return out;
}

void Add(const OpRecord& record) {
  Trace& t = T();
  absl::MutexLock lock(&t.mu);
  if (!g_enabled.load()) return;
  Trace* trace = t.geometry ? &t : nullptr;
  nlohmann::json op;
  op["op"] = OpName(record.op);
  op["source"] = base::GlobalSourceTable().Format(record.source);
  nlohmann::json args = nlohmann::json::object();
  const auto& schema = record.op.schema().arguments();
  for (size_t i = 0; i < record.args.size(); ++i) {
    args[i < schema.size() ? schema[i].name() : std::to_string(i)] = Summary(record.args[i], trace);
  }
  op["args"] = std::move(args);
  nlohmann::json outs = nlohmann::json::array();
  for (const c10::IValue& o : record.outputs) outs.push_back(Summary(o, trace));
  op["outputs"] = std::move(outs);
  t.ops.push_back(std::move(op));
}

int64_t StorageId(const at::Tensor& t) {
  if (!IsDeviceTensor(t)) return -1;
  Trace& trace = T();
  absl::MutexLock lock(&trace.mu);
  if (!g_enabled.load() || !trace.geometry) return -1;
  auto it = trace.storages.find(t.storage().unsafeGetStorageImpl());
  return it == trace.storages.end() ? -1 : it->second.first;
}

}  // namespace trn::runtime::optrace
