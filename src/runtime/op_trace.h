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
// Starts a trace (FailedPrecondition if one is active: traces do not nest). `geometry`: each
// tensor's summary also holds what replaying the op needs (below).
absl::Status Start(bool geometry = false);
// Ends the trace and returns it as a JSON array, one object per recorded op in stream order:
// {"op", "source", "args": {name: summary}, "outputs": [summary]}, where a tensor's summary is
// {"shape": [...], "dtype": "Float"} and other values are themselves (None as null). With
// `geometry`, a tensor's summary adds "strides", "offset", "device" ("neuron" or "cpu"); a
// device tensor's "storage" (an id, numbered from 0 in order of first appearance in the trace,
// one per storage: two views of one storage share it) and "storage_bytes"; a host tensor of one
// element its "value"; "neg"/"conj" when those bits are set. That is the input of
// torch-trn-replay-group (src/mlir_lowering/replay_group.cpp).
std::string Stop();
void Add(const OpRecord& record);
// The id `t`'s storage has in the active geometry trace, or -1 (no trace, not a device tensor,
// or a storage no traced op touched yet).
int64_t StorageId(const at::Tensor& t);

}  // namespace trn::runtime::optrace
