// What a flush decides about the storages its records reference, in one walk on the flushing
// thread, so that planning the segment later (on the executor thread, while the program goes on
// and drops or makes references) never reads a use count.
//
// A storage's use count is the number of TensorImpls (and Storage handles) that reference it:
// the program's tensors, autograd's saved tensors, the records of this flush, and the records of
// earlier flushes whose units are not released yet (the RefLedger's holdings). At the flush,
//   outside(s) = use_count(s) - held by earlier flushes - distinct tensors of this flush's records
// counts the references nobody but the program holds. So, for a group of the flush that ends
// before record `end`:
//  - a write to s is an output exactly when s is read after the group: outside(s) > 0, or a
//    record at `end` or later references s (LiveAfter). That is what GroupLowering used to read
//    from use counts at planning time minus the earlier units' references; the answer, and so
//    every group key, is the same, but it no longer depends on when the plan is made.
//  - s with outside(s) == 0 can never be read after the last record that references it: its
//    memory is freed once that record ran (releases()).
// Decisions depend only on the records and on the references at the flush, a fixed point of the
// stream: keys never depend on timing.
//
// Thread-safety: a SegmentRefs is immutable once built and may be read from any thread. A
// RefLedger is thread-safe: Hold and Release may be called from any thread (the stream calls
// them from flushing and syncing threads).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "runtime/op_record.h"

namespace trn::scheduler {

class SegmentRefs {
 public:
  // The references of `records` as if no earlier flush held any (tests, and the planner without a
  // ledger): outside(s) = use_count(s) - distinct tensors of the records.
  static SegmentRefs Of(const std::vector<runtime::OpRecord>& records);

  // Whether `storage` is read after a group that ends before record `end`: referenced besides
  // the unreleased flushes, or by a record at `end` or later. True for a storage the flush did not
  // see (never happens for a group's buffer; the safe answer).
  bool LiveAfter(const c10::StorageImpl* storage, size_t end) const;
  // (index of the last record that references it, storage) of the storages only this flush
  // references, by index.
  const std::vector<std::pair<size_t, c10::StorageImpl*>>& releases() const { return releases_; }

 private:
  friend class RefLedger;
  struct Use {
    c10::StorageImpl* storage;
    int64_t impls;  // distinct tensors of the records
    size_t last;    // last record that references it
  };
  // Every storage of `records` with its distinct tensors and last use, by storage.
  static std::vector<Use> Uses(const std::vector<runtime::OpRecord>& records);
  // Decides a storage with `outside` references besides the unreleased flushes.
  void Decide(const Use& use, int64_t outside);

  struct Info {
    size_t last = 0;
    bool outside = false;
  };
  absl::flat_hash_map<const c10::StorageImpl*, Info> info_;
  std::vector<std::pair<size_t, c10::StorageImpl*>> releases_;
};

// The storage references held by flushes whose units the stream has not released yet.
class RefLedger {
 public:
  // Decides the references of flush `batch`'s records (SegmentRefs) and holds them until
  // Release(batch or later).
  SegmentRefs Hold(const std::vector<runtime::OpRecord>& records, uint64_t batch);
  // Runs `drop` (which destroys the units of every flush <= batch: their tensors) and gives up
  // those flushes' references, under one lock: a concurrent Hold sees use counts and holdings
  // that agree.
  void Release(uint64_t batch, const std::function<void()>& drop);
  // The last flush held that references `storage` (reads or writes it), 0 when none does: the
  // units of that flush and the earlier ones are all that can touch it before the next flush.
  uint64_t LastReferencing(const c10::StorageImpl* storage);

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<const c10::StorageImpl*, int64_t> held_ ABSL_GUARDED_BY(mu_);
  // Per flush still held: (storage, distinct tensors), in flush order.
  std::deque<std::pair<uint64_t, std::vector<std::pair<const c10::StorageImpl*, int64_t>>>> flushes_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::scheduler
