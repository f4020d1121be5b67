// In-memory cache of compiled group code, keyed by the group key's full material (so a hash
// collision can never hand out the wrong code). Failures are cached too: a group that does not
// compile is not retried every step (it runs op by op).
//
// Thread-safe: all methods may be called from any thread. Concurrent GetOrCompile calls for one
// key run `compile` once; the other callers wait for its result.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/compiled_run.h"

namespace trn::runtime {

class CodeCache {
 public:
  using Entry = absl::StatusOr<std::shared_ptr<const CompiledCode>>;

  // The entry for `key`; on a miss, runs `compile` (outside the lock) and stores its result.
  // `*hit` tells which happened.
  Entry GetOrCompile(const std::string& key, const std::function<Entry()>& compile, bool* hit);
  int64_t size() const;
  void Clear();

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trn::runtime
