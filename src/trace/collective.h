// Collectives in the device stream. A collective on neuron tensors (c10d_backend.h) is recorded as
// an op, `torch_trn::<name>(Tensor(a!)[] outputs, Tensor[] inputs, Collective call)`, like any
// other device op: its inputs are whatever the ops recorded before it wrote, and the ops recorded
// after it see its result. When the executor reaches the record, the op's CPU kernel runs the
// collective with torch.distributed's gloo backend on host aliases of the device tensors (device
// memory is host memory here: no staging copy) and waits for it there.
//
// Before a symmetric collective (everything but send/recv) the ranks exchange its signature (a
// sequence number per process group, the collective, dtype, element counts, root, reduce op and
// a hash of the shapes) through the same gloo context, unless NEURON_DIST_CHECK=0: a mismatched
// collective then fails on every rank with both sides named, instead of gloo aborting the
// process whose buffer was too small (what it does for CPU tensors).
//
// send/recv start on the executor and are waited for by a second op, `torch_trn::c10d_wait`,
// which Work.wait() records (an isend and an irecv posted back to back must both be in flight).
//
// Thread-safety: CollectiveCall's state is guarded by its mutex; Run/WaitStarted run on the
// executor thread, the queries on any thread.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/custom_class.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <array>
#include <atomic>
#include <memory>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "base/source_table.h"

namespace trn::trace {

// The collectives a signature's kKind names.
enum class CollectiveKind : int64_t {
  kBroadcast = 1, kAllReduce, kReduce, kAllGather, kAllGatherBase, kGather, kScatter, kReduceScatter,
  kReduceScatterBase, kAllToAll, kAllToAllBase, kBarrier, kAllReduceCoalesced, kAllGatherCoalesced,
  kReduceScatterCoalesced
};
// The name torch.distributed gives it ("all_reduce").
std::string CollectiveKindName(int64_t kind);

// What the ranks compare before a symmetric collective (all int64, the same layout everywhere).
struct CollectiveSignature {
  enum Field { kSeq, kKind, kDtype, kTensors, kNumelIn, kNumelOut, kRoot, kReduceOp, kShapeHash, kCount };
  std::array<int64_t, kCount> v{};
};

class CollectiveCall : public torch::CustomClassHolder {
 public:
  // Starts the collective on the backend, on host tensors laid out as the record's lists.
  using Start = std::function<c10::intrusive_ptr<c10d::Work>(c10d::Backend& backend, std::vector<at::Tensor>& outputs,
                                                             std::vector<at::Tensor>& inputs)>;

  // `name`: the collective as the user called it ("all_reduce"); `deferred`: the executor starts
  // it and a later torch_trn::c10d_wait record waits for it (send/recv); `check`: the signature
  // the ranks compare first (nullopt: none). `keep`: the storages of the collective's tensors,
  // held until it has finished (a deferred collective still uses them after its record ran).
  // `sequence`: the group's count of checked collectives run so far, shared by its calls (only
  // the executor thread advances it, in stream order: the kSeq the ranks compare).
  CollectiveCall(c10::intrusive_ptr<c10d::Backend> backend, std::string name, Start start, bool deferred,
                 std::optional<CollectiveSignature> check, std::vector<c10::Storage> keep,
                 std::shared_ptr<std::atomic<int64_t>> sequence);
  ~CollectiveCall() override;

  // The executor, from the op's CPU kernel: compares signatures, starts the collective and,
  // unless deferred, waits for it. Throws what the backend throws (c10::DistBackendError for a
  // lost peer or the process group's timeout), or a c10::Error naming a mismatch.
  void Run(std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs);
  // The executor, from torch_trn::c10d_wait: waits for a deferred collective started by Run.
  void WaitStarted();

  const std::string& name() const { return name_; }
  bool deferred() const { return deferred_; }
  // Whether the executor has run it (and waited for it), and how that went.
  bool Done() const;
  absl::Status Outcome() const;
  // recv from any source: the sender's rank, once done (-1 before).
  int SourceRank() const;

 private:
  void Finish(absl::Status status);
  void CheckSignature();

  const c10::intrusive_ptr<c10d::Backend> backend_;
  const std::string name_;
  const Start start_;
  const bool deferred_;
  std::optional<CollectiveSignature> check_;  // (kSeq filled in by Run)
  const std::shared_ptr<std::atomic<int64_t>> sequence_;
  std::vector<c10::Storage> keep_;  // (released with the call)
  mutable absl::Mutex mu_;
  c10::intrusive_ptr<c10d::Work> started_ ABSL_GUARDED_BY(mu_);  // a deferred collective in flight
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status outcome_ ABSL_GUARDED_BY(mu_);
  int source_rank_ ABSL_GUARDED_BY(mu_) = -1;
};

// Records `op_name` ("allreduce", ...: a torch_trn:: op with the collective schema above) on
// the device stream with private snapshots of `outputs` (written) and `inputs` (read), issued at
// `source`, then hands the pending ops to the executor, so the collective is queued there
// whatever this thread does next (a rank blocked elsewhere must never keep its peers' collective
// from running). Call it without the GIL (the flush may wait for the executor).
void RecordCollective(const std::string& op_name, const std::vector<at::Tensor>& outputs,
                      const std::vector<at::Tensor>& inputs, c10::intrusive_ptr<CollectiveCall> call,
                      base::SourceId source);

// Records torch_trn::c10d_wait for a deferred collective (its tensors: what later ops wait on).
void RecordCollectiveWait(const std::vector<at::Tensor>& tensors, c10::intrusive_ptr<CollectiveCall> call,
                          base::SourceId source);

}  // namespace trn::trace
