// Output geometry from PyTorch's C++ structured Meta functions (at::meta::*) for common ops.
//
// torch 2.14 registers Python Meta kernels (torch._meta_registrations, torch._refs) over the C++
// ones for most ops, so shape inference through the dispatcher runs Python: ~100-400 us a call
// under the GIL, and the first elementwise reference imports sympy (~1 s) and torch._dynamo
// (~3 s) on the way to the first step (`import torch_trn`'s own warm-up backward included). The
// C++ structured Meta functions are still in libtorch: they compute what the CPU out= kernel the
// executor runs would produce (sizes, strides, dtype), in microseconds and without Python. For
// the ops listed in cpp_meta.cpp, InferWithMeta (meta_cache.h) calls them instead; every other
// op keeps the dispatcher's Meta kernel.
//
// Thread-safe: the table is built once (function-local static) and read-only after.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trn::trace {

// The C++ Meta kernel for `op` (called boxed on a stack of Meta tensors, like the dispatcher's),
// or null when `op` has none here. `args`: the call's arguments (some entries only apply to some
// dtypes: they answer null otherwise).
const c10::KernelFunction* CppMetaKernel(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args);

// How many inferences used a kernel from here (process-wide; stats()["meta_kernels_cpp"]).
int64_t CppMetaCalls();

// The names of the operators with a C++ Meta kernel here ("aten::add.Tensor", ...), for tests.
std::vector<std::string> CppMetaOps();

}  // namespace trn::trace
