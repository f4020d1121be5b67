// Platform proof: libtorch (the PyPI wheel) and Debian's libMLIR.so / libLLVM-16.so work in one
// process. Creates an ATen tensor, then JIT-compiles and runs the MLIR self-test, then uses ATen
// again. Exit code 0 on success. See docs/platform.md.
#include <ATen/ATen.h>
#include <torch/version.h>

#include <cstdio>

#include "mlir_lowering/host_jit.h"

int main() {
  at::Tensor ones = at::ones({4, 5});
  absl::StatusOr<trn::mlir_lowering::SelfTestResult> result =
      trn::mlir_lowering::RunSelfTest();
  if (!result.ok()) {
    std::fprintf(stderr, "RunSelfTest failed: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const double sum = (ones * 2).sum().item<double>();
  std::printf("torch %s: sum=%g; MLIR self-test: match=%d O0=%.1f ms O3=%.1f ms load=%.2f ms\n",
              TORCH_VERSION, sum, result->results_match, result->compile_ms_o0,
              result->compile_ms_o3, result->load_ms);
  return result->results_match && sum == 40.0 ? 0 : 1;
}
