#include "trace/device_state.h"
#include "trace/graph_replay.h"

#include "base/profiler.h"

#include <c10/util/Exception.h>

#include <pthread.h>

#include <atomic>
#include <string>

#include "absl/container/inlined_vector.h"

#include "runtime/host_view.h"
#include "base/op_error.h"
#include "runtime/poison.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/graph_task.h>

namespace trn::trace {
namespace {
std::atomic<SourceHook> g_source_hook{nullptr};
std::atomic<bool> g_in_bad_fork{false};

void MarkChildBadFork() { g_in_bad_fork.store(true, std::memory_order_relaxed); }
}  // namespace

bool InBadFork() { return g_in_bad_fork.load(std::memory_order_relaxed); }

absl::Status BadForkError() {
  return base::MakeOpError(
      base::ErrorKind::kRuntime,
      "Cannot re-initialize neuron in forked subprocess. To use neuron with multiprocessing, you must use the "
      "'spawn' start method (this process was forked after its parent started the neuron device, whose "
      "executor and compiler threads do not exist in a forked child; CPU work is unaffected)");
}

DeviceState& State() {
  if (InBadFork()) {
    ThrowIfError(BadForkError());
  }
  static DeviceState* state = [] {
    const auto& knobs = base::GetKnobs();
    if (!knobs.ok()) {
      ThrowIfError(knobs.status());
    }
    // Before the threads start: a child forked from here on has none of them (see InBadFork).
    pthread_atfork(nullptr, nullptr, &MarkChildBadFork);
    return new DeviceState(*knobs);
  }();
  return *state;
}

const at::Generator& DeviceGenerator() {
  static const at::Generator* generator = new at::Generator(at::detail::createCPUGenerator());
  return *generator;
}

void SetSourceHook(SourceHook hook) { g_source_hook = hook; }

base::SourceId CaptureSource() {
  SourceHook hook = g_source_hook.load(std::memory_order_acquire);
  return hook == nullptr ? base::kNoSource : hook();
}

base::SourceId SourceForOp(DeviceState& state, const std::vector<c10::IValue>& args) {
  const base::SourceId id = CaptureSource();
  if (id == base::kNoSource) {
    if (base::profiler::Enabled()) {  // no Python frame: the autograd engine's thread
      base::profiler::NameThisThreadIfUnnamed("autograd (backward ops)");
    }
    return state.backward_lines.LookupBackward();
  }
  if (at::GradMode::is_enabled()) {
    bool requires_grad = false;
    for (const c10::IValue& a : args) {
      runtime::ForEachTensor(a, [&](const at::Tensor& t) { requires_grad = requires_grad || (t.defined() && t.requires_grad()); });
    }
    if (requires_grad) {
      state.backward_lines.RememberForward(id);
    }
  }
  return id;
}

void ThrowIfError(const absl::Status& status) {
  if (status.ok()) {
    return;
  }
  const std::string msg(status.message());
  const c10::SourceLocation loc{__func__, __FILE__, static_cast<uint32_t>(__LINE__)};
  switch (base::KindOf(status)) {
    case base::ErrorKind::kIndex:
      throw c10::IndexError(loc, msg);
    case base::ErrorKind::kValue:
      throw c10::ValueError(loc, msg);
    case base::ErrorKind::kType:
      throw c10::TypeError(loc, msg);
    case base::ErrorKind::kNotImplemented:
      throw c10::NotImplementedError(loc, msg);
    case base::ErrorKind::kLinAlg:
      throw c10::LinAlgError(loc, msg);
    case base::ErrorKind::kOutOfMemory:
      throw c10::OutOfMemoryError(loc, msg);
    case base::ErrorKind::kDistBackend:
      throw c10::DistBackendError(loc, msg);
    case base::ErrorKind::kRuntime:
      break;
  }
  throw c10::Error(loc, msg);
}

namespace {
// Compile and adaptive modes: the first op a thread records inside a backward pass queues a final
// callback on that pass (the autograd engine runs it once every node has run, before backward()
// returns) that flushes the pending segment. The backward's last ops then start running as soon
// as the pass ends, not when the Python thread records its next op (the optimizer's first, often
// hundreds of microseconds of Python later). The cut is where the next thread change would cut
// anyway: nothing else records while backward() waits, so keys are unchanged.
void FlushWhenBackwardEnds(DeviceState& state) {
  thread_local int queued_for = -1;
  const int task = torch::autograd::get_current_graph_task_id();
  if (task == -1 || task == queued_for || state.stream.mode() == base::Mode::kEager) return;
  queued_for = task;
  torch::autograd::Engine::get_default_engine().queue_callback([&state] { state.stream.Flush(); });
}
}  // namespace

void AppendRecord(DeviceState& state, runtime::OpRecord record, double record_begin_us) {
  CaptureNoteRecord(record);
  FlushWhenBackwardEnds(state);
  ThrowIfError(state.stream.Record(std::move(record), record_begin_us));
}

void SyncOrThrow(const char* reason) {
  CaptureRefuse("a sync point (a host read, a host fallback or a copy to the host)");
  ThrowIfError(State().stream.Sync(reason));
}

void SyncReadOrThrow(const char* reason, absl::Span<const c10::IValue> args) {
  CaptureRefuse("a sync point (a host read, a host fallback or a copy to the host)");
  absl::InlinedVector<const c10::StorageImpl*, 2> storages;
  for (const c10::IValue& a : args) {
    runtime::ForEachTensor(a, [&storages](const at::Tensor& t) {
      if (runtime::IsDeviceTensor(t) && t.has_storage()) storages.push_back(t.storage().unsafeGetStorageImpl());
    });
  }
  ThrowIfError(State().stream.SyncRead(reason, storages));
}

void ThrowIfPoisoned(const at::Tensor& t) {
  if (runtime::AnyPoisoned() && t.defined() && t.has_storage()) {
    ThrowIfError(runtime::CheckReadable(t.storage().unsafeGetStorageImpl()));
  }
}

}  // namespace trn::trace
