#include "mlir_lowering/ir_builder.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir_lowering/ir_internal.h"

namespace trn::mlir_lowering {

bool Supported(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat:
    case c10::kDouble:
    case c10::kLong:
    case c10::kInt:
    case c10::kShort:
    case c10::kChar:
    case c10::kByte:
    case c10::kBool:
    case c10::kHalf:
    case c10::kBFloat16:
      return true;
    default:
      return false;
  }
}

Kind KindOf(c10::ScalarType dtype) {
  if (dtype == c10::kBool) {
    return Kind::kBool;
  }
  if (dtype == c10::kByte) {
    return Kind::kUnsigned;
  }
  return c10::isFloatingType(dtype) ? Kind::kFloat : Kind::kSigned;
}

namespace {

int Bits(c10::ScalarType t) {
  switch (t) {
    case c10::kDouble:
    case c10::kLong:
      return 64;
    case c10::kFloat:
    case c10::kInt:
      return 32;
    case c10::kShort:
    case c10::kHalf:
    case c10::kBFloat16:
      return 16;
    case c10::kBool:
      return 1;
    default:
      return 8;
  }
}

// `value` rounded to a half type (through float, as c10::Half / c10::BFloat16 construct); its bits.
uint16_t HalfBits(const c10::Scalar& value, c10::ScalarType dtype) {
  const float f = static_cast<float>(value.toDouble());
  return dtype == c10::kHalf ? c10::Half(f).x : c10::BFloat16(f).x;
}

// An integer of `dtype` (signed, or i8 for uint8: signless, the byte's two's complement).
int64_t IntegerValue(const c10::Scalar& value, c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kBool:
      return value.toBool() ? 1 : 0;
    case c10::kByte:
      return static_cast<int8_t>(static_cast<uint8_t>(value.toLong()));
    case c10::kChar:
      return static_cast<int8_t>(value.toLong());
    case c10::kShort:
      return static_cast<int16_t>(value.toLong());
    case c10::kInt:
      return static_cast<int32_t>(value.toLong());
    default:
      return value.toLong();
  }
}

}  // namespace

namespace ir {

mlir::Type ElementType(mlir::MLIRContext* ctx, c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat:
      return mlir::FloatType::getF32(ctx);
    case c10::kDouble:
      return mlir::FloatType::getF64(ctx);
    case c10::kHalf:
      return mlir::FloatType::getF16(ctx);
    case c10::kBFloat16:  // see ir_builder.h: LLVM 16 cannot select bfloat vectors on x86
    case c10::kShort:
      return mlir::IntegerType::get(ctx, 16);
    case c10::kLong:
    case c10::kInt:
    case c10::kChar:
    case c10::kByte:
    case c10::kBool:
      return mlir::IntegerType::get(ctx, Bits(dtype));
    default:
      return nullptr;
  }
}

mlir::Type ComputeType(mlir::MLIRContext* ctx, c10::ScalarType dtype) {
  return IsHalf(dtype) ? mlir::FloatType::getF32(ctx) : ElementType(ctx, dtype);
}

mlir::RankedTensorType TensorType(mlir::MLIRContext* ctx, const std::vector<int64_t>& shape, c10::ScalarType dtype) {
  return mlir::RankedTensorType::get(shape, ElementType(ctx, dtype));
}

mlir::TypedAttr ConstantAttr(mlir::MLIRContext* ctx, const c10::Scalar& value, c10::ScalarType dtype, bool stored) {
  if (stored && dtype == c10::kHalf) {
    return mlir::FloatAttr::get(mlir::FloatType::getF16(ctx),
                                llvm::APFloat(llvm::APFloat::IEEEhalf(), llvm::APInt(16, HalfBits(value, dtype))));
  }
  if (stored && dtype == c10::kBFloat16) {
    return mlir::IntegerAttr::get(mlir::IntegerType::get(ctx, 16), llvm::APInt(16, HalfBits(value, dtype)));
  }
  const mlir::Type type = ComputeType(ctx, dtype);
  if (KindOf(dtype) == Kind::kFloat) {
    if (dtype == c10::kDouble) {
      return mlir::FloatAttr::get(type, llvm::APFloat(value.toDouble()));
    }
    const float f = IsHalf(dtype) ? static_cast<float>(value.toDouble()) : value.toFloat();
    return mlir::FloatAttr::get(type, llvm::APFloat(f));
  }
  const int bits = Bits(dtype);
  return mlir::IntegerAttr::get(
      type, llvm::APInt(bits, static_cast<uint64_t>(IntegerValue(value, dtype)), /*isSigned=*/bits > 1));
}

}  // namespace ir

