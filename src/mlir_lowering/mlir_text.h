// Text building blocks for the group lowering: MLIR types of torch dtypes, exact constants, and
// ScalarBuilder, which writes the scalar body of a linalg.generic (arith/math ops) with the
// right op for each dtype kind (float, signed, unsigned, bool).
//
// Half types (float16, bfloat16) are stored as 16-bit elements and computed in f32, as ATen's
// CPU kernels (opmath) and Trainium's engines do: a body loads an element and widens it to f32
// (ScalarBuilder::Load), every op on it is an f32 op, and the value is rounded to the nearest
// even half value only when stored (ScalarBuilder::Store: a linalg.yield into a half tensor). So
// each ATen op rounds its result once, as eager does, also after the host pipeline fuses a chain
// of ops into one loop (the producer's rounding stays in the fused body). A Scalar of a half
// dtype is an f32 SSA value; a cast to a half dtype inside a body only relabels it, and a
// constant of a half dtype is its f32 value (ATen's scalar operands of half ops are opmath
// floats): values are rounded when stored. bfloat16 elements are i16 in the IR: LLVM 16's x86 backend cannot select vectors of
// `bfloat` (fpext <16 x bfloat> aborts instruction selection) and calls __truncsfbf2, which
// Debian 12's libgcc lacks, for a scalar fptrunc, so Load and Store convert with integer ops.
// The trn pipeline reads those exact spellings back as bf16 (trn/TrnHalfTypes.cpp): change
// them together.
// float16 elements are f16 (F16C's vcvtph2ps / vcvtps2ph).
//
// The lowering emits MLIR *text*: these files need no MLIR header (fast to build, and the
// module text is the debugging artifact: NEURON_DUMP_MLIR). Parsing costs well under a
// millisecond per group (host_jit.h CompileTimings::parse_ms).
//
// Thread-safety: free functions are pure; a ScalarBuilder belongs to one lowering (one thread).
#pragma once

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include <vector>

namespace trn::mlir_lowering {

enum class Kind { kFloat, kSigned, kUnsigned, kBool };

// The MLIR element type of `dtype` in tensors and memrefs ("f32", "i64", "i1", "f16", "i16" for
// bfloat16...), or nullopt when compiled code does not handle it (complex, quantized, float8:
// those ops run op by op).
std::optional<absl::string_view> ElementType(c10::ScalarType dtype);
inline bool Supported(c10::ScalarType dtype) { return ElementType(dtype).has_value(); }
inline bool IsHalf(c10::ScalarType dtype) { return dtype == c10::kHalf || dtype == c10::kBFloat16; }
// The type a body computes `dtype` in: f32 for the half types, else ElementType.
absl::string_view ComputeType(c10::ScalarType dtype);
Kind KindOf(c10::ScalarType dtype);
// "tensor<4x8xf32>", "tensor<f32>".
std::string TensorType(const std::vector<int64_t>& shape, c10::ScalarType dtype);
// "4x8x" (empty for rank 0): the shape prefix of a shaped type.
std::string ShapePrefix(const std::vector<int64_t>& shape);
// An `arith.constant` literal of `value` converted to `dtype`, exact: floats as hex bit
// patterns (so NaN/inf and every bit survive), ints as decimals, bools as 1/0 (`arith.constant true : i1` does not parse).
// Half types: the f32 literal (ComputeType) of the value, not rounded to the half type (a
// constant in a body is an operand of f32 math, as ATen's opmath scalars).
std::string ConstantLiteral(const c10::Scalar& value, c10::ScalarType dtype);
// The literal of `value` as an element of a `dtype` tensor (ElementType): as ConstantLiteral, but
// half types are their 16 bits (f16 as hex, bfloat16 as an i16).
std::string StoredLiteral(const c10::Scalar& value, c10::ScalarType dtype);

// Fresh SSA names, unique in one module.
class NameGen {
 public:
  std::string Next(absl::string_view hint = "v") { return absl::StrCat("%", hint, n_++); }

 private:
  int64_t n_ = 0;
};

// One SSA scalar inside a region, of type ComputeType(dtype).
struct Scalar {
  std::string ssa;
  c10::ScalarType dtype;
};

enum class Cmp { kEq, kNe, kLt, kLe, kGt, kGe };

// Appends scalar ops to `out` (one per line). Binary operations require equal dtypes; Cast
// converts with torch's semantics (float -> int truncates toward zero; x -> bool is x != 0).
// Half dtypes: see the file comment (f32 values, rounded by Store).
class ScalarBuilder {
 public:
  ScalarBuilder(NameGen* names, std::string* out) : names_(names), out_(out) {}

  Scalar Constant(const c10::Scalar& value, c10::ScalarType dtype);
  Scalar Cast(const Scalar& v, c10::ScalarType to);
  // A tensor element as read (`stored`, of ElementType(dtype)) -> its value (ComputeType).
  Scalar Load(const std::string& stored, c10::ScalarType dtype);
  // A value -> the SSA of the element to write (ElementType(v.dtype)); half types round to the
  // nearest even (NaN: bfloat16 0x7FC0, as c10::BFloat16).
  std::string Store(const Scalar& v);
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
  // A float math-dialect op by name ("math.exp"...): unary, or binary when b is given.
  Scalar Math(absl::string_view op, const Scalar& a);
  Scalar Math(absl::string_view op, const Scalar& a, const Scalar& b);
  // The current loop index of dimension `dim` of the enclosing linalg.generic, as i64.
  Scalar LoopIndex(int64_t dim);
  // Any op whose text is `op_text` (operands already substituted) and result is `dtype`.
  Scalar Raw(const std::string& op_text, c10::ScalarType dtype);

  NameGen& names() { return *names_; }

 private:
  Scalar FloatMinMax(trn::mlir_lowering::Cmp pred, const Scalar& a, const Scalar& b);
  Scalar Arith(absl::string_view float_op, absl::string_view int_op, absl::string_view uint_op,
               const Scalar& a, const Scalar& b);
  NameGen* names_;
  std::string* out_;
};

}  // namespace trn::mlir_lowering
