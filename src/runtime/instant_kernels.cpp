#include "runtime/instant_kernels.h"

namespace trn::runtime::instant {

// One instance per instruction set (instant_kernels_impl.h).
namespace AVX2 {
void RunTile(const TileCall& c, int64_t n);
}
namespace AVX512 {
void RunTile(const TileCall& c, int64_t n);
}

namespace {

using TileFn = void (*)(const TileCall&, int64_t);

// The widest set this CPU runs, as ATen picks its own kernels' (null: neither).
TileFn Pick() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    return &AVX512::RunTile;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &AVX2::RunTile;
  return nullptr;
}

TileFn Chosen() {
  static const TileFn fn = Pick();
  return fn;
}

}  // namespace

int KernelInputs(Kernel k) {
  switch (k) {
    case Kernel::kAdd:
    case Kernel::kMul:
    case Kernel::kDiv:
    case Kernel::kLerp:
    case Kernel::kTanhBackward:
    case Kernel::kSigmoidBackward:
    case Kernel::kThresholdBackward:
    case Kernel::kGeluBackward:
      return 2;
    case Kernel::kAddcmul:
    case Kernel::kAddcdiv:
      return 3;
    default:
      return 1;
  }
}

const char* KernelName(Kernel k) {
  static const char* const kNames[] = {"add",     "mul",  "div",     "neg",     "relu", "sqrt", "rsqrt",
                                       "reciprocal", "exp", "log",   "tanh",    "sigmoid", "gelu", "addcmul",
                                       "addcdiv", "lerp", "pow",     "copy",    "abs",  "tanh_backward",
                                       "sigmoid_backward", "threshold_backward", "gelu_backward"};
  return kNames[static_cast<int>(k)];
}

bool Available() { return Chosen() != nullptr; }

void RunTile(const TileCall& call, int64_t n) { Chosen()(call, n); }

}  // namespace trn::runtime::instant
