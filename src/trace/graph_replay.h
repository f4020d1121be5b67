// Graph replay: a graph of device ops known ahead (a torch.compile(backend="neuron") forward or
// backward graph) is recorded once, then re-issued on each call without its Python, the
// dispatcher, Meta inference or source capture per op.
//
//  - Capture: while a GraphReplayer captures on a thread, every op that thread records is also
//    kept, each tensor as (storage slot, geometry, dtype). A slot is one of the call's input
//    storages, a storage allocated during the capture (a new one per replay) or any other
//    storage (a constant the graph reads; kept alive). The capture itself holds no storage (weak
//    references only), so a flush inside it counts the program's references as without it.
//    Anything a replay would not reproduce refuses the capture (the call itself still runs
//    normally): a sync or host read, a host fallback, an immediate host -> device copy, set_ or
//    resize_ (except of a storage the graph made: an out= result sized by its op), an in-place
//    metadata change, a collective, an argument or output that is not a tensor, tensor list or
//    plain constant.
//  - Replay: the same records over this call's storages, appended to the stream as the recorder
//    appended them (same ops, order, content, source lines), so the plan and code caches find
//    every group again. A replay drops its handle on a storage the graph made after the last
//    record that uses it, as the graph's code drops an intermediate, so a flush inside the
//    replay decides the same temporaries and outputs as the capture did. In-place writes of
//    inputs bump their version counters, as the dispatcher's ADInplaceOrView kernel would have.
//  - Templates are keyed by the inputs' signature: per tensor its dtype, sizes, strides, offset,
//    math bits and which earlier input shares its storage; other inputs by value. A signature
//    whose capture was refused is remembered and runs normally from then on.
//
// Thread-safety: a capture belongs to the thread that began it (the forward graph runs on the
// Python thread, the backward graph on autograd's device thread). A GraphReplayer's methods may
// be called from any thread (one mutex guards its templates); a replay of one template may run
// on two threads at once.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/op_record.h"

namespace trn::trace {

struct GraphTemplate;  // graph_replay.cpp
class GraphCapture;

class GraphReplayer {
 public:
  GraphReplayer();
  ~GraphReplayer();
  GraphReplayer(const GraphReplayer&) = delete;
  GraphReplayer& operator=(const GraphReplayer&) = delete;

  // Replays the template captured for `inputs`' signature: the graph's outputs. nullopt when
  // there is none: then `*run_normally` says whether to run the graph without capturing it (its
  // capture was refused before, or the signature cannot be replayed, e.g. a SymInt input) or to
  // capture it. Throws like the recorder (e.g. a launch-blocking error) at the edge.
  std::optional<std::vector<c10::IValue>> Replay(const std::vector<c10::IValue>& inputs, bool* run_normally);
  // Starts capturing this thread's records (at most one capture per thread).
  void BeginCapture(const std::vector<c10::IValue>& inputs);
  // Ends this thread's capture: the template for `inputs`' signature, built from what was
  // recorded and the graph's `outputs`; or the refusal, returned and remembered.
  absl::Status EndCapture(const std::vector<c10::IValue>& inputs, const std::vector<c10::IValue>& outputs);
  // Ends this thread's capture without keeping anything (the graph raised).
  void AbortCapture();

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const GraphTemplate>> templates_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> refused_ ABSL_GUARDED_BY(mu_);  // signature -> reason
};

// Hooks the recorder calls on the recording thread; each is a thread-local check when no capture
// is active.
// An op is appended to the stream (trace::AppendRecord calls it, before the record moves on).
void CaptureNoteRecord(const runtime::OpRecord& record);
// The device allocator handed out `data` on this thread.
void CaptureNoteAllocation(const void* data);
// resize_ of a tensor over `storage` on this thread (before it happens).
void CaptureNoteResize(const c10::Storage& storage);
// Something a replay would not reproduce happened on this thread (see above).
void CaptureRefuse(const char* reason);
bool CaptureActive();

}  // namespace trn::trace
