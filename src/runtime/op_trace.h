// The recorded-op trace behind torch_trn.trace_ops(): while active, every op appended to the
// stream is also summarised here (name, schema argument names, tensor shapes and dtypes,
// scalar and list values, the output shapes, the source line). Tools read it as the source of
// truth of what a model ran on the device (tests/zoo derives model features from it).
//
// Thread-safety: thread-safe (ops are recorded from the Python thread and the autograd thread);
// Enabled() is one atomic load, so the hook costs nothing when no trace is active.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "runtime/op_record.h"

namespace trn::runtime::optrace {

bool Enabled();
// Starts a trace (FailedPrecondition if one is active: traces do not nest).
absl::Status Start();
// Ends the trace and returns it as a JSON array, one object per recorded op in stream order:
// {"op", "source", "args": {name: summary}, "outputs": [summary]}, where a tensor's summary is
// {"shape": [...], "dtype": "float32"} and other values are themselves (None as null).
std::string Stop();
void Add(const OpRecord& record);

}  // namespace trn::runtime::optrace
