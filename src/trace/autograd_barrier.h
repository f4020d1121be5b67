// A barrier through PyTorch's autograd thread for the neuron device.
//
// The autograd engine runs a device's backward nodes on one engine-owned thread per device. That
// thread drops its reference to a finished backward pass (GraphTask) a moment *after* the caller's
// backward() has returned. The GraphTask holds Python objects (the contextvars context torch
// stashes in its thread-local state, callbacks queued with queue_callback), and freeing them needs
// the GIL; if the interpreter is already finalizing by then, CPython ends the thread inside a
// noexcept destructor and the process aborts ("terminate called without an active exception").
//
// RunDeviceAutogradBarrier runs a tiny backward pass whose nodes run on that thread, built in C++
// so it captures no Python object itself. The thread handles one task at a time and frees the
// previous task's GraphTask before taking the next, so when the barrier returns every earlier
// backward pass has been released. It is also how the engine first learns of the device (its
// per-device queues are sized at the first backward pass of the process).
//
// Thread-safety: callable from any thread, but never with the GIL held (PyTorch's Python engine
// refuses that); the call blocks until the barrier pass has run.
#pragma once

#include "absl/status/status.h"

namespace trn::trace {

// Records a few ops on the device (ones, mul, sum and their backward); the caller syncs them.
// Errors from the engine come back as a status carrying PyTorch's message.
absl::Status RunDeviceAutogradBarrier();

}  // namespace trn::trace