namespace {

using ir::LocOf;
using ir::Unwrap;
using ir::Wrap;
namespace arith = mlir::arith;
namespace math = mlir::math;

}  // namespace

Scalar ScalarBuilder::LoopIndex(int64_t dim) {
  const mlir::Location loc = LocOf(loc_);
  mlir::Value index = b_->create<mlir::linalg::IndexOp>(loc, dim);
  return Scalar{Wrap(b_->create<arith::IndexCastOp>(loc, b_->getI64Type(), index)), c10::kLong};
}

Scalar ScalarBuilder::Extract(IrValue tensor, c10::ScalarType dtype, const std::vector<Scalar>& index) {
  const mlir::Location loc = LocOf(loc_);
  llvm::SmallVector<mlir::Value> ix;
  for (const Scalar& s : index) {
    ix.push_back(b_->create<arith::IndexCastOp>(loc, b_->getIndexType(), Unwrap(s.value)));
  }
  mlir::Value stored = b_->create<mlir::tensor::ExtractOp>(loc, Unwrap(tensor), ix);
  return Load(Wrap(stored), dtype);
}

Scalar ScalarBuilder::Constant(const c10::Scalar& value, c10::ScalarType dtype) {
  mlir::TypedAttr attr = ir::ConstantAttr(b_->getContext(), value, dtype);
  return Scalar{Wrap(b_->create<arith::ConstantOp>(LocOf(loc_), attr)), dtype};
}

Scalar ScalarBuilder::Load(IrValue stored, c10::ScalarType dtype) {
  const mlir::Location loc = LocOf(loc_);
  if (dtype == c10::kHalf) {
    return Scalar{Wrap(b_->create<arith::ExtFOp>(loc, b_->getF32Type(), Unwrap(stored))), dtype};
  }
  if (dtype == c10::kBFloat16) {
    // A bfloat16 is the high half of the f32 with the same value.
    mlir::Value wide = b_->create<arith::ExtUIOp>(loc, b_->getI32Type(), Unwrap(stored));
    mlir::Value high = b_->create<arith::ShLIOp>(loc, wide, Unwrap(Constant(16, c10::kInt).value));
    return Scalar{Wrap(b_->create<arith::BitcastOp>(loc, b_->getF32Type(), high)), dtype};
  }
  return Scalar{stored, dtype};
}

IrValue ScalarBuilder::Store(const Scalar& v) {
  const mlir::Location loc = LocOf(loc_);
  if (v.dtype == c10::kHalf) {
    return Wrap(b_->create<arith::TruncFOp>(loc, b_->getF16Type(), Unwrap(v.value)));
  }
  if (v.dtype != c10::kBFloat16) {
    return v.value;
  }
  // c10::detail::round_to_nearest_even: (bits + 0x7FFF + lsb) >> 16, where lsb is bit 16 (ties go
  // to the even neighbour); NaN becomes the quiet NaN 0x7FC0.
  auto c = [&](int64_t x) { return Unwrap(Constant(x, c10::kInt).value); };
  const mlir::Value value = Unwrap(v.value);
  mlir::Value bits = b_->create<arith::BitcastOp>(loc, b_->getI32Type(), value);
  mlir::Value sixteen = c(16);
  mlir::Value lsb = b_->create<arith::AndIOp>(loc, b_->create<arith::ShRUIOp>(loc, bits, sixteen), c(1));
  mlir::Value sum = b_->create<arith::AddIOp>(loc, bits, b_->create<arith::AddIOp>(loc, lsb, c(0x7FFF)));
  mlir::Value rounded = b_->create<arith::ShRUIOp>(loc, sum, sixteen);
  mlir::Value nan = b_->create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, value, value);
  mlir::Value r = b_->create<arith::SelectOp>(loc, nan, c(0x7FC0), rounded);
  return Wrap(b_->create<arith::TruncIOp>(loc, b_->getI16Type(), r));
}

