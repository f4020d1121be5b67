// The grouper: cuts a run of recorded ops into execution units, deterministically.
//
// Cuts happen at the ends of the run (sync points), around every op without a lowering (it runs
// op by op and is counted by name in stats), at content-defined points between half of
// NEURON_MAX_GROUP_OPS ops and all of them (cut_policy.h: an inserted op shifts only the cuts up
// to the next anchor op, not every later one), where the recording thread changes (backward
// ops come from autograd's thread: a step's forward, backward and optimizer get groups of
// their own, so AdamW's first step, which also creates its state, changes only its own groups),
// and where the lowering asks for one (a read or write through a view it cannot relate to an
// earlier write: see group_lowering.h). Every cut depends only on recorded ops and geometry,
// never on timing, so a training step yields the same groups, and the same keys, every step.
//
// The grouper plans (GroupLowering with emit off): it never writes IR. It works one group at a
// time (CutNext), so a flush can look each group up in its PlanCache first (plan_cache.h) and
// call the grouper only for the groups it has not seen.
//
// The records' `cut_fp` and `thread` are the scheduler's (Stream::Record sets them).
//
// Thread-safety: CutNext is reentrant; it reads the records and the Stats (thread-safe).
#pragma once

#include <optional>
#include <vector>

#include "mlir_lowering/group_lowering.h"
#include "runtime/op_record.h"
#include "base/stats.h"
#include "scheduler/segment_refs.h"

namespace trn::scheduler {

// Why a unit ends where it does (what a cached plan of it must have looked at).
enum class CloseReason {
  kPolicy,       // a group the cut policy ended after its last op
  kEnd,          // a group that ends with the run
  kThreadChange, // a group ended before an op from another recording thread
  kCannotLower,  // a group ended before an op without a lowering (or that op itself)
  kAddFailed,    // a group ended before an op its lowering refused or cut at (or that op itself)
};

// One unit of the cut: records [begin, begin + len).
struct CutUnit {
  size_t begin = 0;
  int64_t len = 0;
  std::optional<mlir_lowering::LoweredGroup> lowered;  // a planned group; nullopt: op by op
  CloseReason why = CloseReason::kPolicy;
  bool failed = false;  // a lowering failure (counted), not a refusal: never cached
  // A group after which the next op runs op by op (the grouper did not retry it as a new group).
  bool next_op_by_op = false;
  // kAddFailed: the arguments of the op the lowering refused or cut at (the op after a group, or
  // the op-by-op op itself) that it read besides runtime scalars.
  std::vector<int64_t> failed_value_args;
};

// Cuts `records` from `begin` until a group closes (or the records end): the op-by-op units
// before that group, the group, and the op after it when that op runs op by op. Groups are
// lowered for `target`, and an op it cannot run (Target::CanGroup) runs op by op. `refs`: what
// the flush decided about the records' storages (liveness); null: use counts alone decide.
std::vector<CutUnit> CutNext(const std::vector<runtime::OpRecord>& records, size_t begin, int64_t max_group_ops,
                             const mlir_lowering::Target& target, base::Stats* stats,
                             const SegmentRefs* refs = nullptr);

}  // namespace trn::scheduler
