#include "mlir_lowering/mlir_text.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace trn::mlir_lowering {

std::optional<absl::string_view> ElementType(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat:
      return "f32";
    case c10::kDouble:
      return "f64";
    case c10::kLong:
      return "i64";
    case c10::kInt:
      return "i32";
    case c10::kShort:
      return "i16";
    case c10::kChar:
    case c10::kByte:
      return "i8";
    case c10::kBool:
      return "i1";
    case c10::kHalf:
      return "f16";
    case c10::kBFloat16:
      return "i16";  // see mlir_text.h: LLVM 16 cannot select bfloat vectors on x86
    default:
      return std::nullopt;
  }
}

absl::string_view ComputeType(c10::ScalarType dtype) { return IsHalf(dtype) ? "f32" : *ElementType(dtype); }

Kind KindOf(c10::ScalarType dtype) {
  if (dtype == c10::kBool) {
    return Kind::kBool;
  }
  if (dtype == c10::kByte) {
    return Kind::kUnsigned;
  }
  return c10::isFloatingType(dtype) ? Kind::kFloat : Kind::kSigned;
}

std::string ShapePrefix(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) {
    absl::StrAppend(&s, d, "x");
  }
  return s;
}

std::string TensorType(const std::vector<int64_t>& shape, c10::ScalarType dtype) {
  return absl::StrCat("tensor<", ShapePrefix(shape), *ElementType(dtype), ">");
}

namespace {
// `value` rounded to a half type (through float, as c10::Half / c10::BFloat16 construct); its bits.
uint16_t HalfBits(const c10::Scalar& value, c10::ScalarType dtype) {
  const float f = static_cast<float>(value.toDouble());
  return dtype == c10::kHalf ? c10::Half(f).x : c10::BFloat16(f).x;
}
}  // namespace

std::string StoredLiteral(const c10::Scalar& value, c10::ScalarType dtype) {
  if (dtype == c10::kHalf) {
    return absl::StrFormat("0x%04X", HalfBits(value, dtype));
  }
  if (dtype == c10::kBFloat16) {
    return absl::StrCat(static_cast<int16_t>(HalfBits(value, dtype)));
  }
  return ConstantLiteral(value, dtype);
}

std::string ConstantLiteral(const c10::Scalar& value, c10::ScalarType dtype) {
  switch (KindOf(dtype)) {
    case Kind::kBool:
      return value.toBool() ? "1" : "0";  // "arith.constant 1 : i1" (true/false take no type)
    case Kind::kFloat:
      if (dtype == c10::kFloat || IsHalf(dtype)) {
        float f = IsHalf(dtype) ? static_cast<float>(value.toDouble()) : value.toFloat();
        uint32_t bits;
        std::memcpy(&bits, &f, sizeof bits);
        return absl::StrFormat("0x%08X", bits);
      } else {
        double d = value.toDouble();
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        return absl::StrFormat("0x%016X", bits);
      }
    case Kind::kUnsigned:
      // i8 is signless: write the byte's two's-complement value.
      return absl::StrCat(static_cast<int8_t>(static_cast<uint8_t>(value.toLong())));
    case Kind::kSigned:
      break;
  }
  switch (dtype) {
    case c10::kChar:
      return absl::StrCat(static_cast<int8_t>(value.toLong()));
    case c10::kShort:
      return absl::StrCat(static_cast<int16_t>(value.toLong()));
    case c10::kInt:
      return absl::StrCat(static_cast<int32_t>(value.toLong()));
    default:
      return absl::StrCat(value.toLong());
  }
}

namespace {
absl::string_view Ty(c10::ScalarType t) { return ComputeType(t); }
int Bits(c10::ScalarType t) {
  switch (t) {
    case c10::kDouble:
    case c10::kLong:
      return 64;
    case c10::kFloat:
    case c10::kInt:
      return 32;
    case c10::kShort:
      return 16;
    case c10::kBool:
      return 1;
    default:
      return 8;
  }
}
}  // namespace

Scalar ScalarBuilder::Raw(const std::string& op_text, c10::ScalarType dtype) {
  Scalar r{names_->Next(), dtype};
  absl::StrAppend(out_, "    ", r.ssa, " = ", op_text, "\n");
  return r;
}

