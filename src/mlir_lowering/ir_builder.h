// Building blocks of the group lowering's IR: the element types of torch dtypes and
// ScalarBuilder, which builds the scalar body of a linalg.generic (arith/math ops, through MLIR's
// OpBuilder) with the right op for each dtype kind (float, signed, unsigned, bool).
//
// Half types (float16, bfloat16) are stored as 16-bit elements and computed in f32, as ATen's
// CPU kernels (opmath) and Trainium's engines do: a body loads an element and widens it to f32
// (ScalarBuilder::Load), every op on it is an f32 op, and the value is rounded to the nearest
// even half value only when stored (ScalarBuilder::Store: a linalg.yield into a half tensor). So
// each ATen op rounds its result once, as eager does, also after the host pipeline fuses a chain
// of ops into one loop (the producer's rounding stays in the fused body). A Scalar of a half
// dtype is an f32 value; a cast to a half dtype inside a body only relabels it, and a constant
// of a half dtype is its f32 value (ATen's scalar operands of half ops are opmath floats):
// values are rounded when stored. bfloat16 elements are i16 in the IR: LLVM 16's x86 backend
// cannot select vectors of `bfloat` (fpext <16 x bfloat> aborts instruction selection) and calls
// __truncsfbf2, which Debian 12's libgcc lacks, for a scalar fptrunc, so Load and Store convert
// with integer ops. The trn pipeline reads those exact op sequences back as bf16
// (trn/TrnHalfTypes.cpp): change them together. float16 elements are f16 (F16C's vcvtph2ps /
// vcvtps2ph).
//
// This header includes no MLIR header: values are IrValue handles (ir_value.h); ir_builder.cpp
// builds the ops. Constants are exact: floats from their bits (NaN, inf and every bit survive).
//
// Thread-safety: free functions are pure; a ScalarBuilder belongs to one lowering (one thread).
#pragma once

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

#include "mlir_lowering/ir_value.h"

namespace mlir {
class OpBuilder;
}  // namespace mlir

namespace trn::mlir_lowering {

enum class Kind { kFloat, kSigned, kUnsigned, kBool };

// Whether compiled code handles `dtype` (complex, quantized and float8 ops run op by op).
bool Supported(c10::ScalarType dtype);
inline bool IsHalf(c10::ScalarType dtype) { return dtype == c10::kHalf || dtype == c10::kBFloat16; }
Kind KindOf(c10::ScalarType dtype);

// One scalar value inside a region, of the compute type of `dtype` (f32 for the half types,
// else the element type: f32, f64, i64, i32, i16, i8, i1).
struct Scalar {
  IrValue value;
  c10::ScalarType dtype;
};

enum class Cmp { kEq, kNe, kLt, kLe, kGt, kGe };

// Float functions of the math dialect, unary and binary (with arith's NaN-dropping max and min),
// built by ScalarBuilder::Math.
enum class MathFn { kExp, kExp2, kExpm1, kLog, kLog2, kLog10, kLog1p, kSqrt, kSin, kCos, kTan, kTanh, kAtan, kErf,
                    kFloor, kCeil, kTrunc, kRoundEven };
enum class MathFn2 { kAtan2, kCopySign, kPowF, kMaxNum, kMinNum };

// Builds scalar ops at the builder's insertion point (a region of a linalg.generic). Binary
// operations require equal dtypes; Cast converts with torch's semantics (float -> int truncates
// toward zero; x -> bool is x != 0). Half dtypes: see the file comment (f32 values, rounded by
// Store). Made by the emitter (ir_emitter.h) for each body; `location` is the op's location
// (mlir::Location's opaque pointer).
class ScalarBuilder {
 public:
  ScalarBuilder(mlir::OpBuilder* builder, const void* location) : b_(builder), loc_(location) {}

  Scalar Constant(const c10::Scalar& value, c10::ScalarType dtype);
  Scalar Cast(const Scalar& v, c10::ScalarType to);
  // A tensor element as read (`stored`, of the element type of dtype) -> its value.
  Scalar Load(IrValue stored, c10::ScalarType dtype);
  // A value -> the element to write; half types round to the nearest even (NaN: bfloat16
  // 0x7FC0, as c10::BFloat16).
  IrValue Store(const Scalar& v);
  // A half value rounded to its dtype, still a value (Load(Store(v))); other dtypes: v.
  Scalar Round(const Scalar& v) { return IsHalf(v.dtype) ? Load(Store(v), v.dtype) : v; }

  Scalar Add(const Scalar& a, const Scalar& b);
  Scalar Sub(const Scalar& a, const Scalar& b);
  Scalar Mul(const Scalar& a, const Scalar& b);
  Scalar Div(const Scalar& a, const Scalar& b);  // floats: true division; ints: truncating
  Scalar Rem(const Scalar& a, const Scalar& b);  // floats: C fmod semantics
  Scalar Max(const Scalar& a, const Scalar& b);  // NaN-propagating for floats, as torch
  Scalar Min(const Scalar& a, const Scalar& b);
  // Accumulation of a reduction: Add, but floats may be reassociated (`fastmath<reassoc>`), so
  // LLVM vectorises the loop with partial sums; strictly in order it runs one add per latency.
  Scalar AccumulateAdd(const Scalar& acc, const Scalar& x);
  // Float max of operands that are never NaN (`fastmath<nnan,nsz>`, which lets LLVM vectorise a
  // max reduction; a NaN operand would make the result poison). Other dtypes: Max.
  Scalar MaxOfNumbers(const Scalar& a, const Scalar& b);
  Scalar Neg(const Scalar& a);
  Scalar Abs(const Scalar& a);
  Scalar Cmp(trn::mlir_lowering::Cmp pred, const Scalar& a, const Scalar& b);  // -> bool
  Scalar Select(const Scalar& cond, const Scalar& a, const Scalar& b);
  Scalar And(const Scalar& a, const Scalar& b);  // bool/int bitwise
  Scalar Or(const Scalar& a, const Scalar& b);
  Scalar Xor(const Scalar& a, const Scalar& b);
  Scalar Not(const Scalar& a);  // bool: logical not; ints: bitwise not
  // Integer shifts by b (arith.shli / shrsi / shrui: poison for b outside [0, bits)).
  Scalar ShiftLeft(const Scalar& a, const Scalar& b);
  Scalar ShiftRight(const Scalar& a, const Scalar& b);  // arithmetic for signed dtypes
  Scalar IsNan(const Scalar& a);
  Scalar Math(MathFn fn, const Scalar& a);
  Scalar Math(MathFn2 fn, const Scalar& a, const Scalar& b);
  // The current loop index of dimension `dim` of the enclosing linalg.generic, as i64.
  Scalar LoopIndex(int64_t dim);
  // The element at `index` (i64 scalars, one per dimension) of `tensor` (a tensor value defined
  // outside the body, of `dtype`), loaded (Load): the gathers of nll_loss and pooling windows.
  Scalar Extract(IrValue tensor, c10::ScalarType dtype, const std::vector<Scalar>& index);

 private:
  Scalar FloatMinMax(trn::mlir_lowering::Cmp pred, const Scalar& a, const Scalar& b);
  enum class ArithOp { kAdd, kSub, kMul, kDiv, kRem, kMax, kMin, kAnd, kOr, kXor, kShl, kShr };
  Scalar Arith(ArithOp op, const Scalar& a, const Scalar& b);
  mlir::OpBuilder* b_;
  const void* loc_;
};

}  // namespace trn::mlir_lowering
