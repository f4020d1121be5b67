// The instant kernels for AVX-512 (F, BW, VL, DQ), ATen's own choice on such CPUs
// (instant_kernels_impl.h).
#include "runtime/instant_kernels_impl.h"