Scalar ScalarBuilder::LoopIndex(int64_t dim) {
  std::string index = names_->Next("ix");
  absl::StrAppend(out_, "    ", index, " = linalg.index ", dim, " : index\n");
  return Raw(absl::StrCat("arith.index_cast ", index, " : index to i64"), c10::kLong);
}

Scalar ScalarBuilder::Constant(const c10::Scalar& value, c10::ScalarType dtype) {
  return Raw(absl::StrCat("arith.constant ", ConstantLiteral(value, dtype), " : ", Ty(dtype)), dtype);
}

Scalar ScalarBuilder::Load(const std::string& stored, c10::ScalarType dtype) {
  if (dtype == c10::kHalf) {
    return Raw(absl::StrCat("arith.extf ", stored, " : f16 to f32"), dtype);
  }
  if (dtype == c10::kBFloat16) {
    // A bfloat16 is the high half of the f32 with the same value.
    Scalar wide = Raw(absl::StrCat("arith.extui ", stored, " : i16 to i32"), c10::kInt);
    Scalar high = Raw(absl::StrCat("arith.shli ", wide.ssa, ", ", Constant(16, c10::kInt).ssa, " : i32"), c10::kInt);
    return Raw(absl::StrCat("arith.bitcast ", high.ssa, " : i32 to f32"), dtype);
  }
  return Scalar{stored, dtype};
}

std::string ScalarBuilder::Store(const Scalar& v) {
  if (v.dtype == c10::kHalf) {
    return Raw(absl::StrCat("arith.truncf ", v.ssa, " : f32 to f16"), v.dtype).ssa;
  }
  if (v.dtype != c10::kBFloat16) {
    return v.ssa;
  }
  // c10::detail::round_to_nearest_even: (bits + 0x7FFF + lsb) >> 16, where lsb is bit 16 (ties go
  // to the even neighbour); NaN becomes the quiet NaN 0x7FC0.
  const c10::ScalarType i32 = c10::kInt;
  auto op = [&](absl::string_view name, const Scalar& a, const Scalar& b) {
    return Raw(absl::StrCat(name, " ", a.ssa, ", ", b.ssa, " : i32"), i32);
  };
  Scalar bits = Raw(absl::StrCat("arith.bitcast ", v.ssa, " : f32 to i32"), i32);
  Scalar sixteen = Constant(16, i32);
  Scalar lsb = op("arith.andi", op("arith.shrui", bits, sixteen), Constant(1, i32));
  Scalar rounded = op("arith.shrui", op("arith.addi", bits, op("arith.addi", lsb, Constant(0x7FFF, i32))), sixteen);
  Scalar nan = Raw(absl::StrCat("arith.cmpf uno, ", v.ssa, ", ", v.ssa, " : f32"), c10::kBool);
  Scalar r = Select(nan, Constant(0x7FC0, i32), rounded);
  return Raw(absl::StrCat("arith.trunci ", r.ssa, " : i32 to i16"), c10::kShort).ssa;
}

Scalar ScalarBuilder::Cast(const Scalar& v, c10::ScalarType to) {
  const c10::ScalarType from = v.dtype;
  if (IsHalf(from) || IsHalf(to)) {
    // Half values are f32 values: convert as f32, relabel (Store rounds).
    if (from == to || (IsHalf(from) && IsHalf(to))) {
      return Scalar{v.ssa, to};
    }
    Scalar f = Cast(Scalar{v.ssa, IsHalf(from) ? c10::kFloat : from}, IsHalf(to) ? c10::kFloat : to);
    return Scalar{f.ssa, to};
  }
  if (from == to || (Ty(from) == Ty(to) && KindOf(from) == KindOf(to))) {
    return Scalar{v.ssa, to};
  }
  const Kind kf = KindOf(from), kt = KindOf(to);
  if (kt == Kind::kBool) {
    Scalar zero = Constant(0, from);
    return Cmp(Cmp::kNe, v, zero);
  }
  const std::string cast_to = absl::StrCat(" : ", Ty(from), " to ", Ty(to));
  if (kf == Kind::kFloat && kt == Kind::kFloat) {
    return Raw(absl::StrCat(Bits(to) > Bits(from) ? "arith.extf " : "arith.truncf ", v.ssa, cast_to), to);
  }
  if (kf == Kind::kFloat) {
    return Raw(absl::StrCat(kt == Kind::kUnsigned ? "arith.fptoui " : "arith.fptosi ", v.ssa, cast_to), to);
  }
  if (kt == Kind::kFloat) {
    const bool unsigned_src = kf == Kind::kUnsigned || kf == Kind::kBool;
    return Raw(absl::StrCat(unsigned_src ? "arith.uitofp " : "arith.sitofp ", v.ssa, cast_to), to);
  }
  // int -> int
  if (Bits(to) == Bits(from)) {
    return Scalar{v.ssa, to};  // i8 <-> u8: same bits
  }
  if (Bits(to) < Bits(from)) {
    return Raw(absl::StrCat("arith.trunci ", v.ssa, cast_to), to);
  }
  const bool zero_extend = kf == Kind::kUnsigned || kf == Kind::kBool;
  return Raw(absl::StrCat(zero_extend ? "arith.extui " : "arith.extsi ", v.ssa, cast_to), to);
}

