// Runs one op with ATen's CPU kernels on host aliases of device storage.
//
// Thread-safe: yes, given that no other thread writes the storages involved meanwhile (the
// executor runs ops one at a time in stream order).
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "runtime/op_record.h"

namespace trn::runtime {

// Calls `op` on host aliases of `args`; `results` receives the returned values (host tensors).
// Errors carry the kernel's exception class (op_error.h) and the raw kernel message.
absl::Status RunOnHost(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                       std::vector<c10::IValue>* results);

// Runs `record` and writes fresh results into its output tensors.
absl::Status ExecuteRecord(const OpRecord& record);

// Converts the exception currently being handled (call inside a catch block) to a status: a
// c10::Error subclass to the error kind of its Python class (op_error.h), anything else to kRuntime.
absl::Status StatusFromCurrentException();

// "aten::add.Tensor" (schema name + overload).
std::string OpName(const c10::OperatorHandle& op);

}  // namespace trn::runtime
