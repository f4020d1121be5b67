#include "trace/c10d_backend.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
#include <xxhash.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/blocking.h"
#include "runtime/cache/remote_tier.h"
#include "trace/collective.h"
#include "trace/device_state.h"

namespace trn::trace {
namespace {

using c10d::OpType;
using Tensors = std::vector<at::Tensor>;

using Kind = CollectiveKind;

// How a Work's wait() behaves (c10d_backend.h).
enum class WaitKind { kStream, kHost, kRecordWait };

class NeuronWork : public c10d::Work {
 public:
  NeuronWork(int rank, OpType type, Tensors outputs, c10::intrusive_ptr<CollectiveCall> call, WaitKind wait)
      : Work(rank, type), outputs_(std::move(outputs)), call_(std::move(call)), wait_(wait) {
    // In stream order the result exists once recorded: DDP's reducer and comm hooks chain their
    // copies and divisions after it without waiting for the executor (like NCCL's CUDA future).
    future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
    future_->markCompleted(c10::IValue(outputs_));
  }

  bool isCompleted() override { return call_->Done(); }
  bool isSuccess() const override { return call_->Done() && call_->Outcome().ok(); }
  std::exception_ptr exception() const override {
    const absl::Status s = call_->Outcome();
    if (s.ok()) return nullptr;
    return std::make_exception_ptr(c10::DistBackendError(
        c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, std::string(s.message())));
  }
  std::vector<at::Tensor> result() override { return outputs_; }
  void synchronize() override {}
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  bool wait(std::chrono::milliseconds /*timeout: the process group's, applied by gloo*/) override {
    switch (wait_) {
      case WaitKind::kStream:
        return true;
      case WaitKind::kHost:
        SyncOrThrow("barrier");
        return true;
      case WaitKind::kRecordWait:
        RecordWaitOnce();
        return true;
    }
    return true;
  }

  int sourceRank() const override {  // (recv from any source)
    RecordWaitOnce();
    SyncOrThrow("recv");
    return call_->SourceRank();
  }

 private:
  void RecordWaitOnce() const {
    {
      absl::MutexLock lock(&mu_);
      if (wait_recorded_) return;
      wait_recorded_ = true;
    }
    const base::SourceId source = SourceForOp(State(), {});
    base::ScopedBlockingWait no_gil;
    RecordCollectiveWait(outputs_, call_, source);
  }