Scalar ScalarBuilder::Cast(const Scalar& v, c10::ScalarType to) {
  const c10::ScalarType from = v.dtype;
  if (IsHalf(from) || IsHalf(to)) {
    // Half values are f32 values: convert as f32, relabel (Store rounds).
    if (from == to || (IsHalf(from) && IsHalf(to))) {
      return Scalar{v.value, to};
    }
    Scalar f = Cast(Scalar{v.value, IsHalf(from) ? c10::kFloat : from}, IsHalf(to) ? c10::kFloat : to);
    return Scalar{f.value, to};
  }
  mlir::MLIRContext* ctx = b_->getContext();
  const mlir::Type from_type = ir::ComputeType(ctx, from), to_type = ir::ComputeType(ctx, to);
  const Kind kf = KindOf(from), kt = KindOf(to);
  if (from == to || (from_type == to_type && kf == kt)) {
    return Scalar{v.value, to};
  }
  if (kt == Kind::kBool) {
    return Cmp(Cmp::kNe, v, Constant(0, from));
  }
  const mlir::Location loc = LocOf(loc_);
  const mlir::Value x = Unwrap(v.value);
  mlir::Value r;
  if (kf == Kind::kFloat && kt == Kind::kFloat) {
    r = Bits(to) > Bits(from) ? b_->create<arith::ExtFOp>(loc, to_type, x).getResult()
                              : b_->create<arith::TruncFOp>(loc, to_type, x).getResult();
  } else if (kf == Kind::kFloat) {
    r = kt == Kind::kUnsigned ? b_->create<arith::FPToUIOp>(loc, to_type, x).getResult()
                              : b_->create<arith::FPToSIOp>(loc, to_type, x).getResult();
  } else if (kt == Kind::kFloat) {
    const bool unsigned_src = kf == Kind::kUnsigned || kf == Kind::kBool;
    r = unsigned_src ? b_->create<arith::UIToFPOp>(loc, to_type, x).getResult()
                     : b_->create<arith::SIToFPOp>(loc, to_type, x).getResult();
  } else if (Bits(to) == Bits(from)) {
    return Scalar{v.value, to};  // i8 <-> u8: same bits
  } else if (Bits(to) < Bits(from)) {
    r = b_->create<arith::TruncIOp>(loc, to_type, x);
  } else {
    const bool zero_extend = kf == Kind::kUnsigned || kf == Kind::kBool;
    r = zero_extend ? b_->create<arith::ExtUIOp>(loc, to_type, x).getResult()
                    : b_->create<arith::ExtSIOp>(loc, to_type, x).getResult();
  }
  return Scalar{Wrap(r), to};
}

namespace {

// The op of a binary operation for the operands' kind: floats, signed integers, or the rest
// (unsigned integers and bools).
template <typename FloatOp, typename SignedOp, typename UnsignedOp = SignedOp>
mlir::Value ByKind(mlir::OpBuilder& b, mlir::Location loc, Kind k, mlir::Value x, mlir::Value y) {
  if (k == Kind::kFloat) return b.create<FloatOp>(loc, x, y);
  if (k == Kind::kSigned) return b.create<SignedOp>(loc, x, y);
  return b.create<UnsignedOp>(loc, x, y);
}

}  // namespace

Scalar ScalarBuilder::Arith(ArithOp op, const Scalar& a, const Scalar& b) {
  const mlir::Location loc = LocOf(loc_);
  const mlir::Value x = Unwrap(a.value), y = Unwrap(b.value);
  const Kind k = KindOf(a.dtype);
  mlir::Value r;
  switch (op) {
    case ArithOp::kAdd:
      r = ByKind<arith::AddFOp, arith::AddIOp>(*b_, loc, k, x, y);
      break;
    case ArithOp::kSub:
      r = ByKind<arith::SubFOp, arith::SubIOp>(*b_, loc, k, x, y);
      break;
    case ArithOp::kMul:
      r = ByKind<arith::MulFOp, arith::MulIOp>(*b_, loc, k, x, y);
      break;
    case ArithOp::kDiv:
      r = ByKind<arith::DivFOp, arith::DivSIOp, arith::DivUIOp>(*b_, loc, k, x, y);
      break;
    case ArithOp::kRem:
      r = ByKind<arith::RemFOp, arith::RemSIOp, arith::RemUIOp>(*b_, loc, k, x, y);
      break;
    case ArithOp::kMax:
      r = ByKind<arith::MaxFOp, arith::MaxSIOp, arith::MaxUIOp>(*b_, loc, k, x, y);
      break;
    case ArithOp::kMin:
      r = ByKind<arith::MinFOp, arith::MinSIOp, arith::MinUIOp>(*b_, loc, k, x, y);
      break;
    case ArithOp::kAnd:
      r = b_->create<arith::AndIOp>(loc, x, y);
      break;
    case ArithOp::kOr:
      r = b_->create<arith::OrIOp>(loc, x, y);
      break;
    case ArithOp::kXor:
      r = b_->create<arith::XOrIOp>(loc, x, y);
      break;
    case ArithOp::kShl:
      r = b_->create<arith::ShLIOp>(loc, x, y);
      break;
    case ArithOp::kShr:
      r = ByKind<arith::ShRSIOp, arith::ShRSIOp, arith::ShRUIOp>(*b_, loc, k, x, y);
      break;
  }
  return Scalar{Wrap(r), a.dtype};
}

