// Poisoned storages: device memory whose contents are not what the program computed, because
// the op that should have written it failed, or was skipped (executor.h: after a failure, the
// ops queued up to the next sync are skipped; after that sync, an op that reads a poisoned
// storage is skipped too). Each mark keeps the failure that caused it (the original op and its
// Python line, and its exception class), so reading a poisoned tensor on the host raises that
// failure again instead of returning uninitialised memory or a lost in-place update.
//
// A mark lasts as long as its storage, except that a host copy filling the whole storage clears
// it (trace/device.cpp, `tensor.copy_(host)`: load_state_dict can repair poisoned parameters).
// A mark holds a weak reference to its storage: the StorageImpl's memory (not its data) stays
// allocated while the mark exists, so no other storage can take its address; marks of freed
// storages are pruned as the table grows and at syncs.
//
// Cost: one relaxed atomic load per check while no storage is poisoned (the usual case).
// Thread-safe: every function may be called from any thread (one mutex).
#pragma once

#include <c10/core/StorageImpl.h>

#include "absl/status/status.h"

namespace trn::runtime {

// Whether any storage is poisoned now (cheap; may be stale by the time the caller looks).
bool AnyPoisoned();
// Marks `storage` as poisoned by `origin` (kept if already poisoned). Null storages are ignored.
void Poison(c10::StorageImpl* storage, const absl::Status& origin);
// The failure that poisoned `storage`, or OK.
absl::Status PoisonOf(const c10::StorageImpl* storage);
// Forgets `storage`'s mark (its whole contents were just rewritten from good data).
void ClearPoison(const c10::StorageImpl* storage);
// Drops the marks of storages that no longer exist. Returns how many marks remain.
size_t PrunePoison();
// OK, or the error reading `storage` on the host raises: the original failure's exception class,
// and its message (the failing op and its Python line) after saying what happened to the tensor.
absl::Status CheckReadable(const c10::StorageImpl* storage);

}  // namespace trn::runtime
