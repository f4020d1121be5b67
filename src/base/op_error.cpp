#include "base/op_error.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace trn::base {
namespace {

constexpr absl::string_view kKindPayload = "trn.error_kind";

absl::StatusCode CodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kIndex:
      return absl::StatusCode::kOutOfRange;
    case ErrorKind::kValue:
    case ErrorKind::kType:
      return absl::StatusCode::kInvalidArgument;
    case ErrorKind::kNotImplemented:
      return absl::StatusCode::kUnimplemented;
    case ErrorKind::kOutOfMemory:
      return absl::StatusCode::kResourceExhausted;
    case ErrorKind::kDistBackend:
      return absl::StatusCode::kUnavailable;
    case ErrorKind::kRuntime:
    case ErrorKind::kLinAlg:
      return absl::StatusCode::kInternal;
  }
  return absl::StatusCode::kInternal;
}

}  // namespace

absl::Status MakeOpError(ErrorKind kind, absl::string_view message) {
  absl::Status status(CodeFor(kind), message);
  status.SetPayload(kKindPayload, absl::Cord(std::string(1, static_cast<char>('0' + static_cast<int>(kind)))));
  return status;
}

ErrorKind KindOf(const absl::Status& status) {
  auto payload = status.GetPayload(kKindPayload);
  if (!payload.has_value()) {
    return status.code() == absl::StatusCode::kInvalidArgument ? ErrorKind::kValue : ErrorKind::kRuntime;
  }
  std::string s(*payload);
  int k = s.empty() ? 0 : s[0] - '0';
  return static_cast<ErrorKind>(k);
}

absl::Status WithOpContext(const absl::Status& status, absl::string_view op, absl::string_view where) {
  if (status.ok()) {
    return status;
  }
  absl::Status out(status.code(), absl::StrCat(op, " at ", where, ": ", status.message()));
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

}  // namespace trn::base
