// Helpers shared by the reduction, normalization and backward lowerings (ops/*.cpp): reduced
// dim lists, sums with a wide accumulator, and view reshaping (squeeze / place dims) so reduced
// values broadcast against full-rank operands in GroupLowering::Pointwise. Internal to
// src/mlir_lowering.
//
// Accumulators: floating sums accumulate in f64. ATen's CPU reductions use cascaded (pairwise)
// float sums, which are far more accurate than a sequential float sum; a double accumulator
// rounded once to the result dtype is the closest sequential equivalent.
//
// Thread-safety: as GroupLowering (one thread per lowering).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mlir_lowering/ops/op_helpers.h"

namespace trn::mlir_lowering {

inline bool IsFloatType(c10::ScalarType t) { return c10::isFloatingType(t); }

// The accumulator dtype of a sum whose result is `t`: f32 for the half types (as ATen's opmath;
// the f32 rounding error is far below a half type's), f64 for f32 and f64.
inline c10::ScalarType SumAccType(c10::ScalarType t) {
  if (IsHalf(t)) {
    return c10::kFloat;
  }
  if (IsFloatType(t)) {
    return c10::kDouble;
  }
  return c10::kLong;
}

// The dtype ATen's kernels compute `t` in (opmath): f32 for the half types, else `t`. Lowerings
// keep intermediate values that ATen keeps in registers (softmax's exponentials, layer norm's
// statistics) in this dtype, so they are not rounded to the half type.
inline c10::ScalarType OpMath(c10::ScalarType t) { return IsHalf(t) ? c10::kFloat : t; }

// The dims an `int[]?` / `int?` / `int` argument names, wrapped, sorted and distinct. None or an
// empty list means every dim. kUnimplemented for repeated or out-of-range dims (ATen raises).
inline absl::StatusOr<std::vector<int64_t>> ReduceDims(const c10::IValue& v, int64_t rank) {
  std::vector<int64_t> raw;
  if (v.isInt()) {
    raw.push_back(v.toInt());
  } else if (v.isIntList()) {
    raw = v.toIntVector();
  } else if (!v.isNone()) {
    return absl::UnimplementedError("dim is not an int list");
  }
  std::vector<int64_t> dims;
  if (raw.empty()) {
    for (int64_t i = 0; i < rank; ++i) {
      dims.push_back(i);
    }
    return dims;
  }
  const int64_t wrap = std::max<int64_t>(rank, 1);
  for (int64_t d : raw) {
    if (d < -wrap || d >= wrap) {
      return absl::UnimplementedError("dim out of range");
    }
    d = d < 0 ? d + wrap : d;
    if (rank == 0) {
      continue;  // a 0-dim tensor reduces over nothing
    }
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
      return absl::UnimplementedError("repeated dim");
    }
    dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end());
  return dims;
}

// Reads argument `name` as ReduceDims (absent = all dims).
inline absl::StatusOr<std::vector<int64_t>> DimsArg(const GroupLowering& g, absl::string_view name, int64_t rank) {
  absl::StatusOr<c10::IValue> v = g.Arg(name);
  if (!v.ok()) {
    return ReduceDims(c10::IValue(), rank);
  }
  return ReduceDims(*v, rank);
}

inline absl::StatusOr<bool> BoolArg(const GroupLowering& g, absl::string_view name, bool fallback) {
  absl::StatusOr<c10::IValue> v = g.Arg(name);
  if (!v.ok() || v->isNone()) {
    return fallback;
  }
  if (!v->isBool()) {
    return absl::UnimplementedError(absl::StrCat("argument ", name, " is not a bool"));
  }
  return v->toBool();
}

inline absl::StatusOr<int64_t> IntArg(const GroupLowering& g, absl::string_view name) {
  TRN_ASSIGN_OR_RETURN(c10::IValue v, g.Arg(name));
  if (!v.isInt()) {
    return absl::UnimplementedError(absl::StrCat("argument ", name, " is not an int"));
  }
  return v.toInt();
}

inline absl::StatusOr<double> DoubleArg(const GroupLowering& g, absl::string_view name) {
  TRN_ASSIGN_OR_RETURN(c10::IValue v, g.Arg(name));
  if (!v.isDouble() && !v.isInt()) {
    return absl::UnimplementedError(absl::StrCat("argument ", name, " is not a float"));
  }
  return v.isDouble() ? v.toDouble() : static_cast<double>(v.toInt());
}

