// In-memory cache of compiled group code (the memory tier: src/runtime/cache has the disk and
// distributed tiers), keyed by the group key's full material (so a hash collision can never
// hand out the wrong code). Least recently used entries are evicted beyond a bound on entries
// and on object-code bytes; an evicted slot stays valid for whoever still holds it (queued
// units keep their code alive), and a later lookup of its key starts over (disk, peers, build).
//
// Each key owns a CodeSlot that fills in over time: empty while its first compile is queued or
// running, then holding the best code so far (a tier-0 build, later replaced by an optimised
// tier-1 build when tiering is on), or a failure. Failures are cached: a group that does not
// compile is not retried every step (it runs op by op). The executor reads a slot without
// waiting (adaptive mode: no code yet means "run the ops one by one"); compile mode waits.
//
// Thread-safe: all methods of both classes may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/cache/cache_stats.h"
#include "runtime/compiled_run.h"
#include "runtime/instant_program.h"

namespace trn::runtime {

class CodeSlot {
 public:
  using Code = std::shared_ptr<const CompiledCode>;

  // The best code published so far, or null (compiling, or failed).
  Code code() const;
  // The compile failure, or OK (no failure: compiling or ready).
  absl::Status failure() const;
  // Publishes `code` if it is a higher tier than the current code (or there is none).
  void Publish(Code code, int tier);
  // Records a failure. A failed tier-up keeps the lower tier's code (the slot stays usable).
  void Fail(absl::Status status);
  // Blocks until the slot has code or a failure, for at most `timeout`; whether it has.
  bool AwaitFor(absl::Duration timeout) const;
  // Object-code bytes of the current code (0 while empty); settled: code or failure present.
  int64_t bytes() const;
  bool settled() const;

  // What compiling this group (further) would save, as observed so far: the executor adds the
  // time it spent running the group op by op while it had no code, and running its fast-tier
  // code while a tier-up was pending (hotness x cost, like a JIT's counters). The compile pool
  // builds the queued group with the most first (compile_pool.h). Lock-free.
  void AddPayoffNs(int64_t ns) const { payoff_ns_.fetch_add(ns, std::memory_order_relaxed); }
  int64_t payoff_ns() const { return payoff_ns_.load(std::memory_order_relaxed); }

  // The group's instant-tier program (instant_program.h): what runs while the slot has no code.
  // Built by the executor on the key's first run without code and kept for every later unit of
  // the key (null until then).
  std::shared_ptr<const InstantProgram> instant() const;
  void SetInstant(std::shared_ptr<const InstantProgram> program) const;

 private:
  bool Settled() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return code_ != nullptr || !failure_.ok(); }

  mutable absl::Mutex mu_;
  Code code_ ABSL_GUARDED_BY(mu_);
  int tier_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  mutable std::atomic<int64_t> payoff_ns_{0};  // an observation, not the slot's state
  mutable std::shared_ptr<const InstantProgram> instant_ ABSL_GUARDED_BY(mu_);  // derived from the key
};

struct CodeCacheLimits {
  int64_t max_entries = 4096;
  int64_t max_bytes = int64_t{1} << 30;
};

class CodeCache {
 public:
  explicit CodeCache(CodeCacheLimits limits = {}, cache::CacheStats* stats = nullptr);

  // The slot for `key` (a hit: it becomes the most recently used). When it did not exist it
  // is created empty and `*created` is set (a miss): the caller must then fill it (or Erase it
  // if it cannot). A miss first evicts least recently used settled slots beyond the limits.
  std::shared_ptr<CodeSlot> Lookup(const std::string& key, bool* created);
  // Evicts least recently used settled slots beyond the limits. Slots still building are never
  // evicted, so while several build at once the cache may hold more than the limit: compile
  // mode trims once its flush's builds are done.
  void Trim();
  // Forgets `key` (a compile that could not even be queued is retried on the next lookup).
  void Erase(const std::string& key);
  int64_t size() const;
  int64_t bytes() const;  // object-code bytes of every slot's code
  void Clear();

 private:
  void EvictLocked(int64_t room) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct Entry {
    std::shared_ptr<CodeSlot> slot;
    std::list<std::string>::iterator lru;  // position in lru_
  };
  const CodeCacheLimits limits_;
  cache::CacheStats* const stats_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> slots_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // most recently used first
};

}  // namespace trn::runtime
