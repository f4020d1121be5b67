#include "trace/collective.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/host_view.h"
#include "runtime/op_record.h"
#include "base/profiler.h"
#include "base/stats.h"
#include "trace/device_state.h"
#include "trace/graph_replay.h"
#include "trace/snapshot.h"

namespace trn::trace {
namespace {

std::string Describe(const CollectiveSignature& s) {
  using F = CollectiveSignature;
  std::string d = absl::StrCat(CollectiveKindName(s.v[F::kKind]), " (collective ", s.v[F::kSeq], " of the group)");
  if (s.v[F::kDtype] >= 0) {
    absl::StrAppend(&d, " on ", s.v[F::kTensors], " ", c10::toString(static_cast<c10::ScalarType>(s.v[F::kDtype])),
                    " tensor(s)");
  }
  if (s.v[F::kNumelIn] > 0) absl::StrAppend(&d, ", ", s.v[F::kNumelIn], " element(s) in");
  if (s.v[F::kNumelOut] > 0) absl::StrAppend(&d, ", ", s.v[F::kNumelOut], " element(s) out");
  if (s.v[F::kRoot] >= 0) absl::StrAppend(&d, ", root ", s.v[F::kRoot]);
  return d;
}

int64_t Bytes(const std::vector<at::Tensor>& ts) {
  int64_t n = 0;
  for (const at::Tensor& t : ts) n += t.defined() ? static_cast<int64_t>(t.numel() * t.itemsize()) : 0;
  return n;
}

const c10::OperatorHandle& Op(const std::string& name) {
  // The handles live as long as the dispatcher; looked up once per name.
  static absl::Mutex mu;
  static auto* ops = new std::map<std::string, c10::OperatorHandle>();
  absl::MutexLock lock(&mu);
  auto it = ops->find(name);
  if (it == ops->end()) {
    it = ops->emplace(name, c10::Dispatcher::singleton().findSchemaOrThrow(("torch_trn::" + name).c_str(), ""))
             .first;
  }
  return it->second;
}

c10::List<at::Tensor> Snapshots(const std::vector<at::Tensor>& ts) {
  c10::List<at::Tensor> out;
  out.reserve(ts.size());
  for (const at::Tensor& t : ts) {
    TORCH_CHECK(runtime::IsDeviceTensor(t), "neuron collective: expected tensors on the neuron device, got one on ",
                t.defined() ? t.device().str() : std::string("no device (undefined)"));
    out.push_back(Snapshot(t));
  }
  return out;
}

void RecordOp(const c10::OperatorHandle& op, std::vector<c10::IValue> args, base::SourceId source) {
  const double begin = base::profiler::NowUs();
  DeviceState& state = State();
  CaptureRefuse("a collective");
  runtime::OpRecord record(op, std::move(args));
  record.source = source;
  AppendRecord(state, std::move(record), begin);
  // Queued on the executor now (compile/adaptive modes keep recorded ops pending until a flush):
  // a rank whose thread then blocks elsewhere (a CPU collective, a store wait) must not hold
  // back the collective its peers' executors are waiting in.
  state.stream.Flush();
}

// The CPU kernel of every collective op: what the executor runs (on host aliases).
void CollectiveKernel(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  auto call = stack->back().toCustomClass<CollectiveCall>();
  std::vector<at::Tensor> inputs = (*stack)[stack->size() - 2].toTensorVector();
  std::vector<at::Tensor> outputs = (*stack)[stack->size() - 3].toTensorVector();
  stack->erase(stack->end() - 3, stack->end());
  call->Run(std::move(outputs), std::move(inputs));
}

void WaitKernel(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  auto call = stack->back().toCustomClass<CollectiveCall>();
  stack->erase(stack->end() - 2, stack->end());
  call->WaitStarted();
}

}  // namespace

std::string CollectiveKindName(int64_t kind) {
  switch (static_cast<CollectiveKind>(kind)) {
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kReduce: return "reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kAllGatherBase: return "all_gather_into_tensor";
    case CollectiveKind::kGather: return "gather";
    case CollectiveKind::kScatter: return "scatter";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kReduceScatterBase: return "reduce_scatter_tensor";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kAllToAllBase: return "all_to_all_single";
    case CollectiveKind::kBarrier: return "barrier";
    case CollectiveKind::kAllReduceCoalesced: return "all_reduce_coalesced";
    case CollectiveKind::kAllGatherCoalesced: return "all_gather_into_tensor_coalesced";
    case CollectiveKind::kReduceScatterCoalesced: return "reduce_scatter_tensor_coalesced";
  }
  return absl::StrCat("collective #", kind);
}

CollectiveCall::CollectiveCall(c10::intrusive_ptr<c10d::Backend> backend, std::string name, Start start,
                               bool deferred, std::optional<CollectiveSignature> check,
                               std::vector<c10::Storage> keep, std::shared_ptr<std::atomic<int64_t>> sequence)
    : backend_(std::move(backend)),
      name_(std::move(name)),
      start_(std::move(start)),
      deferred_(deferred),
      check_(check),
      sequence_(std::move(sequence)),
      keep_(std::move(keep)) {}

CollectiveCall::~CollectiveCall() {
  // A deferred collective nobody waited for (an isend whose work was dropped): its buffers must
  // outlive it. Bounded by the process group's timeout.
  c10::intrusive_ptr<c10d::Work> started;
  {
    absl::MutexLock lock(&mu_);
    started = std::move(started_);
  }
  if (started) {
    try {
      started->wait();
    } catch (...) {  // nobody is left to report it to
    }
  }
}

bool CollectiveCall::Done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

absl::Status CollectiveCall::Outcome() const {
  absl::MutexLock lock(&mu_);
  return outcome_;
}

int CollectiveCall::SourceRank() const {
  absl::MutexLock lock(&mu_);
  return source_rank_;
}

void CollectiveCall::Finish(absl::Status status) {
  absl::MutexLock lock(&mu_);
  done_ = true;
  outcome_ = std::move(status);
}

void CollectiveCall::CheckSignature() {
  const int size = backend_->getSize();
  at::Tensor mine = at::empty({CollectiveSignature::kCount}, at::kLong);
  std::copy(check_->v.begin(), check_->v.end(), mine.data_ptr<int64_t>());
  at::Tensor all = at::empty({size * CollectiveSignature::kCount}, at::kLong);
  backend_->_allgather_base(all, mine)->wait();
  const int64_t* p = all.data_ptr<int64_t>();
  for (int r = 0; r < size; ++r) {
    CollectiveSignature theirs;
    std::copy(p + r * CollectiveSignature::kCount, p + (r + 1) * CollectiveSignature::kCount, theirs.v.begin());
    if (theirs.v != check_->v) {
      TORCH_CHECK(false, "collective mismatch in a process group of the neuron device: this rank (",
                  backend_->getRank(), ") called ", Describe(*check_), "; rank ", r, " called ", Describe(theirs),
                  ". Every rank must issue the same collectives, in the same order, on tensors of the same "
                  "shapes and dtypes.");
    }
  }
}

void CollectiveCall::Run(std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs) {
  const int64_t begin = base::MonotonicNs();
  try {
    if (check_.has_value()) {
      check_->v[CollectiveSignature::kSeq] = sequence_->fetch_add(1, std::memory_order_relaxed) + 1;
      CheckSignature();
    }
    c10::intrusive_ptr<c10d::Work> work = start_(*backend_, outputs, inputs);
    if (deferred_) {
      absl::MutexLock lock(&mu_);
      started_ = std::move(work);
    } else {
      if (work) work->wait();
      Finish(absl::OkStatus());
    }
  } catch (const std::exception& e) {
    Finish(absl::InternalError(e.what()));
    State().stats.CountCollective(name_, base::MonotonicNs() - begin, 0);
    throw;
  }
  State().stats.CountCollective(name_, base::MonotonicNs() - begin, Bytes(deferred_ ? inputs : outputs) +
                                                                        (deferred_ ? 0 : Bytes(inputs)));
}

void CollectiveCall::WaitStarted() {
  c10::intrusive_ptr<c10d::Work> started;
  {
    absl::MutexLock lock(&mu_);
    started = std::move(started_);
  }
  if (!started) {
    return;  // (the start failed: the executor reported that op's error)
  }
  const int64_t begin = base::MonotonicNs();
  try {
    started->wait();
    int source = -1;
    try {
      source = started->sourceRank();
    } catch (const std::exception&) {  // only recv from any source knows it
    }
    {
      absl::MutexLock lock(&mu_);
      source_rank_ = source;
    }
    Finish(absl::OkStatus());
  } catch (const std::exception& e) {
    Finish(absl::InternalError(e.what()));
    State().stats.CountCollective(name_, base::MonotonicNs() - begin, 0);
    throw;
  }
  State().stats.CountCollective(name_, base::MonotonicNs() - begin, 0);
}

void RecordCollective(const std::string& op_name, const std::vector<at::Tensor>& outputs,
                      const std::vector<at::Tensor>& inputs, c10::intrusive_ptr<CollectiveCall> call,
                      base::SourceId source) {
  RecordOp(Op(op_name), {Snapshots(outputs), Snapshots(inputs), c10::IValue(std::move(call))}, source);
}

void RecordCollectiveWait(const std::vector<at::Tensor>& tensors, c10::intrusive_ptr<CollectiveCall> call,
                          base::SourceId source) {
  RecordOp(Op("c10d_wait"), {Snapshots(tensors), c10::IValue(std::move(call))}, source);
}

}  // namespace trn::trace

