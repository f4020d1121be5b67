// What every binding file of torch_trn._C shares: the one place absl::Status turns into a
// Python exception, and the device state (or that exception).
//
// Thread-safety: both may be called from any Python thread holding the GIL.
#pragma once

#include "absl/status/status.h"
#include "trace/device_state.h"

namespace trn::python {

// Throws the Python exception of `status`'s kind (base::KindOf): IndexError, ValueError,
// TypeError, NotImplementedError, torch's DistBackendError, LinAlgError, OutOfMemoryError, else
// RuntimeError; the message is the status's.
[[noreturn]] void Raise(const absl::Status& status);

// The device state; raises ValueError for a bad NEURON_* knob and RuntimeError in a process
// forked after its parent started the device.
trace::DeviceState& StateOrRaise();

}  // namespace trn::python
