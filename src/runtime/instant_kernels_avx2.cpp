// The instant kernels for AVX2 + FMA (instant_kernels_impl.h).
#include "runtime/instant_kernels_impl.h"
