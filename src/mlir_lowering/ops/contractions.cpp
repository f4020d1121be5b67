// Contractions. On the host target, matrix products and convolutions call ATen's CPU kernels
// (BLAS / oneDNN) from the compiled code (GroupLowering::Extern: a runtime call on the group's
// buffers), so the elementwise chains around them still fuse in MLIR. On a trn target
// (NEURON_TARGET=trn2|trn3), mm / addmm / bmm / baddbmm on f32, bf16 or f16 become linalg.matmul /
// linalg.batch_matmul, which the trn pipeline tiles onto TensorE (trn/LowerLinalg.cpp); the
// bias and scaling of addmm/baddbmm are a pointwise op after it, which fuses with what follows.
// Half operands are widened to f32 (exact) and the product is f32, rounded once to the half type
// with the bias (as ATen's CPU kernels accumulate and add in f32): the module stays one the host
// pipeline compiles when the trn pipeline refuses the group, and the trn pipeline feeds TensorE
// the half buffers themselves (LowerMatmul.cpp: the widening is exact, the products the same).
#include "mlir_lowering/ops/op_helpers.h"

namespace trn::mlir_lowering {
namespace {

absl::Status ViaRuntime(GroupLowering& g, const runtime::OpRecord&) { return g.Extern(); }

// (self|bias) (+)= product of the two named matrices (or batches of them).
absl::Status Matmul(GroupLowering& g, const runtime::OpRecord& r) {
  if (!g.target().is_trn()) return g.Extern();
  const std::string name = r.op.schema().name();
  const bool add = name == "aten::addmm" || name == "aten::baddbmm";
  const bool batched = name == "aten::bmm" || name == "aten::baddbmm";
  const char* lhs_name = name == "aten::addmm" ? "mat1" : name == "aten::baddbmm" ? "batch1" : "self";
  const char* rhs_name = name == "aten::addmm" ? "mat2" : name == "aten::baddbmm" ? "batch2" : "mat2";
  TRN_ASSIGN_OR_RETURN(c10::IValue lhs_v, g.Arg(lhs_name));
  TRN_ASSIGN_OR_RETURN(c10::IValue rhs_v, g.Arg(rhs_name));
  if (!lhs_v.isTensor() || !rhs_v.isTensor()) return absl::UnimplementedError("matmul operands are not tensors");
  const at::Tensor& lhs = lhs_v.toTensor();
  const at::Tensor& rhs = rhs_v.toTensor();
  const c10::ScalarType dtype = lhs.scalar_type();
  at::Tensor dst = g.Destination(0);
  if ((dtype != c10::kFloat && !IsHalf(dtype)) || rhs.scalar_type() != dtype || !dst.defined() ||
      dst.scalar_type() != dtype || lhs.dim() != (batched ? 3 : 2) || rhs.dim() != (batched ? 3 : 2)) {
    return g.Extern();
  }
  TRN_ASSIGN_OR_RETURN(View a, g.Read(lhs));
  TRN_ASSIGN_OR_RETURN(View b, g.Read(rhs));
  const bool half = IsHalf(dtype);
  const c10::ScalarType mm_dtype = half ? c10::kFloat : dtype;
  auto widen = [&](const View& v) {  // a half operand as an f32 tensor (exact)
    return g.Pointwise({Operand::Of(v)}, v.sizes, c10::kFloat,
                       [](ScalarBuilder& sb2, const std::vector<Scalar>& x) { return sb2.Cast(x[0], c10::kFloat); });
  };
  if (half) {
    a = widen(a);
    b = widen(b);
  }
  std::vector<int64_t> shape = batched ? std::vector<int64_t>{lhs.size(0), lhs.size(1), rhs.size(2)}
                                       : std::vector<int64_t>{lhs.size(0), rhs.size(1)};
  const IrValue sa = g.Materialize(a), sb = g.Materialize(b);
  const IrValue prod = g.emitting() ? g.ir().MatMul(sa, sb, shape, batched) : IrValue();
  View product = View::Whole(prod, shape, mm_dtype);
  if (!add) {
    if (!half) return g.WriteResult(0, product);
    return g.WriteResult(0, g.Pointwise({Operand::Of(product)}, shape, dtype,
                                        [&](ScalarBuilder& sb2, const std::vector<Scalar>& x) { return sb2.Cast(x[0], dtype); }));
  }
  // beta * self + alpha * product; beta == 0 ignores self (NaN in it included), as torch does.
  TRN_ASSIGN_OR_RETURN(c10::Scalar beta, ScalarArg(g, "beta"));
  TRN_ASSIGN_OR_RETURN(c10::Scalar alpha, ScalarArg(g, "alpha"));
  const bool use_self = beta.toDouble() != 0.0;
  std::vector<Operand> ins = {Operand::Of(product)};
  if (use_self) {
    TRN_ASSIGN_OR_RETURN(Operand self, ArgOperand(g, "self"));
    ins.push_back(std::move(self));
  }
  View v = g.Pointwise(ins, shape, dtype, [&](ScalarBuilder& sb2, const std::vector<Scalar>& x) {
    Scalar p = sb2.Cast(x[0], c10::kFloat);
    if (alpha.toDouble() != 1.0) p = sb2.Mul(p, sb2.Constant(alpha, c10::kFloat));
    if (!use_self) return p;
    Scalar s = sb2.Cast(x[1], c10::kFloat);
    if (beta.toDouble() != 1.0) s = sb2.Mul(s, sb2.Constant(beta, c10::kFloat));
    return sb2.Add(s, p);
  });
  return g.WriteResult(0, v);
}

}  // namespace

void PopulateContractions(LoweringRegistry& r) {
  const std::string f = "contraction";
  for (const char* name : {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm"}) {
    r.Register(name, f, Matmul, /*runtime_call=*/true);
  }
  for (const char* name : {"aten::addbmm", "aten::mv", "aten::addmv", "aten::dot", "aten::vdot",
                           "aten::convolution", "aten::convolution_backward"}) {
    r.Register(name, f, ViaRuntime, /*runtime_call=*/true);
  }
}

}  // namespace trn::mlir_lowering
