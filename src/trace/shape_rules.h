// Where PyTorch's Meta kernels and CPU kernels disagree on output sizes (or dtypes: layer norm's
// statistics of a half input). The executor fills
// outputs allocated from the Meta prediction and refuses a CPU result of another size, so every
// known disagreement is handled here: corrected predictions, or a host fallback when the size
// depends on more than the arguments' geometry. Found by the OpInfo registry test.
//
// Thread-safe: pure functions.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>
#include <vector>

#include "trace/meta_cache.h"

namespace trn::trace {

// Non-empty: the host-fallback reason for an op whose CPU output sizes Meta cannot predict.
std::string SizeDisagreementReason(const c10::OperatorHandle& op);

// Corrects `outcome` (freshly inferred by the Meta kernel) to the sizes and dtypes the CPU kernel
// returns.
void MatchCpuSizes(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args, MetaOutcome* outcome);

}  // namespace trn::trace
