// The c10d backend of the neuron device: what torch.distributed calls for collectives on neuron
// tensors (dist.all_reduce, DistributedDataParallel's gradient buckets, FSDP2's all-gathers).
//
// Each collective is recorded on the device stream (collective.h) and runs, in stream order, on
// the executor thread with gloo (the engine torch.distributed ships for CPU tensors), on host
// aliases of the device tensors. The backend owns its own gloo context (a ProcessGroupGloo of
// the same ranks, through the process group's store): CPU collectives that other threads issue
// meanwhile on the group's CPU backend can never interleave with the executor's in a different
// order on two ranks.
//
// Work objects follow the device's stream semantics, as CUDA's do with NCCL: a collective is
// complete for every later device op once it is recorded, so wait() and the future return at
// once, and a failure (a peer that died, the process group's timeout, a mismatch) surfaces at the
// next sync point as the exception gloo raises (torch.distributed.DistBackendError), naming the
// collective and the line that issued it. Exceptions: barrier().wait() blocks until every op
// recorded before it has run (a host barrier, as with NCCL); send/recv's wait() records the
// wait on the stream (collective.h); is_completed() reports whether the executor has run it.
//
// Registration (python/torch_trn/_distributed.py): init_process_group("gloo") gives every group
// this backend for the neuron device, next to gloo for CPU tensors; "cpu:gloo,neuron:neuron" and
// init_process_group() (the device is torch's current accelerator) name it explicitly.
//
// Thread-safety: the collectives may be called from any thread (the Python thread, the autograd
// thread running DDP's hooks), without holding the GIL or any lock of ours while recording.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

namespace trn::trace {

// Creates the neuron backend on `holder`, a ProcessGroup whose CPU backend is the gloo
// context the neuron backend is to use (created in Python: torch's gloo headers are not
// shipped), and registers it there for the neuron device; Python then fetches it with
// holder._get_backend("neuron") and registers it on the real group.
void AttachNeuronBackend(const c10::intrusive_ptr<c10d::ProcessGroup>& holder);

}  // namespace trn::trace
