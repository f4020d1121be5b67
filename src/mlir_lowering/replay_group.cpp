// torch-trn-replay-group: replays recorded ops through the front (GroupLowering) and prints
// what it plans and the MLIR module it emits, for golden FileCheck tests (tests/lit/front).
//
//   torch-trn-replay-group [--target host|trn2|trn3] FILE.json
//
// --target: the target whose front decisions are replayed (default: NEURON_TARGET's, else the
// host); on a trn target the tool also prints the trn pipeline's answer for each group
// (CompileToTrnStream). `--trn` is `--target trn2`.
//
// FILE holds the ops of `torch_trn.trace_ops(geometry=True)` (sizes, strides, offsets, storage
// ids, dtypes: runtime/op_trace.h), either as that array or as
//   {"groups": [{"name": ..., "ops": [...], "live": [storage ids]}, ...]}
// (tools/record_golden_groups.py writes the latter). "live": the storages something outside the
// ops holds (the caller's tensors); a storage a later op of the same entry reads is live too.
// So a write is an output or an internal temporary as in the stream (scheduler/segment_refs.h).
//
// The ops are cut into groups as the grouper does (Target::CanGroup, a cut asked by Add,
// a refusal: that op runs op by op), each group planned with emit off, then its records detached
// and replayed into an emitting lowering (GroupReplay: the code path of a compile thread, which
// checks the IR against the plan). For each group the tool prints a plan summary as comments,
// then the module, and on a trn target the trn pipeline's answer.
//
// Device tensors are storage-less shadows (one per recorded storage): nothing runs. Exit code 1
// on malformed input or an internal error of the lowering (which the output names).
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/TensorImpl.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mlir_lowering/group_lowering.h"
#include "mlir_lowering/group_replay.h"
#include "mlir_lowering/trn_compile.h"
#include "runtime/host_view.h"
#include "runtime/op_record.h"
#include "runtime/op_runner.h"

namespace trn::mlir_lowering {
namespace {

using nlohmann::json;
using runtime::OpRecord;

absl::StatusOr<c10::ScalarType> DtypeOf(const std::string& name) {
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    const auto t = static_cast<c10::ScalarType>(i);
    if (name == c10::toString(t)) return t;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype ", name));
}

// Builds the records' tensors: device tensors as shadows over one shadow storage per id.
class Tensors {
 public:
  absl::StatusOr<at::Tensor> Of(const json& j) {
    if (j.is_null()) return at::Tensor();
    if (!j.is_object() || !j.contains("shape") || !j.contains("strides")) {
      return absl::InvalidArgumentError(
          absl::StrCat("a tensor needs shape, strides, offset (trace_ops(geometry=True)): ", j.dump()));
    }
    absl::StatusOr<c10::ScalarType> dtype = DtypeOf(j.at("dtype").get<std::string>());
    if (!dtype.ok()) return dtype.status();
    const auto sizes = j.at("shape").get<std::vector<int64_t>>();
    const auto strides = j.at("strides").get<std::vector<int64_t>>();
    const int64_t offset = j.value("offset", int64_t{0});
    at::Tensor t;
    if (j.value("device", std::string("neuron")) == "neuron") {
      const int64_t id = j.at("storage").get<int64_t>();
      auto [it, inserted] = storages_.try_emplace(id);
      if (inserted) {
        it->second = c10::Storage(c10::Storage::use_byte_size_t(), j.at("storage_bytes").get<int64_t>(),
                                  c10::DataPtr(nullptr, c10::Device(c10::DeviceType::PrivateUse1, 0)),
                                  /*allocator=*/nullptr, /*resizable=*/false);
        ids_[it->second.unsafeGetStorageImpl()] = id;
      }
      t = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(it->second),
                                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                   c10::scalarTypeToTypeMeta(*dtype));
      t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides, offset);
    } else {
      t = at::zeros(sizes, at::TensorOptions().dtype(*dtype)).as_strided(sizes, strides);
      if (j.contains("value") && !j.at("value").is_null()) {
        const json& v = j.at("value");
        t = at::full(sizes, v.is_boolean() ? c10::Scalar(v.get<bool>())
                            : v.is_number_integer() ? c10::Scalar(v.get<int64_t>())
                                                    : c10::Scalar(v.get<double>()),
                     at::TensorOptions().dtype(*dtype));
      }
    }
    if (j.value("neg", false)) t._set_neg(true);
    if (j.value("conj", false)) t._set_conj(true);
    return t;
  }

  int64_t IdOf(const c10::StorageImpl* s) const {
    auto it = ids_.find(s);
    return it == ids_.end() ? -1 : it->second;
  }

