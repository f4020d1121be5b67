// The `neuron` device on PyTorch's PrivateUse1 key: host-memory allocator, device guard,
// PrivateUse1 hooks, and the explicit kernels a backend fallback cannot provide (factories,
// cross-device copies, resize_). The boxed fallback for every other op is in fallback.cpp.
//
// Thread-safety: the allocator and guard are stateless; kernels go through the thread-safe
// stream (trace/device_state.h).
#include <ATen/EmptyTensor.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/copy.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <typeinfo>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "runtime/threads.h"
#include "runtime/host_view.h"
#include "runtime/block_cache.h"
#include "base/knobs.h"
#include "runtime/poison.h"
#include "base/profiler.h"
#include "trace/device_state.h"
#include "trace/fallback.h"
#include "trace/snapshot.h"
#include "trace/graph_replay.h"
#include "trace/structured_ops.h"

namespace trn::trace {
namespace {


// Device storage lives in host memory (the executor runs ATen CPU kernels on it; a real
// NeuronCore would own HBM here). Large blocks are recycled, up to NEURON_DEVICE_CACHE_BYTES
// (runtime/block_cache.h). Never destroyed: tensors may be freed during process exit.
runtime::BlockCache& Blocks() {
  static auto* cache = [] {
    const auto& knobs = base::GetKnobs();  // a bad value is reported by the first device op
    const int64_t capacity = knobs.ok() ? knobs->device_cache_bytes : base::Knobs().device_cache_bytes;
    return new runtime::BlockCache(static_cast<size_t>(capacity));
  }();
  return *cache;
}

class HostMemoryAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    if (InBadFork()) {  // (the free lists' mutex may have been held by a thread the child lacks)
      ThrowIfError(BadForkError());
    }
    void* p = n == 0 ? nullptr : Blocks().Allocate(n);
    CaptureNoteAllocation(p);
    if (n != 0 && p == nullptr) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, "neuron: out of host memory allocating ", n, " bytes");
    }
    return {p, p, &Free, c10::Device(c10::DeviceType::PrivateUse1, 0)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &Free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  // A bad fork child leaks the device blocks it inherited instead (their memory is its private
  // copy, gone with the child).
  static void Free(void* p) {
    if (!InBadFork()) Blocks().Free(p);
  }
};

HostMemoryAllocator g_allocator;

// "Pinned" host memory for staging copies: device memory is host memory, so any host block
// serves; these blocks are remembered so that is_pinned() is true for them (DDP's reducer
// asserts it of the buffer it stages its used-parameter map through). Rarely allocated.
class PinnedAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    void* p = n == 0 ? nullptr : c10::alloc_cpu(n);
    if (p != nullptr) {
      absl::MutexLock lock(&Mu());
      Live().insert(p);
    }
    return {p, p, &Free, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &Free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
  static bool Contains(const void* p) {
    absl::MutexLock lock(&Mu());
    return Live().contains(p);
  }

 private:
  static absl::Mutex& Mu() {
    static auto* mu = new absl::Mutex();
    return *mu;
  }
  static absl::flat_hash_set<const void*>& Live() {  // (never iterated)
    static auto* live = new absl::flat_hash_set<const void*>();
    return *live;
  }
  static void Free(void* p) {
    {
      absl::MutexLock lock(&Mu());
      Live().erase(p);
    }
    c10::free_cpu(p);
  }
};

PinnedAllocator g_pinned_allocator;

