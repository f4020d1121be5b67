// Contractions: matrix products and convolutions call ATen's CPU kernels (BLAS / oneDNN) from
// the compiled code (GroupLowering::Extern: a runtime call on the group's buffers), so the
// elementwise chains around them (bias, activation, scaling, residual adds) still fuse in MLIR.
#include "mlir_lowering/ops/op_helpers.h"

namespace trn::mlir_lowering {
namespace {

absl::Status ViaRuntime(GroupLowering& g, const runtime::OpRecord&) { return g.Extern(); }

}  // namespace

void PopulateContractions(LoweringRegistry& r) {
  const std::string f = "contraction";
  for (const char* name : {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm", "aten::mv",
                           "aten::addmv", "aten::dot", "aten::vdot", "aten::convolution",
                           "aten::convolution_backward"}) {
    r.Register(name, f, ViaRuntime, /*runtime_call=*/true);
  }
}

}  // namespace trn::mlir_lowering
