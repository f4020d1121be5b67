#include "trace/shape_rules.h"

namespace trn::trace {

std::string SizeDisagreementReason(const c10::OperatorHandle& op) {
  const std::string& name = op.operator_name().name;
  // offset2bag / bag_size / max_indices sizes depend on the mode and on per_sample_weights in
  // ways the Meta kernel does not follow (e.g. offset2bag is [0] on CPU for mode='sum').
  if (name == "aten::_embedding_bag_forward_only" || name == "aten::_embedding_bag") {
    return "Meta and CPU kernels disagree on output sizes";
  }
  return "";
}

namespace {

// native_layer_norm of a half input: the Meta kernel's mean and rstd are float32 (CUDA's), the
// CPU kernel's are the input's dtype unless a weight or bias is float32 (ATen's is_mixed_type /
// param_scalar_type); the backward op's CPU kernel then refuses float32 statistics.
void MatchLayerNormDtypes(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, MetaOutcome* outcome) {
  if (args.empty() || !args[0].isTensor() || outcome->returns.size() != 3) {
    return;
  }
  const at::ScalarType input = args[0].toTensor().scalar_type();
  if (input != at::kHalf && input != at::kBFloat16) {
    return;
  }
  for (const char* param : {"weight", "bias"}) {
    auto index = op.schema().argumentIndexWithName(param);
    if (index.has_value() && static_cast<size_t>(*index) < args.size() && args[*index].isTensor() &&
        args[*index].toTensor().defined() && args[*index].toTensor().scalar_type() == at::kFloat) {
      return;  // mixed types: float32 statistics on the CPU too
    }
  }
  for (size_t i = 1; i < 3; ++i) {
    for (Geometry& g : outcome->returns[i].tensors) {
      g.dtype = input;
    }
  }
}

}  // namespace

void MatchCpuSizes(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, MetaOutcome* outcome) {
  const std::string& name = op.operator_name().name;
  if (name == "aten::native_layer_norm") {
    MatchLayerNormDtypes(op, args, outcome);
    return;
  }
  if (name != "aten::native_batch_norm" && name != "aten::_native_batch_norm_legit" &&
      name != "aten::_native_batch_norm_legit_no_training") {
    return;
  }
  // Batch norm without training statistics: the CPU kernel returns empty save_mean/save_invstd
  // ([0]) where the Meta kernel predicts [C].
  bool training = false;
  if (name != "aten::_native_batch_norm_legit_no_training") {
    auto index = op.schema().argumentIndexWithName("training");
    training = index.has_value() && static_cast<size_t>(*index) < args.size() && args[*index].isBool() && args[*index].toBool();
  }
  if (training || outcome->returns.size() != 3) {
    return;
  }
  for (size_t i = 1; i < 3; ++i) {
    for (Geometry& g : outcome->returns[i].tensors) {
      if (g.defined) {
        g.sizes = {0};
        g.strides = {1};
        g.offset = 0;
      }
    }
  }
}

}  // namespace trn::trace