// One device, index 0, with one in-order stream: the device's op stream. Stream objects of other
// ids (torch.Stream, FSDP2's all-gather and reduce-scatter streams) all name that stream, so a
// wait between streams or on an event is implied by stream order and costs nothing; an event's
// query or synchronize looks at (or waits for) everything recorded so far, which covers the
// ops recorded before the event. Events carry no state.
class NeuronGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device exchangeDevice(c10::Device d) const override { return Current(d); }
  c10::Device getDevice() const override { return c10::Device(c10::DeviceType::PrivateUse1, 0); }
  void setDevice(c10::Device d) const override { Current(d); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, Current(d)); }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    return c10::Stream(c10::Stream::UNSAFE, Current(d), next_stream_id_.fetch_add(1, std::memory_order_relaxed));
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*high_priority*/) const override {
    return getNewStream(d, 0);
  }
  c10::Stream exchangeStream(c10::Stream s) const override { return getStream(s.device()); }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  void record(void** /*event*/, const c10::Stream& /*stream*/, const c10::DeviceIndex /*device_index*/,
              const c10::EventFlag /*flag*/) const override {}
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  void destroyEvent(void* /*event*/, const c10::DeviceIndex /*device_index*/) const noexcept override {}
  bool queryEvent(void* /*event*/) const override { return Idle(); }
  bool queryStream(const c10::Stream& /*stream*/) const override { return Idle(); }
  void synchronizeEvent(void* /*event*/) const override { SyncOrThrow("event"); }
  void synchronizeStream(const c10::Stream& /*stream*/) const override { SyncOrThrow("stream"); }
  void synchronizeDevice(const c10::DeviceIndex /*device_index*/) const override { SyncOrThrow("user"); }

 private:
  static c10::Device Current(c10::Device d) {
    TORCH_CHECK(!d.has_index() || d.index() == 0, "neuron: device index ", static_cast<int>(d.index()),
                " is out of range (this runtime exposes one device, neuron:0)");
    return c10::Device(c10::DeviceType::PrivateUse1, 0);
  }
  // Everything recorded so far has run (pending ops are handed to the executor first).
  static bool Idle() {
    DeviceState& state = State();
    state.stream.Flush();
    return state.stream.executor().Pending() == 0;
  }
  static inline std::atomic<c10::StreamId> next_stream_id_{1};
};

// Random ops execute with CPU kernels, so device generators are CPU generator implementations.
class NeuronHooks final : public at::PrivateUse1HooksInterface {
 public:
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override { return DeviceGenerator(); }
  at::Generator getNewGenerator(c10::DeviceIndex) const override {
    return at::detail::createCPUGenerator();
  }
  at::Device getDeviceFromPtr(void*) const override { return c10::Device(c10::DeviceType::PrivateUse1, 0); }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  // Device -> host copies with non_blocking=True ask for a pinned staging buffer.
  c10::Allocator* getPinnedMemoryAllocator() const override { return &g_pinned_allocator; }
  bool isPinnedPtr(const void* data) const override { return PinnedAllocator::Contains(data); }
  c10::DeviceIndex deviceCount() const override { return 1; }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    // untyped_storage().resize_(): queued ops read and write the storage's memory when they run,
    // so they must run before it moves or goes (FSDP2 frees its unsharded parameters' storages
    // after each use and allocates them again: growing from 0 bytes needs no wait).
    if (storage.nbytes() != 0) {
      SyncOrThrow("resize_storage");
    }
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), newsize);
  }
};

at::Tensor EmptyMemoryFormat(c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                             std::optional<at::Layout>, std::optional<at::Device>, std::optional<bool>,
                             std::optional<at::MemoryFormat> memory_format) {
  return at::detail::empty_generic(C10_AS_INTARRAYREF_SLOW(size), &g_allocator, DeviceKeySet(),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor EmptyStrided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout>, std::optional<at::Device>, std::optional<bool>) {
  return at::detail::empty_strided_generic(C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride),
                                           &g_allocator, DeviceKeySet(), c10::dtype_or_default(dtype));
}

// An allocation, as empty_strided (torch registers it as CompositeExplicitAutogradNonFunctional,
// which structured_ops.cpp would record as an op that runs on the executor; autograd's
// AccumulateGrad calls it for every gradient of a non-contiguous parameter). Another device
// or layout asked for goes to that backend's empty_strided.
at::Tensor NewEmptyStrided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                           std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                           std::optional<at::Device> device, std::optional<bool> pin_memory) {
  const at::TensorOptions options =
      self.options().merge_in(at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory));
  if (options.device().type() != c10::DeviceType::PrivateUse1 || options.layout() != at::kStrided) {
    return at::empty_strided_symint(size, stride, options);
  }
  return at::detail::empty_strided_generic(C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride),
                                           &g_allocator, DeviceKeySet(), options.dtype().toScalarType());
}

