// View algebra of the group lowering: the pure functions that turn buffers and views (sizes,
// strides, offset) into affine index maps. Derive relates a read view to a written one (exact,
// from strides); IndexExprs / IdentityExprs give the indexing maps of a linalg.generic's
// operands (the emitter builds them: ir_emitter.h); LoopsOf / ReducedView give a reduction's
// loop structure and result view. TensorGeometry and View themselves (group_lowering.h) are defined in
// group_views.cpp. Internal to src/mlir_lowering: GroupLowering is their only user.
//
// Thread-safety: pure functions (no state); callable from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mlir_lowering/group_lowering.h"

namespace trn::mlir_lowering {

// Strides of a contiguous (row-major) tensor of `sizes`.
std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& sizes);
// Number of elements of a tensor of `sizes`.
int64_t Numel(const std::vector<int64_t>& sizes);
// The indexing map of `v` as an operand of a linalg.generic over the loop nest `loops` (one
// expression per base dimension, over the loop dims; v's dims aligned to the innermost loops,
// a size-1 dim under a longer loop broadcast).
std::vector<AffineTerm> IndexExprs(const View& v, const std::vector<int64_t>& loops);
// The identity map of `rank` loops.
std::vector<AffineTerm> IdentityExprs(int64_t rank);

// The loop structure of a reduction of `in` over `dims`: reduced dims of size 1 stay parallel
// dims of the output tensor (each loop dim must appear in an indexing map, and MapOf drops
// size-1 dims); `kept` are the output tensor's dims, in loop order.
struct ReductionLoops {
  std::vector<int64_t> reduced, kept, out_shape;
};
ReductionLoops LoopsOf(const View& in, const std::vector<int64_t>& dims);
// The view of a reduction's output tensor `value` as the reduction's result (keepdim or not).
View ReducedView(IrValue value, const View& in, const std::vector<int64_t>& dims, const ReductionLoops& l,
                 bool keepdim, c10::ScalarType dtype);

// The view of `read` in terms of the value written to `written` (same storage), or nullopt when
// `read` is not an affine image of `written`'s index space (details at the definition).
std::optional<View> Derive(const TensorGeometry& written, const View& value, const TensorGeometry& read);
// Whether linalg's verifier accepts `v` as an operand (details at the definition).
bool LinalgCanIndex(const View& v);

}  // namespace trn::mlir_lowering
