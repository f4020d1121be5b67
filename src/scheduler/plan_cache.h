// PlanCache: a flush's groups found again by content, so that a cached group costs a hash of its
// records and a bind of this flush's tensors, with no lowering run at all.
//
// Cutting a segment into groups and planning each group (grouper.h, GroupLowering) is a
// deterministic function of the records' content: op, argument geometry and aliasing, non-tensor
// arguments, recording thread changes (grouper.h says why cuts never depend on timing), plus the
// storages' liveness at the flush. So the outcome of the grouper at a group start is a function
// of the content of the ops it looked at: the group's ops, and the op after it when that op made
// the grouper close the group (a cut, an op without a lowering, a new recording thread).
//
// GroupHasher hashes that content op by op from a group start (128 bits, buffers numbered by
// first appearance from the group start, as the lowering and the key do), leaving out the values
// of floating-point and Scalar arguments and of host scalars: a learning rate or Adam's bias
// correction changes every step. A cached GroupPlan then lists
//  - guards: the left-out values the plan depends on (every one that is not a runtime scalar),
//    compared exactly;
//  - runtime scalars by (op, argument): read from this flush's records, as ReadOperand reads them;
//  - liveness of each buffer: recomputed from use counts at every hit and compared;
//  - the group key, inputs and outputs by position in the records, staging, checks.
// A probe that fails any of these is a miss: the flush plans that group with the grouper and the
// lowering (and caches the new variant). Nothing is ever guessed.
//
// Thread-safety: a PlanCache is used by the flushing thread only (flushes are serialised by the
// Stream); GroupPlans are immutable and may be shared with other threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "mlir_lowering/group_lowering.h"
#include "runtime/compiled_run.h"
#include "runtime/op_record.h"
#include "scheduler/group_key.h"

namespace trn::scheduler {

struct Hash128 {
  uint64_t lo = 0, hi = 0;
  bool operator==(const Hash128& o) const { return lo == o.lo && hi == o.hi; }
  template <typename H>
  friend H AbslHashValue(H h, const Hash128& v) {
    return H::combine(std::move(h), v.lo, v.hi);
  }
};

// A tensor inside a group's records: op (in the group), value (argument j, or the record's
// output j at args.size() + j), element (in a tensor list, counted as runtime::ForEachTensor
// visits them: an optional list's None entries are not counted; 0 for a tensor).
struct TensorPos {
  uint32_t op = 0;
  uint16_t value = 0;
  uint16_t elem = 0;
};
// The tensor at `p` of `ops` (undefined when `p` does not name one).
at::Tensor TensorAt(const std::vector<runtime::OpRecord>& ops, const TensorPos& p);

// A value the plan depends on that the content hash leaves out.
struct Guard {
  uint32_t op = 0;
  uint16_t arg = 0;
  uint8_t kind = 0;  // 'd' double, 'i' int, 'h' host scalar tensor (its element bytes)
  uint64_t bits = 0;
};

// Hashes records from `begin` on, as the grouper sees them from a group start.
class GroupHasher {
 public:
  GroupHasher(const std::vector<runtime::OpRecord>& records, size_t begin);

  // Hashes the next record (begin + ops()); returns the hash of the prefix through it.
  Hash128 Add();
  // The hash of everything added followed by the end of the segment.
  Hash128 End() const;
  int64_t ops() const { return static_cast<int64_t>(next_ - begin_); }
  bool at_end() const { return next_ >= records_.size(); }

  // The group is the first `group_ops` ops hashed (all of them, or all but the last): its
  // storages by buffer number (first appearance).
  const c10::StorageImpl* const* Buffers(int64_t group_ops, size_t* count) const {
    *count = group_ops < ops() ? buffers_before_last_ : storages_.size();
    return storages_.data();
  }

 private:
  void HashValue(const c10::IValue& v, bool scalar_arg, std::vector<uint64_t>* w);
  void HashTensor(const at::Tensor& t, std::vector<uint64_t>* w);

  const std::vector<runtime::OpRecord>& records_;
  const size_t begin_;
  size_t next_;
  Hash128 prefix_;
  absl::flat_hash_map<const c10::StorageImpl*, int> buffer_ids_;
  std::vector<const c10::StorageImpl*> storages_;
  size_t buffers_before_last_ = 0;  // buffers seen before the last op added
  std::vector<uint64_t> words_;
};

// How the grouper continued from a group start, for one content and set of guards.
struct GroupPlan {
  enum class Kind { kGroup, kOpByOp } kind = Kind::kGroup;
  int64_t len = 1;               // ops in the unit
  bool next_op_by_op = false;    // kGroup: the op after the group runs op by op (not a new start)
  std::vector<Guard> guards;     // over the unit's ops (and the op after it, when hashed)
  // kGroup only:
  GroupKey key;
  std::string key_hex;
  std::vector<bool> live;  // per buffer
  std::vector<TensorPos> inputs;
  std::vector<std::pair<TensorPos, bool>> outputs;  // (position, staged)
  std::vector<std::pair<int64_t, int64_t>> param_args;
  std::shared_ptr<const std::vector<runtime::CheckSlot>> checks;
  int64_t bytes_written = 0;
  int64_t temporaries = 0;
  std::string func;
  // Loaded from the disk tier (plan_store.h): each use also checks that its inputs and outputs
  // name device tensors of the records (a plan made here names them by construction).
  bool from_disk = false;
};

// The runtime scalars of `plan` read from `ops` (the unit's records), as GroupLowering::
// ReadOperand reads them; false when one is no longer passed at run time (an integer too large
// for f64), so the plan does not apply.
bool ReadParams(const GroupPlan& plan, const std::vector<runtime::OpRecord>& ops, size_t begin,
                std::vector<double>* params);
// Whether every guard of `plan` holds for the records from `begin`.
bool GuardsHold(const GroupPlan& plan, const std::vector<runtime::OpRecord>& records, size_t begin);
// The guards of a unit of `records` starting at `begin`: the left-out values at `args` ((op in the
// unit, argument): what the lowering read besides runtime scalars; other kinds of values are in
// the hash already).
std::vector<Guard> GuardsOf(const std::vector<runtime::OpRecord>& records, size_t begin,
                            const std::vector<std::pair<int64_t, int64_t>>& args);

class PlanCache {
 public:
  explicit PlanCache(int64_t max_plans = 1 << 14) : max_plans_(max_plans) {}

  // Plans stored under `h` (empty when none).
  const std::vector<std::shared_ptr<const GroupPlan>>* Find(const Hash128& h) const;
  void Insert(const Hash128& h, std::shared_ptr<const GroupPlan> plan);
  // The longest unit cached: a probe that has hashed more ops than this can stop.
  int64_t max_len() const { return max_len_; }
  int64_t size() const { return plans_; }

 private:
  const int64_t max_plans_;
  int64_t plans_ = 0;
  int64_t max_len_ = 0;
  absl::flat_hash_map<Hash128, std::vector<std::shared_ptr<const GroupPlan>>> entries_;
};

}  // namespace trn::scheduler
