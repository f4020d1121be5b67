// Errors raised while executing an op, carried as absl::Status. The PyTorch exception class the
// eager kernel raised travels as a payload so the dispatcher edge can rethrow the same class.
// (Turning a caught c10::Error into its kind needs torch: runtime/op_runner.h,
// StatusFromCurrentException.)
//
// Thread-safe: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace trn::base {

// The Python exception class eager PyTorch would raise (c10::Error subclasses).
// kDistBackend: a collective's backend failed (a lost peer, the process group's timeout):
// torch.distributed.DistBackendError.
enum class ErrorKind { kRuntime, kIndex, kValue, kType, kNotImplemented, kLinAlg, kOutOfMemory, kDistBackend };

absl::Status MakeOpError(ErrorKind kind, absl::string_view message);
ErrorKind KindOf(const absl::Status& status);

// `status` with "<op> at <where>: " prepended to its message (payloads kept).
absl::Status WithOpContext(const absl::Status& status, absl::string_view op, absl::string_view where);

}  // namespace trn::base