 private:
  std::map<int64_t, c10::Storage> storages_;
  std::map<const c10::StorageImpl*, int64_t> ids_;
};

bool IsIntLike(c10::TypeKind k) {
  return k == c10::TypeKind::IntType || k == c10::TypeKind::SymIntType || k == c10::TypeKind::ScalarTypeType ||
         k == c10::TypeKind::LayoutType || k == c10::TypeKind::MemoryFormatType;
}

// The IValue of schema type `type` that summary `j` describes.
absl::StatusOr<c10::IValue> ValueOf(const c10::TypePtr& type, const json& j, Tensors& tensors) {
  const c10::TypeKind kind = type->kind();
  if (kind == c10::TypeKind::OptionalType) {
    if (j.is_null()) return c10::IValue();
    return ValueOf(type->castRaw<c10::OptionalType>()->getElementType(), j, tensors);
  }
  if (kind == c10::TypeKind::TensorType) {
    absl::StatusOr<at::Tensor> t = tensors.Of(j);
    if (!t.ok()) return t.status();
    return c10::IValue(*t);
  }
  if (kind == c10::TypeKind::ListType) {
    const c10::TypePtr elem = type->castRaw<c10::ListType>()->getElementType();
    if (!j.is_array()) return absl::InvalidArgumentError(absl::StrCat("expected a list: ", j.dump()));
    if (elem->kind() == c10::TypeKind::TensorType) {
      c10::List<at::Tensor> list;
      for (const json& e : j) {
        absl::StatusOr<at::Tensor> t = tensors.Of(e);
        if (!t.ok()) return t.status();
        list.push_back(*t);
      }
      return c10::IValue(list);
    }
    if (elem->kind() == c10::TypeKind::OptionalType) {
      c10::List<std::optional<at::Tensor>> list;
      for (const json& e : j) {
        absl::StatusOr<at::Tensor> t = tensors.Of(e);
        if (!t.ok()) return t.status();
        list.push_back(t->defined() ? std::optional<at::Tensor>(*t) : std::nullopt);
      }
      return c10::IValue(list);
    }
    if (IsIntLike(elem->kind())) return c10::IValue(j.get<std::vector<int64_t>>());
    if (elem->kind() == c10::TypeKind::FloatType) return c10::IValue(j.get<std::vector<double>>());
    if (elem->kind() == c10::TypeKind::BoolType) {
      c10::List<bool> list;
      for (const json& e : j) list.push_back(e.get<bool>());
      return c10::IValue(list);
    }
    return absl::UnimplementedError(absl::StrCat("lists of ", elem->str(), " are not replayed"));
  }
  if (kind == c10::TypeKind::NumberType) {
    if (j.is_boolean()) return c10::IValue(c10::Scalar(j.get<bool>()));
    if (j.is_number_integer()) return c10::IValue(c10::Scalar(j.get<int64_t>()));
    if (j.is_number()) return c10::IValue(c10::Scalar(j.get<double>()));
  }
  if (IsIntLike(kind) && j.is_number_integer()) return c10::IValue(j.get<int64_t>());
  if (kind == c10::TypeKind::FloatType && j.is_number()) return c10::IValue(j.get<double>());
  if (kind == c10::TypeKind::BoolType && j.is_boolean()) return c10::IValue(j.get<bool>());
  if (kind == c10::TypeKind::StringType && j.is_string()) return c10::IValue(j.get<std::string>());
  if (kind == c10::TypeKind::DeviceObjType && j.is_string()) {
    const std::string d = j.get<std::string>();
    return c10::IValue(d.rfind("cpu", 0) == 0 ? c10::Device(c10::kCPU) : c10::Device(c10::DeviceType::PrivateUse1, 0));
  }
  return absl::InvalidArgumentError(absl::StrCat("cannot read a ", type->str(), " from ", j.dump()));
}

