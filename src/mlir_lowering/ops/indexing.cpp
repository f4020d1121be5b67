// Indexing with data-dependent addresses (gathers, scatters, embeddings): lowered as runtime calls of ATen's CPU kernels on the group's buffers (GroupLowering::Extern).
// ATen checks every index and raises IndexError on a bad one; the error carries the op and its
// source line, as in eager mode. The elementwise work around them still fuses in MLIR.
#include "mlir_lowering/ops/op_helpers.h"

namespace trn::mlir_lowering {
namespace {

absl::Status ViaRuntime(GroupLowering& g, const runtime::OpRecord&) { return g.Extern(); }

}  // namespace

void PopulateIndexing(LoweringRegistry& r) {
  for (const char* name : {"aten::index_select", "aten::gather", "aten::embedding", "aten::embedding_dense_backward",
                           "aten::index_add", "aten::scatter_add", "aten::take"}) {
    r.Register(name, "indexing", ViaRuntime, /*runtime_call=*/true);
  }
}

}  // namespace trn::mlir_lowering