// The collective ops (one name per collective: they are what errors, last_ops() and the profiler
// name). Their only kernel is the CPU one the executor calls on host aliases.
namespace {
constexpr const char* kCollectiveOps[] = {
    "broadcast", "allreduce", "allreduce_coalesced", "reduce", "allgather", "allgather_into_tensor",
    "allgather_into_tensor_coalesced", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor",
    "reduce_scatter_tensor_coalesced", "alltoall", "alltoall_single", "barrier", "send", "recv"};
}  // namespace

TORCH_LIBRARY(torch_trn, m) {
  m.class_<trn::trace::CollectiveCall>("Collective");
  for (const char* name : kCollectiveOps) {
    const std::string schema =
        absl::StrCat(name, "(Tensor(a!)[] outputs, Tensor[] inputs, __torch__.torch.classes.torch_trn.Collective call) -> ()");
    m.def(schema.c_str());
  }
  m.def("c10d_wait(Tensor(a!)[] tensors, __torch__.torch.classes.torch_trn.Collective call) -> ()");
}

TORCH_LIBRARY_IMPL(torch_trn, CPU, m) {
  for (const char* name : kCollectiveOps) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&trn::trace::CollectiveKernel>());
  }
  m.impl("c10d_wait", torch::CppFunction::makeFromBoxedFunction<&trn::trace::WaitKernel>());
}