const at::Tensor& Resize(const at::Tensor& self, c10::SymIntArrayRef size, std::optional<at::MemoryFormat> format) {
  // Growing moves the data to a new allocation while queued ops may still be using the storage:
  // drain them first, unless nothing else references the storage (a fresh out= tensor).
  const size_t needed = at::detail::computeStorageNbytesContiguous(
      C10_AS_INTARRAYREF_SLOW(size), self.itemsize(), self.storage_offset());
  if (!self.sizes().equals(C10_AS_INTARRAYREF_SLOW(size))) {
    CaptureNoteResize(self.storage());
  }
  if (needed > self.storage().nbytes() && self.storage().use_count() > 1) {
    SyncOrThrow("resize_");
  }
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), C10_AS_INTARRAYREF_SLOW(size), std::nullopt);
  if (format.has_value() && *format != at::MemoryFormat::Preserve) {
    self.unsafeGetTensorImpl()->empty_tensor_restride(*format);
  }
  return self;
}

// aten::copy_ routes every copy that involves our device here (CompositeExplicitAutograd beats
// a backend fallback, so this needs its own kernel).
at::Tensor CopyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  const double record_begin_us = base::profiler::NowUs();
  const bool src_dev = runtime::IsDeviceTensor(self);
  const bool dst_dev = runtime::IsDeviceTensor(dst);
  DeviceState& state = State();
  if (src_dev && !dst_dev) {  // device -> host: a sync point that waits for what `self` depends on
    SyncReadOrThrow("to_host", {c10::IValue(self)});
    ThrowIfPoisoned(self);
    runtime::ScopedSerialKernels serial;  // (no OpenMP worker left spinning: threads.h)
    dst.copy_(runtime::HostAlias(self), non_blocking);
    return dst;
  }
  if (!src_dev && dst_dev && dst.storage().use_count() == 1 && dst.is_non_overlapping_and_dense()) {
    // Host -> fresh device tensor (the usual .to("neuron")): no queued op can see this storage,
    // so copy now instead of queueing a copy of the host data.
    CaptureRefuse("a host to device copy (it runs when recorded)");
    state.stats.CountRecorded();
    state.stats.CountExecuted();
    runtime::ScopedSerialKernels serial;  // (no OpenMP worker left spinning: threads.h)
    runtime::HostAlias(dst).copy_(self);
    if (dst.numel() * dst.itemsize() == dst.storage().nbytes()) {
      runtime::ClearPoison(dst.storage().unsafeGetStorageImpl());  // all of it is good data now
    }
    return dst;
  }
  if (src_dev && dst_dev && self.is_alias_of(dst) && self.storage_offset() == dst.storage_offset() &&
      self.sizes().equals(dst.sizes()) && self.strides().equals(dst.strides()) &&
      self.scalar_type() == dst.scalar_type() && self.is_conj() == dst.is_conj() && self.is_neg() == dst.is_neg()) {
    // Views of the same elements: nothing to copy, as at::copy_ does (it returns before its
    // overlap check, so e.g. a copy between two expands of one tensor is no error; fuzz finding).
    return dst;
  }
  static const c10::OperatorHandle copy_op =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::copy_", "");
  runtime::OpRecord record(copy_op, {Snapshot(dst), PrivateArg(self), c10::IValue(false)});
  record.source = SourceForOp(state, {self, dst});
  AppendRecord(state, std::move(record), record_begin_us);
  return dst;
}

// set_ with a storage: metadata only (what storage the tensor views). Queued ops hold snapshots
// with their own TensorImpl, so nothing needs to drain. Used by torch.save (storage.cpu()).
at::Tensor& SetStorageOffset(at::Tensor& self, c10::Storage source, c10::SymInt offset, c10::SymIntArrayRef size,
                             c10::SymIntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1, "neuron: set_() of a neuron tensor to a ",
              source.device(), " storage; move one of them first");
  CaptureRefuse("set_");
  at::native::checkSetStorage(self, source, offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(offset.expect_int());
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), C10_AS_INTARRAYREF_SLOW(size),
                               stride.data() == nullptr ? std::nullopt
                                                        : std::optional<at::IntArrayRef>(C10_AS_INTARRAYREF_SLOW(stride)));
  return self;
}