Scalar ScalarBuilder::Add(const Scalar& a, const Scalar& b) {
  if (a.dtype == c10::kBool) {
    return Or(a, b);
  }
  return Arith(ArithOp::kAdd, a, b);
}
Scalar ScalarBuilder::AccumulateAdd(const Scalar& acc, const Scalar& x) {
  if (KindOf(acc.dtype) != Kind::kFloat) {
    return Add(acc, x);
  }
  auto op = b_->create<arith::AddFOp>(LocOf(loc_), Unwrap(acc.value), Unwrap(x.value));
  op.setFastmathAttr(arith::FastMathFlagsAttr::get(b_->getContext(), arith::FastMathFlags::reassoc));
  return Scalar{Wrap(op), acc.dtype};
}
Scalar ScalarBuilder::MaxOfNumbers(const Scalar& a, const Scalar& b) {
  if (KindOf(a.dtype) != Kind::kFloat) {
    return Max(a, b);
  }
  auto op = b_->create<arith::MaxFOp>(LocOf(loc_), Unwrap(a.value), Unwrap(b.value));
  op.setFastmathAttr(
      arith::FastMathFlagsAttr::get(b_->getContext(), arith::FastMathFlags::nnan | arith::FastMathFlags::nsz));
  return Scalar{Wrap(op), a.dtype};
}
Scalar ScalarBuilder::Sub(const Scalar& a, const Scalar& b) { return Arith(ArithOp::kSub, a, b); }
Scalar ScalarBuilder::Mul(const Scalar& a, const Scalar& b) {
  if (a.dtype == c10::kBool) {
    return And(a, b);
  }
  return Arith(ArithOp::kMul, a, b);
}
Scalar ScalarBuilder::Div(const Scalar& a, const Scalar& b) { return Arith(ArithOp::kDiv, a, b); }
Scalar ScalarBuilder::Rem(const Scalar& a, const Scalar& b) { return Arith(ArithOp::kRem, a, b); }
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
  return Arith(ArithOp::kMax, a, b);
}
Scalar ScalarBuilder::Min(const Scalar& a, const Scalar& b) {
  if (a.dtype == c10::kBool) {
    return And(a, b);
  }
  if (KindOf(a.dtype) == Kind::kFloat) {
    return FloatMinMax(Cmp::kLt, a, b);
  }
  return Arith(ArithOp::kMin, a, b);
}
Scalar ScalarBuilder::And(const Scalar& a, const Scalar& b) { return Arith(ArithOp::kAnd, a, b); }
Scalar ScalarBuilder::Or(const Scalar& a, const Scalar& b) { return Arith(ArithOp::kOr, a, b); }
Scalar ScalarBuilder::Xor(const Scalar& a, const Scalar& b) { return Arith(ArithOp::kXor, a, b); }
Scalar ScalarBuilder::ShiftLeft(const Scalar& a, const Scalar& b) { return Arith(ArithOp::kShl, a, b); }
Scalar ScalarBuilder::ShiftRight(const Scalar& a, const Scalar& b) { return Arith(ArithOp::kShr, a, b); }

Scalar ScalarBuilder::Neg(const Scalar& a) {
  if (KindOf(a.dtype) == Kind::kFloat) {
    return Scalar{Wrap(b_->create<arith::NegFOp>(LocOf(loc_), Unwrap(a.value))), a.dtype};
  }
  return Sub(Constant(0, a.dtype), a);
}

Scalar ScalarBuilder::Abs(const Scalar& a) {
  switch (KindOf(a.dtype)) {
    case Kind::kFloat:
      return Scalar{Wrap(b_->create<math::AbsFOp>(LocOf(loc_), Unwrap(a.value))), a.dtype};
    case Kind::kSigned:
      return Scalar{Wrap(b_->create<math::AbsIOp>(LocOf(loc_), Unwrap(a.value))), a.dtype};
    default:
      return a;
  }
}

Scalar ScalarBuilder::Not(const Scalar& a) {
  Scalar ones = a.dtype == c10::kBool ? Constant(true, a.dtype) : Constant(-1, a.dtype);
  return Xor(a, ones);
}

