// The emitter's side of IrValue and dtypes: what ir_builder.cpp and ir_emitter.cpp (the only
// front files that include MLIR) share. Internal: no other file includes it.
//
// Thread-safety: pure functions.
#pragma once

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "mlir_lowering/ir_value.h"

namespace trn::mlir_lowering::ir {

inline mlir::Value Unwrap(IrValue v) { return mlir::Value::getFromOpaquePointer(v.opaque()); }
inline IrValue Wrap(mlir::Value v) { return IrValue::FromOpaque(v.getAsOpaquePointer()); }
inline mlir::Location LocOf(const void* opaque) { return mlir::Location::getFromOpaquePointer(opaque); }

// The element type of `dtype` in tensors ("f32", "i64", "i1", "f16", i16 for bfloat16: see
// ir_builder.h); nullptr when not Supported.
mlir::Type ElementType(mlir::MLIRContext* ctx, c10::ScalarType dtype);
// The type a body computes `dtype` in: f32 for the half types, else ElementType.
mlir::Type ComputeType(mlir::MLIRContext* ctx, c10::ScalarType dtype);
mlir::RankedTensorType TensorType(mlir::MLIRContext* ctx, const std::vector<int64_t>& shape, c10::ScalarType dtype);
// `value` converted to `dtype` exactly, as an attribute of ComputeType(dtype) (half types: the
// f32 value, not rounded: a constant in a body is an operand of f32 math, as ATen's opmath
// scalars) or, with `stored`, of ElementType(dtype) (half types: their 16 bits).
mlir::TypedAttr ConstantAttr(mlir::MLIRContext* ctx, const c10::Scalar& value, c10::ScalarType dtype,
                             bool stored = false);

}  // namespace trn::mlir_lowering::ir
