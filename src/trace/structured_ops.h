// Structured ops recorded as themselves.
//
// A structured op's functional and in-place overloads (add.Tensor, mul_.Tensor,
// sum.dim_IntList, ...) have a CompositeExplicitAutogradNonFunctional kernel, which the
// dispatcher prefers over a backend fallback. On the neuron device that kernel ran the op's meta
// function through a TensorIterator over the device tensors, allocated the result through the
// dispatcher and called the out= overload, which then reached the recording fallback: ~0.8 us of
// a tiny add's 3.4 us (bench/record_overhead.py). RegisterStructuredOps sends those overloads
// straight to the recording fallback, which records a functional call as its out= overload
// (OutVariant) writing into the fresh outputs, as the composite kernel did: the records, group
// keys and lowerings stay those of the out= path, and the executor's CPU kernel writes the device
// output in place (a functional CPU call would allocate its result and copy it over).
//
// Thread-safety: RegisterStructuredOps runs once, at library load; OutVariant only reads the
// table it built and may be called from any thread.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

namespace trn::trace {

// Registers the recording fallback for PrivateUse1 on every aten op with a
// CompositeExplicitAutogradNonFunctional kernel that returns no view. Idempotent.
void RegisterStructuredOps();

// The out= overload `op` was registered with by RegisterStructuredOps (same arguments, then one
// out= tensor per return), or nullptr: not a registered functional overload.
const c10::OperatorHandle* OutVariant(const c10::OperatorHandle& op);

}  // namespace trn::trace
