// The instant tier's per-op tile kernels: float32 elementwise ops over one tile (a few thousand
// elements kept in L1), written with ATen's own vector type (at::vec::Vectorized<float> for
// AVX-512 or AVX2 + FMA, the widest the CPU runs, as ATen picks; with the Sleef functions libtorch
// exports: instant_kernels_impl.h), so each kernel computes what ATen's CPU kernel
// computes for the same op (same formulas: add's fmadd by alpha, lerp's two-sided form,
// sigmoid as 1 / (1 + exp(-x)), gelu through erf, the activation backwards' products in ATen's
// order). No code is generated: instant_program.h strings
// them together per group.
//
// Thread-safety: pure functions on the caller's buffers.
#pragma once

#include <cstdint>

namespace trn::runtime::instant {

enum class Kernel : uint8_t {
  kAdd,         // a + p * b (alpha; sub passes -alpha)
  kMul,         // a * b
  kDiv,         // a / b
  kNeg,         // -a
  kRelu,        // max(a, 0), NaN kept
  kSqrt,
  kRsqrt,       // 1 / sqrt(a)
  kReciprocal,  // 1 / a
  kExp,
  kLog,
  kTanh,
  kSigmoid,     // 1 / (1 + exp(-a))
  kGelu,        // a * 0.5 * (1 + erf(a / sqrt(2)))
  kAddcmul,     // a + p * b * c
  kAddcdiv,     // a + p * b / c
  kLerp,        // a + p * (b - a), ATen's two-sided form
  kPow,         // a ** p
  kCopy,        // a
  kAbs,         // |a|
  kTanhBackward,       // a * (1 - b * b): a the gradient, b tanh's output
  kSigmoidBackward,    // a * (1 - b) * b: b sigmoid's output
  kThresholdBackward,  // b <= p ? 0 : a: b relu's (threshold's) input, p the threshold
  kGeluBackward,       // a * (cdf(b) + b * pdf(b)): b gelu's input (erf form)
};

// Inputs of each kernel: 1 (unary, copy), 2 (binary, lerp, backwards) or 3 (addcmul, addcdiv).
int KernelInputs(Kernel k);
const char* KernelName(Kernel k);

// One op's call on one tile: in[i] points at the tile of input i, or is null for a scalar input
// (broadcast value sv[i]); `p` is the op's scalar parameter (alpha, value, weight, exponent).
struct TileCall {
  Kernel kernel = Kernel::kCopy;
  const float* in[3] = {nullptr, nullptr, nullptr};
  float sv[3] = {0, 0, 0};
  float p = 1;
  float* out = nullptr;
};

// Whether this CPU runs the kernels (AVX2 and FMA at least); without them the instant tier is off.
bool Available();

// Runs `call` over `n` elements (out may be one of the inputs: each element is read before it is
// written).
void RunTile(const TileCall& call, int64_t n);

}  // namespace trn::runtime::instant
