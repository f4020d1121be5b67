// OpRecord: one recorded ATen op, the unit the scheduler hands to the executor.
//
// Thread-safety: a record is built by the recording thread, then moved to the executor thread,
// which owns it from then on. Device tensors inside are private snapshots (their own TensorImpl
// over the shared storage) and host tensors are private copies, so the user's later metadata
// changes (squeeze_, transpose_) or host writes cannot change what executes.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <vector>

#include "base/source_table.h"

namespace trn::runtime {

struct OpRecord {
  OpRecord(c10::OperatorHandle op_in, std::vector<c10::IValue> args_in)
      : op(std::move(op_in)), args(std::move(args_in)) {}

  c10::OperatorHandle op;
  std::vector<c10::IValue> args;
  // Per schema return: the device tensor (or tensor list) that receives a freshly computed
  // result, or None when the return aliases an argument (in-place / out= / view).
  std::vector<c10::IValue> outputs;
  base::SourceId source = base::kNoSource;
  uint64_t seq = 0;  // stream position, assigned by the scheduler
  // The recording thread (a hash of its id), set by the scheduler: forward and optimizer ops come
  // from the Python thread, backward ops from autograd's device thread. Groups end where it
  // changes (scheduler/grouper.h).
  uint64_t thread = 0;
  // The content fingerprint the grouper cuts by (scheduler/cut_policy.h), set by the scheduler
  // in the modes that group ops.
  uint64_t cut_fp = 0;
};

}  // namespace trn::runtime
