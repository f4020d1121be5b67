// The grouper: cuts a run of recorded ops into execution units, deterministically.
//
// Cuts happen at the ends of the run (sync points), around every op without a lowering (it runs
// op by op and is counted by name in stats), at content-defined points between half of
// NEURON_MAX_GROUP_OPS ops and all of them (cut_policy.h: an inserted op shifts only the cuts up
// to the next anchor op, not every later one), where the recording thread changes (backward
// ops come from autograd's thread: a step's forward, backward and optimizer get groups of
// their own, so AdamW's first step, which also creates its state, changes only its own groups),
// and where the lowering
// asks for one (a read or write through a view it cannot relate to an earlier write: see
// group_lowering.h). Every cut depends only on recorded ops and geometry, never on timing, so a
// training step yields the same groups, and the same keys, every step.
//
// The records' `cut_fp` and `thread` are the scheduler's (Stream::Record sets them).
//
// Thread-safety: CutIntoUnits is reentrant; it reads the records and the Stats (thread-safe).
#pragma once

#include <optional>
#include <vector>

#include "mlir_lowering/group_lowering.h"
#include "runtime/op_record.h"
#include "runtime/stats.h"

namespace trn::scheduler {

struct PlannedUnit {
  std::vector<runtime::OpRecord> ops;
  std::optional<mlir_lowering::LoweredGroup> lowered;  // nullopt: run op by op
};

// `earlier`: references held by work submitted before `records` (see EarlierRefs); may be null.
std::vector<PlannedUnit> CutIntoUnits(std::vector<runtime::OpRecord> records, int64_t max_group_ops,
                                      runtime::Stats* stats, const mlir_lowering::EarlierRefs* earlier = nullptr);

}  // namespace trn::scheduler
