// Indexing with data-dependent addresses (gathers, scatters, embeddings, advanced indexing):
// lowered as runtime calls of ATen's CPU kernels on the group's buffers (GroupLowering::Extern).
// ATen checks every index and raises IndexError on a bad one; the error carries the op and its
// source line, as in eager mode. The elementwise work around them still fuses in MLIR.
// Advanced indexing (`index.Tensor`: x[idx], x[:, idx], x[i, j]; `index_put` /
// `_index_put_impl_`: x[idx] = v, and with accumulate=True index's backward) passes its index
// list (`Tensor?[]`) to the runtime call, each index tensor an input, None entries kept as
// positions (GroupLowering::Extern; the trn pipeline lowers them itself: trn/LowerAdvancedIndex.cpp).
#include "mlir_lowering/ops/op_helpers.h"

namespace trn::mlir_lowering {
namespace {

absl::Status ViaRuntime(GroupLowering& g, const runtime::OpRecord&) { return g.Extern(); }

// `v` copied into a fresh row-major value of `shape` (broadcast along its size-1 dims).
View Copy(GroupLowering& g, const View& v, const std::vector<int64_t>& shape) {
  return g.Pointwise({Operand::Of(v)}, shape, v.dtype, [](ScalarBuilder&, const std::vector<Scalar>& x) { return x[0]; });
}

// index / index_put / _index_put_impl_: integer index tensors only. A boolean or uint8 mask
// selects a data-dependent number of elements (its ops are host fallbacks at record time).
absl::Status AdvancedIndex(GroupLowering& g, const runtime::OpRecord& r) {
  const int64_t j = g.ArgIndex("indices");
  if (j < 0 || !r.args[j].isList()) return absl::UnimplementedError("advanced indexing without an index list");
  int64_t present = 0;
  std::vector<int64_t> shape;  // the index tensors' broadcast shape when they have one rank
  bool broadcast = false;
  for (const c10::IValue& e : r.args[j].toListRef()) {
    if (e.isNone() || (e.isTensor() && !e.toTensor().defined())) continue;
    if (!e.isTensor()) return absl::UnimplementedError("an index that is not a tensor");
    const c10::ScalarType t = e.toTensor().scalar_type();
    if (t == c10::kBool || t == c10::kByte) {
      return absl::UnimplementedError("boolean mask indices (data-dependent shape)");
    }
    if (t != c10::kLong && t != c10::kInt) return absl::UnimplementedError("index tensors other than int32 / int64");
    const std::vector<int64_t> sizes = e.toTensor().sizes().vec();
    if (present++ == 0) shape = sizes;
    if (sizes.size() != shape.size()) return g.Extern();  // ranks differ: ATen broadcasts
    for (size_t d = 0; d < sizes.size(); ++d) {
      broadcast = broadcast || sizes[d] != shape[d];
      shape[d] = std::max(shape[d], sizes[d]);
    }
  }
  if (present == 0) return absl::UnimplementedError("advanced indexing without an index tensor");
  // On a trn target the core gathers with one index per partition, so index tensors of one rank
  // that broadcast (x[b[:, None], k[None, :]]) are passed broadcast to their common shape (a copy
  // each, which ATen's kernel reads as it would the originals). The host passes them as they are.
  if (!broadcast || !g.target().is_trn()) return g.Extern();
  return g.Extern([&](int64_t arg, const View& v) {
    return arg != j || v.sizes == shape ? v : Copy(g, v, shape);
  });
}

// embedding, index_select and embedding_dense_backward: the core's gathers and scatter-add read
// row-major indices (and gradients: trn/LowerGather.cpp), so on a trn target a strided one (token
// type ids expanded along the batch: stride 0) is passed as a contiguous copy made on the core,
// rather than the op, or its whole group, running on the host. The table may have any strides;
// the host's ATen kernels read any strides.
absl::Status GatherOnTrn(GroupLowering& g, const runtime::OpRecord& r) {
  if (!g.target().is_trn()) return g.Extern();
  const c10::FunctionSchema& schema = r.op.schema();
  return g.Extern([&](int64_t arg, const View& v) {
    const std::string& name = schema.arguments()[arg].name();
    const bool row_major = name == "indices" || name == "index" || name == "grad_output";
    if (!row_major || !r.args[arg].isTensor() || r.args[arg].toTensor().is_contiguous()) return v;
    return Copy(g, v, v.sizes);
  });
}

}  // namespace

void PopulateIndexing(LoweringRegistry& r) {
  for (const char* name : {"aten::embedding", "aten::index_select", "aten::embedding_dense_backward"}) {
    r.Register(name, "indexing", GatherOnTrn, /*runtime_call=*/true);
  }
  for (const char* name : {"aten::gather", "aten::index_add", "aten::scatter_add", "aten::take"}) {
    r.Register(name, "indexing", ViaRuntime, /*runtime_call=*/true);
  }
  for (const char* name : {"aten::index", "aten::index_put", "aten::_index_put_impl"}) {
    r.Register(name, "indexing", AdvancedIndex, /*runtime_call=*/true);
  }
}

}  // namespace trn::mlir_lowering
