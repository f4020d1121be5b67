// The neuron device's process-wide state: knobs, stats and the op stream. Created on first use
// (the first device op or the Python module's import), never destroyed: the executor thread may
// still be running while the process exits, and libtorch's own statics outlive ours.
//
// Thread-safe: State() initialises once; the members are themselves thread-safe.
#pragma once

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "base/knobs.h"
#include "base/source_table.h"
#include "base/stats.h"
#include "scheduler/stream.h"
#include "trace/backward_lines.h"
#include "trace/meta_cache.h"

#include <ATen/core/Generator.h>
#include <ATen/core/ivalue.h>
#include <vector>

namespace trn::trace {

struct DeviceState {
  explicit DeviceState(const base::Knobs& knobs) : knobs(knobs), stream(knobs, &stats) {}
  const base::Knobs knobs;
  base::Stats stats;
  scheduler::Stream stream;
  BackwardLines backward_lines;
  MetaCache meta_cache;
};

// The device's default random generator. Random ops on the device draw from it when they run
// (in stream order), so their values do not depend on when the executor gets to them relative
// to host-side draws: like a CUDA device's own generator. Its implementation is ATen's CPU
// (mt19937) generator because the kernels that draw are ATen's CPU kernels.
const at::Generator& DeviceGenerator();

// Throws the knob parse error (as a ValueError) if the environment is invalid, and
// BadForkError() in a bad fork child (below).
DeviceState& State();

// Fork after device use. Creating the state starts the executor (and, by mode, the compiler)
// threads; a fork() child has none of them and may hold copies of locks those threads held at
// the fork. Like CUDA, the child is marked "bad fork" (pthread_atfork, registered when the state
// is created) and every device use there raises BadForkError() at once instead of waiting for a
// thread that does not exist; the child's CPU work is unaffected. torch.neuron._is_in_bad_fork()
// reads InBadFork(), so torch.manual_seed in a DataLoader worker leaves the device alone.
bool InBadFork();
absl::Status BadForkError();

// Source capture: installed by the Python extension; returns kNoSource when no Python frame
// outside torch is on the calling thread's stack.
using SourceHook = base::SourceId (*)();
void SetSourceHook(SourceHook hook);
base::SourceId CaptureSource();

// The source line to record for an op with `args`: the Python caller's line; on the autograd
// engine's threads, the line of the forward op whose node is being evaluated. Forward ops with
// inputs that require grad are remembered for that.
base::SourceId SourceForOp(DeviceState& state, const std::vector<c10::IValue>& args);

// Appends a recorded op to the device's stream, throwing its error at the edge (launch blocking).
// Every op the recorder makes goes through here, so that a graph capture on this thread
// (graph_replay.h) sees each one.
void AppendRecord(DeviceState& state, runtime::OpRecord record, double record_begin_us);

// Converts a non-OK status to the PyTorch exception class it carries (c10::IndexError,
// c10::ValueError, ...) and throws it. The dispatcher/pybind edge only.
void ThrowIfError(const absl::Status& status);

// Syncs the stream and throws the first stored error.
void SyncOrThrow(const char* reason);
// A sync point that reads the device tensors among `args` on the host (Stream::SyncRead: waits
// for what they depend on, not for the whole stream); throws the first stored error.
void SyncReadOrThrow(const char* reason, absl::Span<const c10::IValue> args);

// Host reads of device tensors (after their sync): throws, as the failure's exception class,
// when an op that failed or was skipped wrote `t`'s storage (runtime/poison.h).
void ThrowIfPoisoned(const at::Tensor& t);

}  // namespace trn::trace