Scalar ScalarBuilder::Arith(absl::string_view float_op, absl::string_view int_op, absl::string_view uint_op,
                            const Scalar& a, const Scalar& b) {
  const Kind k = KindOf(a.dtype);
  absl::string_view op = k == Kind::kFloat ? float_op : (k == Kind::kSigned ? int_op : uint_op);
  return Raw(absl::StrCat(op, " ", a.ssa, ", ", b.ssa, " : ", Ty(a.dtype)), a.dtype);
}

Scalar ScalarBuilder::Add(const Scalar& a, const Scalar& b) {
  if (a.dtype == c10::kBool) {
    return Or(a, b);
  }
  return Arith("arith.addf", "arith.addi", "arith.addi", a, b);
}
Scalar ScalarBuilder::AccumulateAdd(const Scalar& acc, const Scalar& x) {
  if (KindOf(acc.dtype) != Kind::kFloat) {
    return Add(acc, x);
  }
  return Raw(absl::StrCat("arith.addf ", acc.ssa, ", ", x.ssa, " fastmath<reassoc> : ", Ty(acc.dtype)), acc.dtype);
}
Scalar ScalarBuilder::MaxOfNumbers(const Scalar& a, const Scalar& b) {
  if (KindOf(a.dtype) != Kind::kFloat) {
    return Max(a, b);
  }
  return Raw(absl::StrCat("arith.maxf ", a.ssa, ", ", b.ssa, " fastmath<nnan,nsz> : ", Ty(a.dtype)), a.dtype);
}
Scalar ScalarBuilder::Sub(const Scalar& a, const Scalar& b) { return Arith("arith.subf", "arith.subi", "arith.subi", a, b); }
Scalar ScalarBuilder::Mul(const Scalar& a, const Scalar& b) {
  if (a.dtype == c10::kBool) {
    return And(a, b);
  }
  return Arith("arith.mulf", "arith.muli", "arith.muli", a, b);
}
Scalar ScalarBuilder::Div(const Scalar& a, const Scalar& b) { return Arith("arith.divf", "arith.divsi", "arith.divui", a, b); }
Scalar ScalarBuilder::Rem(const Scalar& a, const Scalar& b) { return Arith("arith.remf", "arith.remsi", "arith.remui", a, b); }
// arith.maxf/minf lower to llvm.maxnum/minnum in MLIR 16, which drop NaNs; torch propagates
// them. select(a > b, a, b) propagates b's NaN; the second select propagates a's.
Scalar ScalarBuilder::FloatMinMax(trn::mlir_lowering::Cmp pred, const Scalar& a, const Scalar& b) {
  Scalar pick_a = Cmp(pred, a, b);
  Scalar m = Select(pick_a, a, b);
  return Select(IsNan(a), a, m);
}