// Whether the current op has a tensor argument `name` that is present: not None and not an
// undefined tensor (an absent Tensor? may arrive as either).
inline bool HasTensorArg(const GroupLowering& g, absl::string_view name) {
  absl::StatusOr<c10::IValue> v = g.Arg(name);
  return v.ok() && !v->isNone() && !(v->isTensor() && !v->toTensor().defined());
}

// The device tensor of argument `name` as a view.
inline absl::StatusOr<View> TensorArg(GroupLowering& g, absl::string_view name) {
  TRN_ASSIGN_OR_RETURN(c10::IValue v, g.Arg(name));
  if (!v.isTensor()) {
    return absl::UnimplementedError(absl::StrCat("argument ", name, " is not a tensor"));
  }
  return g.Read(v.toTensor());
}

inline int64_t NumelOf(const std::vector<int64_t>& sizes, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    n *= sizes[d];
  }
  return n;
}

// `v` without its dims `dims` (each of size 1): a keepdim result seen as keepdim=False.
inline View SqueezeDims(const View& v, const std::vector<int64_t>& dims) {
  std::vector<int> new_index(v.sizes.size(), -1);
  View out = v;
  out.sizes.clear();
  for (size_t i = 0; i < v.sizes.size(); ++i) {
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) == dims.end()) {
      new_index[i] = static_cast<int>(out.sizes.size());
      out.sizes.push_back(v.sizes[i]);
    }
  }
  for (AffineTerm& t : out.map) {
    std::vector<std::pair<int, int64_t>> coeffs;
    for (const auto& [k, c] : t.coeffs) {
      if (new_index[k] >= 0) {
        coeffs.emplace_back(new_index[k], c);
      }
    }
    t.coeffs = std::move(coeffs);
  }
  return out;
}

// `v` placed in a rank-`rank` index space: its dim k becomes dim where[k]; the other dims have
// size 1 (so the result broadcasts along them in Pointwise).
inline View PlaceDims(const View& v, int64_t rank, const std::vector<int64_t>& where) {
  View out = v;
  out.sizes.assign(rank, 1);
  for (size_t k = 0; k < where.size(); ++k) {
    out.sizes[where[k]] = v.sizes[k];
  }
  for (AffineTerm& t : out.map) {
    for (auto& [k, c] : t.coeffs) {
      k = static_cast<int>(where[k]);
    }
  }
  return out;
}

// Sum of `in` over `dims` (keepdim: size-1 dims stay) in dtype `acc`.
inline View SumOf(GroupLowering& g, const View& in, const std::vector<int64_t>& dims, bool keepdim,
                  c10::ScalarType acc) {
  return g.Reduce(in, dims, keepdim, acc, 0,
                  [](ScalarBuilder& b, const Scalar& a, const Scalar& x) { return b.AccumulateAdd(a, b.Cast(x, a.dtype)); });
}

// Elementwise map of views (broadcast to `shape`).
inline View Map(GroupLowering& g, const std::vector<View>& ins, const std::vector<int64_t>& shape,
                c10::ScalarType out, const BodyFn& body) {
  std::vector<Operand> ops;
  for (const View& v : ins) {
    ops.push_back(Operand::Of(v));
  }
  return g.Pointwise(ops, shape, out, body);
}

inline Scalar Const(ScalarBuilder& b, double v, c10::ScalarType t) { return b.Constant(v, t); }

inline c10::Scalar Lowest(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat:
    case c10::kDouble:
    case c10::kHalf:
    case c10::kBFloat16:
      return -std::numeric_limits<double>::infinity();
    case c10::kBool:
      return false;
    case c10::kByte:
      return 0;
    case c10::kChar:
      return std::numeric_limits<int8_t>::min();
    case c10::kShort:
      return std::numeric_limits<int16_t>::min();
    case c10::kInt:
      return std::numeric_limits<int32_t>::min();
    default:
      return std::numeric_limits<int64_t>::min();
  }
}

inline c10::Scalar Highest(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat:
    case c10::kDouble:
    case c10::kHalf:
    case c10::kBFloat16:
      return std::numeric_limits<double>::infinity();
    case c10::kBool:
      return true;
    case c10::kByte:
      return 255;
    case c10::kChar:
      return std::numeric_limits<int8_t>::max();
    case c10::kShort:
      return std::numeric_limits<int16_t>::max();
    case c10::kInt:
      return std::numeric_limits<int32_t>::max();
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

// Registers the losses and their backward ops (losses.cpp); called by PopulateReductions.
void RegisterLosses(LoweringRegistry& registry);

}  // namespace trn::mlir_lowering