  const Tensors outputs_;
  const c10::intrusive_ptr<CollectiveCall> call_;
  const WaitKind wait_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  mutable absl::Mutex mu_;
  mutable bool wait_recorded_ ABSL_GUARDED_BY(mu_) = false;
};

int64_t Numel(const Tensors& ts) {
  int64_t n = 0;
  for (const at::Tensor& t : ts) n += t.defined() ? t.numel() : 0;
  return n;
}

void HashShapes(const Tensors& ts, XXH3_state_t* h) {
  for (const at::Tensor& t : ts) {
    const int64_t dim = t.dim();
    XXH3_64bits_update(h, &dim, sizeof(dim));
    XXH3_64bits_update(h, t.sizes().data(), t.sizes().size() * sizeof(int64_t));
  }
}

Tensors Flatten(const std::vector<Tensors>& nested, std::vector<size_t>* lengths) {
  Tensors flat;
  for (const Tensors& row : nested) {
    lengths->push_back(row.size());
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return flat;
}

std::vector<Tensors> Nest(const Tensors& flat, const std::vector<size_t>& lengths) {
  std::vector<Tensors> nested;
  size_t at = 0;
  for (size_t n : lengths) {
    nested.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(at), flat.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  return nested;
}

// What the ranks compare: which fields a collective's peers must agree on.
struct Compare {
  bool numel_in = true, numel_out = true, shapes_in = true, shapes_out = true;
  static Compare All() { return {}; }
  static Compare InputsOnly() { return {true, false, true, false}; }
  static Compare OutputsOnly() { return {false, true, false, true}; }
  static Compare KindOnly() { return {false, false, false, false}; }
};

class NeuronBackend final : public c10d::Backend {
 public:
  explicit NeuronBackend(c10::intrusive_ptr<c10d::Backend> gloo)
      : Backend(gloo->getRank(), gloo->getSize()), gloo_(std::move(gloo)) {}

  const std::string getBackendName() const override { return "neuron"; }

  c10::intrusive_ptr<c10d::Work> broadcast(Tensors& tensors, const c10d::BroadcastOptions& opts) override {
    return Symmetric("broadcast", Kind::kBroadcast, OpType::BROADCAST, tensors, {}, Compare::All(), opts.rootRank, -1,
                     [opts](c10d::Backend& b, Tensors& out, Tensors&) { return b.broadcast(out, opts); });
  }

  c10::intrusive_ptr<c10d::Work> allreduce(Tensors& tensors, const c10d::AllreduceOptions& opts) override {
    return Symmetric("allreduce", Kind::kAllReduce, OpType::ALLREDUCE, tensors, {}, Compare::All(), -1,
                     opts.reduceOp.op_, [opts](c10d::Backend& b, Tensors& out, Tensors&) { return b.allreduce(out, opts); });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(Tensors& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    return Symmetric("allreduce_coalesced", Kind::kAllReduceCoalesced, OpType::ALLREDUCE_COALESCED, tensors, {},
                     Compare::All(), -1, opts.reduceOp.op_,
                     [opts](c10d::Backend& b, Tensors& out, Tensors&) { return b.allreduce_coalesced(out, opts); });
  }

  c10::intrusive_ptr<c10d::Work> reduce(Tensors& tensors, const c10d::ReduceOptions& opts) override {
    return Symmetric("reduce", Kind::kReduce, OpType::REDUCE, tensors, {}, Compare::All(), opts.rootRank, opts.reduceOp.op_,
                     [opts](c10d::Backend& b, Tensors& out, Tensors&) { return b.reduce(out, opts); });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                           const c10d::AllgatherOptions& opts) override {
    std::vector<size_t> lengths;
    Tensors flat = Flatten(outputs, &lengths);
    return Symmetric("allgather", Kind::kAllGather, OpType::ALLGATHER, flat, inputs, Compare::All(), -1, -1,
                     [opts, lengths](c10d::Backend& b, Tensors& out, Tensors& in) {
                       std::vector<Tensors> nested = Nest(out, lengths);
                       return b.allgather(nested, in, opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override {
    return Symmetric("allgather_into_tensor", Kind::kAllGatherBase, OpType::_ALLGATHER_BASE, {output}, {input},
                     Compare::All(), -1, -1, [opts](c10d::Backend& b, Tensors& out, Tensors& in) {
                       return b._allgather_base(out[0], in[0], opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<Tensors>& outputs, Tensors& inputs,
                                                     const c10d::AllgatherOptions& opts) override {
    std::vector<size_t> lengths;
    Tensors flat = Flatten(outputs, &lengths);
    return Symmetric("allgather", Kind::kAllGather, OpType::ALLGATHER_COALESCED, flat, inputs, Compare::All(), -1, -1,
                     [opts, lengths](c10d::Backend& b, Tensors& out, Tensors& in) {
                       std::vector<Tensors> nested = Nest(out, lengths);
                       return b.allgather_coalesced(nested, in, opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                                 const c10d::AllgatherOptions& opts) override {
    return Symmetric("allgather_into_tensor_coalesced", Kind::kAllGatherCoalesced, OpType::COALESCED, outputs, inputs,
                     Compare::All(), -1, -1, [opts](c10d::Backend& b, Tensors& out, Tensors& in) {
                       return b.allgather_into_tensor_coalesced(out, in, opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<Tensors>& outputs, Tensors& inputs,
                                        const c10d::GatherOptions& opts) override {
    std::vector<size_t> lengths;
    Tensors flat = Flatten(outputs, &lengths);  // (empty except on the root)
    return Symmetric("gather", Kind::kGather, OpType::GATHER, flat, inputs, Compare::InputsOnly(), opts.rootRank, -1,
                     [opts, lengths](c10d::Backend& b, Tensors& out, Tensors& in) {
                       std::vector<Tensors> nested = Nest(out, lengths);
                       return b.gather(nested, in, opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    std::vector<size_t> lengths;
    Tensors flat = Flatten(inputs, &lengths);  // (empty except on the root)
    return Symmetric("scatter", Kind::kScatter, OpType::SCATTER, outputs, flat, Compare::OutputsOnly(), opts.rootRank, -1,
                     [opts, lengths](c10d::Backend& b, Tensors& out, Tensors& in) {
                       std::vector<Tensors> nested = Nest(in, lengths);
                       return b.scatter(out, nested, opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    std::vector<size_t> lengths;
    Tensors flat = Flatten(inputs, &lengths);
    return Symmetric("reduce_scatter", Kind::kReduceScatter, OpType::REDUCE_SCATTER, outputs, flat, Compare::All(), -1,
                     opts.reduceOp.op_, [opts, lengths](c10d::Backend& b, Tensors& out, Tensors& in) {
                       std::vector<Tensors> nested = Nest(in, lengths);
                       return b.reduce_scatter(out, nested, opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override {
    return Symmetric("reduce_scatter_tensor", Kind::kReduceScatterBase, OpType::_REDUCE_SCATTER_BASE, {output}, {input},
                     Compare::All(), -1, opts.reduceOp.op_, [opts](c10d::Backend& b, Tensors& out, Tensors& in) {
                       return b._reduce_scatter_base(out[0], in[0], opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override {
    return Symmetric("reduce_scatter_tensor_coalesced", Kind::kReduceScatterCoalesced, OpType::COALESCED, outputs, inputs,
                     Compare::All(), -1, opts.reduceOp.op_, [opts](c10d::Backend& b, Tensors& out, Tensors& in) {
                       return b.reduce_scatter_tensor_coalesced(out, in, opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& out_splits,
                                               std::vector<int64_t>& in_splits,
                                               const c10d::AllToAllOptions& opts) override {
    // Uneven splits differ from rank to rank: then only the collective and dtype are compared.
    const Compare compare = out_splits.empty() && in_splits.empty() ? Compare::All() : Compare::KindOnly();
    return Symmetric("alltoall_single", Kind::kAllToAllBase, OpType::ALLTOALL_BASE, {output}, {input}, compare, -1, -1,
                     [opts, out_splits, in_splits](c10d::Backend& b, Tensors& out, Tensors& in) {
                       std::vector<int64_t> os = out_splits, is = in_splits;
                       return b.alltoall_base(out[0], in[0], os, is, opts);
                     });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(Tensors& outputs, Tensors& inputs, const c10d::AllToAllOptions& opts) override {
    return Symmetric("alltoall", Kind::kAllToAll, OpType::ALLTOALL, outputs, inputs, Compare::KindOnly(), -1, -1,
                     [opts](c10d::Backend& b, Tensors& out, Tensors& in) { return b.alltoall(out, in, opts); });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
    c10d::BarrierOptions host_opts = opts;
    host_opts.device.reset();
    host_opts.device_ids.clear();
    // (a one-byte tensor gives the recorded op something to dispatch on)
    at::Tensor token = at::empty({1}, at::TensorOptions().dtype(at::kByte).device(c10::DeviceType::PrivateUse1));
    return Record("barrier", Kind::kBarrier, OpType::BARRIER, {token}, {}, Compare::KindOnly(), -1, -1,
                  [host_opts](c10d::Backend& b, Tensors&, Tensors&) { return b.barrier(host_opts); },
                  WaitKind::kHost);
  }

  c10::intrusive_ptr<c10d::Work> send(Tensors& tensors, int dst, int tag) override {
    return PointToPoint("send", OpType::SEND, {}, tensors,
                        [dst, tag](c10d::Backend& b, Tensors&, Tensors& in) { return b.send(in, dst, tag); });
  }

  c10::intrusive_ptr<c10d::Work> recv(Tensors& tensors, int src, int tag) override {
    return PointToPoint("recv", OpType::RECV, tensors, {},
                        [src, tag](c10d::Backend& b, Tensors& out, Tensors&) { return b.recv(out, src, tag); });
  }

  c10::intrusive_ptr<c10d::Work> recvAnysource(Tensors& tensors, int tag) override {
    return PointToPoint("recv", OpType::RECVANYSOURCE, tensors, {},
                        [tag](c10d::Backend& b, Tensors& out, Tensors&) { return b.recvAnysource(out, tag); });
  }

  void setSequenceNumberForGroup() override { gloo_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return gloo_->getSequenceNumberForGroup(); }

 private:
  c10::intrusive_ptr<c10d::Work> Symmetric(const char* op, Kind kind, OpType type, Tensors outputs, Tensors inputs,
                                           Compare compare, int64_t root, int64_t reduce_op,
                                           CollectiveCall::Start start) {
    return Record(op, kind, type, std::move(outputs), std::move(inputs), compare, root, reduce_op, std::move(start),
                  WaitKind::kStream);
  }

  c10::intrusive_ptr<c10d::Work> Record(const char* op, Kind kind, OpType type, Tensors outputs, Tensors inputs,
                                        Compare compare, int64_t root, int64_t reduce_op, CollectiveCall::Start start,
                                        WaitKind wait) {
    std::optional<CollectiveSignature> sig;
    if (State().knobs.dist_check) {
      sig = Signature(kind, outputs, inputs, compare, root, reduce_op);
    }
    return RecordCall(op, type, std::move(outputs), std::move(inputs), std::move(start), wait, /*deferred=*/false,
                        sig);
  }

  c10::intrusive_ptr<c10d::Work> PointToPoint(const char* op, OpType type, Tensors outputs, Tensors inputs,
                                              CollectiveCall::Start start) {
    return RecordCall(op, type, std::move(outputs), std::move(inputs), std::move(start), WaitKind::kRecordWait,
                        /*deferred=*/true, std::nullopt);
  }

  static CollectiveSignature Signature(Kind kind, const Tensors& outputs, const Tensors& inputs, Compare compare,
                                       int64_t root, int64_t reduce_op) {
    using F = CollectiveSignature;
    CollectiveSignature s;
    s.v[F::kKind] = static_cast<int64_t>(kind);
    const Tensors& typed = !outputs.empty() && compare.numel_out ? outputs : inputs.empty() ? outputs : inputs;
    s.v[F::kDtype] = typed.empty() ? -1 : static_cast<int64_t>(typed[0].scalar_type());
    s.v[F::kTensors] = (compare.numel_out ? static_cast<int64_t>(outputs.size()) : 0) +
                       (compare.numel_in ? static_cast<int64_t>(inputs.size()) : 0);
    s.v[F::kNumelIn] = compare.numel_in ? Numel(inputs) : -1;
    s.v[F::kNumelOut] = compare.numel_out ? Numel(outputs) : -1;
    s.v[F::kRoot] = root;
    s.v[F::kReduceOp] = reduce_op;
    XXH3_state_t* h = XXH3_createState();
    XXH3_64bits_reset(h);
    if (compare.shapes_out) HashShapes(outputs, h);
    if (compare.shapes_in) HashShapes(inputs, h);
    s.v[F::kShapeHash] = static_cast<int64_t>(XXH3_64bits_digest(h));
    XXH3_freeState(h);
    return s;
  }

  c10::intrusive_ptr<c10d::Work> RecordCall(const char* op, OpType type, Tensors outputs, Tensors inputs,
                                              CollectiveCall::Start start, WaitKind wait, bool deferred,
                                              std::optional<CollectiveSignature> sig) {
    std::vector<c10::Storage> keep;
    if (deferred) {
      for (const Tensors* ts : {&outputs, &inputs}) {
        for (const at::Tensor& t : *ts) keep.push_back(t.storage());
      }
    }
    // No lock of ours is held while recording: a record may flush, and a flush may take the GIL
    // (the distributed compile cache looks for its store), which another thread may hold while
    // it waits for that lock. The sequence number the ranks compare is taken when the executor
    // runs the collective, in stream order (CollectiveCall::Run).
    const base::SourceId source = SourceForOp(State(), {});
    auto call = c10::make_intrusive<CollectiveCall>(gloo_, op, std::move(start), deferred, sig, std::move(keep),
                                                    sequence_);
    {
      base::ScopedBlockingWait no_gil;
      RecordCollective(op, outputs, inputs, call, source);
    }
    Tensors results = outputs.empty() ? inputs : outputs;
    return c10::make_intrusive<NeuronWork>(getRank(), type, std::move(results), std::move(call), wait);
  }

  const c10::intrusive_ptr<c10d::Backend> gloo_;
  // The group's symmetric collectives run so far (the executor counts them, in stream order).
  const std::shared_ptr<std::atomic<int64_t>> sequence_ = std::make_shared<std::atomic<int64_t>>(0);
};

void AttachFromOp(const c10::intrusive_ptr<c10d::ProcessGroup>& holder) { AttachNeuronBackend(holder); }

}  // namespace

void AttachNeuronBackend(const c10::intrusive_ptr<c10d::ProcessGroup>& holder) {
  runtime::cache::NoteProcessGroupCreated();  // the compile cache looks for the job's store now
  c10::intrusive_ptr<c10d::Backend> gloo = holder->getBackend(c10::DeviceType::CPU);
  auto backend = c10::make_intrusive<NeuronBackend>(std::move(gloo));
  holder->setBackend(c10::DeviceType::PrivateUse1, c10d::ProcessGroup::BackendType::CUSTOM, backend);
  TORCH_CHECK(holder->getBackend(c10::DeviceType::PrivateUse1).get() == backend.get(),
              "neuron: the process group already has another custom backend");
}

}  // namespace trn::trace

TORCH_LIBRARY_FRAGMENT(torch_trn, m) {
  m.def("_attach_c10d_backend(__torch__.torch.classes.c10d.ProcessGroup holder) -> ()",
        TORCH_FN(trn::trace::AttachFromOp));
}
