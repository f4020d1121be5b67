#include "runtime/op_trace.h"

#include <atomic>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/synchronization/mutex.h"
#include "runtime/op_runner.h"
#include "runtime/source_table.h"

namespace trn::runtime::optrace {
namespace {

std::atomic<bool> g_enabled{false};

struct Trace {
  absl::Mutex mu;
  nlohmann::json ops ABSL_GUARDED_BY(mu) = nlohmann::json::array();
};

Trace& T() {
  static auto* t = new Trace;  // never destroyed: the autograd thread may record during exit
  return *t;
}

nlohmann::json Summary(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) return nullptr;
    return {{"shape", t.sizes().vec()}, {"dtype", std::string(c10::toString(t.scalar_type()))}};
  }
  if (v.isNone()) return nullptr;
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt();
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) return v.toStringRef();
  if (v.isIntList()) return v.toIntVector();
  if (v.isList()) {
    nlohmann::json out = nlohmann::json::array();
    for (const c10::IValue& e : v.toListRef()) out.push_back(Summary(e));
    return out;
  }
  if (v.isTuple()) {
    nlohmann::json out = nlohmann::json::array();
    for (const c10::IValue& e : v.toTupleRef().elements()) out.push_back(Summary(e));
    return out;
  }
  if (v.isScalar()) return v.toScalar().toDouble();
  if (v.isDevice()) return v.toDevice().str();
  return v.tagKind();
}

}  // namespace

bool Enabled() { return g_enabled.load(std::memory_order_relaxed); }

absl::Status Start() {
  Trace& t = T();
  absl::MutexLock lock(&t.mu);
  if (g_enabled.load()) return absl::FailedPreconditionError("an op trace is already active (traces do not nest)");
  t.ops = nlohmann::json::array();
  g_enabled.store(true);
  return absl::OkStatus();
}

std::string Stop() {
  Trace& t = T();
  absl::MutexLock lock(&t.mu);
  g_enabled.store(false);
  std::string out = t.ops.dump();
  t.ops = nlohmann::json::array();
  return out;
}

void Add(const OpRecord& record) {
  nlohmann::json op;
  op["op"] = OpName(record.op);
  op["source"] = GlobalSourceTable().Format(record.source);
  nlohmann::json args = nlohmann::json::object();
  const auto& schema = record.op.schema().arguments();
  for (size_t i = 0; i < record.args.size(); ++i) {
    args[i < schema.size() ? schema[i].name() : std::to_string(i)] = Summary(record.args[i]);
  }
  op["args"] = std::move(args);
  nlohmann::json outs = nlohmann::json::array();
  for (const c10::IValue& o : record.outputs) outs.push_back(Summary(o));
  op["outputs"] = std::move(outs);
  Trace& t = T();
  absl::MutexLock lock(&t.mu);
  if (g_enabled.load()) t.ops.push_back(std::move(op));
}

}  // namespace trn::runtime::optrace
