// SegmentPlanner: a flushed segment -> execution units in stream order, one at a time, so the
// flush can submit each unit as soon as it is planned.
//
// At each unit start it first probes the PlanCache (plan_cache.h): the records are hashed op by
// op and every cached plan stored under a prefix's hash is tried (guards, runtime scalars,
// liveness); the first that applies is bound to this segment's tensors by position. Only when
// none applies does it call the grouper and the lowering (grouper.h) for the next group, and
// caches what they decided. With a PlanStore (plan_store.h), the first miss of a segment first
// loads the plans stored on disk for the rest of the segment into the PlanCache and probes
// again; Persist() then writes what the segment used when it planned a unit from scratch.
//
// Thread-safety: used by the flushing thread only (the Stream serialises flushes).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "mlir_lowering/group_lowering.h"
#include "runtime/op_record.h"
#include "base/stats.h"
#include "scheduler/plan_cache.h"
#include "scheduler/plan_store.h"
#include "scheduler/segment_refs.h"

namespace trn::scheduler {

struct PlannedUnit {
  std::vector<runtime::OpRecord> ops;
  // A group (the plan, this flush's runtime scalars); null: the ops run op by op.
  std::shared_ptr<const GroupPlan> plan;
  std::vector<double> params;
  bool unlowered = false;  // op by op for lack of a lowering (or a refused/failed lowering)
  size_t begin = 0;        // index of the first op in the segment
};

class SegmentPlanner {
 public:
  // `refs`: what the flush decided about the segment's storages (must outlive the planner);
  // null: SegmentRefs::Of(segment), as if no earlier work held references.
  // `store`: the plan cache's disk tier, or null. Groups are planned for `target`.
  SegmentPlanner(std::vector<runtime::OpRecord> segment, PlanCache* cache, int64_t max_group_ops,
                 const mlir_lowering::Target& target, base::Stats* stats, const SegmentRefs* refs,
                 PlanStore* store = nullptr);
  SegmentPlanner(const SegmentPlanner&) = delete;
  SegmentPlanner& operator=(const SegmentPlanner&) = delete;

  bool Done() const { return pos_ >= records_.size() && ready_.empty(); }
  // The next unit (its records are moved out of the segment). Call only while !Done().
  PlannedUnit Next();
  const std::vector<runtime::OpRecord>& records() const { return records_; }
  // Units found in the plan cache (loaded from disk or not) vs planned by the grouper.
  int64_t cache_hits() const { return hits_; }
  int64_t cache_misses() const { return misses_; }
  // After the last unit: writes the plans this segment used from its first miss on to the
  // PlanStore, when it planned a unit from scratch.
  void Persist();

 private:
  // A cached plan for the unit at pos_ that holds for these records, bound; false: none.
  bool FromCache(PlannedUnit* out);
  // Whether `plan` (found after hashing `hasher.ops()` ops) holds here; then `*params` are its
  // runtime scalars.
  bool Applies(const GroupPlan& plan, const GroupHasher& hasher, std::vector<double>* params) const;
  // A plan from disk: its inputs and outputs name device tensors of the records from pos_.
  bool TensorsExist(const GroupPlan& plan) const;
  // Loads the stored plans of the records from pos_ on into the cache (once per segment).
  bool LoadStored();
  // Remembers a plan the segment used (from the first miss on), once.
  void Use(const Hash128& h, std::shared_ptr<const GroupPlan> plan);
  // The grouper's next cut: queues its units (and caches their plans).
  void Cut();
  void CachePlans(const std::vector<struct CutUnit>& cut, const std::vector<std::shared_ptr<GroupPlan>>& plans);
  PlannedUnit Take(size_t begin, int64_t len);

  std::vector<runtime::OpRecord> records_;
  PlanCache* const cache_;
  const int64_t max_group_ops_;
  const mlir_lowering::Target& target_;
  base::Stats* const stats_;
  std::optional<SegmentRefs> own_refs_;
  const SegmentRefs* refs_ = nullptr;
  size_t pos_ = 0;
  std::vector<PlannedUnit> ready_;  // units of the last cut not handed out yet (in order)
  size_t next_ready_ = 0;
  int64_t hits_ = 0, misses_ = 0;
  PlanStore* const store_;
  bool probed_ = false;  // the store was asked for this segment (at its first miss)
  Hash128 store_key_;    // content hash of the records from the first miss to the end
  std::vector<StoredPlan> used_;
  absl::flat_hash_set<const GroupPlan*> used_set_;
};

}  // namespace trn::scheduler
