// PlanStore: the plan cache's disk tier, so that a process restarted on a warm disk cache plans
// no group of its first steps again (issue 31: replanning the groups of gpt's first two steps
// cost a restarted process ~13-19 ms a step, more than anything else it did again).
//
// What is stored: the plans a flushed segment used from its first plan-cache miss on (found in
// memory, or made by the grouper and the lowering), each with the content hash it is stored
// under in the PlanCache, as one entry of the disk cache (runtime/cache/disk_cache.h: the same
// trust rule, atomic publish, versioned format and content hash as code entries; a rejected
// entry is a miss, never an error). Its key: "<context> <content hash>", the hash (GroupHasher)
// of the segment's records from that miss to the end, the context the knobs that change cuts
// (mode, NEURON_MAX_GROUP_OPS, NEURON_TARGET). Both exclude lines, ranks, pointers and time,
// so identical processes compute identical keys.
//
// When: a flush whose planning misses the memory cache hashes the rest of its segment once,
// loads that entry (one open; a missing entry costs a failed open) and inserts its plans into
// the PlanCache, where they are checked like any cached plan (content hash, guards, runtime
// scalars, liveness; a loaded plan's tensor positions too). A plan that does not apply is a
// miss like any other: the grouper plans the unit. A flush that planned a unit from scratch
// writes its entry (at most once per key and process). A flush that hits memory never touches
// the disk, so steady steps cost nothing more.
//
// Thread-safety: a PlanStore is used by the planning thread only (the executor, one segment at a
// time); the DiskCache under it is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/cache/disk_cache.h"
#include "scheduler/plan_cache.h"

namespace trn::scheduler {

// A cached plan and the content hash it is stored under in the PlanCache.
struct StoredPlan {
  Hash128 hash;
  std::shared_ptr<const GroupPlan> plan;
};

// The payload of a plan entry (little-endian, its own version first). DecodePlans checks every
// length, count and position against the bytes and the plan's length: malformed bytes are an
// error, never a crash or an out-of-range position. Decoded plans are marked from_disk.
std::string EncodePlans(const std::vector<StoredPlan>& plans);
absl::StatusOr<std::vector<StoredPlan>> DecodePlans(absl::string_view bytes);

// Whether two plans decide the same (unit, guards, key, buffers): a loaded plan the cache holds
// already is not inserted again.
bool SamePlan(const GroupPlan& a, const GroupPlan& b);

class PlanStore {
 public:
  // `disk` must outlive the store. `context`: what besides the records decides the cuts.
  PlanStore(runtime::cache::DiskCache* disk, std::string context, size_t max_written = 4096);

  // The plans stored under `key`, or nullopt (no entry, a rejected one, or a payload that does
  // not decode: deleted like a corrupted entry).
  std::optional<std::vector<StoredPlan>> Load(const Hash128& key);
  // Writes `plans` under `key`, unless this process wrote that key already.
  void Save(const Hash128& key, const std::vector<StoredPlan>& plans);

 private:
  std::string KeyMaterial(const Hash128& key) const;

  runtime::cache::DiskCache* const disk_;
  const std::string context_;
  const size_t max_written_;
  absl::flat_hash_set<Hash128> written_;  // keys written by this process (forgotten when full)
};

}  // namespace trn::scheduler
