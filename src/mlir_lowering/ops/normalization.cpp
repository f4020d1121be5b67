// Normalization ops. (Being written: see src/mlir_lowering/README.md.)
#include "mlir_lowering/ops/op_helpers.h"

namespace trn::mlir_lowering {

void PopulateNormalization(LoweringRegistry&) {}

}  // namespace trn::mlir_lowering
