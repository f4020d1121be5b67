// Text building blocks for the group lowering: MLIR types of torch dtypes, exact constants, and
// ScalarBuilder, which writes the scalar body of a linalg.generic (arith/math ops) with the
// right op for each dtype kind (float, signed, unsigned, bool).
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

// The MLIR element type of `dtype` ("f32", "i64", "i1"...), or nullopt when compiled code does
// not handle it (complex, half types, quantized: those ops run op by op).
std::optional<absl::string_view> ElementType(c10::ScalarType dtype);
inline bool Supported(c10::ScalarType dtype) { return ElementType(dtype).has_value(); }
Kind KindOf(c10::ScalarType dtype);
// "tensor<4x8xf32>", "tensor<f32>".
std::string TensorType(const std::vector<int64_t>& shape, c10::ScalarType dtype);
// "4x8x" (empty for rank 0): the shape prefix of a shaped type.
std::string ShapePrefix(const std::vector<int64_t>& shape);
// An `arith.constant` literal of `value` converted to `dtype`, exact: floats as hex bit
// patterns (so NaN/inf and every bit survive), ints as decimals, bools as 1/0 (`arith.constant true : i1` does not parse).
std::string ConstantLiteral(const c10::Scalar& value, c10::ScalarType dtype);

// Fresh SSA names, unique in one module.
class NameGen {
 public:
  std::string Next(absl::string_view hint = "v") { return absl::StrCat("%", hint, n_++); }

 private:
  int64_t n_ = 0;
};

// One SSA scalar inside a region.
struct Scalar {
  std::string ssa;
  c10::ScalarType dtype;
};

enum class Cmp { kEq, kNe, kLt, kLe, kGt, kGe };

// Appends scalar ops to `out` (one per line). Binary operations require equal dtypes; Cast
// converts with torch's semantics (float -> int truncates toward zero; x -> bool is x != 0).
class ScalarBuilder {
 public:
  ScalarBuilder(NameGen* names, std::string* out) : names_(names), out_(out) {}

  Scalar Constant(const c10::Scalar& value, c10::ScalarType dtype);
  Scalar Cast(const Scalar& v, c10::ScalarType to);

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
