// The instant kernels' bodies, included once per instruction set by instant_kernels_<isa>.cpp,
// each compiled with that set's flags and ATen's CPU_CAPABILITY macro (src/runtime/CMakeLists.txt),
// so Vectorized<float> is ATen's type for that set, in its own inline namespace (at::vec::AVX2,
// at::vec::AVX512): no clash with the default-capability instances elsewhere. RunTile lands in
// trn::runtime::instant::<CPU_CAPABILITY>; instant_kernels.cpp picks one at run time.
#pragma once

#include "runtime/instant_kernels.h"

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include <cmath>

namespace trn::runtime::instant::CPU_CAPABILITY {
namespace {

using Vec = at::vec::Vectorized<float>;
constexpr int64_t kLanes = Vec::size();

// A tile input: its memory, or a broadcast scalar.
struct In {
  const float* p;
  float s;
  Vec Load(int64_t i) const { return p != nullptr ? Vec::loadu(p + i) : Vec(s); }
  Vec LoadTail(int64_t i, int64_t count) const {
    return p != nullptr ? Vec::loadu(p + i, static_cast<int>(count)) : Vec(s);
  }
};

template <class F>
void Map1(const TileCall& c, int64_t n, F f) {
  const In a{c.in[0], c.sv[0]};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) f(a.Load(i)).store(c.out + i);
  if (i < n) f(a.LoadTail(i, n - i)).store(c.out + i, static_cast<int>(n - i));
}

template <class F>
void Map2(const TileCall& c, int64_t n, F f) {
  const In a{c.in[0], c.sv[0]}, b{c.in[1], c.sv[1]};
  int64_t i = 0;
  if (a.p != nullptr && b.p != nullptr) {  // (the common case without the scalar tests)
    for (; i + kLanes <= n; i += kLanes) f(Vec::loadu(a.p + i), Vec::loadu(b.p + i)).store(c.out + i);
  } else {
    for (; i + kLanes <= n; i += kLanes) f(a.Load(i), b.Load(i)).store(c.out + i);
  }
  if (i < n) {
    f(a.LoadTail(i, n - i), b.LoadTail(i, n - i)).store(c.out + i, static_cast<int>(n - i));
  }
}

template <class F>
void Map3(const TileCall& c, int64_t n, F f) {
  const In a{c.in[0], c.sv[0]}, b{c.in[1], c.sv[1]}, d{c.in[2], c.sv[2]};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) f(a.Load(i), b.Load(i), d.Load(i)).store(c.out + i);
  if (i < n) {
    const int64_t r = n - i;
    f(a.LoadTail(i, r), b.LoadTail(i, r), d.LoadTail(i, r)).store(c.out + i, static_cast<int>(r));
  }
}

// ATen's pow by a scalar exponent (pow_tensor_scalar_optimized_kernel's special cases).
void Pow(const TileCall& c, int64_t n) {
  const float e = c.p;
  if (e == 2.0f) {
    Map1(c, n, [](Vec x) { return x * x; });
  } else if (e == 3.0f) {
    Map1(c, n, [](Vec x) { return x * x * x; });
  } else if (e == 0.5f) {
    Map1(c, n, [](Vec x) { return x.sqrt(); });
  } else if (e == -0.5f) {
    Map1(c, n, [](Vec x) { return x.rsqrt(); });
  } else if (e == -1.0f) {
    Map1(c, n, [](Vec x) { return x.reciprocal(); });
  } else if (e == -2.0f) {
    Map1(c, n, [](Vec x) { return (x * x).reciprocal(); });
  } else {
    const Vec ev(e);
    Map1(c, n, [ev](Vec x) { return x.pow(ev); });
  }
}

}  // namespace

