// trn-lower-linalg: one linalg.generic body op on a tile (LowerLinalgImpl.h): float arithmetic,
// comparisons and functions; integer arithmetic, bitwise ops and comparisons on i32 tiles
// (torch's int64 tensors are carried as i32 on the core); linalg.index as a GpSimd iota; the
// combine of a reducing generic (MatchCombine).
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir_lowering/trn/LowerLinalgImpl.h"
#include "mlir_lowering/trn/TrnRefuse.h"

namespace trn::ir::lower_linalg_detail {

LogicalResult Lowerer::LowerBodyOp(mlir::Operation& op, const TileSpace& t, llvm::DenseMap<Value, Val>& vals) {
  if (op.getNumResults() != 1) return refuse(&op) << "has no trn lowering";
  llvm::SmallVector<Val> in;
  for (Value v : op.getOperands()) {
    std::optional<Val> x = Get(v, t, vals);
    if (!x) return refuse(&op) << "reads a value the trn lowering cannot place on the device";
    in.push_back(*x);
  }
  auto set = [&](const Val& v) -> LogicalResult {
    vals[op.getResult(0)] = v;
    return success();
  };
  if (auto c = mlir::dyn_cast<mlir::arith::ConstantOp>(op)) {
    auto v = ConstantOf(c);
    if (!v) return refuse(&op) << "constant of this type has no trn lowering";
    return set(Val::Const(*v));
  }
  if (auto index = mlir::dyn_cast<mlir::linalg::IndexOp>(op)) return LowerIndex(index, t, vals);
  if (auto apply = mlir::dyn_cast<mlir::AffineApplyOp>(op)) return LowerAffineIndex(apply, t, vals);
  if (std::optional<LogicalResult> r = LowerIntegerOp(op, in, t, vals)) return *r;
  struct BinaryName { const char* op; const char* swapped; };
  std::optional<BinaryName> bin;
  if (mlir::isa<mlir::arith::AddFOp>(op)) bin = BinaryName{"add", "add"};
  else if (mlir::isa<mlir::arith::SubFOp>(op)) bin = BinaryName{"subtract", ""};
  else if (mlir::isa<mlir::arith::MulFOp>(op)) bin = BinaryName{"multiply", "multiply"};
  else if (mlir::isa<mlir::arith::DivFOp>(op)) bin = BinaryName{"divide", ""};
  else if (mlir::isa<mlir::arith::MaxFOp>(op)) bin = BinaryName{"maximum", "maximum"};
  else if (mlir::isa<mlir::arith::MinFOp>(op)) bin = BinaryName{"minimum", "minimum"};
  else if (mlir::isa<mlir::math::PowFOp>(op)) bin = BinaryName{"power", ""};
  if (bin) return set(Binary(bin->op, bin->swapped, in[0], in[1], t));
  if (auto cmp = mlir::dyn_cast<mlir::arith::CmpFOp>(op)) return set(Compare(cmp.getPredicate(), in[0], in[1], t));
  if (mlir::isa<mlir::arith::SelectOp>(op)) return set(Select(in[0], in[1], in[2], t, DeviceType(op.getResult(0).getType())));
  if (mlir::isa<mlir::arith::NegFOp>(op)) {
    if (in[0].kind() == Kind::kConst) return set(Val::Const(-*in[0].constant));
    return set(Wrap(ScalarOp(in[0], "multiply", Val::Const(-1.0), t), in[0].kind()));
  }
  if (mlir::isa<mlir::arith::ExtFOp, mlir::arith::SIToFPOp, mlir::arith::UIToFPOp, mlir::arith::ExtUIOp>(op)) {
    return set(in[0]);  // every engine reads tiles as fp32: widening is free
  }
  if (mlir::isa<mlir::arith::TruncFOp>(op)) {
    // To bf16 / f16: a copy into a tile of that type rounds (to nearest even); a value that is
    // only yielded stays f32, and the DMA that stores it into the bf16 / f16 buffer rounds.
    const mlir::Type to = op.getResult(0).getType();
    const bool stored = llvm::all_of(op.getResult(0).getUsers(), [](mlir::Operation* u) { return mlir::isa<mlir::linalg::YieldOp>(u); });
    if (in[0].kind() == Kind::kConst || to.isF32() || to.isF64() || stored) return set(in[0]);  // f64 is f32 here
    Value narrow = NewTile(t, in[0].kind(), to);
    Make<TensorCopyOp>(in[0].tile, narrow);
    return set(Wrap(narrow, in[0].kind()));
  }
  if (mlir::isa<mlir::math::ExpM1Op, mlir::math::Log1pOp>(op)) {
    // No instruction: Kahan's expm1(x) = (e^x - 1) x / log(e^x) and Goldberg's log1p(x) =
    // log(1 + x) x / ((1 + x) - 1), accurate to a few ulp where e^x - 1 and log(1 + x) cancel;
    // where the quotient is 0/0 or inf/inf (u == 1, u == inf, e^x - 1 == -1) the limit is taken.
    if (in[0].kind() == Kind::kConst) return op.emitOpError("on a constant: expected folded before trn-lower-linalg");
    using P = mlir::arith::CmpFPredicate;
    const Val& x = in[0];
    const mlir::Type f32 = b_.getF32Type();
    const double inf = std::numeric_limits<double>::infinity();
    const bool expm1 = mlir::isa<mlir::math::ExpM1Op>(op);
    const Val u = expm1 ? Wrap(Act(x, "exp", t), x.kind()) : Binary("add", "add", x, Val::Const(1.0), t);
    const Val d = Binary("subtract", "", u, Val::Const(1.0), t);
    const Val l = Wrap(Act(u, "log", t), x.kind());
    Val r = expm1 ? Binary("divide", "", Binary("multiply", "multiply", d, x, t), l, t)
                  : Binary("divide", "", Binary("multiply", "multiply", l, x, t), d, t);
    if (expm1) r = Select(Compare(P::OEQ, d, Val::Const(-1.0), t), Val::Const(-1.0), r, t, f32);
    r = Select(Compare(P::OEQ, u, Val::Const(inf), t), u, r, t, f32);
    return set(Select(Compare(P::OEQ, u, Val::Const(1.0), t), x, r, t, f32));
  }
  if (mlir::isa<mlir::math::FloorOp, mlir::math::CeilOp>(op)) {
    // r = x rounded to the nearest integer (a copy into an i32 tile: the engines' float ->
    // integer conversion rounds to nearest, our assumption), then floor = r - (r > x) and
    // ceil = r + (r < x); |x| >= 2^23 is integral already (and beyond int32), NaN stays NaN.
    const bool floor = mlir::isa<mlir::math::FloorOp>(op);
    const Val& x = in[0];
    if (x.kind() == Kind::kConst) return set(Val::Const(floor ? std::floor(*x.constant) : std::ceil(*x.constant)));
    using P = mlir::arith::CmpFPredicate;
    const mlir::Type f32 = b_.getF32Type();
    Value rounded = NewTile(t, x.kind(), b_.getI32Type());
    Make<TensorCopyOp>(x.tile, rounded);
    const Val r = Wrap(rounded, x.kind());
    const Val off = Compare(floor ? P::OGT : P::OLT, r, x, t);
    Val y = Binary(floor ? "subtract" : "add", floor ? "" : "add", r, off, t, f32);
    y = Select(Compare(P::OGE, Abs(x, t), Val::Const(8388608.0), t), x, y, t, f32);
    return set(Select(Compare(P::UNO, x, x, t), x, y, t, f32));
  }
  if (mlir::isa<mlir::math::SinOp, mlir::math::CosOp>(op)) {
    // ScalarE's sin takes [-pi, pi] only (docs/trn_target.md), so the argument is reduced on
    // VectorE first, after Cody and Waite: k = x / 2pi rounded to nearest (a copy into an i32
    // tile), r = ((x - k c1) - k c2) - k c3 with c1 + c2 + c3 = 2pi, c1 of 8 and c2 of 12
    // significant bits, so that k c1 and x - k c1 are exact for |k| < 2^16 and k c2 for
    // |k| < 2^12 (|x| < 25,000: the error is a few ulp of r; up to |x| < 4e5 it grows to ~1e-5;
    // beyond, k c1 rounds). x / 2pi itself rounds, so k may be one off near a half period and r
    // just outside [-pi, pi]: a second round with r in place of x brings it back. cos(x) =
    // sin(pi/2 - |r|), pi/2 - |r| in [-pi/2, pi/2]. NaN and inf give a NaN r (inf - k c1).
    const Val& x = in[0];
    if (x.kind() == Kind::kConst) return op.emitOpError("on a constant: expected folded before trn-lower-linalg");
    const mlir::Type f32 = b_.getF32Type();
    auto reduce = [&](const Val& v) {
      const Val q = Binary("multiply", "multiply", v, Val::Const(0.15915493667125702), t);  // 1 / 2pi in f32
      Value k_tile = NewTile(t, v.kind(), b_.getI32Type());
      Make<TensorCopyOp>(q.tile, k_tile);
      const Val k = Wrap(k_tile, v.kind());
      Val r = v;
      for (double c : {6.28125, 0.0019354820251464844, -1.7484555314695172e-07}) {
        r = Binary("subtract", "", r, Binary("multiply", "multiply", k, Val::Const(c), t, f32), t, f32);
      }
      return r;
    };
    Val r = reduce(reduce(x));
    if (mlir::isa<mlir::math::CosOp>(op)) {
      r = Binary("subtract", "", Val::Const(1.5707963705062866), Abs(r, t), t);  // pi/2 in f32
    }
    return set(Wrap(Act(r, "sin", t), x.kind()));
  }
  const char* func = mlir::isa<mlir::math::ExpOp>(op)     ? "exp"
                     : mlir::isa<mlir::math::LogOp>(op)   ? "log"
                     : mlir::isa<mlir::math::TanhOp>(op)  ? "tanh"
                     : mlir::isa<mlir::math::SqrtOp>(op)  ? "sqrt"
                     : mlir::isa<mlir::math::RsqrtOp>(op) ? "rsqrt"
                     : mlir::isa<mlir::math::ErfOp>(op)   ? "erf"
                                                          : nullptr;
  if (func) {
    if (in[0].kind() == Kind::kConst) return op.emitOpError("on a constant: expected folded before trn-lower-linalg");
    return set(Wrap(Act(in[0], func, t), in[0].kind()));
  }
  if (mlir::isa<mlir::math::AbsFOp>(op)) {  // |x| = max(x, -x)
    if (in[0].kind() == Kind::kConst) return set(Val::Const(std::abs(*in[0].constant)));
    return set(Abs(in[0], t));
  }
  return refuse(&op) << "has no trn lowering";
}

// yield value == combine(x, acc) with combine add/max/min, possibly spelled as torch's
// NaN-propagating max: select(cmpf(uno, acc, acc), acc, select(cmpf(ogt, acc, x), acc, x)).
// A max / min accumulating in bf16 / f16 is yield truncf(combine(x, extf(acc))): the rounding
// is exact (the result is one of the half values), so it is the combine of the widened values,
// computed in f32 tiles (the DMA widens the output and its store rounds). A half sum is not
// (each step would round): refused; the group lowering accumulates sums in f32.
bool Lowerer::MatchCombine(Value y, Value acc, std::string* op, Value* x, llvm::SmallPtrSet<mlir::Operation*, 4>* ops) {
  mlir::Operation* def = y.getDefiningOp();
  if (!def) return false;
  if (auto trunc = mlir::dyn_cast<mlir::arith::TruncFOp>(def); trunc && !acc.getType().isF32() && acc.hasOneUse()) {
    auto ext = mlir::dyn_cast<mlir::arith::ExtFOp>(*acc.getUsers().begin());
    if (!ext || ext.getType() != trunc.getIn().getType() || !MatchCombine(trunc.getIn(), ext, op, x, ops)) return false;
    ops->insert(trunc);
    ops->insert(ext);
    return *op == "maximum" || *op == "minimum";
  }
  auto other = [&](mlir::Operation* d) -> Value {
    if (d->getNumOperands() != 2) return Value();
    if (d->getOperand(0) == acc) return d->getOperand(1);
    if (d->getOperand(1) == acc) return d->getOperand(0);
    return Value();
  };
  if (mlir::isa<mlir::arith::AddFOp, mlir::arith::MaxFOp, mlir::arith::MinFOp, mlir::arith::AddIOp, mlir::arith::MaxSIOp,
                mlir::arith::MinSIOp>(def)) {
    *op = mlir::isa<mlir::arith::AddFOp, mlir::arith::AddIOp>(def)     ? "add"
          : mlir::isa<mlir::arith::MaxFOp, mlir::arith::MaxSIOp>(def) ? "maximum"
                                                                       : "minimum";
    *x = other(def);
    ops->insert(def);
    return static_cast<bool>(*x);
  }
  // any / all of booleans: or = max, and = min of 0/1.
  if (mlir::isa<mlir::arith::OrIOp, mlir::arith::AndIOp>(def) && y.getType().isInteger(1)) {
    *op = mlir::isa<mlir::arith::OrIOp>(def) ? "maximum" : "minimum";
    *x = other(def);
    ops->insert(def);
    return static_cast<bool>(*x);
  }
  // select(isnan(acc), acc, inner) -> inner (the max/min instruction's own NaN behaviour).
  if (auto sel = mlir::dyn_cast<mlir::arith::SelectOp>(def)) {
    auto cmp = sel.getCondition().getDefiningOp<mlir::arith::CmpFOp>();
    if (cmp && cmp.getPredicate() == mlir::arith::CmpFPredicate::UNO && cmp.getLhs() == acc && cmp.getRhs() == acc &&
        sel.getTrueValue() == acc) {
      ops->insert(sel);
      ops->insert(cmp);
      return MatchCombine(sel.getFalseValue(), acc, op, x, ops);
    }
    // select(cmpf(ogt|olt, acc, x), acc, x): max / min.
    if (cmp && sel.getTrueValue() == acc && cmp.getLhs() == acc && cmp.getRhs() == sel.getFalseValue()) {
      const auto p = cmp.getPredicate();
      using P = mlir::arith::CmpFPredicate;
      if (p == P::OGT || p == P::OGE || p == P::UGT || p == P::UGE) *op = "maximum";
      else if (p == P::OLT || p == P::OLE || p == P::ULT || p == P::ULE) *op = "minimum";
      else return false;
      *x = sel.getFalseValue();
      ops->insert(sel);
      ops->insert(cmp);
      return true;
    }
  }
  return false;
}

// linalg.index d on tile t: base[d] + p * (partition step of d) + f * (free step of d), one iota
// on GpSimd into an i32 tile. Affine in (p, f) only when the tile has at most one free axis,
// which LowerGeneric asks Tiles for when the body reads a loop index.
namespace {

// Loop index d on the tile: base + p * partition_step + f * step.
struct IotaForm {
  int64_t base = 0, partition_step = 0, step = 0;
};
IotaForm IotaOf(int d, const TileSpace& t) {
  return {d < static_cast<int>(t.base.size()) ? t.base[d] : 0, t.partition.dim == d ? t.partition.coeff : 0,
          !t.free.empty() && t.free[0].dim == d ? t.free[0].coeff : 0};
}

}  // namespace

LogicalResult Lowerer::LowerIndex(mlir::linalg::IndexOp op, const TileSpace& t, llvm::DenseMap<Value, Val>& vals) {
  if (t.free.size() > 1) return refuse(op) << "on a tile with several free axes has no trn lowering";
  const IotaForm f = IotaOf(static_cast<int>(op.getDim()), t);
  Value dst = NewTile(t, Kind::kTile, b_.getI32Type());
  Make<IotaOp>(dst, b_.getI64IntegerAttr(f.base), b_.getI64IntegerAttr(f.partition_step), b_.getI64IntegerAttr(f.step));
  vals[op.getResult()] = Val::Tile(dst);
  return success();
}

// affine.apply of loop indices, which fusing a view's producer into its reader leaves (the
// producer's linalg.index becomes an affine function of the reader's: arange(12).view(3, 4) read
// at (i, j) is index 4 i + j). A linear map of linalg.index values is itself one iota, each of
// its steps the same combination of the indices' own; floordiv and mod are refused by name.
LogicalResult Lowerer::LowerAffineIndex(mlir::AffineApplyOp op, const TileSpace& t, llvm::DenseMap<Value, Val>& vals) {
  if (t.free.size() > 1) return refuse(op) << "on a tile with several free axes has no trn lowering";
  const mlir::AffineMap map = op.getAffineMap();
  std::optional<Linear> l = map.getNumSymbols() == 0 ? Linearize(map.getResult(0), map.getNumDims()) : std::nullopt;
  if (!l) return refuse(op) << "of a map other than a linear one of loop indices has no trn lowering";
  IotaForm sum{l->constant, 0, 0};
  for (unsigned i = 0; i < map.getNumDims(); ++i) {
    auto index = op.getOperand(i).getDefiningOp<mlir::linalg::IndexOp>();
    if (!index) return refuse(op) << "of values other than loop indices has no trn lowering";
    const IotaForm f = IotaOf(static_cast<int>(index.getDim()), t);
    sum.base += l->coeff[i] * f.base;
    sum.partition_step += l->coeff[i] * f.partition_step;
    sum.step += l->coeff[i] * f.step;
  }
  Value dst = NewTile(t, Kind::kTile, b_.getI32Type());
  Make<IotaOp>(dst, b_.getI64IntegerAttr(sum.base), b_.getI64IntegerAttr(sum.partition_step),
               b_.getI64IntegerAttr(sum.step));
  vals[op.getResult()] = Val::Tile(dst);
  return success();
}

// Integer body ops (nullopt: not an integer op). Arithmetic, the bitwise and / or / xor and
// the signed shifts write i32 tiles, which the engines compute exactly (and / or / xor of
// booleans are the logical ops); casts between integer widths and to float are free (tiles are
// read as values). Unsigned division and right shifts, float -> unsigned casts and truncation
// to i1 are refused by name; float -> signed truncates toward zero from a rounded copy; signed
// division and remainders are computed from a rounded fp32 quotient, corrected (IntDivide).
std::optional<LogicalResult> Lowerer::LowerIntegerOp(mlir::Operation& op, llvm::ArrayRef<Val> in, const TileSpace& t,
                                                     llvm::DenseMap<Value, Val>& vals) {
  auto set = [&](const Val& v) -> LogicalResult {
    vals[op.getResult(0)] = v;
    return success();
  };
  const mlir::Type result = op.getResult(0).getType();
  const mlir::Type element = DeviceType(result);
  struct BinaryName { const char* op; const char* swapped; };
  std::optional<BinaryName> bin;
  if (mlir::isa<mlir::arith::AddIOp>(op)) bin = BinaryName{"add", "add"};
  else if (mlir::isa<mlir::arith::SubIOp>(op)) bin = BinaryName{"subtract", ""};
  else if (mlir::isa<mlir::arith::MulIOp>(op)) bin = BinaryName{"multiply", "multiply"};
  else if (mlir::isa<mlir::arith::MaxSIOp>(op)) bin = BinaryName{"maximum", "maximum"};
  else if (mlir::isa<mlir::arith::MinSIOp>(op)) bin = BinaryName{"minimum", "minimum"};
  if (bin) {
    if (result.isInteger(1)) return refuse(&op) << "i1 arithmetic has no trn lowering";
    return set(Binary(bin->op, bin->swapped, in[0], in[1], t, element));
  }
  if (mlir::isa<mlir::arith::AndIOp, mlir::arith::OrIOp, mlir::arith::XOrIOp, mlir::arith::ShLIOp,
                mlir::arith::ShRSIOp>(op)) {
    const bool and_ = mlir::isa<mlir::arith::AndIOp>(op), or_ = mlir::isa<mlir::arith::OrIOp>(op);
    const bool shift = mlir::isa<mlir::arith::ShLIOp, mlir::arith::ShRSIOp>(op);
    // Booleans are 0 / 1 in i1 tiles: the logical ops (xor is not_equal). Wider integers: the
    // ALU's bitwise ops and shifts on the i32 tile, exact for torch's int64 values that fit in
    // 32 bits (as the arithmetic is), two's complement so that the DMA narrowing to an int8 /
    // uint8 tensor keeps the low bits (bitwise_not is xor with -1). A shift count of 32 or more
    // differs from arith's (poison there; torch's ops select around it: ops/elementwise.cpp).
    if (result.isInteger(1)) {
      if (shift) return refuse(&op) << "i1 shift has no trn lowering";
      const char* name = and_ ? "logical_and" : or_ ? "logical_or" : "not_equal";
      return set(Binary(name, name, in[0], in[1], t));
    }
    const char* name = and_                                  ? "bitwise_and"
                       : or_                                 ? "bitwise_or"
                       : mlir::isa<mlir::arith::XOrIOp>(op)  ? "bitwise_xor"
                       : mlir::isa<mlir::arith::ShLIOp>(op)  ? "logical_shift_left"
                                                             : "arith_shift_right";
    // tensor_scalar's immediate is f32, and a memset constant operand otherwise goes into an
    // f32 tile: a constant f32 cannot hold exactly is memset into an i32 tile instead (memset's
    // value is exact).
    Val l = in[0], r = in[1];
    if (!shift && l.kind() == Kind::kConst) std::swap(l, r);  // and, or, xor commute
    for (Val* c : {&l, &r}) {
      const Val& other = c == &l ? r : l;
      if (c->kind() != Kind::kConst || other.kind() == Kind::kConst ||
          static_cast<double>(static_cast<float>(*c->constant)) == *c->constant) {
        continue;
      }
      Value tile = NewTile(t, other.kind(), element);
      Make<MemsetOp>(tile, b_.getF64FloatAttr(*c->constant));
      *c = Wrap(tile, other.kind());
    }
    return set(Binary(name, shift ? "" : name, l, r, t, element));
  }
  if (mlir::isa<mlir::math::AbsIOp>(op)) {  // in i32 tiles
    if (in[0].kind() == Kind::kConst) return set(Val::Const(std::abs(*in[0].constant)));
    return set(Abs(in[0], t, element));
  }
  if (auto cmp = mlir::dyn_cast<mlir::arith::CmpIOp>(op)) {
    using P = mlir::arith::CmpIPredicate;
    // Tiles hold booleans as 0 / 1: unsigned order is right for i1, signed for wider integers.
    const bool boolean = cmp.getLhs().getType().isInteger(1);
    switch (cmp.getPredicate()) {
      case P::eq: return set(Binary("is_equal", "is_equal", in[0], in[1], t));
      case P::ne: return set(Binary("not_equal", "not_equal", in[0], in[1], t));
      case P::slt: case P::ult:
        if (boolean != (cmp.getPredicate() == P::ult)) break;
        return set(Binary("is_lt", "is_gt", in[0], in[1], t));
      case P::sle: case P::ule:
        if (boolean != (cmp.getPredicate() == P::ule)) break;
        return set(Binary("is_le", "is_ge", in[0], in[1], t));
      case P::sgt: case P::ugt:
        if (boolean != (cmp.getPredicate() == P::ugt)) break;
        return set(Binary("is_gt", "is_lt", in[0], in[1], t));
      case P::sge: case P::uge:
        if (boolean != (cmp.getPredicate() == P::uge)) break;
        return set(Binary("is_ge", "is_le", in[0], in[1], t));
    }
    return refuse(&op) << "compares " << (boolean ? "booleans signed" : "integers unsigned")
                                       << ", which has no trn lowering";
  }
  if (mlir::isa<mlir::arith::ExtSIOp, mlir::arith::IndexCastOp>(op) ||
      (mlir::isa<mlir::arith::TruncIOp>(op) && !result.isInteger(1))) {
    return set(in[0]);  // i32 on the core whatever the width (DeviceType)
  }
  if (mlir::isa<mlir::arith::FPToSIOp>(op) && in[0].kind() == Kind::kConst) {
    return set(Val::Const(std::trunc(*in[0].constant)));  // toward zero
  }
  if (mlir::isa<mlir::arith::FPToSIOp>(op) && !result.isInteger(1)) {
    // Truncation toward zero (x.long(), x.int(), a float Scalar filled into an integer tensor),
    // of a tile or of a column (a runtime scalar, passed as f32: 2.7 must give 2, not the 3 a
    // copy into an i32 tile rounds to): r = x rounded to nearest (a copy into an i32
    // tile, as floor does), then one step back toward zero where r passed x away from it:
    // r - (r > x and x > 0) + (r < x and x < 0). As in C, |x| >= 2^31, inf and NaN give no
    // defined integer.
    using P = mlir::arith::CmpFPredicate;
    const Val& x = in[0];
    Value rounded = NewTile(t, x.kind(), b_.getI32Type());
    Make<TensorCopyOp>(x.tile, rounded);
    const Val r = Wrap(rounded, x.kind());
    const Val zero = Val::Const(0.0);
    const Val down = Binary("logical_and", "logical_and", Compare(P::OGT, r, x, t), Compare(P::OGT, x, zero, t), t);
    const Val up = Binary("logical_and", "logical_and", Compare(P::OLT, r, x, t), Compare(P::OLT, x, zero, t), t);
    return set(Binary("add", "add", Binary("subtract", "", r, down, t, element), up, t, element));
  }
  if (mlir::isa<mlir::arith::DivSIOp, mlir::arith::RemSIOp, mlir::arith::FloorDivSIOp>(op) && !result.isInteger(1)) {
    return set(IntDivide(mlir::isa<mlir::arith::RemSIOp>(op), mlir::isa<mlir::arith::FloorDivSIOp>(op), in[0], in[1], t));
  }
  if (mlir::isa<mlir::arith::TruncIOp, mlir::arith::DivSIOp, mlir::arith::DivUIOp, mlir::arith::RemSIOp,
                mlir::arith::RemUIOp, mlir::arith::FloorDivSIOp, mlir::arith::CeilDivSIOp, mlir::arith::ShRUIOp,
                mlir::arith::FPToSIOp, mlir::arith::FPToUIOp>(op)) {
    return refuse(&op) << "has no trn lowering";
  }
  return std::nullopt;
}

// Signed integer division on i32 tiles (arith.divsi, remsi, floordivsi), which no engine does:
// q = the fp32 quotient rounded to an integer (a tensor_copy into an i32 tile), refined once by
// the rounded quotient of the remainder a - q b (exact in integers: for |a| up to 2^31 the
// first quotient is off by at most ~2^8, the refined one is the floor or the ceiling of a / b),
// then corrected to the floor (the remainder takes the divisor's sign) and, for truncation, to
// the quotient rounded toward zero (the remainder takes the dividend's sign). Returns the
// quotient, or the remainder when `remainder`. The divisor is non-zero (the group lowering
// replaced zeros and checks for them).
Lowerer::Val Lowerer::IntDivide(bool remainder, bool floor, const Val& a, const Val& b, const TileSpace& t) {
  const mlir::Type i32 = b_.getI32Type(), f32 = b_.getF32Type();
  if (a.kind() == Kind::kConst && b.kind() == Kind::kConst) {
    const int64_t x = static_cast<int64_t>(*a.constant), y = static_cast<int64_t>(*b.constant);
    int64_t q = y == 0 ? 0 : x / y, r = y == 0 ? 0 : x % y;
    if (floor && r != 0 && ((r < 0) != (y < 0))) { q -= 1; r += y; }
    return Val::Const(static_cast<double>(remainder ? r : q));
  }
  const Val zero = Val::Const(0.0);
  auto round = [&](const Val& x) {  // x (f32) to the nearest integer
    if (x.kind() == Kind::kConst) return Val::Const(std::nearbyint(*x.constant));
    Value tile = NewTile(t, x.kind(), i32);
    Make<TensorCopyOp>(x.tile, tile);
    return Wrap(tile, x.kind());
  };
  auto rest = [&](const Val& q) {  // a - q b
    return Binary("subtract", "", a, Binary("multiply", "multiply", q, b, t, i32), t, i32);
  };
  Val q = round(Binary("divide", "", a, b, t, f32));
  Val r = rest(q);
  q = Binary("add", "add", q, round(Binary("divide", "", r, b, t, f32)), t, i32);
  r = rest(q);
  const Val b_neg = Binary("is_lt", "is_gt", b, zero, t);
  const Val fix = Binary("logical_and", "logical_and", Binary("not_equal", "not_equal", r, zero, t),
                         Binary("not_equal", "not_equal", Binary("is_lt", "is_gt", r, zero, t), b_neg, t), t);
  q = Binary("subtract", "", q, fix, t, i32);
  r = Binary("add", "add", r, Binary("multiply", "multiply", fix, b, t, i32), t, i32);
  if (!floor) {  // floor + 1 where the remainder is non-zero and the signs of a and b differ
    const Val up = Binary("logical_and", "logical_and", Binary("not_equal", "not_equal", r, zero, t),
                          Binary("not_equal", "not_equal", Binary("is_lt", "is_gt", a, zero, t), b_neg, t), t);
    q = Binary("add", "add", q, up, t, i32);
    r = Binary("subtract", "", r, Binary("multiply", "multiply", up, b, t, i32), t, i32);
  }
  return remainder ? r : q;
}

}  // namespace trn::ir::lower_linalg_detail
