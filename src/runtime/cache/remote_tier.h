// The distributed tier of the compiled-code cache (DESIGN.md §3.9): ranks of one
// torch.distributed job share builds through the process group's own key-value store (the
// c10d TCPStore under torchrun). No home-made protocol: only get / set / compare_set / delete.
//
// Per build ("<entry hash>.<levels>", the disk tier's name, so it is the same on every rank):
//   <name>/lease  "<rank>:<pid>:<expiry ms since the epoch>"  who is building it, until when
//   <name>/bytes  the entry (entry_format.h), verified by the fetching rank like a disk entry
//   <name>/done   "ok:<disk dir token>" or "failed:<reason>"  (set after bytes)
// `bytes` and `done` are signed with the job's secret (remote_auth.h): a value whose MAC does not
// verify is never used (a rank compiles the group itself instead).
// The first rank to compare_set an absent lease builds; the others see the lease and run the
// group op by op (adaptive) or poll (compile mode) until `done` appears. The holder renews its
// leases from a heartbeat thread every lease/3; a rank that finds a lease past its expiry takes
// it over with compare_set(old, mine) and builds (the holder died). A failed build is published
// too, so peers do not retry it. When `done` carries the fetching rank's own disk-directory
// token, the ranks share the cache directory and the entry is read from disk instead.
// Bounded: each rank deletes the keys of its oldest published build beyond `max_published`.
//
// Thread-safety: every method may be called from any thread. Store calls may block (they go
// through Python and the network); none is made while holding this class's mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/cache/cache_stats.h"

namespace trn::runtime::cache {

// torch.distributed's store as seen from C++ (implemented at the pybind11 edge; keys are
// already namespaced). Thread-safe.
class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  virtual int rank() const = 0;
  // Non-blocking: nullopt when the key is absent.
  virtual absl::StatusOr<std::optional<std::string>> Get(const std::string& key) = 0;
  virtual absl::Status Set(const std::string& key, const std::string& value) = 0;
  // Atomic: sets `desired` if the value is `expected` ("" = absent); returns the value after.
  virtual absl::StatusOr<std::string> CompareSet(const std::string& key, const std::string& expected,
                                                 const std::string& desired) = 0;
  // Removes `key` (absent: nothing happens).
  virtual absl::Status DeleteKey(const std::string& key) = 0;
};

// Returns the store when torch.distributed is initialised with more than one rank, else null.
using RemoteStoreProvider = std::function<std::shared_ptr<RemoteStore>()>;
// The process-wide provider (set once by the Python extension at import; thread-safe).
void SetRemoteStoreProvider(RemoteStoreProvider provider);
// A torch.distributed process group was created in this process (the device's c10d backend is
// attached to each one): for a while after that a flush asks the provider for the store every
// time until it has one, instead of at most every few tens of milliseconds (a build started in
// between would be compiled by every rank). A job of one rank never has a store: once that while
// is over, it is asked at the throttled rate again. Thread-safe.
void NoteProcessGroupCreated();
// SteadyNs() of the latest NoteProcessGroupCreated, or -1 (compared with another thread's clock:
// never the host-time clock, which may be per-thread CPU time).
int64_t ProcessGroupCreatedNs();
// Whether a flush at `now_ns` should ask the provider for the store, given when it last asked
// (-1: never) and ProcessGroupCreatedNs(). Pure (tested on its own).
inline constexpr int64_t kRemoteRefreshNs = 50'000'000;          // throttled rate
inline constexpr int64_t kAskEveryFlushAfterGroupNs = 5'000'000'000;  // after a group's creation
bool RemoteRefreshDue(int64_t now_ns, int64_t last_asked_ns, int64_t group_created_ns);

struct RemoteOptions {
  double lease_s = 30;
  int64_t poll_ms = 50;
  std::string test_fault;  // "kill_after_claim": SIGKILL right after the first claim
  // The job secret that signs every published value (remote_auth.h): `secret` when non-empty
  // (NEURON_CACHE_SECRET), else read (or created) from `secret_file`, owned by `owner_uid`, when
  // a store is first found. Without a secret the tier finds no store: nothing is shared.
  std::string secret;
  std::string secret_file;
  int64_t owner_uid = -1;  // -1: the effective uid (ExpectedUid, disk_cache.h)
  // The store holds the keys of at most this many builds published by this rank (successes
  // and failures): publishing one more deletes the oldest's keys (counted in
  // store_entries_deleted), so the store's memory stays bounded in a long job. A rank that
  // wants a deleted build later claims and builds it (or finds it on disk).
  size_t max_published = 1024;
};

class RemoteTier {
 public:
  // `provider` null: the process-wide one (SetRemoteStoreProvider), looked up when needed.
  RemoteTier(RemoteOptions options, RemoteStoreProvider provider, CacheStats* stats);
  ~RemoteTier();  // Shutdown()

  // The store, asking the provider while there is none. The process-wide provider takes the
  // GIL and may import a Python module: call this only on a thread no recording thread waits
  // for (a thread that records ops, or holds the GIL), never on a compile thread: a recording
  // thread blocked in a compile-mode flush while importing torch_trn holds the module's import
  // lock, and a compile thread importing torch_trn._dist_cache would wait for it forever.
  std::shared_ptr<RemoteStore> store();
  // The store found so far (null until store() found one); never asks the provider.
  std::shared_ptr<RemoteStore> known_store();
  int rank();

  enum class State { kPublished, kFailed, kClaimed, kHeldElsewhere, kError };
  struct Probe {
    State state = State::kError;
    std::string detail;     // kFailed: the reason; kPublished: the publisher's dir token
    std::string holder;     // kHeldElsewhere: the lease value
  };
  // One non-blocking step for build `name`: published? failed? else claim the lease (or take
  // over an expired one). kClaimed obliges the caller to Publish or PublishFailure.
  Probe FetchOrClaim(const std::string& name);
  // The published entry bytes of `name`.
  absl::StatusOr<std::string> FetchBytes(const std::string& name);
  // The verified `done` value of `name` (nullopt: absent; an error: unreadable or not signed
  // with the job's secret).
  absl::StatusOr<std::optional<std::string>> Done(const std::string& name);
  void Publish(const std::string& name, const std::string& bytes, const std::string& dir_token);
  void PublishFailure(const std::string& name, const std::string& reason);
  // Stops the heartbeat thread (leases still held expire). Idempotent; before interpreter exit.
  void Shutdown();

 private:
  void Heartbeat();
  std::string LeaseValue(int rank) const;
  void Release(const std::string& name);
  // Remembers `name` as published by this rank; deletes the oldest's keys beyond the bound.
  void Retire(RemoteStore* s, const std::string& name);

  const RemoteOptions options_;
  const RemoteStoreProvider provider_;
  CacheStats* const stats_;
  absl::Mutex mu_;
  std::string Secret();  // the job secret (set with the store)
  std::shared_ptr<RemoteStore> store_ ABSL_GUARDED_BY(mu_);
  std::string secret_ ABSL_GUARDED_BY(mu_);  // set with store_ (immutable after)
  bool secret_refused_ ABSL_GUARDED_BY(mu_) = false;  // warned once: nothing is shared
  absl::flat_hash_map<std::string, std::string> held_ ABSL_GUARDED_BY(mu_);  // name -> lease value
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::string> published_ ABSL_GUARDED_BY(mu_);  // names this rank published, oldest first
  std::thread heartbeat_;  // started with the first claim
};

}  // namespace trn::runtime::cache
