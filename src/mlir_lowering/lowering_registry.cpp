#include "mlir_lowering/lowering_registry.h"

#include <algorithm>

namespace trn::mlir_lowering {
namespace {

absl::string_view Folded(absl::string_view name) {
  if (name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_') {
    name.remove_suffix(1);
  }
  return name;
}

}  // namespace

const LoweringRegistry& LoweringRegistry::Global() {
  static const LoweringRegistry* registry = [] {
    auto* r = new LoweringRegistry();
    PopulateElementwise(*r);
    PopulateReductions(*r);
    PopulateNormalization(*r);
    PopulateContractions(*r);
    PopulateBackward(*r);
    PopulateShape(*r);
    PopulateIndexing(*r);
    PopulatePooling(*r);
    return r;
  }();
  return *registry;
}

void LoweringRegistry::Register(absl::string_view name, std::string family, LowerFn fn, bool runtime_call) {
  ops_[std::string(Folded(name))] = OpLowering{fn, std::move(family), runtime_call};
}

const OpLowering* LoweringRegistry::Find(absl::string_view schema_name) const {
  auto it = ops_.find(Folded(schema_name));
  return it == ops_.end() ? nullptr : &it->second;
}

const OpLowering* LoweringRegistry::Find(const c10::OperatorHandle& op) const {
  return Find(op.operator_name().name);
}

std::vector<std::string> LoweringRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, lowering] : ops_) {
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool LoweringRegistry::TrnLowers(absl::string_view name) const {
  const OpLowering* lowering = Find(name);
  if (lowering == nullptr) return false;
  name = Folded(name);
  if (lowering->runtime_call) {
    return name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm" || name == "aten::baddbmm" ||
           name == "aten::embedding" || name == "aten::index_select" || name == "aten::embedding_dense_backward" ||
           name == "aten::index_add" || name == "aten::scatter_add" || name == "aten::convolution" ||
           name == "aten::convolution_backward" || name == "aten::max_pool2d_with_indices" ||
           name == "aten::max_pool2d_with_indices_backward" || name == "aten::max_pool3d_with_indices" ||
           name == "aten::max_pool3d_with_indices_backward" || name == "aten::avg_pool2d" ||
           name == "aten::avg_pool2d_backward" || name == "aten::adaptive_avg_pool2d" ||
           name == "aten::_adaptive_avg_pool2d" || name == "aten::_adaptive_avg_pool2d_backward" ||
           name == "aten::index" || name == "aten::index_put" || name == "aten::_index_put_impl" ||
           name == "aten::cumsum";
  }
  return true;
}

namespace {

int64_t IntArg(const runtime::OpRecord& r, size_t j, int64_t fallback) {
  return j < r.args.size() && r.args[j].isInt() ? r.args[j].toInt() : fallback;
}
bool BoolArg(const runtime::OpRecord& r, size_t j) { return j < r.args.size() && r.args[j].isBool() && r.args[j].toBool(); }
int64_t Rank(const runtime::OpRecord& r, size_t j) {
  return j < r.args.size() && r.args[j].isTensor() ? r.args[j].toTensor().dim() : -1;
}
// Whether argument j is a contiguous float32 tensor.
bool DenseF32(const runtime::OpRecord& r, size_t j) {
  return j < r.args.size() && r.args[j].isTensor() && r.args[j].toTensor().scalar_type() == at::kFloat &&
         r.args[j].toTensor().is_contiguous();
}

// Whether dims [lo, hi) of `t` form one run of a single stride (size-1 dims aside), as the trn
// lowering merges them (trn/LowerAdvancedIndex.cpp: a run it cannot merge is refused there,
// which would send the whole group to the host).
bool OneRun(const at::Tensor& t, int64_t lo, int64_t hi) {
  int64_t inner = -1;
  for (int64_t d = hi - 1; d >= lo; --d) {
    if (t.size(d) == 1) continue;
    if (inner >= 0 && t.stride(d) != t.stride(inner) * t.size(inner)) return false;
    inner = d;
  }
  return true;
}

// Advanced indexing (trn/LowerAdvancedIndex.cpp): index(self, indices), index_put(self, indices,
// values, accumulate), _index_put_impl_(self, indices, values, accumulate, unsafe). The index
// tensors sit on adjacent dims of a dense self and have one rank (the front broadcasts them to
// one shape: ops/indexing.cpp); index_put adds (accumulate=True: there is no overwriting
// indirect DMA) f32 values of the indexed result's shape whose index dims, and the dims before
// and after them, each run with one stride (broadcast ones too: OneRun).
bool TrnAcceptsIndex(const runtime::OpRecord& r, bool put, std::string* why) {
  *why = "advanced indexing other than index tensors of one rank on adjacent dims of a dense tensor (no trn lowering)";
  if (r.args.size() < 2 || !r.args[0].isTensor() || !r.args[1].isOptionalTensorList()) return false;
  const at::Tensor& self = r.args[0].toTensor();
  int64_t last = -1, indexed = 1, count = 0;
  std::vector<int64_t> shape;
  const c10::List<std::optional<at::Tensor>> indices = r.args[1].toOptionalTensorList();
  for (size_t d = 0; d < indices.size(); ++d) {
    const std::optional<at::Tensor> t = indices[d];
    if (!t.has_value() || !t->defined()) continue;
    if (last >= 0 && last != static_cast<int64_t>(d) - 1) return false;  // not adjacent
    if (count > 0 && static_cast<size_t>(t->dim()) != shape.size()) return false;
    if (count == 0) shape = t->sizes().vec();
    for (size_t i = 0; i < shape.size(); ++i) shape[i] = std::max(shape[i], t->size(static_cast<int64_t>(i)));
    last = static_cast<int64_t>(d);
    indexed *= self.size(static_cast<int64_t>(d));
    ++count;
  }
  if (count == 0 || !self.is_contiguous() || indexed == 0) return false;
  if (!put) return true;
  // The indexed result's shape: self's dims before the indexed ones, the indices', self's after.
  std::vector<int64_t> indexed_shape(self.sizes().begin(), self.sizes().begin() + (last - count + 1));
  indexed_shape.insert(indexed_shape.end(), shape.begin(), shape.end());
  indexed_shape.insert(indexed_shape.end(), self.sizes().begin() + last + 1, self.sizes().end());
  const bool accumulate = r.args.size() > 3 && r.args[3].isBool() && r.args[3].toBool();
  const bool f32 = self.scalar_type() == at::kFloat && r.args[2].isTensor() &&
                   r.args[2].toTensor().scalar_type() == at::kFloat && r.args[2].toTensor().sizes().vec() == indexed_shape;
  if (!accumulate || !f32) {
    *why = "index_put without accumulate (no overwriting indirect DMA), or values not f32 of the indexed shape "
           "(no trn lowering)";
    return false;
  }
  // The values as [dims before, index dims, dims after], each run of one stride.
  const at::Tensor& values = r.args[2].toTensor();
  const int64_t first = last - count + 1, index_rank = static_cast<int64_t>(shape.size());
  if (!OneRun(values, 0, first) || !OneRun(values, first, first + index_rank) ||
      !OneRun(values, first + index_rank, values.dim())) {
    *why = "index_put values strided across dims (no trn lowering)";
    return false;
  }
  return true;
}

}  // namespace

bool LoweringRegistry::TrnAcceptsCall(const runtime::OpRecord& r, std::string* why) {
  const std::string& name = r.op.schema().name();
  if (name == "aten::embedding" && Rank(r, 0) != 2) {
    *why = "gather shape (no trn lowering)";
    return false;
  }
  // embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq).
  // (A strided grad_output or indices is passed as a contiguous copy: ops/indexing.cpp.)
  if (name == "aten::embedding_dense_backward" &&
      (BoolArg(r, 4) || r.args.empty() || !r.args[0].isTensor() || r.args[0].toTensor().scalar_type() != at::kFloat)) {
    *why = "embedding backward with scale_grad_by_freq or not f32 (no trn lowering)";
    return false;
  }
  // index_add(self, dim, index, source, alpha) (trn/LowerGather.cpp): row-wise along dim 0,
  // f32, alpha 1 (an exact add), self and source dense.
  if (name == "aten::index_add" || name == "aten::index_add_") {
    const int64_t rank = Rank(r, 0), dim = IntArg(r, 1, 1);
    const bool f32_dense = rank >= 1 && Rank(r, 3) == rank && DenseF32(r, 0) && DenseF32(r, 3);
    if (!f32_dense || (dim != 0 && dim != -rank) || r.args.size() < 5 || !r.args[4].isInt() || r.args[4].toInt() != 1) {
      *why = "index_add other than along dim 0 of dense f32 tensors with alpha 1 (no trn lowering)";
      return false;
    }
  }
  // scatter_add(self, dim, index, src) as a row scatter: dim 0 of a dense 1-D or 2-D f32 self,
  // a 2-D index expanded along dim 1 (stride 0: the same row index for every column).
  if (name == "aten::scatter_add" || name == "aten::scatter_add_") {
    const int64_t rank = Rank(r, 0), dim = IntArg(r, 1, 1);
    const bool f32_dense =
        (rank == 1 || rank == 2) && Rank(r, 2) == rank && Rank(r, 3) == rank && DenseF32(r, 0) && DenseF32(r, 3);
    const bool row_index = f32_dense && (rank == 1 || r.args[2].toTensor().stride(1) == 0 ||
                                         r.args[2].toTensor().size(1) == 1);
    if (!f32_dense || !row_index || (dim != 0 && dim != -rank)) {
      *why = "scatter_add other than rows along dim 0 of dense f32 tensors (no trn lowering)";
      return false;
    }
  }
  if (name == "aten::index" || name == "aten::index_put" || name == "aten::index_put_" ||
      name == "aten::_index_put_impl" || name == "aten::_index_put_impl_") {
    return TrnAcceptsIndex(r, name != "aten::index", why);
  }
  if (name == "aten::index_select") {
    const int64_t rank = Rank(r, 0), dim = IntArg(r, 1, 1);
    if ((rank != 1 && rank != 2) || (dim != 0 && dim != -rank)) {
      *why = "gather shape (no trn lowering)";
      return false;
    }
  }
  // Convolutions (trn/LowerConv.cpp): 1-D, 2-D and 3-D, regular and transposed.
  //   convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
  //   convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, ...)
  if (name == "aten::convolution" || name == "aten::convolution_backward") {
    const bool backward = name == "aten::convolution_backward";
    const int64_t rank = Rank(r, backward ? 1 : 0);
    if (rank < 3 || rank > 5) {
      *why = "convolution shape (no trn lowering)";
      return false;
    }
  }
  // 2-D pooling (trn/LowerPool.cpp) of (N, C, H, W) or (C, H, W); adaptive average pooling when
  // the output divides the input. 3-D max pooling of (N, C, D, H, W) or (C, D, H, W).
  const bool pool3d = name.find("max_pool3d") != std::string::npos;
  if (name.find("pool2d") != std::string::npos || pool3d) {
    const bool backward = name.find("backward") != std::string::npos;
    const int64_t rank = Rank(r, backward ? 1 : 0) - (pool3d ? 1 : 0);
    if (rank != 3 && rank != 4) {
      *why = "pooling shape (no trn lowering)";
      return false;
    }
    if (name.find("adaptive") != std::string::npos) {
      const at::Tensor& in = r.args[backward ? 1 : 0].toTensor();
      std::vector<int64_t> out;
      if (backward && Rank(r, 0) == rank) {
        out = {r.args[0].toTensor().size(-2), r.args[0].toTensor().size(-1)};
      } else if (!backward && r.args.size() > 1 && r.args[1].isIntList()) {
        out = r.args[1].toIntVector();
      }
      if (out.size() != 2 || out[0] <= 0 || out[1] <= 0 || in.size(-2) % out[0] != 0 || in.size(-1) % out[1] != 0) {
        *why = "adaptive pooling whose output does not divide the input (no trn lowering)";
        return false;
      }
    }
  }
  return true;
}

}  // namespace trn::mlir_lowering