absl::StatusOr<OpRecord> RecordOf(const json& op, Tensors& tensors) {
  const std::string full = op.at("op").get<std::string>();
  const size_t ns = full.find("::");
  const size_t dot = full.find('.', ns == std::string::npos ? 0 : ns + 2);
  const std::string name = full.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "" : full.substr(dot + 1);
  std::optional<c10::OperatorHandle> handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle.has_value()) return absl::InvalidArgumentError(absl::StrCat("unknown operator ", full));
  const c10::FunctionSchema& schema = handle->schema();
  const json& args = op.at("args");
  std::vector<c10::IValue> values;
  for (const c10::Argument& a : schema.arguments()) {
    if (!args.contains(a.name())) {
      if (!a.default_value().has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(full, ": argument ", a.name(), " is missing"));
      }
      values.push_back(*a.default_value());
      continue;
    }
    absl::StatusOr<c10::IValue> v = ValueOf(a.type(), args.at(a.name()), tensors);
    if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat(full, ": argument ", a.name(), ": ", v.status().message()));
    values.push_back(std::move(*v));
  }
  OpRecord record(*handle, std::move(values));
  const json outputs = op.value("outputs", json::array());
  for (size_t i = 0; i < schema.returns().size(); ++i) {
    const json& o = i < outputs.size() ? outputs[i] : json();
    if (o.is_null()) {
      record.outputs.emplace_back();
      continue;
    }
    absl::StatusOr<c10::IValue> v = ValueOf(schema.returns()[i].type(), o, tensors);
    if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat(full, ": return ", i, ": ", v.status().message()));
    record.outputs.push_back(std::move(*v));
  }
  record.seq = static_cast<uint64_t>(op.value("seq", 0));
  return record;
}

std::string Geometry(const at::Tensor& t, const Tensors& tensors) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "] strides [", absl::StrJoin(t.strides(), ", "),
                      "] offset ", t.storage_offset(), " ", c10::toString(t.scalar_type()), " storage ",
                      tensors.IdOf(t.storage().unsafeGetStorageImpl()));
}

// Whether any tensor inside `v` is of `storage`.
bool Touches(const c10::IValue& v, const c10::StorageImpl* storage) {
  bool found = false;
  runtime::MapTensors(v, [&](const at::Tensor& t) {
    if (t.defined() && t.has_storage() && t.storage().unsafeGetStorageImpl() == storage) found = true;
    return t;
  });
  return found;
}

class Replayer {
 public:
  Replayer(std::vector<OpRecord> records, std::set<int64_t> live, Tensors* tensors, const Target& target)
      : records_(std::move(records)), live_(std::move(live)), tensors_(tensors), target_(target) {}

  // Prints every group and op-by-op op; false on an internal error.
  bool Run() {
    size_t start = 0;
    while (start < records_.size()) {
      std::string why;
      if (!target_.CanGroup(records_[start], &why)) {
        OpByOp(start, absl::StrCat("cannot lower: ", why));
        ++start;
        continue;
      }
      // Grows the group until an op fails to add; then plans it without that op.
      size_t end = start;
      absl::Status failed;
      {
        GroupLowering probe(target_, /*emit=*/false);
        for (; end < records_.size(); ++end) {
          if (!target_.CanGroup(records_[end], &why)) break;
          failed = probe.Add(records_[end]);
          if (!failed.ok()) break;
        }
      }
      if (end > start && !Group(start, end)) return false;
      if (end == records_.size()) break;
      if (!failed.ok() && !IsCut(failed)) {
        if (failed.code() != absl::StatusCode::kUnimplemented) {
          std::printf("// INTERNAL ERROR at op %zu %s: %s\n", end, runtime::OpName(records_[end].op).c_str(),
                      std::string(failed.message()).c_str());
          return false;
        }
        OpByOp(end, absl::StrCat("refused: ", failed.message()));
        start = end + 1;
      } else if (!failed.ok() && end == start) {
        OpByOp(end, absl::StrCat("cut alone: ", failed.message()));
        start = end + 1;
      } else {
        if (!failed.ok()) std::printf("// cut before op %zu: %s\n", end, std::string(failed.message()).c_str());
        start = end;
      }
    }
    return true;
  }

 private:
  void OpByOp(size_t i, const std::string& why) {
    std::printf("// op %zu %s runs op by op (%s)\n", i, runtime::OpName(records_[i].op).c_str(), why.c_str());
  }

