// Shape ops that move data: concatenation, flips, index ramps (arange, linspace), the gradient of a
// select (select_backward). Views themselves are
// never recorded (they only change metadata); reads through them become affine index maps
// (group_lowering.h), so a flip is a view with a negative coefficient and costs nothing until
// it is written.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mlir_lowering/ops/reduce_helpers.h"
#include "runtime/host_view.h"

namespace trn::mlir_lowering {
namespace {

int64_t WrapDim(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

// cat(tensors, dim): each input is inserted into its slice of the result (tensor.insert_slice,
// which bufferizes to a copy into a subview of the destination).
absl::Status Cat(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined()) {
    return absl::UnimplementedError("no destination");
  }
  TRN_ASSIGN_OR_RETURN(c10::IValue list, g.Arg("tensors"));
  TRN_ASSIGN_OR_RETURN(c10::IValue dim_v, g.Arg("dim"));
  const int64_t rank = dst.dim();
  const int64_t dim = WrapDim(dim_v.toInt(), rank);
  const std::vector<int64_t> shape = dst.sizes().vec();
  IrValue acc = g.emitting() ? g.ir().Empty(shape, dst.scalar_type()) : IrValue();
  int64_t offset = 0;
  for (const c10::IValue& item : list.toListRef()) {
    const at::Tensor& t = item.toTensor();
    if (t.dim() == 1 && t.size(0) == 0 && rank != 1) {
      continue;  // legacy: cat skips 1-d empty tensors
    }
    if (!runtime::IsDeviceTensor(t) || t.dim() != rank) {
      return absl::UnimplementedError("cat of host tensors or mixed ranks");
    }
    if (t.size(dim) == 0) {
      continue;
    }
    TRN_ASSIGN_OR_RETURN(View v, g.Read(t));
    if (v.dtype != dst.scalar_type()) {
      v = g.Pointwise({Operand::Of(v)}, v.sizes, dst.scalar_type(),
                      [](ScalarBuilder&, const std::vector<Scalar>& a) { return a[0]; });
    }
    const IrValue src = g.Materialize(v);
    std::vector<int64_t> offsets(rank, 0);
    offsets[dim] = offset;
    if (g.emitting()) acc = g.ir().InsertSlice(src, acc, offsets, v.sizes);
    offset += t.size(dim);
  }
  if (offset != shape[dim]) {
    return absl::InternalError("cat: the inputs do not fill the result");
  }
  return g.WriteResult(0, View::Whole(acc, shape, dst.scalar_type()));
}

// flip(self, dims): a view with index size-1-i along each flipped dim.
absl::Status Flip(GroupLowering& g, const runtime::OpRecord&) {
  TRN_ASSIGN_OR_RETURN(c10::IValue self, g.Arg("self"));
  TRN_ASSIGN_OR_RETURN(c10::IValue dims, g.Arg("dims"));
  TRN_ASSIGN_OR_RETURN(View v, g.Read(self.toTensor()));
  for (int64_t d : dims.toIntVector()) {
    d = WrapDim(d, v.rank());
    // base = t(view) with view index i replaced by (size - 1 - i).
    for (AffineTerm& term : v.map) {
      for (auto& [k, c] : term.coeffs) {
        if (k == d) {
          term.constant += c * (v.sizes[d] - 1);
          c = -c;
        }
      }
    }
  }
  return g.WriteResult(0, v);
}

// arange(start, end, step, out): out[i] = start + step * i, computed in double as ATen does for
// floating outputs (acc type), in int64 for integer outputs.
absl::Status Arange(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || dst.dim() != 1) {
    return absl::UnimplementedError("arange into a non-1-d destination");
  }
  const bool floating = c10::isFloatingType(dst.scalar_type());
  const c10::ScalarType acc = floating ? c10::kDouble : c10::kLong;
  std::vector<absl::string_view> names = {"start", "step"};
  return PointwiseResult(g, names, acc, [acc](ScalarBuilder& b, const std::vector<Scalar>& a) {
    Scalar i = b.Cast(b.LoopIndex(0), acc);
    return b.Add(a[0], b.Mul(a[1], i));
  });
}

// linspace(start, end, steps, out), as ATen's linspace kernel (RangeFactoriesKernel.cpp): step =
// (end - start) / (steps - 1); out[i] = start + step * i for the first half (i < steps / 2) and
// end - step * (steps - 1 - i) for the second, so that both ends are exact. Floating outputs
// compute in their own dtype (half ones in f32, rounded once); integer outputs truncate start
// and end to the dtype, compute in double and truncate the result toward zero. steps == 1 is
// start; steps == 0 writes nothing. start and end are runtime scalars (or 0-d tensors) for
// floating outputs. (ATen's vectorized CPU loop adds the step to the first element of each
// vector instead, which can differ in the last bit: CUDA's kernel and this are the formula.)
absl::Status Linspace(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || dst.dim() != 1) {
    return absl::UnimplementedError("linspace into a non-1-d destination");
  }
  const int64_t steps = dst.size(0);
  const c10::ScalarType t = dst.scalar_type();
  if (t == c10::kBool || c10::isComplexType(t)) {
    return absl::UnimplementedError("linspace into a bool or complex tensor");
  }
  const bool integer = !c10::isFloatingType(t);
  const c10::ScalarType acc = integer || t == c10::kDouble ? c10::kDouble : c10::kFloat;
  // An integer output truncates a scalar start and end at compile time (in the group key): a
  // runtime scalar converted in the body would reach the trn lowering as a column, which it
  // takes to hold an integer already (trn/LowerBody.cpp, fptosi).
  auto operand = [&](absl::string_view name) -> absl::StatusOr<Operand> {
    TRN_ASSIGN_OR_RETURN(c10::IValue v, g.Arg(name));
    if (integer && v.isScalar()) return Operand::Const(v.toScalar().to<int64_t>(), c10::kLong);
    return ArgOperand(g, name);
  };
  TRN_ASSIGN_OR_RETURN(Operand start, operand("start"));
  TRN_ASSIGN_OR_RETURN(Operand end, operand("end"));
  auto body = [=](ScalarBuilder& b, const std::vector<Scalar>& a) {
    // ATen first converts start and end to the output's dtype (scalar_t).
    auto as_output = [&](const Scalar& x) { return b.Cast(integer ? b.Cast(x, t) : b.Round(b.Cast(x, t)), acc); };
    const Scalar lo = as_output(a[0]);
    if (steps == 1) {
      return b.Cast(lo, t);
    }
    const Scalar hi = as_output(a[1]);
    const Scalar step = b.Div(b.Sub(hi, lo), b.Constant(steps - 1, acc));
    const Scalar i = b.LoopIndex(0);
    const Scalar first = b.Add(lo, b.Mul(step, b.Cast(i, acc)));
    const Scalar last = b.Sub(hi, b.Mul(step, b.Cast(b.Sub(b.Constant(steps - 1, c10::kLong), i), acc)));
    return b.Cast(b.Select(b.Cmp(Cmp::kLt, i, b.Constant(steps / 2, c10::kLong)), first, last), t);
  };
  return g.WriteResult(0, g.Pointwise({start, end}, {steps}, t, body));
}

