// Indexing with data-dependent addresses (gathers, scatters, embeddings) and pooling windows:
// lowered as runtime calls of ATen's CPU kernels on the group's buffers (GroupLowering::Extern).
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
  for (const char* name : {"aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward",
                           "aten::avg_pool2d", "aten::avg_pool2d_backward", "aten::adaptive_avg_pool2d",
                           "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d_backward",
                           "aten::max_pool3d_with_indices", "aten::avg_pool3d", "aten::upsample_nearest2d",
                           "aten::upsample_bilinear2d"}) {
    r.Register(name, "pooling", ViaRuntime, /*runtime_call=*/true);
  }
}

}  // namespace trn::mlir_lowering
