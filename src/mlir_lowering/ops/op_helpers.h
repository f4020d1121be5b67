// Shared helpers of the op-family lowering files (ops/*.cpp). Internal to src/mlir_lowering.
//
// Thread-safety: as GroupLowering (one thread per lowering).
#pragma once

#include <ATen/native/TypeProperties.h>

#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mlir_lowering/group_lowering.h"
#include "mlir_lowering/lowering_registry.h"

#define TRN_RETURN_IF_ERROR(expr)          \
  do {                                     \
    absl::Status trn_status_ = (expr);     \
    if (!trn_status_.ok()) return trn_status_; \
  } while (0)

#define TRN_CONCAT_INNER(a, b) a##b
#define TRN_CONCAT(a, b) TRN_CONCAT_INNER(a, b)
#define TRN_ASSIGN_OR_RETURN(lhs, expr) TRN_ASSIGN_OR_RETURN_IMPL(TRN_CONCAT(trn_or_, __LINE__), lhs, expr)
#define TRN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(*tmp)

namespace trn::mlir_lowering {

// Whether the current op has an argument `name` that is not None.
inline bool HasArg(const GroupLowering& g, absl::string_view name) {
  absl::StatusOr<c10::IValue> v = g.Arg(name);
  return v.ok() && !v->isNone();
}

// The named argument as an operand; a floating-point scalar becomes a runtime scalar (see
// GroupLowering::ReadOperand).
inline absl::StatusOr<Operand> ArgOperand(GroupLowering& g, absl::string_view name) {
  TRN_ASSIGN_OR_RETURN(c10::IValue v, g.Arg(name));
  return g.ReadOperand(v, g.ArgIndex(name));
}

// torch's type promotion over the named arguments (tensors and scalars; None skipped).
inline c10::ScalarType PromotedType(const GroupLowering& g, const std::vector<absl::string_view>& names) {
  at::native::ResultTypeState state;
  for (absl::string_view n : names) {
    absl::StatusOr<c10::IValue> v = g.Arg(n);
    if (!v.ok() || v->isNone()) {
      continue;
    }
    if (v->isTensor()) {
      state = at::native::update_result_type_state(v->toTensor(), state);
    } else if (v->isScalar()) {
      state = at::native::update_result_type_state(v->toScalar(), state);
    }
  }
  return at::native::result_type(state);
}

inline std::vector<int64_t> DestSizes(const GroupLowering& g, size_t ret = 0) {
  return g.Destination(ret).sizes().vec();
}

// How PointwiseResult passes a scalar (non-tensor) operand of a half compute dtype to the body.
enum class HalfScalars {
  kRound,   // rounded to the half dtype: ATen's TensorIterator casts a wrapped scalar to the
            // common dtype (a + 0.3, alpha)
  kOpmath,  // its f32 value: ATen's mul and div kernels read it as opmath (original_scalar_value)
};

// Return 0 = body(named args...), pointwise over the destination's shape. `body` receives the
// elements already cast to `compute` (or to the destination's dtype when compute is Undefined).
inline absl::Status PointwiseResult(GroupLowering& g, const std::vector<absl::string_view>& names,
                                    c10::ScalarType compute, const BodyFn& body,
                                    HalfScalars half_scalars = HalfScalars::kRound) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined()) {
    return absl::UnimplementedError("no destination");
  }
  if (compute == c10::ScalarType::Undefined) {
    compute = dst.scalar_type();
  }
  if (!Supported(compute)) {
    return absl::UnimplementedError("unsupported compute dtype");
  }
  std::vector<Operand> ins;
  for (absl::string_view n : names) {
    TRN_ASSIGN_OR_RETURN(Operand o, ArgOperand(g, n));
    ins.push_back(std::move(o));
  }
  View v = g.Pointwise(ins, dst.sizes().vec(), dst.scalar_type(),
                       [&](ScalarBuilder& b, const std::vector<Scalar>& a) {
                         std::vector<Scalar> cast;
                         for (size_t i = 0; i < a.size(); ++i) {
                           cast.push_back(b.Cast(a[i], compute));
                           if (IsHalf(compute) && !ins[i].view.has_value() && half_scalars == HalfScalars::kRound) {
                             cast.back() = b.Round(cast.back());
                           }
                         }
                         return body(b, cast);
                       });
  return g.WriteResult(0, v);
}

// A scalar argument's value, as a compile-time constant (in the group key): use it when the
// generated code depends on the value. kUnimplemented when missing or not a scalar.
inline absl::StatusOr<c10::Scalar> ScalarArg(const GroupLowering& g, absl::string_view name) {
  TRN_ASSIGN_OR_RETURN(c10::IValue v, g.Arg(name));
  if (!v.isScalar()) {
    return absl::UnimplementedError(absl::StrCat("argument ", name, " is not a scalar"));
  }
  return v.toScalar();
}

}  // namespace trn::mlir_lowering
