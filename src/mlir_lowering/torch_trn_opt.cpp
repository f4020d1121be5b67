// torch-trn-opt: mlir-opt with torch-trn's passes and pipelines registered, so each pass can be
// tested in isolation with FileCheck (tests/lit/). Usage as mlir-opt:
//   torch-trn-opt input.mlir -trn-results-to-out-args | FileCheck input.mlir
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir_lowering/host_pipeline.h"
#include "mlir_lowering/trn/TrnDialect.h"
#include "mlir_lowering/trn/TrnPasses.h"

int main(int argc, char** argv) {
  mlir::registerAllPasses();
  trn::mlir_lowering::registerHostPipeline();
  trn::ir::registerTrnPasses();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  registry.insert<trn::ir::TrnDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "torch-trn optimizer driver\n", registry));
}
