#include "mlir_lowering/group_replay.h"

#include <c10/core/TensorImpl.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/host_view.h"
#include "runtime/op_runner.h"

namespace trn::mlir_lowering {
namespace {

// Storage-less stand-ins of a group's device tensors, one shadow storage per original storage.
class Shadows {
 public:
  at::Tensor Of(const at::Tensor& t) {
    if (!t.defined() || !runtime::IsDeviceTensor(t)) {
      return t;
    }
    const c10::StorageImpl* original = t.storage().unsafeGetStorageImpl();
    auto [it, inserted] = storages_.try_emplace(original);
    if (inserted) {
      it->second = c10::Storage(c10::Storage::use_byte_size_t(), t.storage().nbytes(),
                                c10::DataPtr(nullptr, t.storage().device()), /*allocator=*/nullptr,
                                /*resizable=*/false);
    }
    at::Tensor s = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(it->second),
                                                             c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                             t.dtype());
    s.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
    runtime::CopyMathBits(t, s);
    return s;
  }

 private:
  absl::flat_hash_map<const c10::StorageImpl*, c10::Storage> storages_;
};

}  // namespace

PlanShape PlanShape::Of(const LoweredGroup& group) {
  PlanShape s;
  for (const at::Tensor& t : group.inputs) {
    s.inputs.push_back(TensorGeometry::Of(t));
  }
  for (const GroupOutput& o : group.outputs) {
    s.outputs.emplace_back(TensorGeometry::Of(o.tensor), o.staged);
  }
  s.param_args = group.param_args;
  s.checks = static_cast<int64_t>(group.checks.size());
  return s;
}

std::shared_ptr<const GroupReplay> GroupReplay::Detach(const std::vector<runtime::OpRecord>& ops,
                                                       std::vector<bool> live, PlanShape shape,
                                                       const Target& target) {
  std::shared_ptr<GroupReplay> replay(new GroupReplay(target));
  Shadows shadows;
  auto detach = [&](const c10::IValue& v) {
    return runtime::MapTensors(v, [&](const at::Tensor& t) { return shadows.Of(t); });
  };
  replay->ops_.reserve(ops.size());
  for (const runtime::OpRecord& r : ops) {
    std::vector<c10::IValue> args;
    args.reserve(r.args.size());
    for (const c10::IValue& a : r.args) {
      args.push_back(detach(a));
    }
    runtime::OpRecord copy(r.op, std::move(args));
    for (const c10::IValue& o : r.outputs) {
      copy.outputs.push_back(detach(o));
    }
    copy.source = r.source;
    copy.seq = r.seq;
    copy.thread = r.thread;
    copy.cut_fp = r.cut_fp;
    replay->ops_.push_back(std::move(copy));
  }
  replay->live_ = std::move(live);
  replay->shape_ = std::move(shape);
  return replay;
}

absl::StatusOr<IrModule> GroupReplay::Emit(bool* first) const {
  absl::MutexLock lock(&mu_);
  if (first != nullptr) *first = !emitted_;
  emitted_ = true;
  return EmitLocked();
}

absl::StatusOr<IrModule> GroupReplay::EmitLocked() const {
  GroupLowering lowering(target_, /*emit=*/true);
  for (const runtime::OpRecord& r : ops_) {
    absl::Status s = lowering.Add(r);
    if (!s.ok()) {
      return absl::InternalError(absl::StrCat("replaying the planned group: ", runtime::OpName(r.op),
                                              " was accepted when planned but not when emitted: ", s.message()));
    }
  }
  absl::StatusOr<LoweredGroup> group = lowering.Finish(/*live_after=*/nullptr, &live_);
  if (!group.ok()) {
    return absl::InternalError(absl::StrCat("replaying the planned group: ", group.status().message()));
  }
  if (!(PlanShape::Of(*group) == shape_)) {
    return absl::InternalError(
        "replaying the planned group: the emitted IR disagrees with the plan (inputs, outputs, staging, runtime "
        "scalars or checks)");
  }
  return std::move(*group->module);
}

}  // namespace trn::mlir_lowering
