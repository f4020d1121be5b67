// In-memory cache of compiled group code, keyed by the group key's full material (so a hash
// collision can never hand out the wrong code).
//
// Each key owns a CodeSlot that fills in over time: empty while its first compile is queued or
// running, then holding the best code so far (a tier-0 build, later replaced by an optimised
// tier-1 build when tiering is on), or a failure. Failures are cached: a group that does not
// compile is not retried every step (it runs op by op). The executor reads a slot without
// waiting (adaptive mode: no code yet means "run the ops one by one"); compile mode waits.
//
// Thread-safe: all methods of both classes may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/compiled_run.h"

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
  // Blocks until the slot has code or a failure; returns it.
  absl::StatusOr<Code> Await() const;

 private:
  bool Settled() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return code_ != nullptr || !failure_.ok(); }

  mutable absl::Mutex mu_;
  Code code_ ABSL_GUARDED_BY(mu_);
  int tier_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

class CodeCache {
 public:
  // The slot for `key`. When it did not exist it is created empty and `*created` is set: the
  // caller must then compile it (or Erase it if it cannot).
  std::shared_ptr<CodeSlot> Lookup(const std::string& key, bool* created);
  // Forgets `key` (a compile that could not even be queued is retried on the next lookup).
  void Erase(const std::string& key);
  int64_t size() const;
  void Clear();

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<CodeSlot>> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::runtime
