// View algebra of the group lowering: the pure functions that turn buffers and views (sizes,
// strides, offset) into affine index maps and linalg attribute text. Derive relates a read view
// to a written one (exact, from strides); MapOf / IdentityMap / IteratorTypes write the maps and
// iterator types of a linalg.generic; LoopsOf / ReducedView give a reduction's loop structure and
// result view. TensorGeometry and View themselves (group_lowering.h) are defined in
// group_views.cpp. Internal to src/mlir_lowering: GroupLowering is their only user.
//
// Thread-safety: pure functions (no state); callable from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mlir_lowering/group_lowering.h"

namespace trn::mlir_lowering {

// Strides of a contiguous (row-major) tensor of `sizes`.
std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& sizes);
// Number of elements of a tensor of `sizes`.
int64_t Numel(const std::vector<int64_t>& sizes);
// The `{trn.strides = array<i64: ...>}` attribute of a function argument or result; with
// `tied_argument` >= 0 also `trn.tied_input` (host_passes.h: the result is written in place over
// that argument's view).
std::string StridesAttr(const std::vector<int64_t>& strides, int64_t tied_argument = -1);
// "(d0, d1, ...)": the dims of a loop nest of `rank`.
std::string LoopDims(int64_t rank);
// The indexing map of `v` as an operand of a linalg.generic over the loop nest `loops`.
std::string MapOf(const View& v, const std::vector<int64_t>& loops);
std::string IdentityMap(int64_t rank);

// The loop structure of a reduction of `in` over `dims`: reduced dims of size 1 stay parallel
// dims of the output tensor (each loop dim must appear in an indexing map, and MapOf drops
// size-1 dims); `kept` are the output tensor's dims, in loop order.
struct ReductionLoops {
  std::vector<int64_t> reduced, kept, out_shape;
};
ReductionLoops LoopsOf(const View& in, const std::vector<int64_t>& dims);
// The view of a reduction's output tensor `ssa` as the reduction's result (keepdim or not).
View ReducedView(std::string ssa, const View& in, const std::vector<int64_t>& dims, const ReductionLoops& l,
                 bool keepdim, c10::ScalarType dtype);
// `iterator_types` of a linalg.generic of `rank` loops, the `reduced` ones "reduction".
std::string IteratorTypes(int64_t rank, const std::vector<int64_t>& reduced);

// The view of `read` in terms of the value written to `written` (same storage), or nullopt when
// `read` is not an affine image of `written`'s index space (details at the definition).
std::optional<View> Derive(const TensorGeometry& written, const View& value, const TensorGeometry& read);
// Whether linalg's verifier accepts `v` as an operand (details at the definition).
bool LinalgCanIndex(const View& v);

}  // namespace trn::mlir_lowering