Scalar ScalarBuilder::Max(const Scalar& a, const Scalar& b) {
  if (a.dtype == c10::kBool) {
    return Or(a, b);
  }
  if (KindOf(a.dtype) == Kind::kFloat) {
    return FloatMinMax(Cmp::kGt, a, b);
  }
  return Arith("arith.maxf", "arith.maxsi", "arith.maxui", a, b);
}
Scalar ScalarBuilder::Min(const Scalar& a, const Scalar& b) {
  if (a.dtype == c10::kBool) {
    return And(a, b);
  }
  if (KindOf(a.dtype) == Kind::kFloat) {
    return FloatMinMax(Cmp::kLt, a, b);
  }
  return Arith("arith.minf", "arith.minsi", "arith.minui", a, b);
}
Scalar ScalarBuilder::And(const Scalar& a, const Scalar& b) { return Arith("arith.andi", "arith.andi", "arith.andi", a, b); }
Scalar ScalarBuilder::Or(const Scalar& a, const Scalar& b) { return Arith("arith.ori", "arith.ori", "arith.ori", a, b); }
Scalar ScalarBuilder::Xor(const Scalar& a, const Scalar& b) { return Arith("arith.xori", "arith.xori", "arith.xori", a, b); }
Scalar ScalarBuilder::ShiftLeft(const Scalar& a, const Scalar& b) { return Arith("arith.shli", "arith.shli", "arith.shli", a, b); }
Scalar ScalarBuilder::ShiftRight(const Scalar& a, const Scalar& b) { return Arith("arith.shrsi", "arith.shrsi", "arith.shrui", a, b); }

Scalar ScalarBuilder::Neg(const Scalar& a) {
  if (KindOf(a.dtype) == Kind::kFloat) {
    return Raw(absl::StrCat("arith.negf ", a.ssa, " : ", Ty(a.dtype)), a.dtype);
  }
  return Sub(Constant(0, a.dtype), a);
}

Scalar ScalarBuilder::Abs(const Scalar& a) {
  switch (KindOf(a.dtype)) {
    case Kind::kFloat:
      return Raw(absl::StrCat("math.absf ", a.ssa, " : ", Ty(a.dtype)), a.dtype);
    case Kind::kSigned:
      return Raw(absl::StrCat("math.absi ", a.ssa, " : ", Ty(a.dtype)), a.dtype);
    default:
      return a;
  }
}

Scalar ScalarBuilder::Not(const Scalar& a) {
  Scalar ones = a.dtype == c10::kBool ? Constant(true, a.dtype) : Constant(-1, a.dtype);
  return Xor(a, ones);
}

Scalar ScalarBuilder::Cmp(trn::mlir_lowering::Cmp pred, const Scalar& a, const Scalar& b) {
  static constexpr absl::string_view kFloat[] = {"oeq", "une", "olt", "ole", "ogt", "oge"};
  static constexpr absl::string_view kSigned[] = {"eq", "ne", "slt", "sle", "sgt", "sge"};
  static constexpr absl::string_view kUnsigned[] = {"eq", "ne", "ult", "ule", "ugt", "uge"};
  const int i = static_cast<int>(pred);
  const Kind k = KindOf(a.dtype);
  if (k == Kind::kFloat) {
    return Raw(absl::StrCat("arith.cmpf ", kFloat[i], ", ", a.ssa, ", ", b.ssa, " : ", Ty(a.dtype)), c10::kBool);
  }
  absl::string_view p = k == Kind::kSigned ? kSigned[i] : kUnsigned[i];
  return Raw(absl::StrCat("arith.cmpi ", p, ", ", a.ssa, ", ", b.ssa, " : ", Ty(a.dtype)), c10::kBool);
}

Scalar ScalarBuilder::Select(const Scalar& cond, const Scalar& a, const Scalar& b) {
  return Raw(absl::StrCat("arith.select ", cond.ssa, ", ", a.ssa, ", ", b.ssa, " : ", Ty(a.dtype)), a.dtype);
}

Scalar ScalarBuilder::IsNan(const Scalar& a) {
  if (KindOf(a.dtype) != Kind::kFloat) {
    return Constant(false, c10::kBool);
  }
  return Raw(absl::StrCat("arith.cmpf uno, ", a.ssa, ", ", a.ssa, " : ", Ty(a.dtype)), c10::kBool);
}

Scalar ScalarBuilder::Math(absl::string_view op, const Scalar& a) {
  return Raw(absl::StrCat(op, " ", a.ssa, " : ", Ty(a.dtype)), a.dtype);
}

Scalar ScalarBuilder::Math(absl::string_view op, const Scalar& a, const Scalar& b) {
  return Raw(absl::StrCat(op, " ", a.ssa, ", ", b.ssa, " : ", Ty(a.dtype)), a.dtype);
}

}  // namespace trn::mlir_lowering
