#include "runtime/op_error.h"

#include <c10/util/Exception.h>

#include <exception>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace trn::runtime {
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

absl::Status StatusFromCurrentException() {
  try {
    throw;
  } catch (const c10::IndexError& e) {
    return MakeOpError(ErrorKind::kIndex, e.what_without_backtrace());
  } catch (const c10::ValueError& e) {
    return MakeOpError(ErrorKind::kValue, e.what_without_backtrace());
  } catch (const c10::TypeError& e) {
    return MakeOpError(ErrorKind::kType, e.what_without_backtrace());
  } catch (const c10::NotImplementedError& e) {
    return MakeOpError(ErrorKind::kNotImplemented, e.what_without_backtrace());
  } catch (const c10::LinAlgError& e) {
    return MakeOpError(ErrorKind::kLinAlg, e.what_without_backtrace());
  } catch (const c10::OutOfMemoryError& e) {
    return MakeOpError(ErrorKind::kOutOfMemory, e.what_without_backtrace());
  } catch (const c10::DistBackendError& e) {
    return MakeOpError(ErrorKind::kDistBackend, e.what_without_backtrace());
  } catch (const c10::Error& e) {
    return MakeOpError(ErrorKind::kRuntime, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return MakeOpError(ErrorKind::kRuntime, e.what());
  } catch (...) {
    return MakeOpError(ErrorKind::kRuntime, "unknown C++ exception");
  }
}

}  // namespace trn::runtime
