// Matrix products split over the executor's KernelPool (kernel_pool.h): the out= forms of mm,
// addmm, bmm and baddbmm, large enough to pay for the hand-off, run as chunks of their result's
// rows (mm, addmm) or batches (bmm, baddbmm), each chunk ATen's single-threaded kernel on a
// slice of the same host buffers. Results are deterministic: the chunks depend only on the
// shapes and the pool's size, never on which thread runs one. (They may differ from one
// unsplit call in the last bits, as a BLAS's blocking depends on the matrix sizes; PyTorch's
// results change the same way with its thread count.)
//
// Thread-safety: call on the executor thread (KernelPool::OfThisThread); the chunks write
// disjoint slices.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace trn::runtime {

// Runs `op` on `stack` (host arguments, as RunOnHost builds them) split into chunks when it is
// a large matrix product and this thread has a KernelPool with helpers; leaves the stack as the
// boxed call would (the out= tensor). False: not split (the caller runs the op itself).
bool RunSplitMatmul(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace trn::runtime
