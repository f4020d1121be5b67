// GroupReplay: the IR of a planned group, emitted away from the flush.
//
// A flush only plans its groups (GroupLowering with emit off): the key and everything the
// executor needs come from the plan. The IR is needed only when a group is built, so the flush
// detaches the group's records into a GroupReplay and the compile thread, if it has to compile,
// replays them into an emitting GroupLowering with the liveness the plan decided.
//
// Detached records keep the groups's structure and nothing else: every device tensor becomes a
// storage-less shadow with the same sizes, strides, offset, dtype and math bits, one shadow
// storage per original storage (so buffers, aliasing and the order of first appearance are the
// records'); host tensors (already private copies) and every other argument are kept. A queued
// build therefore holds no device memory and changes no use count that the scheduler reads.
//
// The replay is checked against the plan (inputs, outputs, staging, runtime scalars, checks): a
// mismatch is an internal error (a lowering whose decisions depend on whether it emits), never a
// silent difference.
//
// Thread-safety: Detach runs on the flushing thread; afterwards Emit may be called from any
// thread (under a mutex); each call returns a module of its own (its own context).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "mlir_lowering/group_lowering.h"
#include "runtime/op_record.h"

namespace trn::mlir_lowering {

// The decisions of a plan that the IR must agree with.
struct PlanShape {
  std::vector<TensorGeometry> inputs;
  std::vector<std::pair<TensorGeometry, bool>> outputs;  // (geometry, staged)
  std::vector<std::pair<int64_t, int64_t>> param_args;
  int64_t checks = 0;

  static PlanShape Of(const LoweredGroup& group);
  bool operator==(const PlanShape& o) const {
    return inputs == o.inputs && outputs == o.outputs && param_args == o.param_args && checks == o.checks;
  }
};

class GroupReplay {
 public:
  // Detaches `ops` (the group's records, in order) with the plan the flush made of them for
  // `target`: the liveness of each buffer and the decisions the IR must agree with.
  static std::shared_ptr<const GroupReplay> Detach(const std::vector<runtime::OpRecord>& ops, std::vector<bool> live,
                                                   PlanShape shape, const Target& target);

  // Replays the records into an emitting lowering: the module of `@group`, built with MLIR's
  // builder API, for the pipeline to consume. A tier-up build of the same request emits again
  // (a module is consumed by its build; emitting takes a small fraction of the build). `*first`:
  // whether this is the group's first emission (what `lowerings_emitted` counts).
  absl::StatusOr<IrModule> Emit(bool* first = nullptr) const;

  int64_t size() const { return static_cast<int64_t>(ops_.size()); }

 private:
  explicit GroupReplay(const Target& target) : target_(target) {}
  absl::StatusOr<IrModule> EmitLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Target& target_;
  std::vector<runtime::OpRecord> ops_;
  std::vector<bool> live_;
  PlanShape shape_;
  mutable absl::Mutex mu_;
  mutable bool emitted_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace trn::mlir_lowering