void RunTile(const TileCall& c, int64_t n) {
  switch (c.kernel) {
    case Kernel::kAdd: {
      if (c.p == 1.0f) {
        Map2(c, n, [](Vec a, Vec b) { return a + b; });
      } else {
        const Vec alpha(c.p);
        Map2(c, n, [alpha](Vec a, Vec b) { return at::vec::fmadd(b, alpha, a); });
      }
      return;
    }
    case Kernel::kMul:
      return Map2(c, n, [](Vec a, Vec b) { return a * b; });
    case Kernel::kDiv:
      return Map2(c, n, [](Vec a, Vec b) { return a / b; });
    case Kernel::kNeg:
      return Map1(c, n, [](Vec a) { return a.neg(); });
    case Kernel::kRelu:
      return Map1(c, n, [](Vec a) { return at::vec::clamp_min(a, Vec(0.0f)); });
    case Kernel::kSqrt:
      return Map1(c, n, [](Vec a) { return a.sqrt(); });
    case Kernel::kRsqrt:
      return Map1(c, n, [](Vec a) { return a.rsqrt(); });
    case Kernel::kReciprocal:
      return Map1(c, n, [](Vec a) { return a.reciprocal(); });
    case Kernel::kExp:
      return Map1(c, n, [](Vec a) { return a.exp(); });
    case Kernel::kLog:
      return Map1(c, n, [](Vec a) { return a.log(); });
    case Kernel::kTanh:
      return Map1(c, n, [](Vec a) { return a.tanh(); });
    case Kernel::kSigmoid:
      return Map1(c, n, [](Vec a) { return (Vec(1.0f) + a.neg().exp()).reciprocal(); });
    case Kernel::kGelu: {
      const Vec half(0.5f), one(1.0f), alpha(static_cast<float>(M_SQRT1_2));
      return Map1(c, n, [=](Vec x) { return x * half * (one + (x * alpha).erf()); });
    }
    case Kernel::kAddcmul: {
      const Vec value(c.p);
      return Map3(c, n, [value](Vec a, Vec b, Vec d) { return a + value * b * d; });
    }
    case Kernel::kAddcdiv: {
      const Vec value(c.p);
      return Map3(c, n, [value](Vec a, Vec b, Vec d) { return a + value * b / d; });
    }
    case Kernel::kLerp: {
      // ATen's lerp_vec: the form that is exact at both ends.
      const Vec w(c.p);
      const bool small = std::abs(c.p) < 0.5f;
      const Vec coeff = small ? w : w - Vec(1.0f);
      if (small) {
        return Map2(c, n, [coeff](Vec a, Vec b) { return at::vec::fmadd(coeff, b - a, a); });
      }
      return Map2(c, n, [coeff](Vec a, Vec b) { return at::vec::fmadd(coeff, b - a, b); });
    }
    case Kernel::kPow:
      return Pow(c, n);
    case Kernel::kCopy:
      return Map1(c, n, [](Vec a) { return a; });
    case Kernel::kAbs:
      return Map1(c, n, [](Vec a) { return a.abs(); });
    // ATen's tanh_backward / sigmoid_backward kernels (BinaryOpsKernel.cpp) and threshold's
    // (Activation.cpp: x <= threshold ? value : other, with value 0 and other the gradient).
    case Kernel::kTanhBackward: {
      const Vec one(1.0f);
      return Map2(c, n, [one](Vec a, Vec b) { return a * (one - b * b); });
    }
    case Kernel::kSigmoidBackward: {
      const Vec one(1.0f);
      return Map2(c, n, [one](Vec a, Vec b) { return a * (one - b) * b; });
    }
    case Kernel::kThresholdBackward: {
      const Vec threshold(c.p), zero(0.0f);
      return Map2(c, n, [threshold, zero](Vec a, Vec b) { return Vec::blendv(a, zero, b <= threshold); });
    }
    case Kernel::kGeluBackward: {  // ATen's GeluBackwardKernelImpl, erf form
      const Vec alpha(static_cast<float>(M_SQRT1_2)), beta(static_cast<float>(M_2_SQRTPI * M_SQRT1_2 * 0.5));
      const Vec one(1.0f), half(0.5f), minus_half(-0.5f);
      return Map2(c, n, [=](Vec dy, Vec x) {
        const Vec cdf = half * (one + (x * alpha).erf());
        const Vec pdf = beta * (x * x * minus_half).exp();
        return dy * (cdf + x * pdf);
      });
    }
  }
}

}  // namespace trn::runtime::instant::CPU_CAPABILITY