at::Tensor& SetStorage(at::Tensor& self, c10::Storage source) {
  const int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return SetStorageOffset(self, std::move(source), 0, {c10::SymInt(numel)}, {});
}

// Whether `param.data = from` may swap `from`'s metadata into `self` in place (Module._apply):
// plain dense tensors on the host or the device, as TensorImpl allows among CPU/CUDA. Without
// it, `module.to("neuron")` makes a new Parameter per module and breaks tied weights (an LM head
// sharing the embedding matrix would train as two matrices).
bool HasCompatibleShallowCopyType(const at::Tensor& self, const at::Tensor& from) {
  auto plain = [](const at::Tensor& t) {
    const c10::DeviceType type = t.device().type();
    return t.layout() == c10::kStrided && !t.is_quantized() && !t.is_nested() &&
           (type == c10::DeviceType::CPU || type == c10::DeviceType::PrivateUse1) &&
           typeid(*t.unsafeGetTensorImpl()) == typeid(c10::TensorImpl);
  };
  return plain(self) && plain(from);
}

}  // namespace

c10::Allocator* DeviceAllocator() { return &g_allocator; }

runtime::BlockCache& DeviceMemory() { return Blocks(); }

c10::DispatchKeySet DeviceKeySet() { return c10::DispatchKeySet(c10::DispatchKey::PrivateUse1); }

}  // namespace trn::trace

C10_REGISTER_GUARD_IMPL(PrivateUse1, trn::trace::NeuronGuardImpl);

namespace {
// Registered at library load, before any Python code can touch the device.
const bool g_registered = [] {
  c10::SetAllocator(c10::DeviceType::PrivateUse1, &trn::trace::g_allocator);
  at::RegisterPrivateUse1HooksInterface(new trn::trace::NeuronHooks());
  return true;
}();
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(trn::trace::EmptyMemoryFormat));
  m.impl("empty_strided", TORCH_FN(trn::trace::EmptyStrided));
  m.impl("new_empty_strided", TORCH_FN(trn::trace::NewEmptyStrided));
  m.impl("_copy_from", TORCH_FN(trn::trace::CopyFrom));
  m.impl("resize_", TORCH_FN(trn::trace::Resize));
  m.impl("set_.source_Storage", TORCH_FN(trn::trace::SetStorage));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(trn::trace::HasCompatibleShallowCopyType));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(trn::trace::SetStorageOffset));
  // CompositeExplicitAutograd kernels that throw for backends other than CPU/CUDA: an
  // op-specific registration beats a composite kernel (a backend fallback does not).
  m.impl("convolution_overrideable", torch::CppFunction::makeFromBoxedFunction<&trn::trace::RecordingFallback>());
  m.impl("convolution_backward_overrideable",
         torch::CppFunction::makeFromBoxedFunction<&trn::trace::RecordingFallback>());
  // CompositeExplicitAutograd "math" decompositions that differ from the CPU kernels (rounding
  // of single-element layer norms; group norm's view() fails on channels_last): record the op.
  m.impl("native_layer_norm", torch::CppFunction::makeFromBoxedFunction<&trn::trace::RecordingFallback>());
  m.impl("native_group_norm", torch::CppFunction::makeFromBoxedFunction<&trn::trace::RecordingFallback>());
}

// The Conjugate/Negative fallbacks would materialise through clone -> copy_ -> _copy_from ->
// ... recursively; our copies carry the conj/neg bits on the host aliases instead.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) { m.impl("_copy_from", torch::CppFunction::makeFallthrough()); }
TORCH_LIBRARY_IMPL(aten, Negative, m) { m.impl("_copy_from", torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&trn::trace::RecordingFallback>());
}

namespace {
// After the registrations above (same file: initialised in order), so that their ops keep them.
const bool g_structured_registered = [] {
  trn::trace::RegisterStructuredOps();
  return true;
}();
}  // namespace