// select_backward(grad_output, input_sizes, dim, index): zeros of input_sizes except the slice
// `index` along `dim`, which is grad_output. Pointwise over the result: grad_output placed in the
// result's dims with size 1 at dim (PlaceDims: broadcast along it), kept where the loop index
// along dim is the index. The index is a runtime scalar (the same key for every index, as an RNN's time steps
// need); a negative one counts from the end.
absl::Status SelectBackward(GroupLowering& g, const runtime::OpRecord&) {
  at::Tensor dst = g.Destination(0);
  if (!dst.defined() || dst.dim() == 0) {
    return absl::UnimplementedError("select_backward without a destination of at least one dim");
  }
  TRN_ASSIGN_OR_RETURN(c10::IValue grad, g.Arg("grad_output"));
  TRN_ASSIGN_OR_RETURN(c10::IValue dim_v, g.Arg("dim"));
  if (!grad.isTensor() || !runtime::IsDeviceTensor(grad.toTensor())) {
    return absl::UnimplementedError("select_backward of a host gradient");
  }
  const int64_t rank = dst.dim();
  const int64_t dim = WrapDim(dim_v.toInt(), rank);
  const int64_t size = dst.size(dim);
  TRN_ASSIGN_OR_RETURN(View grad_view, g.Read(grad.toTensor()));
  if (grad_view.rank() != rank - 1) {
    return absl::InternalError("select_backward: the gradient's rank is not the input's minus one");
  }
  std::vector<int64_t> where;  // the result dims the gradient's dims are: all but dim
  for (int64_t d = 0; d < rank; ++d) {
    if (d != dim) where.push_back(d);
  }
  const View v = PlaceDims(grad_view, rank, where);
  TRN_ASSIGN_OR_RETURN(Operand index, ArgOperand(g, "index"));
  const c10::ScalarType t = dst.scalar_type();
  auto body = [=](ScalarBuilder& b, const std::vector<Scalar>& a) {
    Scalar i = b.Cast(a[1], c10::kLong);
    Scalar pos = b.LoopIndex(dim);
    Scalar keep = b.Or(b.Cmp(Cmp::kEq, pos, i), b.Cmp(Cmp::kEq, pos, b.Add(i, b.Constant(size, c10::kLong))));
    return b.Select(keep, b.Cast(a[0], t), b.Constant(0, t));
  };
  View out = g.Pointwise({Operand::Of(v), index}, dst.sizes().vec(), t, body);
  return g.WriteResult(0, out);
}

}  // namespace

void PopulateShape(LoweringRegistry& r) {
  const std::string f = "shape";
  r.Register("aten::cat", f, Cat);
  r.Register("aten::flip", f, Flip);
  r.Register("aten::arange", f, Arange);
  r.Register("aten::linspace", f, Linspace);
  r.Register("aten::select_backward", f, SelectBackward);
}

}  // namespace trn::mlir_lowering