Scalar ScalarBuilder::Cmp(trn::mlir_lowering::Cmp pred, const Scalar& a, const Scalar& b) {
  using F = arith::CmpFPredicate;
  using I = arith::CmpIPredicate;
  static constexpr F kFloat[] = {F::OEQ, F::UNE, F::OLT, F::OLE, F::OGT, F::OGE};
  static constexpr I kSigned[] = {I::eq, I::ne, I::slt, I::sle, I::sgt, I::sge};
  static constexpr I kUnsigned[] = {I::eq, I::ne, I::ult, I::ule, I::ugt, I::uge};
  const int i = static_cast<int>(pred);
  const Kind k = KindOf(a.dtype);
  const mlir::Location loc = LocOf(loc_);
  if (k == Kind::kFloat) {
    return Scalar{Wrap(b_->create<arith::CmpFOp>(loc, kFloat[i], Unwrap(a.value), Unwrap(b.value))), c10::kBool};
  }
  const I p = k == Kind::kSigned ? kSigned[i] : kUnsigned[i];
  return Scalar{Wrap(b_->create<arith::CmpIOp>(loc, p, Unwrap(a.value), Unwrap(b.value))), c10::kBool};
}

Scalar ScalarBuilder::Select(const Scalar& cond, const Scalar& a, const Scalar& b) {
  return Scalar{
      Wrap(b_->create<arith::SelectOp>(LocOf(loc_), Unwrap(cond.value), Unwrap(a.value), Unwrap(b.value))),
      a.dtype};
}

Scalar ScalarBuilder::IsNan(const Scalar& a) {
  if (KindOf(a.dtype) != Kind::kFloat) {
    return Constant(false, c10::kBool);
  }
  const mlir::Value x = Unwrap(a.value);
  return Scalar{Wrap(b_->create<arith::CmpFOp>(LocOf(loc_), arith::CmpFPredicate::UNO, x, x)), c10::kBool};
}

Scalar ScalarBuilder::Math(MathFn fn, const Scalar& a) {
  const mlir::Location loc = LocOf(loc_);
  const mlir::Value x = Unwrap(a.value);
  mlir::Value r;
  switch (fn) {
#define TRN_MATH_UNARY(e, Op)              \
  case MathFn::e:                          \
    r = b_->create<math::Op>(loc, x);      \
    break;
    TRN_MATH_UNARY(kExp, ExpOp)
    TRN_MATH_UNARY(kExp2, Exp2Op)
    TRN_MATH_UNARY(kExpm1, ExpM1Op)
    TRN_MATH_UNARY(kLog, LogOp)
    TRN_MATH_UNARY(kLog2, Log2Op)
    TRN_MATH_UNARY(kLog10, Log10Op)
    TRN_MATH_UNARY(kLog1p, Log1pOp)
    TRN_MATH_UNARY(kSqrt, SqrtOp)
    TRN_MATH_UNARY(kSin, SinOp)
    TRN_MATH_UNARY(kCos, CosOp)
    TRN_MATH_UNARY(kTan, TanOp)
    TRN_MATH_UNARY(kTanh, TanhOp)
    TRN_MATH_UNARY(kAtan, AtanOp)
    TRN_MATH_UNARY(kErf, ErfOp)
    TRN_MATH_UNARY(kFloor, FloorOp)
    TRN_MATH_UNARY(kCeil, CeilOp)
    TRN_MATH_UNARY(kTrunc, TruncOp)
    TRN_MATH_UNARY(kRoundEven, RoundEvenOp)
#undef TRN_MATH_UNARY
  }
  return Scalar{Wrap(r), a.dtype};
}

Scalar ScalarBuilder::Math(MathFn2 fn, const Scalar& a, const Scalar& b) {
  const mlir::Location loc = LocOf(loc_);
  const mlir::Value x = Unwrap(a.value), y = Unwrap(b.value);
  mlir::Value r;
  switch (fn) {
    case MathFn2::kAtan2:
      r = b_->create<math::Atan2Op>(loc, x, y);
      break;
    case MathFn2::kCopySign:
      r = b_->create<math::CopySignOp>(loc, x, y);
      break;
    case MathFn2::kPowF:
      r = b_->create<math::PowFOp>(loc, x, y);
      break;
    case MathFn2::kMaxNum:
      r = b_->create<arith::MaxFOp>(loc, x, y);
      break;
    case MathFn2::kMinNum:
      r = b_->create<arith::MinFOp>(loc, x, y);
      break;
  }
  return Scalar{Wrap(r), a.dtype};
}

}  // namespace trn::mlir_lowering