  bool Group(size_t begin, size_t end) {
    GroupLowering plan(target_, /*emit=*/false);
    for (size_t i = begin; i < end; ++i) {
      if (absl::Status s = plan.Add(records_[i]); !s.ok()) {
        std::printf("// INTERNAL ERROR: op %zu was accepted once and not when planned again: %s\n", i,
                    std::string(s.message()).c_str());
        return false;
      }
    }
    const LiveAfter live_after = [&](const c10::StorageImpl* s) {
      if (live_.contains(tensors_->IdOf(s))) return true;
      for (size_t j = end; j < records_.size(); ++j) {
        for (const c10::IValue& a : records_[j].args) {
          if (Touches(a, s)) return true;
        }
      }
      return false;
    };
    absl::StatusOr<LoweredGroup> lowered = plan.Finish(&live_after);
    if (!lowered.ok()) {
      std::printf("// INTERNAL ERROR planning ops %zu..%zu: %s\n", begin, end - 1,
                  std::string(lowered.status().message()).c_str());
      return false;
    }
    std::vector<std::string> names;
    for (size_t i = begin; i < end; ++i) names.push_back(runtime::OpName(records_[i].op));
    std::printf("// group: ops %zu..%zu (%s)\n", begin, end - 1, absl::StrJoin(names, ", ").c_str());
    int64_t staged = 0;
    for (const GroupOutput& o : lowered->outputs) staged += o.staged ? 1 : 0;
    std::printf("// plan: inputs %zu, outputs %zu (staged %ld), temporaries %ld, runtime calls %ld, runtime "
                "scalars %zu, checks %zu\n",
                lowered->inputs.size(), lowered->outputs.size(), static_cast<long>(staged),
                static_cast<long>(lowered->temporaries), static_cast<long>(lowered->externs),
                lowered->param_args.size(), lowered->checks.size());
    for (size_t i = 0; i < lowered->inputs.size(); ++i) {
      std::printf("// input %zu: %s\n", i, Geometry(lowered->inputs[i], *tensors_).c_str());
    }
    for (size_t i = 0; i < lowered->outputs.size(); ++i) {
      std::printf("// output %zu: %s%s\n", i, Geometry(lowered->outputs[i].tensor, *tensors_).c_str(),
                  lowered->outputs[i].staged ? " staged" : "");
    }
    for (const GroupCheck& c : lowered->checks) {
      std::printf("// check (op %ld): %s\n", static_cast<long>(c.op_index), c.message.c_str());
    }
    std::vector<OpRecord> ops;
    for (size_t i = begin; i < end; ++i) {
      OpRecord copy(records_[i].op, records_[i].args);
      copy.outputs = records_[i].outputs;
      ops.push_back(std::move(copy));
    }
    std::shared_ptr<const GroupReplay> replay = GroupReplay::Detach(ops, lowered->live_buffers, PlanShape::Of(*lowered), target_);
    absl::StatusOr<IrModule> module = replay->Emit();
    if (!module.ok()) {
      std::printf("// INTERNAL ERROR emitting: %s\n", std::string(module.status().message()).c_str());
      return false;
    }
    std::printf("%s\n", module->Print().c_str());
    if (target_.is_trn()) Trn(*module, lowered->func);
    return true;
  }

  void Trn(const IrModule& module, const std::string& func) {
    absl::StatusOr<TrnCompiled> trn = CompileToTrnStream(module, func, target_.name());
    if (!trn.ok()) {
      std::printf("// trn: INTERNAL ERROR %s\n", std::string(trn.status().ToString()).c_str());
    } else if (trn->refusal.has_value()) {
      std::printf("// trn: refused %s: %s\n", trn->refusal->op.c_str(), trn->refusal->reason.c_str());
    } else {
      std::printf("// trn: instruction stream of %zu bytes\n", trn->stream.size());
    }
  }

  std::vector<OpRecord> records_;
  std::set<int64_t> live_;
  Tensors* tensors_;
  const Target& target_;
};

int Main(int argc, char** argv) {
  constexpr const char* kUsage = "usage: torch-trn-replay-group [--target host|trn2|trn3] FILE.json";
  const Target* target = &Target::Process();
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trn" || (a == "--target" && i + 1 < argc)) {
      absl::StatusOr<const Target*> named = Target::Named(a == "--trn" ? "trn2" : argv[++i]);
      if (!named.ok()) {
        std::fprintf(stderr, "%s\n%s\n", std::string(named.status().message()).c_str(), kUsage);
        return 2;
      }
      target = *named;
    } else if (a == "-h" || a == "--help") {
      std::printf("%s  (see src/mlir_lowering/README.md)\n", kUsage);
      return 0;
    } else {
      path = a;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 2;
  }
  json doc;
  try {
    doc = json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), e.what());
    return 2;
  }
  json groups = doc.is_array() ? json::array({json{{"name", path}, {"ops", doc}}}) : doc.at("groups");
  bool ok = true;
  for (const json& g : groups) {
    std::printf("// ---- %s\n", g.value("name", std::string("group")).c_str());
    Tensors tensors;
    std::vector<OpRecord> records;
    for (const json& op : g.at("ops")) {
      absl::StatusOr<OpRecord> r = RecordOf(op, tensors);
      if (!r.ok()) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), std::string(r.status().message()).c_str());
        return 2;
      }
      records.push_back(std::move(*r));
    }
    const auto live = g.value("live", std::vector<int64_t>{});
    ok = Replayer(std::move(records), std::set<int64_t>(live.begin(), live.end()), &tensors, *target).Run() && ok;
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace trn::mlir_lowering

int main(int argc, char** argv) {
  try {
    return trn::mlir_lowering::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torch-trn-replay-group: %s\n", e.what());
    return 2;
  }
}
